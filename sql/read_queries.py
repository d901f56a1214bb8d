"""SQL of the read API beyond facts themselves: evidence samples and totals, context hits."""

from __future__ import annotations

from typing import Any

import psycopg

_CLAIM_COLUMNS = (
    "c.claim_id, c.doc_id, c.chunk_id, c.claim_text, c.source_span, c.char_start, c.char_end, c.is_attributed,"
    " c.is_current_testimony, c.evidence_spans, c.asserted_at, c.claim_valid_from, c.claim_valid_until,"
    " c.claim_valid_precision, c.claim_valid_kind, d.title AS document_title, d.source_kind")


def claim_rows(cur: psycopg.Cursor) -> list[dict[str, Any]]:
    names = [d.name for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def fact_evidence(conn: psycopg.Connection, facts: list[tuple[str, str]], *, per_stance: int, cap: int
                  ) -> tuple[list[dict], list[dict], list[dict]]:
    """For each (fact_id, kind): up to `per_stance` current claims per stance (newest said first),
    at most `cap` claims in all, each claim once; and the exact total per fact and stance."""
    if not facts:
        return [], [], []
    kinds = dict(facts)
    ids = [f for f, _ in facts]
    sampled = conn.execute(
        "SELECT e.fact_id::text, e.claim_id::text, e.stance, count(*) OVER (PARTITION BY e.fact_id, e.stance)"
        " FROM (SELECT e.*, row_number() OVER (PARTITION BY e.fact_id, e.stance"
        "              ORDER BY c.asserted_at DESC NULLS LAST, e.claim_id) AS n"
        "       FROM fact_evidence e JOIN claims c USING (claim_id)"
        "       WHERE e.fact_id = ANY(%s::uuid[]) AND c.is_current_testimony) e WHERE e.n <= %s"
        " ORDER BY array_position(%s::uuid[], e.fact_id), e.stance DESC, e.n", (ids, per_stance, ids)).fetchall()
    totals = dict(((f, s), n) for f, s, n in conn.execute(
        "SELECT e.fact_id::text, e.stance, count(DISTINCT e.claim_id) FROM fact_evidence e JOIN claims c"
        " USING (claim_id) WHERE e.fact_id = ANY(%s::uuid[]) AND c.is_current_testimony GROUP BY 1, 2",
        (ids,)).fetchall())
    links, chosen = [], []
    for fact_id, claim_id, stance, _ in sampled:
        if claim_id not in chosen:
            if len(chosen) >= cap:
                continue
            chosen.append(claim_id)
        links.append({"fact_kind": kinds[fact_id], "fact_id": fact_id, "claim_id": claim_id, "stance": stance})
    returned: dict[tuple[str, str], int] = {}
    for link in links:
        key = (link["fact_id"], link["stance"])
        returned[key] = returned.get(key, 0) + 1
    total_rows = [{"fact_kind": kinds[f], "fact_id": f, "stance": s, "returned": returned.get((f, s), 0), "total": n}
                  for (f, s), n in sorted(totals.items(), key=lambda kv: (ids.index(kv[0][0]), kv[0][1]))]
    with conn.cursor() as cur:
        cur.execute(f"SELECT {_CLAIM_COLUMNS} FROM claims c JOIN documents d USING (doc_id)"
                    " WHERE c.claim_id = ANY(%s::uuid[]) ORDER BY array_position(%s::uuid[], c.claim_id)",
                    (chosen, chosen))
        claims = claim_rows(cur)
    return links, total_rows, claims


def context_hits(conn: psycopg.Connection, candidates: list[str], context: list[str]) -> dict[str, int]:
    """Current relations linking each candidate to any of the context entities."""
    if not candidates or not context:
        return {}
    return dict(conn.execute(
        "SELECT c::text, count(f.fact_id) FROM unnest(%s::uuid[]) c JOIN facts f ON f.kind = 'relation'"
        " AND f.invalidated_at IS NULL AND (f.valid_until IS NULL OR f.valid_until > now())"
        " AND ((f.subject_id = c AND f.object_id = ANY(%s::uuid[])) OR (f.object_id = c AND f.subject_id = ANY(%s::uuid[])))"
        " GROUP BY 1", (candidates, context, context)).fetchall())
