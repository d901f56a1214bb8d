"""The questions `corpusmem check` asks the authority, and the index repairs it may make.

Each check compares what is stored with the rule that wrote it, and the rule is imported from
where it is written (`sql/write/reconcile.py` for testimony currency, `sql/write/facts_store.py`
for evidence counts, `sql/store/authority.py` for the pinned vector space): a check that kept
its own copy of a rule would drift from it and report the wrong thing. Every question answers
`Counted`: how many rows break the rule and the first few of their IDs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
from psycopg import sql

from sql.store.authority import VECTOR_COLUMNS, migration_files
from sql.write.facts_store import EVIDENCE_COUNTS
from sql.write.reconcile import EXPECTED_CURRENCY, LIVING_SUPERSEDED

# The row ID of each table with a vector column, for naming the rows a vector check found.
_ROW_IDS = {"chunks": "chunk_id", "claims": "claim_id", "facts": "fact_id", "entities": "entity_id"}

# Our own migrations are the only input, and each declares an index in one plain statement; a
# pattern over them is enough (no SQL parser takes PostgreSQL's procedural function bodies whole).
_DECLARED_INDEX = re.compile(
    r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+ON\s+[^;]+;"
    r"|DROP\s+INDEX\s+(?:IF\s+EXISTS\s+)?(\w+)\s*;", re.IGNORECASE)

# Indexes a `REINDEX CONCURRENTLY` that failed half-way leaves behind: dropping them is the fix,
# and a check does not drop anything.
_REINDEX_LEFTOVER = re.compile(r"_cc(new|old)\d*$")


@dataclass(frozen=True)
class Counted:
    count: int
    examples: list[str]


def _counted(conn: psycopg.Connection, query: str | sql.Composable, params: object = None,
             limit: int = 5) -> Counted:
    """`query` selects one column of IDs: how many rows, and the first `limit` of them in order."""
    wrapped = sql.SQL("SELECT count(*), (array_agg(id::text ORDER BY id::text))[1:{}] FROM ({}) q(id)").format(
        sql.Literal(limit), sql.SQL(query) if isinstance(query, str) else query)
    count, examples = conn.execute(wrapped, params).fetchone()
    return Counted(count, examples or [])


# --- testimony currency and facts ---------------------------------------------------------

def currency_mismatches(conn: psycopg.Connection) -> Counted:
    """Claims whose `is_current_testimony` or `currency_reason` disagrees with their latest
    currency event and their document's deletion (`reconcile.EXPECTED_CURRENCY`)."""
    return _counted(conn, f"SELECT x.claim_id FROM ({EXPECTED_CURRENCY}) x JOIN claims c USING (claim_id)"
                          " WHERE (c.is_current_testimony, c.currency_reason)"
                          " IS DISTINCT FROM (x.is_current, x.currency_reason)")


def living_superseded(conn: psycopg.Connection) -> Counted:
    """Claims still current that the latest version of their living document no longer carries."""
    return _counted(conn, f"SELECT claim_id FROM ({LIVING_SUPERSEDED}) s")


# Every fact beside its evidence counted by the rule (`s.supports`, `s.contradicts`).
_COUNTED_FACTS = f"facts f CROSS JOIN LATERAL ({EVIDENCE_COUNTS.format(fact='f.fact_id')}) s"
_COUNT_DISAGREES = "(f.evidence_count, f.contradicting_count) <> (s.supports, s.contradicts)"
# Reconcile retracts or withdraws a fact left with no support, and restores a withdrawn one
# that is supported again.
_BELIEF_DISAGREES = ("f.invalidated_at IS NULL AND ((f.support = 'current' AND s.supports = 0)"
                     " OR (f.support = 'withdrawn' AND s.supports > 0))")


def evidence_count_mismatches(conn: psycopg.Connection) -> Counted:
    """Facts whose stored `evidence_count` or `contradicting_count` is not the number of distinct
    documents with current testimony for (against) them (`facts_store.EVIDENCE_COUNTS`)."""
    return _counted(conn, f"SELECT f.fact_id FROM {_COUNTED_FACTS} WHERE {_COUNT_DISAGREES}")


def unsupported_beliefs(conn: psycopg.Connection) -> Counted:
    """Facts still believed (not retracted) whose support disagrees with their evidence: `current`
    with no document's current testimony left for them, or `withdrawn` while some supports them
    again."""
    return _counted(conn, f"SELECT f.fact_id FROM {_COUNTED_FACTS} WHERE {_BELIEF_DISAGREES}")


def fact_ids_to_reconcile(conn: psycopg.Connection) -> list[str]:
    """Every fact the two questions above name (not only their examples)."""
    return [r[0] for r in conn.execute(
        f"SELECT f.fact_id::text FROM {_COUNTED_FACTS} WHERE {_COUNT_DISAGREES} OR ({_BELIEF_DISAGREES})"
        " ORDER BY 1").fetchall()]


# --- objects ------------------------------------------------------------------------------

