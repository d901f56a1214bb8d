"""The queries behind `corpusmem export`: each exported file is one `memory_v1` view, read whole.

The views apply the memory's rules (a deleted document, its versions, claims and mentions are in
none of them; facts need surviving provenance), so an export holds exactly what the memory serves.
Facts believed and true at an instant come from `facts_current` and `contradiction_members_current`
evaluated at the query space's own instant, `corpusmem.evaluated_at` (migration 0004): the export
sets it as the SQL runner does, and never writes the belief clock again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql


@dataclass(frozen=True)
class View:
    name: str                # the view in memory_v1, and the exported file's name
    key: tuple[str, ...]     # the columns that identify a row (and order the file)
    # only when no instant is asked: the view is the memory's whole record, not one instant's
    history: bool = False
    # under an asked instant, only the rows of facts held then (`facts_current` at that instant)
    of_current_facts: bool = False


VIEWS = (
    View("documents_live", ("doc_id",)),
    View("document_versions_visible", ("version_id",)),
    View("claims_visible_history", ("claim_id",)),
    View("claim_occurrences_live", ("claim_id", "version_id", "chunk_id")),
    View("entities_current", ("entity_id",)),
    View("entity_aliases_current", ("alias_id",)),
    View("facts_visible_history", ("fact_id",), history=True),
    View("facts_current", ("fact_id",)),
    View("fact_claim_evidence_live", ("fact_id", "claim_id", "stance"), of_current_facts=True),
    View("contradiction_members_current", ("contradiction_group", "fact_id")),
)
# Not a view: the converted Markdown of every visible version, keyed as document_versions_visible.
TEXTS = "document_texts"


def views(as_of: datetime | None) -> tuple[View, ...]:
    return tuple(v for v in VIEWS if not (v.history and as_of is not None))


def select(view: View, as_of: datetime | None) -> sql.Composed:
    """The statement that reads `view` whole, in key order."""
    statement = sql.SQL("SELECT * FROM memory_v1.{}").format(sql.Identifier(view.name))
    if view.of_current_facts and as_of is not None:
        statement += sql.SQL(" WHERE fact_id IN (SELECT fact_id FROM memory_v1.facts_current)")
    return statement + sql.SQL(" ORDER BY {}").format(sql.SQL(", ").join(map(sql.Identifier, view.key)))


def count(conn: psycopg.Connection, statement: sql.Composed) -> int:
    return conn.execute(sql.SQL("SELECT count(*) FROM ({}) q").format(statement)).fetchone()[0]


def begin_snapshot(conn: psycopg.Connection, as_of: datetime | None) -> datetime:
    """Open the export's one REPEATABLE READ, READ ONLY transaction on `conn` (every file is read
    from the same snapshot); with `as_of`, memory_v1's current views answer at that instant.
    Returns the snapshot's instant."""
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.read_only = True
    conn.execute("SET TimeZone = 'UTC'")
    snapshot = conn.execute("SELECT now()").fetchone()[0]
    if as_of is not None:
        conn.execute("SELECT set_config('corpusmem.evaluated_at', %s, true)", (as_of.isoformat(),))
    return snapshot


def evaluated_at(conn: psycopg.Connection) -> datetime:
    """The instant memory_v1's current views answer at in this transaction."""
    return conn.execute("SELECT memory_v1_private.evaluated_at()").fetchone()[0]


def deployment(conn: psycopg.Connection) -> dict[str, Any]:
    row = conn.execute("SELECT deployment_id::text, embedding_model FROM deployment LIMIT 1").fetchone()
    return {"deployment_id": row[0] if row else None, "embedding_model": row[1] if row else None}


def texts() -> sql.Composed:
    """Where the converted Markdown of each visible version is kept: (doc_id, version_id,
    representation_id, object_key), visible versions only, in version order."""
    return sql.SQL(
        "SELECT v.doc_id, v.version_id, v.current_representation_id AS representation_id, r.object_key"
        " FROM memory_v1.document_versions_visible v"
        " JOIN representations r ON r.version_id = v.current_representation_id"
        " ORDER BY v.version_id")
