"""Credentials and scopes of the read API, and its error bodies, in process (no Ray)."""

from __future__ import annotations

import hashlib

import pytest
from fastapi.testclient import TestClient

from serve import auth
from serve.app import DeploymentInfo, build_app, open_pools

pytestmark = pytest.mark.integration


async def _embed(_text: str) -> list[float]:
    raise RuntimeError("no embedder in this test")


@pytest.fixture
def api(memory):
    from sql.store import authority as store

    with store.connect(memory.dsn) as conn:
        store.migrate(conn)
    hashes = auth.parse_tokens("read:r-secret,ingest:i-secret,write:w-secret", None)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)
    info = DeploymentInfo("00000000-0000-0000-0000-0000000000aa", "test", "all-MiniLM-L6-v2",
                          memory.object_store_uri, 1024, tuple(hashes.items()))
    with TestClient(build_app(pools, info, _embed)) as client:   # the app opens and closes the pools
        yield client


def test_credentials_and_scopes(api):
    assert api.get("/healthz").status_code == 200                   # never needs a credential
    assert api.get("/deployment").json() == {"detail": auth.MISSING}
    assert api.get("/deployment", headers={"Authorization": "Bearer nope"}).json() == {"detail": auth.REFUSED}
    read, ingest, write = ({"Authorization": f"Bearer {s}"} for s in ("r-secret", "i-secret", "w-secret"))
    assert api.get("/deployment", headers=read).status_code == 200
    denied = api.get("/deployment", headers=ingest)
    assert (denied.status_code, denied.json()) == (403, {"detail": auth.NARROW})
    # a read credential cannot ingest or delete; unknown paths need write
    assert api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x", headers=read).status_code == 403
    assert api.delete("/documents/00000000-0000-0000-0000-000000000001", headers=read).status_code == 403
    assert api.get("/no/such/route").status_code == 401
    gone = api.delete("/documents/00000000-0000-0000-0000-000000000001", headers=write)
    assert (gone.status_code, gone.json()) == (404, {"detail": "document_not_found"})


def test_ingest_limits_and_errors(api):
    write = {"Authorization": "Bearer w-secret"}
    big = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"x" * 2048, headers=write)
    assert (big.status_code, big.json()) == (413, {"detail": "body_too_large"})
    empty = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"", headers=write)
    assert (empty.status_code, empty.json()) == (422, {"detail": "empty_body"})
    half = api.post("/ingest?filename=a.md&mime=text/markdown&source_kind=notes", content=b"x", headers=write)
    assert half.status_code == 422 and set(half.json()) == {"detail"}
    ok = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"# A\n\nRavi leads billing.\n", headers=write)
    assert ok.status_code == 200 and ok.json()["created"] is True
    again = api.post("/ingest?filename=a.md&mime=text/markdown", content=b"# A\n\nRavi leads billing.\n", headers=write)
    assert again.json()["created"] is False and again.json()["version_id"] == ok.json()["version_id"]


def test_operation_arguments_are_checked_first(api):
    read = {"Authorization": "Bearer r-secret"}
    unknown = api.post("/operations/facts_context", json={"query": "x", "limit": 3}, headers=read)
    assert unknown.json() == {"detail": {"code": "invalid_parameter", "message": "unknown argument(s): limit"}}
    missing = api.post("/operations/facts_context", json={}, headers=read)
    assert missing.json() == {"detail": {"code": "invalid_parameter", "message": "query"}}
    bound = api.post("/operations/facts_context", json={"query": "x", "k": 31}, headers=read)
    assert bound.json()["detail"]["message"] == "k violates maximum=30"
    flag = api.post("/operations/facts_context", json={"query": "x", "k": True}, headers=read)
    assert flag.json()["detail"]["message"].startswith("invalid k")
    assert api.post("/operations/nope", json={}, headers=read).status_code == 404
    hashed = hashlib.sha256(b"r-secret").hexdigest()
    assert auth.parse_tokens(None, None) == {} and hashed in auth.parse_tokens("read:r-secret", None)
