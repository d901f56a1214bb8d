"""Forgetting: after `DELETE /documents/{id}`, no read surface serves the document's text, its
claims, its sources or an entity only it named, while the other document is still served.

Every read route of the app is asked the same questions before and after the delete (a test
below fails when a route is added without being asked here), then the CLI reads, the demo's
reads and every `memory_v1` view.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import psycopg
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from sql.query_space import query_catalog
from tests.support import apps
from tests.support.memory import import_example, write

pytestmark = pytest.mark.integration

DOCS = {
    "2026-03-01-lighthouse.md": "# Lighthouse notes\n\nZelda Quist leads the lighthouse project.\n",
    "2026-03-02-billing.md": "# Billing migration notes\n\nRavi leads the billing migration.\n\n"
                             "Ravi works on the invoice system.\n",
}
# Routes that hold no memory content (or only write): every other route must be asked below.
CONTENT_FREE = {("GET", "/healthz"), ("GET", "/deployment"), ("GET", "/operations"), ("POST", "/ingest"),
                ("DELETE", "/documents/{doc_id}"), ("GET", "/query/space"), ("GET", "/query/space/search"),
                ("GET", "/query/saved"), ("GET", "/query/saved/{namespace}/{name}"), ("GET", "/ops/cost-export/v1")}


@pytest.fixture(scope="module")
def two_documents(pg_admin_dsn, template_db, ray_local, tmp_path_factory):
    root = tmp_path_factory.mktemp("forgetting")
    _, settings, _ = import_example(pg_admin_dsn, template_db, write(root / "docs", DOCS), root, "cm_forgetting")
    return settings


@pytest.fixture(scope="module")
def api(two_documents, embed):
    yield from apps.client(two_documents, embed)


def _one(conn: psycopg.Connection, sql: str, *params: Any) -> Any:
    return conn.execute(sql, params).fetchone()[0]


def _ids(dsn: str) -> dict[str, Any]:
    """What the deleted document left in the authority, and what the other one holds (read from
    the base tables: this is what must disappear from every read)."""
    with psycopg.connect(dsn) as conn:
        doc = _one(conn, "SELECT doc_id::text FROM documents WHERE source_ref LIKE '%%lighthouse.md'")
        other = _one(conn, "SELECT doc_id::text FROM documents WHERE source_ref LIKE '%%billing.md'")
        claims = [r[0] for r in conn.execute("SELECT claim_id::text FROM claims WHERE doc_id = %s", (doc,))]
        chunks = [r[0] for r in conn.execute("SELECT chunk_id::text FROM chunks WHERE doc_id = %s", (doc,))]
        facts = [r[0] for r in conn.execute(
            "SELECT DISTINCT e.fact_id::text FROM fact_evidence e JOIN claims c USING (claim_id)"
            " WHERE c.doc_id = %s", (doc,))]
        zelda = _one(conn, "SELECT entity_id::text FROM entities WHERE canonical_name = 'Zelda Quist'")
        ravi = _one(conn, "SELECT entity_id::text FROM entities WHERE canonical_name = 'Ravi'")
        relation = _one(conn, "SELECT f.fact_id::text FROM facts f WHERE f.subject_id = %s AND f.kind = 'relation'",
                        zelda)
        ravi_relation = _one(conn, "SELECT fact_id::text FROM facts WHERE subject_id = %s AND kind = 'relation'"
                                   " ORDER BY label LIMIT 1", ravi)
        version = _one(conn, "SELECT version_id::text FROM versions WHERE doc_id = %s", doc)
    return {"doc": doc, "other": other, "claims": claims, "chunks": chunks, "facts": facts, "zelda": zelda,
            "ravi": ravi, "relation": relation, "ravi_relation": ravi_relation, "version": version}


def _reads(ids: dict[str, Any]) -> list[tuple[str, str, str, dict | None]]:
    """(method, route, url, JSON body) of every question asked: about the deleted document's
    names, words and ids, and about the other document's."""
    z, chunk = ids["zelda"], ids["chunks"][0]
    ops = "/operations/{name}"
    return [
        ("GET", "/documents", "/documents", None),
        ("GET", "/resolve", "/resolve?name=Zelda%20Quist", None),
        ("GET", "/resolve", "/resolve?name=Zelda", None),
        ("GET", "/resolve", "/resolve?name=lighthouse%20project", None),
        ("POST", ops, "/operations/resolve_entity", {"name": "Zelda Quist"}),
        ("POST", ops, "/operations/facts_context", {"query": "Who leads the lighthouse project?"}),
        ("POST", ops, "/operations/facts_context", {"query": "Zelda Quist", "time": {"mode": "history"}}),
        ("POST", ops, "/operations/facts_context", {"query": "lighthouse", "entity_ids": [z]}),
        ("POST", ops, "/operations/claims_and_sources_context", {"query": "Zelda Quist lighthouse project"}),
        ("POST", ops, "/operations/claims_and_sources_context", {"query": "lighthouse", "entity_ids": [z]}),
        ("POST", ops, "/operations/combined_context", {"query": "Who leads the lighthouse project?"}),
        ("GET", "/lookup/relations", f"/lookup/relations?subject_entity_id={z}", None),
        ("GET", "/lookup/relations", "/lookup/relations", None),
        ("GET", "/lookup/observations", f"/lookup/observations?entity_id={z}", None),
        ("GET", "/hydrate/relation/{relation_id}", f"/hydrate/relation/{ids['relation']}", None),
        ("GET", "/transcript/relation/{relation_id}", f"/transcript/relation/{ids['relation']}", None),
        *[("GET", f"/search/{what}", f"/search/{what}?query=Zelda%20Quist%20lighthouse&channel={channel}", None)
          for what in ("claims", "chunks") for channel in ("semantic", "bm25")],
        *[("POST", f"/search/{what}", f"/search/{what}", {"query": "Zelda Quist lighthouse", "channel": channel})
          for what in ("claims", "chunks") for channel in ("semantic", "bm25")],
        ("GET", "/documents/{doc_id}/versions", f"/documents/{ids['other']}/versions", None),
        ("GET", "/chunks/{chunk_id}/adjacent", f"/chunks/{chunk}/adjacent", None),
        ("POST", "/graph/neighborhood", "/graph/neighborhood", {"entity_id": z, "include_paths": True}),
        ("POST", "/graph/neighborhood", "/graph/neighborhood", {"entity_id": ids["ravi"], "include_paths": True}),
        ("POST", "/graph/path", "/graph/path", {"from_entity_id": z, "to_entity_id": ids["ravi"]}),
        ("POST", "/graph/citation-path", "/graph/citation-path",
         {"from_doc_id": ids["doc"], "to_doc_id": ids["other"]}),
        ("POST", "/readiness", "/readiness", {"version_ids": [ids["version"]], "require": dict.fromkeys(
            ("pipeline", "p1", "live_graph", "p3"), False)}),
        *[("POST", "/query/sql", "/query/sql", {"sql": f"SELECT * FROM {view}", "max_rows": 1000})
          for view in sorted(query_catalog.VIEWS)],
        ("POST", "/query/sql/explain", "/query/sql/explain", {"sql": "SELECT claim_text FROM claims_live"}),
        ("POST", "/query/saved/{namespace}/{name}/run", "/query/saved/examples/claims_about/run",
         {"parameters": [z]}),
        ("POST", "/query/saved/{namespace}/{name}/run", "/query/saved/examples/claims_hybrid_rrf/run",
         {"parameters": ["Zelda Quist lighthouse"]}),
    ]


