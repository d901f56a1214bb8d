"""The read API's scenarios over HTTP, in process (FastAPI app, real embedder, no Ray Serve):
the seed's time-mode table, two people named Dana, an unknown name, every side of a
contradiction, a retracted fact never served, graph expansion, entity filters, determinism,
admission limits and a schemathesis run against /openapi.json.

One memory for the module: these tests only read it, except the retraction test, which runs last
and deletes one document of its own.
"""

from __future__ import annotations

import copy
import time

import psycopg
import pytest
from fastapi.testclient import TestClient

from serve import admission
from serve.retrieval.fusion import CHANNEL_WEIGHTS
from sql.write import reconcile
from tests.support import apps
from tests.support.memory import do_import, dsn_for, write

pytestmark = pytest.mark.integration

BILLING, SEARCH, ONCALL = ("Ravi works on billing migration", "Ravi works on search team",
                           "Ravi is the on-call engineer for billing incidents.")
DOCS = {
    "2026-01-15-kickoff.md": "# Billing migration kickoff\n\nRavi has been on the billing migration since yesterday.\n",
    "2026-06-12-retro.md": "# Billing migration retro\n\nRavi moved from the billing migration to the search "
                           "team on 1 June.\n",
    "2026-02-01-roster.md": "# On-call roster\n\nRavi is the on-call engineer for billing incidents.\n",
    "2026-03-02-search.md": "# Search team notes\n\nDana Kim has led the search team since 1 March "
                           "2026.\n\nDana presented the roadmap.\n",
    "2026-03-03-finance.md": "# Finance notes\n\nDana Ortiz owns the finance budget.\n\nDana approved the plan.\n",
    "2026-05-02-spec.md": "# Billing migration: cutover specification\n\nThe cutover is scheduled for June 8.\n",
    "2026-05-20-standup.md": "# Billing migration stand-up\n\nThe cutover is on June 15.\n",
    "2026-07-01-signoff.md": "# Sign-off note\n\nMarco owns the vendor sign-off.\n",
}


@pytest.fixture(scope="module")
def scenario_memory(pg_admin_dsn, template_db, ray_local, tmp_path_factory):
    from jobs.settings import load_settings
    from sql.store import embedded

    root = tmp_path_factory.mktemp("api-scenarios")
    embedded.ensure_database(pg_admin_dsn, "cm_api_scenarios", template=template_db)
    settings = load_settings({}, home=root / "home", dsn=dsn_for(pg_admin_dsn, "cm_api_scenarios"),
                             object_store=str(root / "objects"))
    report = do_import(settings, write(root / "docs", DOCS), modified_at_from="path")
    assert report.counts["failed"] == 0
    return settings


@pytest.fixture(scope="module")
def api(scenario_memory, embed):
    yield from apps.client(scenario_memory, embed)


def op(api: TestClient, operation: str, /, **arguments) -> dict:
    response = api.post(f"/operations/{operation}", json=arguments)
    assert response.status_code == 200, response.text
    return response.json()


def entity(api: TestClient, name: str) -> str:
    [found] = [e for e in op(api, "resolve_entity", name=name)["entities"] if e["canonical_name"] == name]
    return found["entity_id"]


def matches(envelope: dict) -> dict[str, str]:
    return {f["label"]: f["temporal_match"] for f in envelope["facts"]}


def test_the_time_mode_table_over_http(api):
    ravi = entity(api, "Ravi")
    table = [
        ({"mode": "current"}, {SEARCH: "confirmed", ONCALL: "possible"}),
        ({"mode": "at", "at": "2026-03-01T00:00:00Z"}, {BILLING: "confirmed", ONCALL: "possible"}),
        ({"mode": "overlap", "from": "2026-05-15T00:00:00Z", "to": "2026-06-15T00:00:00Z"},
         {BILLING: "confirmed", SEARCH: "confirmed", ONCALL: "possible"}),
        ({"mode": "history"}, {BILLING: "confirmed", SEARCH: "confirmed", ONCALL: "possible"}),
    ]
    for time_arg, expected in table:
        got = op(api, "facts_context", query="Ravi", entity_ids=[ravi], time=time_arg)
        assert {k: v for k, v in matches(got).items() if k in (BILLING, SEARCH, ONCALL)} == expected, time_arg
        assert got["temporal_scope"]["mode"] == time_arg["mode"] and got["temporal_scope"]["evaluated_at"]


def test_two_danas_are_both_candidates_and_an_unknown_name_is_a_typed_negative(api):
    danas = {e["canonical_name"] for e in op(api, "resolve_entity", name="Dana")["entities"]}
    assert {"Dana Kim", "Dana Ortiz"} <= danas
    unknown = op(api, "resolve_entity", name="Zorblax Quentin")
    assert unknown["entities"] == [] and unknown["negative"]["kind"] == "unknown_entity"
    missing = op(api, "facts_context", query="x", entity_ids=["00000000-0000-0000-0000-000000000009"])
    assert missing["negative"]["kind"] == "unknown_entity" and missing["facts"] == []
    claims = op(api, "claims_and_sources_context", query="x", entity_ids=["00000000-0000-0000-0000-000000000009"])
    assert claims["negative"]["kind"] == "unknown_entity" and claims["evidence"] == []


