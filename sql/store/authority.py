"""Opening the authority: which server, migrations applied once, the deployment and its pinned model.

`open_store(settings, ...)` is what every entry point calls first. It picks the server
(`CORPUSMEM_DSN`, else the embedded PostgreSQL), applies pending migrations under an advisory
lock (a second start changes nothing), and pins the embedding model on the deployment row: a
memory whose vectors came from one model refuses another one with an error naming both.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

import psycopg
from psycopg import sql

from sql.store import embedded

_log = logging.getLogger(__name__)

# Any constant works; it only has to be the same for every corpusmem process.
_MIGRATION_LOCK = 0x636F7270  # "corp"

# Vector columns typed and indexed once the deployment pins a dimension: (table, column, index).
VECTOR_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("chunks", "embedding", "chunks_embedding_hnsw"),
    ("claims", "embedding", "claims_embedding_hnsw"),
    ("facts", "embedding", "facts_embedding_hnsw"),
    ("entities", "profile_embedding", "entities_profile_hnsw"),
)

# pgvector's HNSW scan returns at most `ef_search` rows (default 40); nomination asks for up to
# 200 candidates a channel (the seed's `candidate_k`, and memory_v1's per-statement search budget).
# The read API's connections and the query runner's transactions both set it.
HNSW_EF_SEARCH = 200


class StoreError(RuntimeError):
    """The database cannot be used as asked; the message says what to change."""


@dataclass(frozen=True)
class Deployment:
    deployment_id: str
    build_revision: str
    embedding_model: str
    embedding_dim: int


class ServerSettings(Protocol):
    """What choosing the server needs of `jobs.settings.Settings`; named here so that `sql/` does
    not import the entry points' floor."""

    @property
    def dsn(self) -> str | None: ...

    @property
    def pg_dir(self) -> Path: ...


def resolve_dsn(settings: ServerSettings) -> str:
    """The DSN to use: `CORPUSMEM_DSN` as given, else the embedded server (started if needed)."""
    if settings.dsn:
        return settings.dsn
    return embedded.start(settings.pg_dir)


def connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    try:
        return psycopg.connect(dsn, **kwargs)
    except psycopg.OperationalError as err:
        raise StoreError(f"cannot connect to PostgreSQL ({_redact(dsn)}): {err}".strip()) from err


