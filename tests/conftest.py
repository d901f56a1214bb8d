"""Session fixtures: one embedded PostgreSQL and one local Ray for the whole test run.

Each test that needs a memory gets its own database, cloned from a migrated template (fast), and
its own object-store folder, so tests never see each other's rows. The example corpus
(`examples/team`) is imported once per session: tests that only read it share `example_memory`,
tests that change it take `example_memory_copy`, a clone of the imported database.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from jobs.settings import Settings, load_settings

if TYPE_CHECKING:
    from jobs.import_corpus import RunReport

_counter = itertools.count()
# Row counts of these tables are the example memory's fingerprint: a test that changes any of them
# in the shared copy would make other tests depend on the order they run in.
_FINGERPRINT_TABLES = ("documents", "versions", "chunks", "claims", "claim_occurrences", "entities",
                       "facts", "fact_decisions", "fact_evidence", "import_runs", "stage_work")


@pytest.fixture(scope="session")
def pg_admin_dsn():
    from sql.store import embedded

    # Not under pytest's temp folder: a root-run server drops to its own user, which must be able
    # to reach the data folder (pytest's folders are private to root).
    home = Path(tempfile.mkdtemp(prefix="corpusmem-test-pg-"))
    os.chmod(home, 0o755)
    yield embedded.start(home / "pg", database="postgres")
    embedded.stop(home / "pg")
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(pg_admin_dsn: str) -> str:
    from sql.store import authority as store
    from sql.store import embedded

    embedded.ensure_database(pg_admin_dsn, "cm_template")
    with psycopg.connect(_dsn_for(pg_admin_dsn, "cm_template")) as conn:
        store.migrate(conn)
    return "cm_template"


def _dsn_for(admin_dsn: str, database: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(admin_dsn)
    info["dbname"] = database
    return psycopg.conninfo.make_conninfo(**info)


def _unique_name(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


@pytest.fixture
def memory(pg_admin_dsn: str, template_db: str, tmp_path: Path) -> Settings:
    """Settings for a fresh, empty, migrated memory of this test alone."""
    from sql.store import embedded

    name = _unique_name("cm_test")
    embedded.ensure_database(pg_admin_dsn, name, template=template_db)
    return load_settings({}, home=tmp_path / "home", dsn=_dsn_for(pg_admin_dsn, name),
                         object_store=str(tmp_path / "objects"))


@pytest.fixture(scope="session")
def ray_local():
    import ray

    from jobs import runtime

    runtime.init_ray(num_cpus=2, quiet=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def example_corpus() -> Path:
    return Path(__file__).resolve().parent.parent / "examples" / "team"


@dataclass(frozen=True)
class ExampleImport:
    """The one import of the example corpus of a session. Its database is only ever a template:
    nothing connects to it except to clone it, so a clone can always be taken."""

    database: str
    object_store: Path
    report: RunReport


def _import_example(admin_dsn: str, template_db: str, corpus: Path, root: Path, prefix: str,
                    **options: Any) -> tuple[str, Settings, RunReport]:
    """The example corpus imported (`do_import` with `options`) into a new database, its home and
    object store under `root`: (database, settings, report). A failed import stops the session's
    tests here."""
    from sql.store import embedded
    from tests.jobs.test_import import do_import

    name = _unique_name(prefix)
    embedded.ensure_database(admin_dsn, name, template=template_db)
    settings = load_settings({}, home=root / "home", dsn=_dsn_for(admin_dsn, name),
                             object_store=str(root / "objects"))
    report = do_import(settings, corpus, modified_at_from="path", **options)
    assert report.status == "succeeded" and report.counts["failed"] == 0, report.failures
    return name, settings, report


@pytest.fixture(scope="session")
def example_import(pg_admin_dsn: str, template_db: str, ray_local, example_corpus: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> ExampleImport:
    """Import `examples/team` once (rules extractor, `modified_at_from="path"`, 1 worker, batches
    of 4: what `do_import` does by default) into a database that only serves as a template."""
    root = tmp_path_factory.mktemp("example-import")
    name, _, report = _import_example(pg_admin_dsn, template_db, example_corpus, root, "cm_example_source")
    return ExampleImport(name, root / "objects", report)


def _clone_example(admin_dsn: str, source: ExampleImport, name: str, root: Path) -> Settings:
    """A database cloned from the imported example (`CREATE DATABASE ... TEMPLATE`, a file copy),
    with its own copy of the object store, so the clone shares nothing with other tests."""
    from sql.store import embedded

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        # Ray actors of the import may still hold a connection for a moment after it returned;
        # PostgreSQL refuses to copy a database anyone is connected to.
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                     " WHERE datname = %s AND pid <> pg_backend_pid()", (source.database,))
    embedded.ensure_database(admin_dsn, name, template=source.database)
    shutil.copytree(source.object_store, root / "objects")
    return load_settings({}, home=root / "home", dsn=_dsn_for(admin_dsn, name),
                         object_store=str(root / "objects"))


def _fingerprint(settings: Settings) -> dict[str, int]:
    with psycopg.connect(settings.dsn) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _FINGERPRINT_TABLES}


@pytest.fixture(scope="session")
def example_memory(pg_admin_dsn: str, example_import: ExampleImport,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """Settings for the example corpus, imported once per session and shared: READ ONLY.

    Every test that takes it sees the same memory (`examples/team`: 11 documents, imported with
    `do_import(settings, example_corpus, modified_at_from="path")`; its run report is
    `example_report`). A test that writes (imports, deletes, ingests, changes rows) must take
    `example_memory_copy` instead; at the end of the session a check fails if the shared memory's
    row counts changed. Processes may hold connections to it (a read API's pools), since clones
    are taken from the untouched source, not from this database."""
    settings = _clone_example(pg_admin_dsn, example_import, _unique_name("cm_example"),
                              tmp_path_factory.mktemp("example-memory"))
    before = _fingerprint(settings)
    yield settings
    after = _fingerprint(settings)
    assert after == before, ("a test wrote to the shared, read-only example_memory; "
                             f"use example_memory_copy for tests that change it: {before} -> {after}")


@pytest.fixture(scope="session")
def example_report(example_import: ExampleImport) -> RunReport:
    """The run report of the session's one import of the example corpus (see `example_memory`)."""
    return example_import.report


@pytest.fixture
def example_memory_copy(pg_admin_dsn: str, example_import: ExampleImport, tmp_path: Path) -> Settings:
    """Settings for this test's own copy of the imported example corpus, free to change: a
    `CREATE DATABASE ... TEMPLATE` clone of the session's import (under a second, not a new
    import) and a copy of its object store under `tmp_path / "objects"`."""
    return _clone_example(pg_admin_dsn, example_import, _unique_name("cm_example_copy"), tmp_path)


@pytest.fixture(scope="session")
def example_memory_four_workers(pg_admin_dsn: str, template_db: str, ray_local, example_corpus: Path,
                                tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The example corpus imported a second time with 4 workers and batches of 2, where
    `example_memory` had 1 worker and batches of 4: determinism tests compare the two. READ ONLY."""
    _, settings, _ = _import_example(pg_admin_dsn, template_db, example_corpus,
                                     tmp_path_factory.mktemp("example-four-workers"), "cm_example_four_workers",
                                     workers=4, batch_size=2)
    return settings
