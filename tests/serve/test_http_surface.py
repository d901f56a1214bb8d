"""The read API's HTTP surface beyond its routes' answers, in process (FastAPI app, no Ray Serve):
search with the question in the body, browser origins (CORS), and who ingested a version
(`X-Ingest-Principal-*`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest
from fastapi.testclient import TestClient

from serve import auth, reads
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools

pytestmark = pytest.mark.integration

APP = "https://app.example.com"
INFO = DeploymentInfo("00000000-0000-0000-0000-0000000000cc", "test", "all-MiniLM-L6-v2")


async def _embed(text: str, _pin: str | None = None) -> np.ndarray:
    return np.ones(384, dtype=np.float32)   # the model's dimension; these memories hold no vectors


@pytest.fixture
def serve_app(memory) -> Callable[..., Iterator[TestClient]]:
    """`with serve_app(**fields) as client`: the app over this test's empty memory, pinned as
    `corpusmem serve` pins it, with those `DeploymentInfo` fields replaced."""
    from sql.store import authority as store

    pinned = store.open_store(memory, embedding_model=INFO.embedding_model, embedding_dim=384, build_revision="test")

    @contextmanager
    def start(**fields) -> Iterator[TestClient]:
        info = replace(INFO, deployment_id=pinned.deployment.deployment_id, object_store=memory.object_store_uri,
                       **fields)
        pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)
        with TestClient(build_app(pools, info, _embed)) as client:   # the app opens and closes the pools
            yield client
    return start


# --- POST /search/claims and /search/chunks ---------------------------------------------------


def test_post_search_reads_the_question_from_the_body_like_get_from_the_url(serve_app, monkeypatch):
    seen = []
    real_search = reads.search

    async def spy(conn, what, query, k, channel, vector):
        seen.append((what, query, k, channel, vector is not None))
        return await real_search(conn, what, query, k, channel, vector)
    monkeypatch.setattr(reads, "search", spy)
    with serve_app() as api:
        for what in ("claims", "chunks"):
            got = api.get(f"/search/{what}", params={"query": "cutover date", "k": 3, "channel": "bm25"})
            posted = api.post(f"/search/{what}", json={"query": "cutover date", "k": 3, "channel": "bm25"})
            assert got.status_code == posted.status_code == 200, posted.text
            assert "cutover" not in str(posted.request.url)
            one, two = got.json(), posted.json()
            for envelope in (one, two):   # the instants differ; everything else is the same answer
                envelope.pop("temporal_scope"), envelope.pop("freshness")
            assert one == two and two["grain"] == "evidence" and two["negative"]["kind"] == "known_empty"
            defaults = api.post(f"/search/{what}", json={"query": "cutover date"})
            assert defaults.status_code == 200
        # (what, query, k, channel, embedded?) of each call: GET, POST, then POST with the defaults
        assert seen == [(what, "cutover date", k, channel, channel == "semantic") for what in ("claims", "chunks")
                        for k, channel in ((3, "bm25"), (3, "bm25"), (10, "semantic"))]


@pytest.mark.parametrize("body", [
    {"query": ""}, {"query": "x" * 4097}, {"query": "x", "k": 0}, {"query": "x", "k": 401},
    {"query": "x", "channel": "vector"}, {"query": "x", "limit": 3}, {"k": 3}, None,
])
def test_post_search_checks_its_body(serve_app, body):
    with serve_app() as api:
        for what in ("claims", "chunks"):
            refused = api.post(f"/search/{what}", json=body) if body is not None else \
                api.post(f"/search/{what}?query=in-the-url")   # the URL form is GET's only
            assert refused.status_code == 422, refused.text
            assert set(refused.json()) == {"detail"} and isinstance(refused.json()["detail"], list)


def test_a_nul_in_the_question_is_refused_in_either_form(serve_app):
    with serve_app() as api:
        for what in ("claims", "chunks"):
            for channel in ("bm25", "semantic"):
                for refused in (api.post(f"/search/{what}", json={"query": "a\x00b", "channel": channel}),
                                api.get(f"/search/{what}", params={"query": "a\x00b", "channel": channel})):
                    assert (refused.status_code, refused.json()) == (
                        422, {"detail": "query must not contain NUL characters"})


def test_post_search_needs_the_read_scope_like_get(serve_app):
    hashes = auth.parse_tokens("read:r-secret,ingest:i-secret", None)
    with serve_app(credentials=tuple(hashes.items())) as api:
        for what in ("claims", "chunks"):
            assert api.post(f"/search/{what}", json={"query": "x", "channel": "bm25"}).status_code == 401
            denied = api.post(f"/search/{what}", json={"query": "x", "channel": "bm25"},
                              headers={"Authorization": "Bearer i-secret"})
            assert (denied.status_code, denied.json()) == (403, {"detail": auth.NARROW})
            ok = api.post(f"/search/{what}", json={"query": "x", "channel": "bm25"},
                          headers={"Authorization": "Bearer r-secret"})
            assert ok.status_code == 200, ok.text


# --- CORS ---------------------------------------------------------------------------------------


def test_no_origin_is_allowed_by_default(serve_app):
    with serve_app() as api:
        simple = api.get("/healthz", headers={"Origin": APP})
        assert simple.status_code == 200
        assert not [h for h in simple.headers if h.startswith("access-control-")]
        preflight = api.options("/search/claims", headers={"Origin": APP, "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers


def test_an_allowed_origin_gets_cors_headers_and_another_does_not(serve_app):
    hashes = auth.parse_tokens("read:r-secret", None)
    with serve_app(cors_origins=auth.parse_origins(f"{APP},http://localhost:3000"),
                   credentials=tuple(hashes.items())) as api:
        read = {"Authorization": "Bearer r-secret"}
        allowed = api.get("/deployment", headers={"Origin": APP, **read})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == APP
        assert "access-control-allow-credentials" not in allowed.headers   # no cookies
        local = api.get("/deployment", headers={"Origin": "http://localhost:3000", **read})
        assert local.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = api.get("/deployment", headers={"Origin": "https://evil.example.com", **read})
        assert other.status_code == 200 and "access-control-allow-origin" not in other.headers
        # a refusal is readable by the allowed page too (CORS runs outside the credential check)
        refused = api.get("/deployment", headers={"Origin": APP})
        assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == APP

        # a preflight carries no credential and is answered before the credential check
        preflight = api.options("/search/claims", headers={
            "Origin": APP, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == APP
        assert set(preflight.headers["access-control-allow-methods"].replace(" ", "").split(",")) == {
            "GET", "POST", "DELETE"}
        assert preflight.headers["access-control-max-age"] == "600"
        foreign = api.options("/search/claims", headers={"Origin": "https://evil.example.com",
                                                         "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in foreign.headers
        # a browser may not send the trusted uploader headers
        principal = api.options("/ingest", headers={"Origin": APP, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "x-ingest-principal-ref"})
        assert principal.status_code == 400


def test_origins_are_checked_when_read():
    assert auth.parse_origins(None) == auth.parse_origins("") == ()
    assert auth.parse_origins("https://app.example.com, http://127.0.0.1:8080,http://[::1]:3000") == (
        "https://app.example.com", "http://127.0.0.1:8080", "http://[::1]:3000")
    for bad in ("*", "https://*.example.com", "https://app.example.com,", "https://a.example.com,,https://b.example.com",
                "http://app.example.com", "https://App.example.com", "https://app.example.com/",
                "https://app.example.com/x", "https://app.example.com:443", "http://localhost:80",
                "https://user@app.example.com", "app.example.com",
                "ftp://app.example.com", "https://app.example.com:99999", "null"):
        with pytest.raises(auth.OriginError, match="CORPUSMEM_CORS_ORIGINS"):
            auth.parse_origins(bad)


# --- X-Ingest-Principal-Kind / -Ref -------------------------------------------------------------


NOTE = b"# Note\n\nMarco owns the vendor sign-off.\n"
INGEST = "/ingest?filename=note.md&mime=text/markdown"


def _principal(kind: str | None, ref: str | None) -> dict[str, str]:
    headers = {}
    if kind is not None:
        headers["X-Ingest-Principal-Kind"] = kind
    if ref is not None:
        headers["X-Ingest-Principal-Ref"] = ref
    return headers


def test_a_trusted_principal_is_recorded_with_the_version_it_created(serve_app):
    with serve_app(trusted_principal_source=True) as api:
        first = api.post(INGEST + "&source_kind=notes&source_ref=note.md", content=NOTE,
                         headers=_principal("user", "alice@example.com"))
        assert first.status_code == 200, first.text
        doc = first.json()["doc_id"]
        # the same bytes again, as someone else: a no-op that changes nothing
        again = api.post(INGEST + "&source_kind=notes&source_ref=note.md", content=NOTE,
                         headers=_principal("service", "sync-bot"))
        assert again.json()["created"] is False
        second = api.post(INGEST + "&source_kind=notes&source_ref=note.md", content=NOTE + b"\nDana approved it.\n",
                          headers=_principal("api_credential", "key 7f3a"))
        anonymous = api.post(INGEST + "&source_kind=notes&source_ref=note.md", content=NOTE + b"\nA third.\n")
        assert second.json()["created"] is True and anonymous.json()["created"] is True

        versions = api.get(f"/documents/{doc}/versions")
        assert versions.status_code == 200, versions.text
        body = versions.json()
        assert body["doc_id"] == doc and body["title"] == "note"
        assert [(v["version_id"], v["version_no"], v["ingested_by"]) for v in body["versions"]] == [
            (anonymous.json()["version_id"], 3, None),
            (second.json()["version_id"], 2, {"kind": "api_credential", "ref": "key 7f3a"}),
            (first.json()["version_id"], 1, {"kind": "user", "ref": "alice@example.com"}),
        ]
        assert body["versions"][0]["content_hash"] == anonymous.json()["content_hash"]
        assert api.get("/documents/00000000-0000-0000-0000-000000000001/versions").json() == {
            "detail": "document_not_found"}
        # a deleted document's versions are gone with it
        assert api.delete(f"/documents/{doc}").status_code == 200
        assert api.get(f"/documents/{doc}/versions").status_code == 404


@pytest.mark.parametrize("kind, ref, detail", [
    ("user", None, "X-Ingest-Principal-Kind and X-Ingest-Principal-Ref must be supplied together"),
    (None, "alice", "X-Ingest-Principal-Kind and X-Ingest-Principal-Ref must be supplied together"),
    ("person", "alice", "invalid_ingest_principal"),
    ("User", "alice", "invalid_ingest_principal"),
    ("user", "a" * 256, "invalid_ingest_principal"),
    ("user", "", "invalid_ingest_principal"),
    ("user", "alice\x07bell", "invalid_ingest_principal"),
    ("user", "alice\tbob", "invalid_ingest_principal"),
    ("user", "zoë", "invalid_ingest_principal"),
])
def test_a_malformed_principal_is_refused_when_trusted_and_stores_nothing(serve_app, kind, ref, detail):
    with serve_app(trusted_principal_source=True) as api:
        refused = api.post(INGEST, content=NOTE, headers={
            k: v.encode("latin-1", "replace") if not v.isascii() else v for k, v in _principal(kind, ref).items()})
        assert (refused.status_code, refused.json()) == (422, {"detail": detail})
        assert api.get("/documents").json()["documents"] == []
        assert api.post(INGEST, content=NOTE, headers=_principal("user", "a" * 255)).status_code == 200


def test_principal_headers_are_ignored_unless_the_source_is_trusted(serve_app):
    with serve_app() as api:   # the default: any client could send any name
        ok = api.post(INGEST, content=NOTE, headers=_principal("user", "alice\x07"))
        assert ok.status_code == 200, ok.text
        [version] = api.get(f"/documents/{ok.json()['doc_id']}/versions").json()["versions"]
        assert version["ingested_by"] is None


def test_only_a_write_credential_may_attribute(serve_app):
    hashes = auth.parse_tokens("ingest:i-secret,write:w-secret,read:r-secret", None)
    with serve_app(trusted_principal_source=True, credentials=tuple(hashes.items())) as api:
        narrow = api.post(INGEST, content=NOTE, headers={"Authorization": "Bearer i-secret",
                                                         **_principal("user", "mallory\x01")})
        assert narrow.status_code == 200, narrow.text   # ignored, not refused
        wide = api.post(INGEST, content=NOTE + b"\n", headers={"Authorization": "Bearer w-secret",
                                                              **_principal("service", "gateway")})
        read = {"Authorization": "Bearer r-secret"}
        by = {v["version_id"]: v["ingested_by"]
              for r in (narrow, wide)
              for v in api.get(f"/documents/{r.json()['doc_id']}/versions", headers=read).json()["versions"]}
        assert by == {narrow.json()["version_id"]: None,
                      wide.json()["version_id"]: {"kind": "service", "ref": "gateway"}}