def object_references(conn: psycopg.Connection) -> Iterator[tuple[str, str | None]]:
    """(object key, a version that is not deleted and needs it, or None) for every object a row
    names: the original bytes of a content object, the Markdown of a representation. Objects only
    deleted versions name are referenced (deleting retracts, it does not erase) but not needed."""
    with conn.cursor(name="check_object_references") as cur:
        cur.itersize = 10_000
        cur.execute(
            "SELECT o.object_key, (SELECT min(v.version_id::text) FROM versions v"
            "                      WHERE v.content_hash = o.content_hash AND v.status <> 'deleted')"
            " FROM content_objects o"
            " UNION ALL"
            " SELECT r.object_key, CASE WHEN v.status <> 'deleted' THEN v.version_id::text END"
            " FROM representations r JOIN versions v USING (version_id)")
        yield from cur


def requeueable_versions(conn: psycopg.Connection, error_prefix: str) -> list[tuple[str, str]]:
    """(version_id, object key of its bytes) of versions not deleted whose document stage is
    `failed` or `dead_letter` because their stored bytes could not be read (`last_error` starts
    with `error_prefix`)."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT DISTINCT v.version_id::text, o.object_key FROM stage_work w JOIN versions v USING (version_id)"
        " JOIN content_objects o USING (content_hash)"
        " WHERE w.status IN ('failed', 'dead_letter') AND v.status <> 'deleted' AND starts_with(w.last_error, %s)"
        " ORDER BY 1", (error_prefix,)).fetchall()]


# --- vectors --------------------------------------------------------------------------------

def pinned_dim(conn: psycopg.Connection) -> int | None:
    row = conn.execute("SELECT embedding_dim FROM deployment").fetchone()
    return row[0] if row else None


@dataclass(frozen=True)
class VectorColumn:
    table: str
    column: str
    typed_dim: int | None          # the column's declared dimension; None when untyped
    wrong_dim: Counted             # vectors of another dimension than the pin's
    zero_norm: Counted             # all-zero vectors: no direction, so no cosine distance


def vector_columns(conn: psycopg.Connection, dim: int) -> list[VectorColumn]:
    """Every served vector column against the pinned dimension `dim`. (`reembed_vectors` holds
    other models' vectors on purpose and is not one of them.)"""
    found = []
    for table, column, _ in VECTOR_COLUMNS:
        typmod = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
                              (table, column)).fetchone()[0]
        ids = sql.SQL("SELECT {} FROM {} WHERE {} IS NOT NULL AND ").format(
            sql.Identifier(_ROW_IDS[table]), sql.Identifier(table), sql.Identifier(column))
        wrong = _counted(conn, ids + sql.SQL("vector_dims({}) <> {}").format(sql.Identifier(column), sql.Literal(dim)))
        zero = _counted(conn, ids + sql.SQL("vector_norm({}) = 0").format(sql.Identifier(column)))
        found.append(VectorColumn(table, column, None if typmod == -1 else typmod, wrong, zero))
    return found


# --- indexes --------------------------------------------------------------------------------

def declared_indexes() -> dict[str, str]:
    """{index name: the statement that creates it} for every index the migrations declare and no
    later statement drops (0020 replaced 0003's `facts_subject` and `facts_object`)."""
    declared: dict[str, str] = {}
    for _, _, text in migration_files():
        for m in _DECLARED_INDEX.finditer(text):
            if m.group(1):
                declared[m.group(1)] = m.group(0)
            else:
                declared.pop(m.group(2), None)
    return declared


def expected_indexes(conn: psycopg.Connection) -> list[str]:
    """The migrations' indexes, and the HNSW index of every vector column once a model is pinned."""
    names = list(declared_indexes())
    if pinned_dim(conn) is not None:
        names += [index for _, _, index in VECTOR_COLUMNS]
    return names


def missing_indexes(conn: psycopg.Connection) -> list[str]:
    names = expected_indexes(conn)
    return [n for n, there in conn.execute("SELECT n, to_regclass(n) IS NOT NULL FROM unnest(%s::text[]) n ORDER BY n",
                                          (names,)).fetchall() if not there]


def invalid_indexes(conn: psycopg.Connection) -> list[str]:
    """Indexes PostgreSQL marks invalid (a `CREATE INDEX CONCURRENTLY` or `REINDEX CONCURRENTLY`
    that failed): the planner never uses them, yet every write still maintains them."""
    return [r[0] for r in conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE NOT i.indisvalid AND n.nspname NOT IN ('pg_catalog', 'pg_toast', 'information_schema')"
        " ORDER BY 1").fetchall()]


def is_reindex_leftover(index: str) -> bool:
    return _REINDEX_LEFTOVER.search(index) is not None


def reindex(conn: psycopg.Connection, index: str) -> None:
    """Rebuild `index` beside the old one, so reads and writes go on (`conn` in autocommit)."""
    conn.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.Identifier(index)))


def build_declared_index(conn: psycopg.Connection, index: str) -> None:
    """Build a missing migration index with its migration's own statement (`conn` in autocommit),
    concurrently, so writes go on while it builds."""
    statement = declared_indexes()[index]
    concurrent = re.sub(r"^CREATE\s+(UNIQUE\s+)?INDEX\s+(IF\s+NOT\s+EXISTS\s+)?",
                        lambda m: f"CREATE {m.group(1) or ''}INDEX CONCURRENTLY IF NOT EXISTS ", statement,
                        flags=re.IGNORECASE)
    conn.execute(concurrent.rstrip(";"))
