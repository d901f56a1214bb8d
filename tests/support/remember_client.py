"""Drives `corpusmem serve` with the real `remember` 0.17.2 client (run under Python 3.12+).

Usage: python remember_client.py BASE_URL — prints one JSON object: for each step, what the
client returned (dumped by its own models, so a response that breaks them is a failure here)
or the error it raised.
"""

import json
import subprocess
import sys
import time
from pathlib import Path
from datetime import UTC, datetime

from remember import Client, MemoryApiError, ReadinessRequirements


def main(url: str) -> None:
    c = Client(base_url=url, api_key="test-secret")
    out = {}

    def step(name, fn):
        try:
            value = fn()
            out[name] = {"ok": True, "value": value}
        except MemoryApiError as err:
            out[name] = {"ok": False, "status": err.status_code, "code": err.code, "detail": str(err.detail),
                         "cause": repr(err.__cause__)[:2000]}
        except Exception as err:  # report, never hide
            out[name] = {"ok": False, "error": f"{type(err).__name__}: {err}"[:2000]}

    def dump(model):
        return json.loads(model.model_dump_json(by_alias=True))

    step("deployment", lambda: dump(c.deployment_build_info()))
    step("operations", lambda: [o.name for o in c.list_operations()])
    step("resolve_entity", lambda: dump(c.resolve_entity("Ravi")))
    step("resolve_unknown", lambda: dump(c.resolve_entity("Zorblax Quentin")))
    step("resolve", lambda: dump(c.resolve(name="billing migration")))
    for mode, time_arg in (("current", {"mode": "current"}),
                           ("at", {"mode": "at", "at": "2026-03-01T00:00:00Z"}),
                           ("overlap", {"mode": "overlap", "from": "2026-05-15T00:00:00Z",
                                        "to": "2026-06-15T00:00:00Z"}),
                           ("history", {"mode": "history"})):
        step(f"facts_{mode}", lambda t=time_arg: dump(c.facts_context("billing migration", time=t)))
    step("claims_and_sources", lambda: dump(c.claims_and_sources_context("who leads the billing migration")))
    step("combined", lambda: dump(c.combined_context("cutover", time={"mode": "history"})))
    for channel in ("semantic", "bm25"):
        step(f"search_claims_{channel}", lambda ch=channel: dump(c.search_claims(query="cutover", channel=ch)))
        step(f"search_chunks_{channel}", lambda ch=channel: dump(c.search_chunks(query="cutover", k=3, channel=ch)))
    chunks = out["search_chunks_semantic"].get("value", {}).get("chunks") or [{}]
    step("adjacent", lambda: dump(c.adjacent_chunks(chunk_id=chunks[0].get("chunk_id"), window=1)))
    step("lookup_relations", lambda: dump(c.lookup_relations(predicate="works_on", k=10)))
    ravi = (out["resolve_entity"].get("value", {}).get("entities") or [{}])[0].get("entity_id")
    step("lookup_observations", lambda: dump(c.lookup_observations(entity_id=ravi)))
    history = out["facts_history"].get("value", {}).get("facts", [])
    relation = next((f["fact_id"] for f in history if f["kind"] == "relation"), None)
    step("hydrate", lambda: dump(c.hydrate_relation(relation_id=relation)))
    step("transcript", lambda: dump(c.transcript_relation(relation_id=relation)))
    step("documents", lambda: dump(c.list_documents(limit=50)))
    billing = (out["resolve"].get("value", {}).get("entities") or [{}])[0].get("entity_id")
    step("neighborhood", lambda: dump(c.graph_neighborhood(entity_id=ravi, hops=2, limit=50, include_paths=True)))
    step("neighborhood_as_of", lambda: dump(c.graph_neighborhood(
        entity_id=ravi, hops=1, valid_at=datetime(2026, 3, 1, tzinfo=UTC), believed_at=datetime.now(UTC),
        include_paths=True)))
    # Priya has two current relations with complete windows (schema change, invoice rewrite): two pages of one
    step("resolve_priya", lambda: dump(c.resolve_entity("Priya")))
    priya = (out["resolve_priya"].get("value", {}).get("entities") or [{}])[0].get("entity_id")
    step("neighborhood_page", lambda: dump(c.graph_neighborhood(entity_id=priya, hops=2, limit=1)))
    cursor = ((out["neighborhood_page"].get("value") or {}).get("truncation") or {}).get("continuation")
    step("neighborhood_next", lambda: dump(c.graph_neighborhood(entity_id=priya, hops=2, limit=1,
                                                                 continuation=cursor)))
    step("neighborhood_foreign", lambda: dump(c.graph_neighborhood(entity_id=billing, hops=2, limit=1,
                                                                    continuation=cursor)))
    step("path", lambda: dump(c.graph_path(from_entity_id=ravi, to_entity_id=billing, max_hops=3)))
    docs = out["documents"].get("value", {}).get("documents") or [{}, {}]
    step("citation_path", lambda: dump(c.graph_citation_path(from_doc_id=docs[0].get("doc_id"),
                                                             to_doc_id=docs[1].get("doc_id"))))
    step("run_operation", lambda: dump(c.run_operation(name="resolve_entity", arguments={"name": "Dana"})))
    step("bad_argument", lambda: dump(c.run_operation(name="facts_context", arguments={"query": "x", "limit": 3})))
    version = c.ingest(b"# Billing migration note\n\nMarco owns the finance sign-off.\n", filename="note.md",
                       source_kind="test", source_ref="note-1")
    out["ingest"] = {"ok": True, "value": dump(version)}
    step("readiness", lambda: dump(c.wait_for_readiness([version.version_id], timeout=300, poll_interval=2)))
    step("marco", lambda: dump(c.facts_context("Marco", time={"mode": "current"})))
    step("ingest_again", lambda: dump(c.ingest(b"# Billing migration note\n\nMarco owns the finance sign-off.\n",
                                                filename="note.md", source_kind="test", source_ref="note-1")))
    step("delete", lambda: dump(c.delete_document(doc_id=version.doc_id)))
    step("delete_again", lambda: dump(c.delete_document(doc_id=version.doc_id)))
    step("readiness_unknown", lambda: dump(c.pipeline_readiness(
        version_ids=("00000000-0000-0000-0000-000000000001",),
        require=ReadinessRequirements(pipeline=True, p1=True, live_graph=True, p3=False))))
    step("mcp_tools", lambda: mcp_tools(url))
    out["elapsed"] = time.time()
    print(json.dumps(out))


def mcp_tools(url: str) -> list[str]:
    """`remember mcp` over stdio: initialize, then tools/list; the names it lists."""
    messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    run = subprocess.run([str(Path(sys.executable).parent / "remember"), "mcp", "--api-url", url, "--api-key",
                          "test-secret"], input="".join(json.dumps(m) + "\n" for m in messages),
                         capture_output=True, text=True, timeout=120)
    replies = {r.get("id"): r for r in map(json.loads, filter(None, run.stdout.splitlines()))}
    if 2 not in replies or "result" not in replies[2]:
        raise RuntimeError(f"no tools/list answer: {run.stdout[-1000:]} {run.stderr[-1000:]}")
    return sorted(t["name"] for t in replies[2]["result"]["tools"])


if __name__ == "__main__":
    main(sys.argv[1])