def _redact(dsn: str) -> str:
    """A DSN fit for an error message: the password, if any, replaced."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable DSN>"
    if "password" in info:
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo(**info)


def migration_files() -> list[tuple[int, str, str]]:
    """(number, name, SQL) of every shipped migration, in order."""
    found = []
    for entry in resources.files("sql").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number = int(entry.name.split("_", 1)[0])
            found.append((number, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply pending migrations, each in its own transaction; return the names applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        _ensure_extensions(conn)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0]: row[1] for row in conn.execute("SELECT version, checksum FROM schema_migrations")}
        for number, name, text in migration_files():
            checksum = hashlib.sha256(text.encode()).hexdigest()
            if number in done:
                if done[number] != checksum:
                    _log.warning("migration %s changed after it was applied; not re-applied", name)
                continue
            conn.execute(text)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (number, name, checksum),
            )
            applied.append(name)
    return applied


def _ensure_extensions(conn: psycopg.Connection) -> None:
    available = {row[0] for row in conn.execute(
        "SELECT name FROM pg_available_extensions WHERE name IN ('vector', 'pg_trgm', 'fuzzystrmatch')")}
    missing = {"vector", "pg_trgm", "fuzzystrmatch"} - available
    if missing:
        raise StoreError(
            f"the PostgreSQL server lacks the extension(s) {', '.join(sorted(missing))} "
            "(pgvector is packaged as 'vector'); install them or unset CORPUSMEM_DSN to use the "
            "embedded PostgreSQL")


def pinned_model(dsn: str) -> str | None:
    """The embedding model (and execution) this memory's vectors were made with; None for a new
    memory."""
    with connect(dsn) as conn:
        if conn.execute("SELECT to_regclass('deployment')").fetchone()[0] is None:
            return None
        row = conn.execute(PINNED_MODEL_SQL).fetchone()
    return row[0] if row else None


# The pin, as a reader asks for it inside its snapshot: that snapshot's vectors are of this model.
PINNED_MODEL_SQL = "SELECT embedding_model FROM deployment"


def pin_deployment(conn: psycopg.Connection, *, embedding_model: str, embedding_dim: int,
                   build_revision: str) -> Deployment:
    """Create the deployment on first use; afterwards refuse a different embedding model."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        row = conn.execute(
            "SELECT deployment_id, build_revision, embedding_model, embedding_dim FROM deployment"
        ).fetchone()
        if row is None:
            row = (str(uuid.uuid4()), build_revision, embedding_model, embedding_dim)
            conn.execute(
                "INSERT INTO deployment (deployment_id, build_revision, embedding_model, embedding_dim)"
                " VALUES (%s, %s, %s, %s)", row)
            # Every servability view joins this one row: never analysed, it is planned as 670 rows.
            conn.execute("ANALYZE deployment")
        elif (row[2], row[3]) != (embedding_model, embedding_dim):
            raise StoreError(
                f"this memory's vectors come from embedding model {row[2]!r} ({row[3]} dimensions); "
                f"refusing {embedding_model!r} ({embedding_dim} dimensions). Set "
                f"CORPUSMEM_EMBEDDING_MODEL={row[2].split('@')[0]} and CORPUSMEM_EMBEDDING_EXECUTION=auto, "
                "move the memory to the new model with `corpusmem reembed`, "
                "or use a new memory (another CORPUSMEM_HOME or CORPUSMEM_DSN)")
        elif row[1] != build_revision:
            conn.execute("UPDATE deployment SET build_revision = %s", (build_revision,))
            row = (row[0], build_revision, row[2], row[3])
        _type_vector_columns(conn, row[3])
    return Deployment(str(row[0]), row[1], row[2], row[3])


