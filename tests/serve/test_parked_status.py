"""A version parked for want of a converter route is never listed as `converting`: corpusmem's own
`GET /documents/{id}/versions` says `parked` with its reason; the seed's `GET /documents`, whose
summary the remember client checks against six statuses and no extra field, lists it `failed` with
the reason as its error, and `?status=parked` selects it."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from fastapi.testclient import TestClient

from actors.object_store import ObjectStore
from pipeline import records
from serve.app import build_app
from serve.ingest import ingest as api_ingest
from serve.replica import DeploymentInfo, open_pools
from sql.store import authority as store
from sql.write import writes

pytestmark = pytest.mark.integration

MODEL = "all-MiniLM-L6-v2"


async def _embed(text: str, _pin: str | None = None) -> np.ndarray:
    return np.ones(384, dtype=np.float32)


def test_a_parked_version_is_listed_as_parked_with_its_reason(memory):
    pinned = store.open_store(memory, embedding_model=MODEL, embedding_dim=384, build_revision="test")
    deployment = pinned.deployment.deployment_id
    with psycopg.connect(memory.dsn, autocommit=True) as conn:
        got = api_ingest(conn, ObjectStore(memory.object_store_uri), deployment, b"\x00\x01 drawing",
                         filename="plan.dwg", mime="image/vnd.dwg", title=None, source_kind="test", source_ref="plan.dwg",
                         source_modified_at=None, versioning_mode="snapshot", source_version_ref=None)
        # what the writer records when `convert` finds no route for the type
        writes.write_unfinished(conn, records.new_row(version_id=str(got.version_id), outcome=records.PARKED))
    info = DeploymentInfo(deployment, "test", MODEL, memory.object_store_uri)
    with TestClient(build_app(open_pools(memory.dsn, general=1, retrieval=1, graph=1), info, _embed)) as api:
        [listed] = api.get("/documents").json()["documents"]
        assert listed["latest"]["status"] == "failed" and listed["serving"] is False
        assert listed["latest"]["error"].startswith("parked: no_route: no converter route for image/vnd.dwg")
        assert set(listed["latest"]) == {"version_id", "version_no", "status", "ingested_at", "error"}
        assert [d["doc_id"] for d in api.get("/documents?status=parked").json()["documents"]] == [listed["doc_id"]]
        assert len(api.get("/documents?status=failed").json()["documents"]) == 1
        assert api.get("/documents?status=converting").json()["documents"] == []
        [version] = api.get(f"/documents/{listed['doc_id']}/versions").json()["versions"]
        assert (version["status"], version["parked_reason"]) == ("parked", "no_route")