def _ask(api: TestClient, method: str, url: str, body: dict | None) -> dict[str, Any]:
    answer = api.request(method, url, json=body)
    assert answer.status_code == 200, (url, body, answer.text[:500])
    return answer.json()


def _served(answer: Any) -> str:
    """What a response serves: its body without the typed negative, whose explanation repeats
    the question (the name or id that was asked about)."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "negative"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return json.dumps(strip(answer))


def _forbidden(ids: dict[str, Any]) -> list[str]:
    return ["Zelda", "Quist", "lighthouse", "Lighthouse", ids["doc"], ids["zelda"], ids["relation"],
            *ids["claims"], *ids["chunks"], *ids["facts"]]


def test_every_read_route_is_asked(api):
    asked = {(method, route) for method, route, _, _ in _reads(dict.fromkeys(
        ("doc", "other", "zelda", "ravi", "relation", "version"), "x") | {"chunks": ["x"]})}
    routes = {(method, r.path) for r in api.app.routes if isinstance(r, APIRoute) for method in r.methods}
    assert routes - CONTENT_FREE - asked == set(), "a read route this test does not ask"


def test_a_deleted_document_is_gone_from_every_read_and_the_other_stays(api, two_documents):
    ids = _ids(two_documents.dsn)
    reads = _reads(ids)
    before = {(url, json.dumps(body)): _served(_ask(api, method, url, body)) for method, _, url, body in reads}
    # the questions find the document while it is there, so their silence afterwards means something
    assert "Zelda Quist" in before[("/resolve?name=Zelda%20Quist", "null")]
    assert "Zelda Quist leads the lighthouse project." in before[(f"/hydrate/relation/{ids['relation']}", "null")]
    assert "lighthouse" in before[("/operations/claims_and_sources_context",
                                   json.dumps({"query": "Zelda Quist lighthouse project"}))]
    assert ids["doc"] in before[("/documents", "null")]
    assert sum("Zelda" in text for text in before.values()) >= 15

    deleted = api.delete(f"/documents/{ids['doc']}")
    assert deleted.status_code == 200 and deleted.json()["claims_retired"] == len(ids["claims"])
    assert deleted.json()["relations_closed"] >= 1

    for method, _, url, body in reads:
        served = _served(_ask(api, method, url, body))
        leaked = [token for token in _forbidden(ids) if token in served]
        assert not leaked, (method, url, body, leaked, served[:800])

    # the other document is still served
    assert "Ravi" in _served(_ask(api, "GET", "/resolve?name=Ravi", None))
    billing = _served(_ask(api, "POST", "/operations/facts_context", {"query": "Who leads the billing migration?"}))
    assert "Ravi leads billing migration" in billing
    kept = _ask(api, "GET", f"/hydrate/relation/{ids['ravi_relation']}", None)
    assert kept["facts"] and any(e["claim_text"].startswith("Ravi") for e in kept["evidence"])
    assert ids["other"] in _served(_ask(api, "GET", "/documents", None))
    chunks = _served(_ask(api, "GET", "/search/chunks?query=billing%20migration&channel=bm25", None))
    assert "Ravi leads the billing migration." in chunks
    for name in ("Zelda Quist", "Zelda"):
        gone = _ask(api, "GET", f"/resolve?name={name}", None)
        assert gone["negative"]["kind"] == "unknown_entity"
    hydrate = _ask(api, "GET", f"/hydrate/relation/{ids['relation']}", None)
    assert hydrate["negative"]["kind"] == "unknown_entity"

    _cli_demo_and_views_forget(two_documents, ids)


def _cli_demo_and_views_forget(settings, ids: dict[str, Any]) -> None:
    from actors.embedder import load_model
    from jobs import claims_cli, facts_cli, runtime
    from sql.read import claims_queries, demo_queries

    forbidden = _forbidden(ids)

    def clean(text: str) -> None:
        leaked = [token for token in forbidden if token in text]
        assert not leaked, (leaked, text[:800])

    for query in ("Zelda Quist", "lighthouse project", "Who leads the lighthouse project"):
        for history in (False, True):
            args = argparse.Namespace(query=query, at=None, overlap=None, history=history, now=None, k=50)
            out = facts_cli.show_facts(settings, args)
            clean(out.replace(repr(query), "").replace(query, ""))   # the question itself is echoed
    assert "Ravi leads billing migration" in facts_cli.show_facts(
        settings, argparse.Namespace(query="Ravi", at=None, overlap=None, history=False, now=None, k=50))
    for ref in ("2026-03-01-lighthouse.md", ids["doc"]):
        with pytest.raises(claims_queries.DocumentNotFound):
            claims_cli.show_claims(settings, ref)
        with pytest.raises(claims_queries.DocumentNotFound):
            claims_cli.why_not(settings, ref, "Zelda")
    assert "Ravi leads the billing migration." in claims_cli.show_claims(settings, "2026-03-02-billing.md")

    model = load_model(runtime.embedding_model(settings, settings.dsn), "cpu")
    with psycopg.connect(settings.dsn) as conn:
        demo = [demo_queries.documents(conn), demo_queries.non_body_sections(conn), demo_queries.sample_claims(conn),
                demo_queries.nearest_chunks(conn, model.encode("Zelda Quist lighthouse", normalize_embeddings=True), 10)]
        clean(repr(demo))
        assert "2026-03-02-billing.md" in repr(demo[0])
        for view in sorted(query_catalog.VIEWS):
            clean(repr(conn.execute(f"SELECT * FROM memory_v1.{view}").fetchall()))   # fixed names
