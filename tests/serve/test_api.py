"""`corpusmem serve` on the example corpus, driven by the real `remember` 0.17.2 client (run from
its own venv: tests/support/remember_venv.py)."""

from __future__ import annotations

import json
import os

import httpx
import psutil
import pytest

from tests.support import remember_venv
from tests.support.paths import SUPPORT

pytestmark = pytest.mark.integration


def test_the_remember_client_works_against_corpusmem_serve(served, remember_python, tmp_path):
    run = remember_venv.run(remember_python, [str(SUPPORT / "remember_client.py"), served], tmp_path / "remember-config",
                       timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    expected_failures = {"bad_argument", "delete_again"}
    broken = {k: v for k, v in out.items() if isinstance(v, dict) and not v["ok"] and k not in expected_failures}
    assert not broken, json.dumps(broken, indent=1)[:4000]

    assert out["deployment"]["value"]["tools"]["facts_context"] == 3
    # `remember mcp` lists the tools whose versions /deployment serves: every one of its catalogue
    assert {"resolve_entity", "facts_context", "claims_and_sources_context", "combined_context", "ingest",
            "pipeline_readiness", "delete_document", "query_sql", "run_saved_query"} <= set(out["mcp_tools"]["value"])
    assert out["operations"]["value"] == ["resolve_entity", "claims_and_sources_context", "facts_context",
                                          "combined_context"]
    assert [e["canonical_name"] for e in out["resolve_entity"]["value"]["entities"]] == ["Ravi"]
    assert out["resolve_unknown"]["value"]["negative"]["kind"] == "unknown_entity"

    def labels(step: str) -> dict[str, dict]:
        return {f["label"]: f for f in out[step]["value"]["facts"]}

    now = labels("facts_current")
    assert now["Dana leads billing migration"]["temporal_match"] == "confirmed"
    assert "Ravi leads billing migration" not in now
    assert "Ravi leads billing migration" in labels("facts_at")
    assert {"Dana leads billing migration", "Ravi leads billing migration"} <= set(labels("facts_overlap"))
    bundle = out["combined"]["value"]
    assert bundle["contract"] == "ContextBundle/v2" and bundle["claims_and_sources"]["grain"] == "evidence"
    sides = [f for f in bundle["facts"]["facts"] if f["contradiction"]]
    assert len(sides) == 2 and all(f["contradiction"]["total"] == 1 for f in sides)
    facts = out["facts_history"]["value"]
    linked = {link["claim_id"] for link in facts["fact_evidence"]}
    assert linked and linked <= {c["claim_id"] for c in facts["evidence"]}
    assert all(t["returned"] <= t["total"] for t in facts["evidence_totals"])

    assert out["search_claims_bm25"]["value"]["evidence"] and out["search_chunks_semantic"]["value"]["chunks"]
    assert out["transcript"]["value"]["transcript"][0]["outcome"] == "add"
    assert out["hydrate"]["value"]["sources"]
    assert len(out["documents"]["value"]["documents"]) == 11
    hood = out["neighborhood"]["value"]
    # billing ended on 1 June; "Ravi owns schema change" ends on 1 June with no known start, so it is no step
    assert {n["name"] for n in hood["nodes"]} == {"search team"} and hood["edges"]
    page, nxt = out["neighborhood_page"]["value"], out["neighborhood_next"]["value"]
    assert len(page["nodes"]) == 1 and page["truncation"]["truncated"] and page["truncation"]["continuation"]
    assert nxt["nodes"] and nxt["nodes"][0]["entity_id"] != page["nodes"][0]["entity_id"]
    assert out["neighborhood_foreign"]["value"]["negative"]["kind"] == "boundary"
    march = out["neighborhood_as_of"]["value"]   # on 1 March Ravi was on billing, not yet on search
    assert {"billing migration"} <= {n["name"] for n in march["nodes"]} and "search team" not in {
        n["name"] for n in march["nodes"]}
    assert {e["fact"] for e in march["edges"]} & {"Ravi works on billing migration", "Ravi leads billing migration"}
    assert not any("search team" in e["fact"] for e in march["edges"])
    assert out["path"]["value"]["negative"]["kind"] == "known_empty"  # no current relation links them now
    assert out["citation_path"]["value"]["negative"]["kind"] == "known_empty"
    assert out["bad_argument"]["status"] == 422 and "unknown argument(s): limit" in out["bad_argument"]["detail"]

    assert out["ingest"]["value"]["created"] is True
    assert out["readiness"]["value"]["ready"] is True
    assert "Marco owns finance sign-off" in labels("marco")
    assert out["ingest_again"]["value"]["created"] is False
    assert out["delete"]["value"]["claims_retired"] >= 1
    assert (out["delete_again"]["status"], out["delete_again"]["detail"]) == (404, "document_not_found")
    unknown = out["readiness_unknown"]["value"]
    assert unknown["ready"] is False and {s["status"] for s in unknown["versions"][0]["stages"]} == {"missing"}


def test_search_with_the_question_in_the_body_through_ray_serve(served):
    """`POST /search/*` answers as `GET` does, through `corpusmem serve` itself (the `remember`
    client has only the GET form); and a document's versions are served with who ingested them."""
    for what, hits in (("claims", "evidence"), ("chunks", "chunks")):
        params = {"query": "billing migration cutover", "k": 5, "channel": "bm25"}
        got = httpx.get(f"{served}/search/{what}", params=params, timeout=60)
        posted = httpx.post(f"{served}/search/{what}", json=params, timeout=60)
        assert got.status_code == posted.status_code == 200, posted.text
        assert posted.json()[hits] and posted.json()[hits] == got.json()[hits]
        assert httpx.post(f"{served}/search/{what}", json={**params, "limit": 1}, timeout=60).status_code == 422
    [doc] = httpx.get(f"{served}/documents", params={"limit": 1}, timeout=60).json()["documents"]
    versions = httpx.get(f"{served}/documents/{doc['doc_id']}/versions", timeout=60).json()["versions"]
    assert versions[0]["version_id"] == doc["latest"]["version_id"] and versions[0]["ingested_by"] is None


def _without_instants(value):
    """An answer without the instants it was evaluated, believed and read at, which differ per call."""
    if isinstance(value, dict):
        return {k: _without_instants(v) for k, v in value.items() if k not in ("evaluated_at", "believed_at", "pg_live_ts")}
    if isinstance(value, list):
        return [_without_instants(v) for v in value]
    return value


def _answers_http(url: str) -> bool:
    try:
        return httpx.get(url, timeout=10).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_served_port_is_the_api_replicas_own_and_answers_as_serves_proxy_does(served):
    """One replica on its own Ray serves HTTP itself (Serve's direct ingress): the port the server
    printed is the replica's, and Serve's proxy, on another port, gives the same answers."""
    port = int(served.rsplit(":", 1)[1])
    listening = {c.laddr.port: c.pid for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN and c.pid}
    replica = psutil.Process(listening[port])
    assert "ServeReplica:corpusmem:Api" in " ".join(replica.cmdline()), replica.cmdline()
    proxy_ports = [p for p, pid in listening.items() if os.getsid(pid) == os.getsid(replica.pid)
                   and "ProxyActor" in " ".join(psutil.Process(pid).cmdline())]
    proxies = [p for p in proxy_ports if _answers_http(f"http://127.0.0.1:{p}/healthz")]   # not its gRPC port
    assert len(proxies) == 1, (listening, proxy_ports)
    bodies = {"facts_context": {"query": "who leads the billing migration", "time": {"mode": "current"}},
              "claims_and_sources_context": {"query": "billing migration cutover"},
              "resolve_entity": {"name": "Dana"}}
    for name, body in bodies.items():
        direct, proxied = (httpx.post(f"http://127.0.0.1:{p}/operations/{name}", json=body, timeout=60)
                           for p in (port, proxies[0]))
        assert direct.status_code == proxied.status_code == 200, (direct.text, proxied.text)
        assert _without_instants(direct.json()) == _without_instants(proxied.json()), name