def test_a_contradiction_returns_every_side(api):
    got = op(api, "facts_context", query="cutover", time={"mode": "history"})
    sides = {f["label"]: f for f in got["facts"] if f["contradiction"]}
    assert {"The billing migration cutover is scheduled for 2026-06-08.",
            "The billing migration cutover is scheduled for 2026-06-15."} <= set(sides)
    for label, fact in sides.items():
        assert fact["contradiction"]["total"] >= 1
        assert {m["label"] for m in fact["contradiction"]["co_members"]} <= set(sides) - {label}
    # a single side asked for alone still carries the others inline
    one = op(api, "facts_context", query="2026-06-15", k=1, time={"mode": "history"})
    assert one["facts"][0]["contradiction"]["co_members"]


def test_graph_expansion_adds_neighbours_as_nodes_and_predicate_limits_it(api):
    dana = entity(api, "Dana Kim")
    got = op(api, "facts_context", query="search", entity_ids=[dana], hops=2)
    nodes = {n["name"]: n["hops"] for n in got["nodes"]}
    # both steps have a complete window that holds now: Dana since 1 March, Ravi since 1 June
    assert nodes.get("search team") == 1 and nodes.get("Ravi") == 2
    assert "billing migration" not in nodes   # Ravi's step there ended on 1 June
    assert SEARCH in matches(got)
    narrow = op(api, "facts_context", query="search", entity_ids=[dana], hops=2, predicate="owns")
    assert narrow["nodes"] == [] and all("owns" in f["label"] for f in narrow["facts"])
    # overlap and history never expand
    history = op(api, "facts_context", query="search", entity_ids=[dana], hops=2, time={"mode": "history"})
    assert history["nodes"] == []


def test_claims_and_sources_restricted_to_entities(api):
    ortiz = entity(api, "Dana Ortiz")
    got = op(api, "claims_and_sources_context", query="Dana", entity_ids=[ortiz])
    texts = [c["claim_text"] for c in got["evidence"]]
    assert texts and all("Kim" not in t and "search" not in t for t in texts)
    assert any("finance budget" in t for t in texts)
    everything = op(api, "claims_and_sources_context", query="Dana")
    assert any("search team" in c["claim_text"] for c in everything["evidence"])


def test_claims_and_chunks_come_in_one_ranking_that_both_lists_follow(api):
    got = op(api, "claims_and_sources_context", query="When is the billing migration cutover?")
    ranking, evidence, chunks = got["ranking"], got["evidence"], got["chunks"]
    assert evidence and chunks
    ids = [r["item_id"] for r in ranking]
    claim_ids, chunk_ids = [e["claim_id"] for e in evidence], [c["chunk_id"] for c in chunks]
    assert sorted(ids) == sorted(claim_ids + chunk_ids)              # every returned item, once
    assert [i for i in ids if i in claim_ids] == claim_ids            # each list in the ranking's order
    assert [i for i in ids if i in chunk_ids] == chunk_ids
    scores = [r["score"] for r in ranking]
    assert scores == sorted(scores, reverse=True)
    for r in ranking:   # the score is the sum of what each channel contributed: weight / (60 + rank)
        assert r["signals"] and set(r["signals"]) <= {"claims_semantic", "claims_bm25", "claims_named", "claims_dated",
                                                      "claims_then", "chunks_semantic", "chunks_bm25"}
        assert abs(sum(r["signals"].values()) - r["score"]) < 1e-9
        assert all(0 < s <= CHANNEL_WEIGHTS.get(c, 1) / 61 for c, s in r["signals"].items())


def test_the_entities_a_question_names_nominate_the_claims_about_them(api):
    named = op(api, "claims_and_sources_context", query="What does Dana Ortiz own?")
    assert any("claims_named" in r["signals"] for r in named["ranking"])
    assert "finance budget" in named["evidence"][0]["claim_text"]
    unnamed = op(api, "claims_and_sources_context", query="who owns the budget")
    assert all("claims_named" not in r["signals"] for r in unnamed["ranking"])


