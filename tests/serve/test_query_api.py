"""The `/query/*` routes: their HTTP errors in process, then `corpusmem serve` on the example corpus
driven by the real `remember` 0.17.2 client, whose models must parse every response."""

from __future__ import annotations

import json

import pytest

from serve.query_models import QueryResult
from sql.query_space import query_manifest
from tests.support import remember_venv
from tests.support.paths import SUPPORT

pytestmark = pytest.mark.integration


@pytest.fixture
def reader(api):
    """The in-process app with credentials (tests/serve/conftest.py), called with its `read` one."""
    api.headers["Authorization"] = "Bearer r-secret"
    return api


def test_query_routes_refuse_malformed_requests_with_the_seed_bodies(reader):
    api = reader
    assert api.get("/query/space", headers={"Authorization": "Bearer i-secret"}).status_code == 403
    for path, body in (("/query/sql", {"sql": "SELECT 1", "bogus": 1}),
                       ("/query/sql", {"sql": "SELECT 1", "max_rows": -1}),
                       ("/query/sql", {"parameters": []}),
                       ("/query/sql/explain", {"sql": "SELECT 1", "max_rows": 5}),
                       ("/query/saved/examples/relation_current/run", {"version": 0}),
                       ("/query/saved/examples/relation_current/run", {"nope": True})):
        answer = api.post(path, json=body)
        assert answer.status_code == 422 and isinstance(answer.json()["detail"], list), (path, body)
    assert api.get("/query/saved", params={"status": "bogus"}).status_code == 422
    for k in (0, 26):
        assert api.get("/query/space/search", params={"query": "facts", "k": k}).status_code == 422
    blank = api.get("/query/space/search", params={"query": "   "})
    assert (blank.status_code, blank.json()) == (422, {"detail": {"code": "invalid_parameter",
                                                                  "message": "query must be non-empty"}})
    unknown = api.get("/query/saved/examples/nope")
    assert unknown.status_code == 404 and unknown.json()["detail"]["code"] == "saved_query_not_found"
    assert api.get("/query/space", params={"include_examples": "maybe"}).status_code == 422


def test_space_is_the_manifest_and_statements_answer_200(reader):
    api = reader
    space = api.get("/query/space", params={"include_examples": "true"}).json()
    assert space["headline"] == query_manifest.HEADLINE and space["schema"] == "memory_v1"
    assert space["surface_manifest_hash"] == query_manifest.manifest_hash()
    assert len(space["views"]) == 25 and len(space["functions"]) == 12 and len(space["examples"]) == 18
    only = api.get("/query/space", params={"pattern": "facts_*"}).json()
    assert [v["name"] for v in only["views"]] == ["facts_current", "facts_visible_history"] and only["examples"] == []
    hits = api.get("/query/space/search", params={"query": "current facts", "k": 3}).json()
    assert len(hits) == 3 and hits[0]["name"] == "facts_current"
    refused = api.post("/query/sql", json={"sql": "SELECT * FROM pg_catalog.pg_class"})
    assert refused.status_code == 200
    result = QueryResult.model_validate(refused.json())
    assert (result.termination_reason, result.error_code) == ("rejected", "relation_not_allowed")
    assert str(result.deployment_id) == "00000000-0000-0000-0000-0000000000aa"


def test_the_remember_client_parses_every_query_route(served, remember_python, tmp_path):
    run = remember_venv.run(remember_python, [str(SUPPORT / "remember_query_client.py"), served],
                       tmp_path / "remember-config", timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    expected_errors = {"search_blank": (422, "invalid_parameter"), "run_saved_unknown": (404, "saved_query_not_found"),
                       "run_saved_version": (404, "saved_query_not_found")}
    for step, (status, code) in expected_errors.items():
        assert (out[step].get("status"), out[step].get("code")) == (status, code), (step, out[step])
    broken = {k: v for k, v in out.items() if not v["ok"] and k not in expected_errors}
    assert not broken, json.dumps(broken, indent=1)[:4000]

    def value(step: str):
        return out[step]["value"]

    assert value("space")["headline"] == query_manifest.HEADLINE and len(value("space")["examples"]) == 18
    assert [v["name"] for v in value("space_facts")["views"]] == ["facts_current", "facts_visible_history"]
    assert value("search") and value("search")[0]["kind"] in ("view", "function", "core_operation", "example")
    sources = value("sources")
    assert sources["columns"][1] == {"name": "documents", "type": "bigint", "nullable": True}
    assert sum(row[1] for row in sources["rows"]) == 11 and sources["limits"]["row_cap"] == 50
    assert "Dana leads billing migration" in {row[0] for row in value("facts")["rows"]}
    assert value("semantic")["semantic_invocations"][0]["function"] == "semantic_claims"
    assert value("graph")["termination_reason"] == "completed" and value("graph")["graph_invocations"]
    assert (value("delete")["termination_reason"], value("delete")["error_code"]) == ("rejected",
                                                                                     "statement_not_allowed")
    assert value("pg_class")["error_code"] == "relation_not_allowed"
    assert (value("capped")["limits"]["row_cap"], value("capped")["truncation_reason"]) == (1000, "row_cap")
    assert len(value("explain")["rows"]) == 1
    assert len(value("saved")) == 18 and value("saved_examples") == value("saved") and value("saved_drafts") == []
    assert value("describe_saved")["sql"].startswith("SELECT") and value("describe_saved")["parameter_schema"] == {}
    run_saved = value("run_saved")
    assert run_saved["saved_query"]["name"] == "relation_current" and run_saved["rows"]
    assert value("run_saved_graph")["termination_reason"] == "completed"
