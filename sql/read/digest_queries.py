"""What a memory holds, as one hash per `memory_v1` view.

Two memories that must agree (one import on one node and on two, with any batch size or number
of workers; before and after a restore) are compared by these hashes. A view is read whole,
through the query space's own definition, with every column except those that say which
deployment this is or when it did something (the wall clock of an import, a decision, a link):
what the memory says, not when it learned it. Rows are hashed in a canonical order, so the order
a view returns them in does not matter.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import sql

from sql.query_space import query_manifest

# The deployment, the wall clock of its work, and the numbers events get in the order they were
# written (`identity_events.event_id` is a counter). World time (valid_from, asserted_at, a
# document's own dates) stays: it is part of what the memory says.
VOLATILE = frozenset({
    "deployment_id", "ingested_at", "invalidated_at", "created_at", "updated_at", "first_seen_at",
    "last_observed_at", "attached_at", "linked_at", "evaluated_at", "decided_at", "resolved_at", "occurred_at",
    "first_seen", "last_seen", "last_compiled_at", "superseded_at", "first_mentioned_at", "last_mentioned_at",
    "event_id",
})


def _canonical(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


@functools.cache
def view_columns() -> dict[str, tuple[str, ...]]:
    """Each view of the query space, with the columns a digest reads (the manifest is parsed once)."""
    space = json.loads(query_manifest.space_text())
    return {v["name"]: tuple(c["name"] for c in v["columns"] if c["name"] not in VOLATILE) for v in space["views"]}


def view_lines(conn: psycopg.Connection, view: str) -> list[str]:
    """The rows of one view as the digest reads them: one canonical JSON line each, sorted."""
    columns = view_columns()[view]
    query = sql.SQL("SELECT {} FROM memory_v1.{}").format(sql.SQL(", ").join(map(sql.Identifier, columns)),
                                                          sql.Identifier(view))
    return sorted(json.dumps(_canonical(dict(zip(columns, row))), sort_keys=True) for row in conn.execute(query))


def view_digests(conn: psycopg.Connection) -> dict[str, tuple[int, str]]:
    """{view: (rows, sha256 of its rows)} for every view of `memory_v1`."""
    found = {}
    for view in view_columns():
        lines = view_lines(conn, view)
        found[view] = (len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest())
    return found


def differences(one: psycopg.Connection, other: psycopg.Connection, shown: int = 3) -> dict[str, dict[str, Any]]:
    """The views on which two memories disagree, each with its row counts and a few rows only one
    of them holds (empty when they hold the same)."""
    a, b = view_digests(one), view_digests(other)
    found = {}
    for view in (v for v in a if a[v] != b[v]):
        left, right = set(view_lines(one, view)), set(view_lines(other, view))
        found[view] = {"rows": (a[view][0], b[view][0]), "only in the first": sorted(left - right)[:shown],
                       "only in the second": sorted(right - left)[:shown]}
    return found
