"""What a statement's public functions report about themselves, as a `QueryResult/v1` carries
it: one record per semantic-search call (nominated, confirmed, dropped and why) and per graph
call (budgets, truncation, clocks applied). The functions write them to settings of the
statement's transaction; the runner reads them back after the rows.
"""

from __future__ import annotations

import json
from typing import Any

GRAPH_BUDGETS = ("depth_budget", "expansion_budget", "frontier_budget", "result_budget", "time_budget")
_SEMANTIC_INTS = ("nominated", "confirmed", "dropped_stale", "dropped_filtered", "dropped_ambiguous", "dropped_absent",
                  "dropped_body_mismatch", "dropped_absent_current", "dropped_absent_projection",
                  "dropped_hash_mismatch")
_SEMANTIC_TEXTS = ("policy_generation", "embedder_generation", "generation", "pg_confirmed_at", "termination_reason")


def json_list(text: str | None) -> list[dict[str, Any]]:
    """The objects of a JSON array setting; anything else (unset, malformed) as none."""
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def semantic_invocation(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"function": str(raw.get("function", ""))}
    out.update({k: int(raw.get(k) or 0) for k in _SEMANTIC_INTS})
    out.update({k: (None if raw.get(k) is None else str(raw[k])) for k in _SEMANTIC_TEXTS})
    return out


def graph_invocation(raw: dict[str, Any], ordinal: int, calls: list[Any]) -> dict[str, Any]:
    """`raw`: a graph call's record, or its terminal status row; `calls`: the statement's graph
    calls, which name the function when the record does not."""
    function = raw.get("function") or (calls[ordinal].name if ordinal < len(calls) else calls[-1].name)
    reason = raw.get("truncation_reason")
    return {
        "ordinal": int(raw.get("ordinal", ordinal)), "function": function,
        "truncated": bool(raw.get("truncated")), "truncation_reason": reason if reason in GRAPH_BUDGETS else None,
        "examined_edges": int(raw.get("examined_edges") or 0), "returned_paths": int(raw.get("returned_paths") or 0),
        **{k: max(1, int(raw.get(k) or 1)) for k in ("effective_depth", "effective_expansion_budget",
                                                    "effective_frontier_budget", "effective_result_budget",
                                                    "effective_time_budget_ms")},
        **{k: raw.get(k) for k in ("applied_valid_at", "applied_believed_at", "evaluated_at")},
    }
