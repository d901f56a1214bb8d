"""The read API's metric series: one per operation and route template, never one per caller's
words (an unknown operation's name once broke the tag's encoding and the request with it)."""

from __future__ import annotations

import ray
from fastapi import FastAPI
from fastapi.testclient import TestClient

from serve import metrics
from serve.middleware import Around


class _Recorder:
    def __init__(self):
        self.seen = []

    def inc(self, value=1, tags=None):
        self.seen.append(("inc", tags))

    def observe(self, value, tags=None):
        self.seen.append(("observe", tags))


def test_series_are_operations_and_route_templates(monkeypatch):
    requests, latency = _Recorder(), _Recorder()
    monkeypatch.setattr(metrics, "_metrics", lambda: (requests, latency))
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    app = FastAPI()
    app.add_middleware(Around, around=metrics.middleware(("facts_context",)))

    @app.post("/operations/{name}")
    async def run(name: str):
        return {"name": name}

    @app.get("/documents/{doc_id}")
    async def document(doc_id: str):
        return {}

    client = TestClient(app)
    assert client.post("/operations/facts_context").status_code == 200
    assert client.post("/operations/%C2%80%E2%98%83").status_code == 200   # not a known operation
    assert client.get("/documents/abc").status_code == 200
    assert client.get("/no/such/route").status_code == 404
    assert [t for kind, t in requests.seen] == [
        {"operation": "facts_context", "status": "200"}, {"operation": "unknown_operation", "status": "200"},
        {"operation": "GET /documents/{doc_id}", "status": "200"}, {"operation": "unmatched", "status": "404"}]
    assert [t["operation"] for _, t in latency.seen] == ["facts_context", "unknown_operation",
                                                          "GET /documents/{doc_id}", "unmatched"]