def test_a_question_that_names_its_days_is_read_against_the_instant_it_is_asked(api):
    question = "What did Dana approve two weeks ago?"
    then = op(api, "claims_and_sources_context", query=question, asked_at="2026-03-17T09:00:00Z")
    assert then["temporal_scope"]["evaluated_at"].startswith("2026-03-17T09:00:00")
    days = [e["claim_text"] for e in then["evidence"] if "claims_then" in _signals(then, e["claim_id"])]
    # two weeks before 17 March is about 3 March: the finance notes, said that day, are those days' claims
    assert any("approved the plan" in t for t in days) and not any("sign-off" in t for t in days)
    assert "approved the plan" in then["evidence"][0]["claim_text"]
    # every RFC 3339 form the schema admits is read, lower-case separators included
    lower = op(api, "claims_and_sources_context", query=question, asked_at="2026-03-17t09:00:00z")
    assert lower["temporal_scope"]["evaluated_at"].startswith("2026-03-17T09:00:00")
    later = op(api, "claims_and_sources_context", query=question, asked_at="2026-07-15T09:00:00Z")
    days = [e["claim_text"] for e in later["evidence"] if "claims_then" in _signals(later, e["claim_id"])]
    assert days and all("sign-off" in t for t in days)
    # asked now, "two weeks ago" names days no document speaks of, and no question without days has the channel
    for got in (op(api, "claims_and_sources_context", query=question),
                op(api, "claims_and_sources_context", query="What did Dana approve?", asked_at="2026-03-17T09:00:00Z")):
        assert all("claims_then" not in r["signals"] for r in got["ranking"])
    for bad in ("17 March 2026", "2026-03-17T09:00:00", 20260317):
        response = api.post("/operations/claims_and_sources_context", json={"query": question, "asked_at": bad})
        assert response.status_code == 422 and "asked_at" in response.json()["detail"]["message"], response.text


def _signals(answer: dict, item_id: str) -> dict:
    return next(r["signals"] for r in answer["ranking"] if r["item_id"] == item_id)


def test_the_same_request_gives_the_same_body_apart_from_evaluated_at(api):
    def strip(body: dict) -> dict:
        body = copy.deepcopy(body)
        for part in (body, *(body[k] for k in ("facts", "claims_and_sources") if isinstance(body.get(k), dict))):
            for key in ("temporal_scope", "freshness"):
                part.pop(key, None)
        return body

    for name, arguments in (("facts_context", {"query": "billing migration", "time": {"mode": "history"}}),
                            ("claims_and_sources_context", {"query": "who leads the cutover"}),
                            ("combined_context", {"query": "cutover"}),
                            ("resolve_entity", {"name": "Dana"})):
        first, second = (op(api, name, **arguments) for _ in range(2))
        assert strip(first) == strip(second), name
        scope = first.get("temporal_scope") or first["facts"]["temporal_scope"]
        assert scope["evaluated_at"]


def test_admission_limits_refuse_with_retry_after(scenario_memory, embed):
    limits = admission.Limits(deployment_per_minute=8)  # burst of 2
    for api in apps.client(scenario_memory, embed, limits):
        statuses = [api.get("/deployment").status_code for _ in range(3)]
        assert statuses[:2] == [200, 200] and statuses[2] == 429
        refused = api.get("/deployment")
        assert refused.json()["detail"]["code"] == "rate_limited"
        assert int(refused.headers["Retry-After"]) >= 1
        assert api.get("/healthz").status_code == 200   # never counted
        time.sleep(7.6)   # 8 a minute: one token every 7.5 s
        assert api.get("/deployment").status_code == 200


_HTTPX_ARGUMENTS = ("method", "url", "params", "headers", "json", "content", "data", "files")


def test_schemathesis_finds_no_server_error(api):
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_dict(api.get("/openapi.json").json())
    failures, checked = [], []
    for operation in schema.get_all_operations():
        op_ = operation.ok()
        if op_.method.upper() == "DELETE" or op_.path == "/ingest":
            continue  # writes: covered by their own tests; here the memory must stay as it is

        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  derandomize=True)
        @given(case=op_.as_strategy())
        def check(case):
            # sent through the module's client: the app's pools belong to that client's event loop
            sent = case.as_transport_kwargs(base_url=str(api.base_url))
            response = api.request(**{k: v for k, v in sent.items() if k in _HTTPX_ARGUMENTS})
            checked.append(response.status_code)
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, case.query, case.body, response.status_code))

        check()
    assert not failures, failures[:5]
    assert len(checked) > 100 and any(code == 200 for code in checked)   # it really called the routes


def test_a_retracted_fact_is_never_served_and_is_counted_as_dropped(api, scenario_memory):
    """Runs last: it deletes the sign-off note."""
    label = "Marco owns vendor sign-off"
    before = op(api, "facts_context", query="Marco owns the vendor sign-off", time={"mode": "history"})
    assert label in matches(before)
    with psycopg.connect(scenario_memory.dsn, autocommit=True) as conn:
        doc = conn.execute("SELECT doc_id::text FROM documents WHERE source_ref LIKE '%signoff.md'").fetchone()[0]
        reconcile.delete_document(conn, doc)
        still_indexed = conn.execute("SELECT embedding IS NOT NULL AND invalidated_at IS NOT NULL FROM facts"
                                     " WHERE label = %s", (label,)).fetchone()[0]
    assert still_indexed   # the vector is still there to nominate it
    after = op(api, "facts_context", query="Marco owns the vendor sign-off", time={"mode": "history"})
    assert label not in matches(after) and after["dropped_by_hydration"] >= 1
