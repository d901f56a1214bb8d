"""Memories for tests: databases on the session's embedded PostgreSQL, imports into them, reads of
their rows. The fixtures built on these are in tests/conftest.py."""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from jobs.settings import Settings, load_settings

if TYPE_CHECKING:
    from jobs.run_report import RunReport

_counter = itertools.count()

# How every memory the suite makes embeds (the example memory, a test's `memory`, the `corpusmem`
# processes it starts), on every machine: not what `auto` would calibrate on the machine at that
# moment, since a calibration under the suite's load can choose another execution, whose vectors
# differ, and a test that compares two memories (two nodes against one) would compare two spaces.
# A test of `auto` asks for it.
SUITE_EXECUTION = "onnx-int8"


def dsn_for(admin_dsn: str, database: str) -> str:
    """The admin DSN pointed at another database of the same server."""
    info = psycopg.conninfo.conninfo_to_dict(admin_dsn)
    info["dbname"] = database
    return psycopg.conninfo.make_conninfo(**info)


def unique_name(prefix: str) -> str:
    """A database name no other test of this run (or of another run on this server) takes."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def start_session_ray() -> None:
    """The suite's one local Ray, started by whichever test needs it first (the `ray_local` fixture
    or an import): two CPUs, quiet, and without the dashboard's modules (nobody watches it, and
    they would poll all the while). Nothing to do once it runs."""
    from jobs import runtime

    runtime.init_ray(num_cpus=2, quiet=True, dashboard=False)


def new_memory(admin_dsn: str, template_db: str, root: Path, name: str) -> Settings:
    """Settings for a fresh, empty, migrated memory in database `name` (a clone of `template_db`),
    its home and object store under `root`, embedding as the suite's memories do (`SUITE_EXECUTION`)."""
    from sql.store import embedded

    embedded.ensure_database(admin_dsn, name, template=template_db)
    return load_settings({}, home=root / "home", dsn=dsn_for(admin_dsn, name), object_store=str(root / "objects"),
                         embedding_execution=SUITE_EXECUTION)


def disconnect(admin_dsn: str, database: str) -> None:
    """End every connection to `database`. The session's Ray keeps its worker processes, and each
    keeps the stages of its last runs with their connections (`actors/resident.py`); a test's
    database is never used again once the test ends, so its fixture ends them, or the suite's
    server runs out of connections (100) when a busy machine makes Ray start more workers."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE datname = %s AND pid <> pg_backend_pid()", (database,))


def do_import(memory: Settings, *paths: Path | str, batch_size: int = 4, workers: int = 1,
              **source: object) -> RunReport:
    """`corpusmem import PATHS...` in this process (its Ray is the session's), into `memory`."""
    # Imported here, not at the top: unit tests load this module through conftest and need no Ray.
    from jobs.import_corpus import import_options, run_import

    start_session_ray()

    options = import_options(memory, tuple(str(p) for p in paths), source=source, batch_size=batch_size,
                             workers=workers, progress=False)
    return run_import(options, memory)


def rows(memory: Settings, query: str, *params: object) -> list[tuple]:
    with psycopg.connect(memory.dsn) as conn:
        return conn.execute(query, params).fetchall()


@dataclass(frozen=True)
class ExampleImport:
    """The one import of the example corpus of a session. Its database is only ever a template:
    nothing connects to it except to clone it, so a clone can always be taken."""

    database: str
    object_store: Path
    report: RunReport


def import_example(admin_dsn: str, template_db: str, corpus: Path, root: Path, prefix: str,
                   **options: Any) -> tuple[str, Settings, RunReport]:
    """The example corpus imported (`do_import` with `options`) into a new database, its home and
    object store under `root`: (database, settings, report). A failed import stops the test here.
    Its vectors are the suite's (`SUITE_EXECUTION`)."""
    name = unique_name(prefix)
    settings = new_memory(admin_dsn, template_db, root, name)
    report = do_import(settings, corpus, modified_at_from="path", **options)
    assert report.status == "succeeded" and report.counts["failed"] == 0, report.failures
    return name, settings, report


def clone_example(admin_dsn: str, source: ExampleImport, name: str, root: Path) -> Settings:
    """A database cloned from the imported example (`CREATE DATABASE ... TEMPLATE`, a file copy),
    with its own copy of the object store, so the clone shares nothing with other tests."""
    from sql.store import embedded

    # Ray actors of the import may still hold a connection for a moment after it returned;
    # PostgreSQL refuses to copy a database anyone is connected to.
    disconnect(admin_dsn, source.database)
    embedded.ensure_database(admin_dsn, name, template=source.database)
    shutil.copytree(source.object_store, root / "objects")
    return load_settings({}, home=root / "home", dsn=dsn_for(admin_dsn, name),
                         object_store=str(root / "objects"))


def write(folder: Path, files: dict[str, str]) -> Path:
    """A folder of text files (name → text) to import; the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder
