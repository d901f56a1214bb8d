"""Session fixtures: one embedded PostgreSQL and one local Ray for the whole test run.

Each test that needs a memory gets its own database, cloned from a migrated template (fast), and
its own object-store folder, so tests never see each other's rows.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from pipeline.settings import Settings, load_settings

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_admin_dsn():
    from sql import embedded

    # Not under pytest's temp folder: a root-run server drops to its own user, which must be able
    # to reach the data folder (pytest's folders are private to root).
    home = Path(tempfile.mkdtemp(prefix="corpusmem-test-pg-"))
    os.chmod(home, 0o755)
    yield embedded.start(home / "pg", database="postgres")
    embedded.stop(home / "pg")
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(pg_admin_dsn: str) -> str:
    from sql import embedded, store

    embedded.ensure_database(pg_admin_dsn, "cm_template")
    with psycopg.connect(_dsn_for(pg_admin_dsn, "cm_template")) as conn:
        store.migrate(conn)
    return "cm_template"


def _dsn_for(admin_dsn: str, database: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(admin_dsn)
    info["dbname"] = database
    return psycopg.conninfo.make_conninfo(**info)


@pytest.fixture
def memory(pg_admin_dsn: str, template_db: str, tmp_path: Path) -> Settings:
    """Settings for a fresh, empty, migrated memory of this test alone."""
    from sql import embedded

    name = f"cm_test_{os.getpid()}_{next(_counter)}"
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
