"""Fixtures of the read API's tests: the app in process with credentials, a model for questions,
and `corpusmem serve` on a copy of the example memory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from serve import auth
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools
from tests.support.apps import no_embedder
from tests.support.memory import clone_example, unique_name
from tests.support.paths import ROOT
from tests.support.ports import free_port
from tests.support.waiting import wait_until_serving


@pytest.fixture
def api(memory):
    """The app over an empty memory, with one credential per scope: `r-secret` reads, `i-secret`
    ingests, `w-secret` writes."""
    from sql.store import authority as store

    with store.connect(memory.dsn) as conn:
        store.migrate(conn)
    hashes = auth.parse_tokens("read:r-secret,ingest:i-secret,write:w-secret", None)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)
    info = DeploymentInfo("00000000-0000-0000-0000-0000000000aa", "test", "all-MiniLM-L6-v2",
                          memory.object_store_uri, 1024, tuple(hashes.items()))
    with TestClient(build_app(pools, info, no_embedder)) as client:   # the app opens and closes the pools
        yield client


@pytest.fixture(scope="module")
def embed():
    """Questions encoded as the memories of these tests were made: with the default settings."""
    from actors.embedder import load_model
    from jobs import runtime
    from jobs.settings import load_settings

    model = load_model(runtime.embedding_model(load_settings({}), None), "cpu")

    async def embed(text: str, _pin: str | None = None):
        return model.encode([text], normalize_embeddings=True)[0]
    return embed


@pytest.fixture(scope="session")
def served(serving):
    """The base URL of `corpusmem serve` on a copy of the imported example corpus, one server for
    the session's API tests (the client test ingests a note and deletes it again)."""
    return serving[0]


@pytest.fixture(scope="session")
def served_log(serving):
    """What that server printed (stdout and stderr), as a file it keeps writing."""
    return serving[1]


@pytest.fixture(scope="session")
def serving(pg_admin_dsn, example_import, ray_local, tmp_path_factory):
    """(base URL, log file) of the session's `corpusmem serve` (see `served`)."""
    tmp_path = tmp_path_factory.mktemp("served")
    memory = clone_example(pg_admin_dsn, example_import, unique_name("cm_served"), tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "REMEMBER_"))}
    env.update(CORPUSMEM_DSN=memory.dsn, CORPUSMEM_HOME=str(memory.home), CORPUSMEM_OBJECT_STORE=memory.object_store_uri,
               CORPUSMEM_RAY_DASHBOARD="true")   # tests/serve/test_dashboard.py watches its Ray's jobs
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, server, tmp_path / "serve.log")
        yield url, tmp_path / "serve.log"
    finally:
        # To the server alone, as `corpusmem serve`'s own stop test does: its Ray's processes share
        # its group, and a SIGTERM that reaches the GCS as well leaves Ray's shutdown waiting on it
        # (measured: 7 s to exit instead of 3).
        os.kill(server.pid, 15)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
        log.close()
