"""Session fixtures: one embedded PostgreSQL and one local Ray for the whole test run.

Each test that needs a memory gets its own database, cloned from a migrated template (fast), and
its own object-store folder, so tests never see each other's rows. The example corpus
(`examples/team`) is imported once per session: tests that only read it share `example_memory`,
tests that change it take `example_memory_copy`, a clone of the imported database.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

from jobs.settings import Settings
from tests.support.memory import (SUITE_EXECUTION, ExampleImport, clone_example, disconnect, dsn_for, import_example,
                                  new_memory, start_session_ray, unique_name)
from tests.support import groups, remember_venv
from tests.support.paths import EXAMPLES, database_temp

if TYPE_CHECKING:
    from jobs.run_report import RunReport

# The session's Ray, and the Ray of every command a test starts, is its own (`RAY_ADDRESS=local`):
# a command joins the Ray of a running `corpusmem serve` only where its test says so.
os.environ.setdefault("RAY_ADDRESS", "local")
# The `corpusmem` processes tests start embed as the suite's other memories do (`SUITE_EXECUTION`).
os.environ.setdefault("CORPUSMEM_EMBEDDING_EXECUTION", SUITE_EXECUTION)
# Nobody watches the Ray of a command a test starts: it runs without the dashboard (seconds sooner
# to start, less CPU beside the test). The tests of the dashboard, of the demo and of what a
# stopped command leaves running start theirs with it, as a user's command does.
os.environ.setdefault("CORPUSMEM_RAY_DASHBOARD", "false")

# Row counts of these tables are the example memory's fingerprint: a test that changes any of them
# in the shared copy would make other tests depend on the order they run in.
_FINGERPRINT_TABLES = ("documents", "versions", "chunks", "claims", "claim_occurrences", "entities",
                       "facts", "fact_decisions", "fact_evidence", "import_runs", "stage_work")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of the session's `corpusmem serve` is in a module of `SERVED_RAY_MODULES`, so that
    on several workers they run beside the other tests of a served Ray (`tests/support/groups.py`)."""
    stray = sorted({groups.module(item.nodeid) for item in items if "serving" in item.fixturenames}
                   - groups.SERVED_RAY_MODULES)
    if stray:
        raise pytest.UsageError(f"add {', '.join(stray)} to tests/support/groups.py::SERVED_RAY_MODULES: "
                                "its tests use the session's `corpusmem serve`")


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """On pytest-xdist workers (`make test TEST_WORKERS=2`): one group of tests at a time on a worker, in the order
    they are collected (`tests/support/groups.py`)."""
    return groups.scheduler(config, log)


@pytest.fixture(scope="session")
def pg_admin_dsn():
    from sql.store import embedded

    # Not under pytest's temp folder: a root-run server drops to its own user, which must be able
    # to reach the data folder (pytest's folders are private to root). On a tmpfs where it has room.
    home = Path(tempfile.mkdtemp(prefix="corpusmem-test-pg-", dir=database_temp()))
    os.chmod(home, 0o755)
    dsn = embedded.start(home / "pg", database="postgres")
    # The suite's server is deleted with its data at the end, and no test crashes the machine under
    # it: nothing needs its writes on disk. Without fsync its stop skips the flush of the session's
    # several hundred cloned databases (measured: 10–14 s for 150 clones, 21 s at the end of the
    # suite), and no commit or checkpoint waits on the disk.
    # Room for the connections the session's Ray keeps: its idle worker processes keep the stages of
    # their last runs, each with a connection to a test's database (`actors/resident.py`), and a
    # busy machine makes Ray start more of them. Fixtures end their own database's connections
    # (`disconnect`); 100 was still reached at the end of the suite. The setting needs a restart.
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET max_connections = 300")
    embedded.stop(home / "pg")
    dsn = embedded.start(home / "pg", database="postgres")
    yield dsn
    embedded.stop(home / "pg")
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(pg_admin_dsn: str) -> str:
    from sql.store import authority as store
    from sql.store import embedded

    embedded.ensure_database(pg_admin_dsn, "cm_template")
    with psycopg.connect(dsn_for(pg_admin_dsn, "cm_template")) as conn:
        store.migrate(conn)
    return "cm_template"


@pytest.fixture
def memory(pg_admin_dsn: str, template_db: str, tmp_path: Path) -> Iterator[Settings]:
    """Settings for a fresh, empty, migrated memory of this test alone, embedding as the suite's
    memories do (`SUITE_EXECUTION`); its connections are ended with the test (`disconnect`)."""
    name = unique_name("cm_test")
    yield new_memory(pg_admin_dsn, template_db, tmp_path, name)
    disconnect(pg_admin_dsn, name)


@pytest.fixture(scope="session")
def ray_local():
    import ray

    start_session_ray()
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def example_corpus() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def example_import(pg_admin_dsn: str, template_db: str, ray_local, example_corpus: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> ExampleImport:
    """Import `examples/team` once (rules extractor, `modified_at_from="path"`, 1 worker, batches
    of 4: what `do_import` does by default) into a database that only serves as a template."""
    root = tmp_path_factory.mktemp("example-import")
    name, _, report = import_example(pg_admin_dsn, template_db, example_corpus, root, "cm_example_source")
    return ExampleImport(name, root / "objects", report)


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
    settings = clone_example(pg_admin_dsn, example_import, unique_name("cm_example"),
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
def example_memory_copy(pg_admin_dsn: str, example_import: ExampleImport, tmp_path: Path) -> Iterator[Settings]:
    """Settings for this test's own copy of the imported example corpus, free to change: a
    `CREATE DATABASE ... TEMPLATE` clone of the session's import (under a second, not a new
    import) and a copy of its object store under `tmp_path / "objects"`; its connections are
    ended with the test (`disconnect`)."""
    name = unique_name("cm_example_copy")
    yield clone_example(pg_admin_dsn, example_import, name, tmp_path)
    disconnect(pg_admin_dsn, name)


@pytest.fixture(scope="session")
def example_memory_four_workers(pg_admin_dsn: str, template_db: str, ray_local, example_corpus: Path,
                                tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The example corpus imported a second time with 4 workers and batches of 2, where
    `example_memory` had 1 worker and batches of 4: determinism tests compare the two. READ ONLY."""
    _, settings, _ = import_example(pg_admin_dsn, template_db, example_corpus,
                                    tmp_path_factory.mktemp("example-four-workers"), "cm_example_four_workers",
                                    workers=4, batch_size=2)
    return settings


@pytest.fixture(scope="session")
def remember_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The python of the session's venv with the real `remember` 0.17.2 client in it."""
    return remember_venv.make_venv(tmp_path_factory.mktemp("remember-venv"))