def lock_pin(conn: psycopg.Connection) -> Deployment:
    """Inside the caller's transaction: hold the pin (no import can pin or check it meanwhile)
    and return it. `corpusmem reembed` switches the pin under this lock."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
    row = conn.execute("SELECT deployment_id, build_revision, embedding_model, embedding_dim FROM deployment"
                       " FOR UPDATE").fetchone()
    if row is None:
        raise StoreError("this memory has no embedding model yet: import something first")
    return Deployment(str(row[0]), row[1], row[2], row[3])


def repin(conn: psycopg.Connection, *, embedding_model: str, embedding_dim: int) -> None:
    """Inside the transaction of `lock_pin`: pin another model. The HNSW indexes are dropped
    (`ensure_vector_indexes` builds them again once the vectors are in), and on a change of
    dimension every vector column is emptied and typed anew: the caller fills them again in the
    same transaction, so no reader ever sees a column of the other space."""
    old_dim = conn.execute("SELECT embedding_dim FROM deployment").fetchone()[0]
    for table, column, index in VECTOR_COLUMNS:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
        if embedding_dim != old_dim:
            conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE vector({}) USING NULL").format(
                sql.Identifier(table), sql.Identifier(column), sql.Literal(embedding_dim)))
    conn.execute("UPDATE deployment SET embedding_model = %s, embedding_dim = %s", (embedding_model, embedding_dim))


def _type_vector_columns(conn: psycopg.Connection, dim: int) -> None:
    """Give every still-untyped vector column the pinned dimension (new columns from later
    migrations included), so HNSW indexes can be built on them. (PostgreSQL refuses this while a
    view reads the column: the memory_v1 views name their columns and never read a vector.)"""
    for table, column, _ in VECTOR_COLUMNS:
        typmod = conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass"
                              " AND attname = %s", (table, column)).fetchone()[0]
        if typmod == -1:
            conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN {} TYPE vector({})").format(
                sql.Identifier(table), sql.Identifier(column), sql.Literal(dim)))


# What an HNSW build may hold in memory: as much as its table takes, between these. pgvector
# builds the graph in memory while it fits in maintenance_work_mem and slowly on disk after:
# 157,051 claims took 32.2 s at PostgreSQL's default 64 MB and 13.1 s at 1 GB.
_BUILD_MEMORY_MIN, _BUILD_MEMORY_MAX = "64MB", "2GB"


def ensure_vector_indexes(conn: psycopg.Connection) -> list[str]:
    """Build the HNSW indexes that are missing (after a bulk load); return those built."""
    built = []
    for table, column, index in VECTOR_COLUMNS:
        exists = conn.execute("SELECT to_regclass(%s)", (index,)).fetchone()[0]
        if exists is None:
            with conn.transaction():   # the memory setting lasts as long as the build
                conn.execute("SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(%s), least("
                             "pg_size_bytes(%s), pg_table_size(%s::regclass))) / 1024 || 'kB', true)",
                             (_BUILD_MEMORY_MIN, _BUILD_MEMORY_MAX, table))
                conn.execute(sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw ({} vector_cosine_ops)").format(
                    sql.Identifier(index), sql.Identifier(table), sql.Identifier(column)))
            analyse(conn, table)
            built.append(index)
    conn.commit()
    return built


# What each step of an import fills or changes, by the step that has just done it. A table read
# before autovacuum got to it is planned on what it held before the step: the facts phase's binding
# of assertions to entities, planned while the planner still believed no mention had an entity,
# read every mention for each assertion (over 300 s at 10,000 notes, for seconds of work).
FILLED_BY = {
    "pipeline": ("documents", "versions", "chunks", "claims", "claim_normalizations", "stage_work"),
    "normalize": ("assertions", "mentions", "claim_normalizations"),
    "resolve": ("mentions", "entities", "entity_aliases"),
    "bind": ("assertions",),
    "adjudicate": ("facts", "fact_evidence", "fact_decisions", "assertions"),
    "label": ("facts",),
}


# A table is analysed again once this share of its rows changed since its last analysis (and at
# least `_STALE_ROWS`): autovacuum's own rule, applied at once, so that a small run (the server's
# micro-batches) analyses nothing.
_STALE_SHARE, _STALE_ROWS = 0.1, 1000


def refresh_statistics(conn: psycopg.Connection, step: str, changed: int | None = None) -> list[str]:
    """ANALYZE what `step` filled (`FILLED_BY`) where it changed enough to mislead the planner,
    so the next step's statements are planned on what the tables hold, and merge what waits in
    those tables' GIN indexes (`merge_pending_entries`); return the tables analysed.

    `changed`: the rows the step wrote, as it counted them. Without it, PostgreSQL's own count of
    changes since the last analysis decides; a backend reports its changes up to seconds after
    it committed, so a step that has just written says how much."""
    tables = list(FILLED_BY[step])
    if changed is None:
        stale = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(%s) AND schemaname = 'public'"
            " AND n_mod_since_analyze > %s * n_live_tup + %s ORDER BY relname", (tables, _STALE_SHARE, _STALE_ROWS))]
    else:
        stale = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relnamespace = 'public'::regnamespace"
            " AND %s > %s * greatest(reltuples, 0) + %s ORDER BY relname", (tables, changed, _STALE_SHARE, _STALE_ROWS))]
    for table in stale:
        analyse(conn, table)
    merge_pending_entries(conn, tables)
    return stale


# The tables whose common lexemes lexical nomination reads from a copy kept at each analysis
# (0024): reading them from the statistics costs a text round trip of thousands of lexemes a call.
LEXICAL_TABLES = ("claims", "chunks")


def analyse(conn: psycopg.Connection, table: str) -> None:
    """ANALYZE `table`, and keep the copy of its common lexemes that lexical nomination reads."""
    conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    if table in LEXICAL_TABLES:
        conn.execute("SELECT memory_v1_private.keep_lexical_statistics(%s)", (table,))


def merge_pending_entries(conn: psycopg.Connection, tables: list[str]) -> int:
    """Merge the entries waiting in the pending lists of `tables`' GIN indexes (full text,
    trigrams) into the indexes; return how many pages the lists held.

    A GIN index takes new rows into a pending list (up to `gin_pending_list_limit`, 4 MB), and
    every search reads that whole list until a vacuum or an overflow merges it. An import leaves
    hundreds of pages there: on 108,367 claims, 247 pages of `claims_tsv` and 494 of
    `facts_label_trgm` were read again by every question, 1.7 ms a term of the lexical
    nomination and a quarter of facts_context's PostgreSQL time. Merging costs what the next
    overflow would have, once."""
    indexes = [r[0] for r in conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'gin' AND i.indrelid = ANY(%s::regclass[])"
        " ORDER BY 1", (tables,))]
    return sum(conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (index,)).fetchone()[0]
               for index in indexes)


def warm_cache(conn: psycopg.Connection, share: float) -> tuple[int, int]:
    """Load what reads walk into PostgreSQL's cache (`pg_prewarm`, migration 0025), up to `share`
    of `shared_buffers` (`CORPUSMEM_SERVE_CACHE_SHARE`): the vector indexes first (an HNSW scan of
    200 candidates touches about 2,000 pages of the graph, scattered), then the other indexes, then
    the tables, each group the most read first. Return the relations and bytes loaded; (0, 0) where
    the module is not installed.

    A server just started found those pages in the kernel's cache at best, one read each: on
    `bench serve`'s memory (108,367 claims) a claims nomination by meaning read 1,260 of its 1,973
    pages that way. A relation that does not fit what is left of the share is skipped."""
    if conn.execute("SELECT to_regproc('pg_prewarm')").fetchone()[0] is None:
        return 0, 0
    buffers, block = conn.execute("SELECT setting::bigint, current_setting('block_size')::int FROM pg_settings"
                                  " WHERE name = 'shared_buffers'").fetchone()
    vector = [index for _, _, index in VECTOR_COLUMNS]
    rows = conn.execute(
        "SELECT c.oid::regclass::text, pg_relation_size(c.oid) / %s"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_stat_user_indexes i ON i.indexrelid = c.oid"
        " LEFT JOIN pg_stat_user_tables t ON t.relid = c.oid"
        " WHERE n.nspname IN ('public', 'memory_v1_private') AND c.relkind IN ('r', 'i')"
        "   AND c.relpersistence = 'p'"
        " ORDER BY CASE WHEN c.relname = ANY(%s) THEN 0 WHEN c.relkind = 'i' THEN 1 ELSE 2 END,"
        "          array_position(%s, c.relname::text), coalesce(i.idx_scan, t.seq_scan + t.idx_scan, 0) DESC, 1",
        (block, vector, vector)).fetchall()
    budget, loaded, relations = int(buffers * share), 0, 0
    for name, pages in rows:
        if pages == 0 or loaded + pages > budget:
            continue
        loaded += conn.execute("SELECT pg_prewarm(%s::regclass)", (name,)).fetchone()[0]
        relations += 1
    return relations, loaded * block


def drop_vector_indexes_if_empty(conn: psycopg.Connection) -> list[str]:
    """Before a bulk load into an empty table, drop its HNSW index: building it once at the end is
    far cheaper than maintaining it row by row."""
    dropped = []
    for table, _, index in VECTOR_COLUMNS:
        empty = conn.execute(sql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {})").format(
            sql.Identifier(table))).fetchone()[0]
        if empty and conn.execute("SELECT to_regclass(%s)", (index,)).fetchone()[0] is not None:
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
            dropped.append(index)
    conn.commit()
    return dropped


@dataclass(frozen=True)
class Store:
    dsn: str
    deployment: Deployment


def open_store(settings: ServerSettings, *, embedding_model: str, embedding_dim: int,
               build_revision: str) -> Store:
    """Resolve the server, migrate, pin the deployment. Safe to call from many processes."""
    dsn = resolve_dsn(settings)
    with connect(dsn) as conn:
        applied = migrate(conn)
        if applied:
            _log.info("applied migrations: %s", ", ".join(applied))
        deployment = pin_deployment(conn, embedding_model=embedding_model,
                                    embedding_dim=embedding_dim, build_revision=build_revision)
    return Store(dsn=dsn, deployment=deployment)
