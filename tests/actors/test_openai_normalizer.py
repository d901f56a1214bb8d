"""OpenAINormalizer end to end against a local server replaying recorded chat completions
(`tests/fixtures/llm/normalize_*.json`, written by hand in the shape `vllm serve` answers with)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest

from actors.openai_extractor import OpenAIExtractorConfig
from actors.openai_normalizer import OpenAINormalizer
from actors.retries import GaveUp, RetryPolicy
from pipeline.facts import normalize, normalize_llm
from tests.support import fake_openai
from tests.support.fake_openai import JSON, FakeServer, Reply
from tests.support.recorded_normalize import SAID, TEXTS, TOPIC, content, recorded

MODEL = "test-model-8b"
# The import's own retry rule, with waits short enough for a test.
FAST = RetryPolicy(attempts=3, backoff_s=0.01, backoff_max_s=0.05)
LABEL = re.compile(r"^\[(C\d+)\] ", re.MULTILINE)


def claims(texts: list[tuple[str, bool]] = TEXTS) -> list[dict]:
    return [{"claim_id": f"c{i}", "doc_id": "d1", "claim_text": text, "is_attributed": attributed,
             "asserted_at": SAID, "valid_from": None, "valid_until": None, "precision": "unknown", "kind": None,
             "title": "Billing migration retro", "opening": "# Billing migration retro\n\nNotes."}
            for i, (text, attributed) in enumerate(texts, start=1)]


def replay(name: str) -> Callable[[dict], Reply]:
    return lambda request: (200, JSON, json.dumps(recorded(name)).encode())


def good(request: dict) -> Reply:
    return replay("good")(request)


def nothing(request: dict) -> Reply:
    """A valid answer saying `none` for every claim the request shows."""
    labels = LABEL.findall(request["messages"][1]["content"])
    body = recorded("good")
    body["choices"][0]["message"]["content"] = json.dumps(
        {"assertions": [{"claim": label, "kind": "none"} for label in labels]})
    body["usage"]["completion_tokens"] = 7 * len(labels)
    return 200, JSON, json.dumps(body).encode()


def down(request: dict) -> Reply:
    return 500, {**JSON, "retry-after-ms": "1"}, b'{"error": {"message": "engine died"}}'


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_openai.serving(FakeServer(default=good)) as fake:
        yield fake


def normalizer(server: FakeServer, retry: RetryPolicy = FAST, **overrides) -> OpenAINormalizer:
    return OpenAINormalizer(OpenAIExtractorConfig(base_url=server.base_url, model=MODEL, **overrides), retry=retry)


def test_claims_end_to_end(server):
    found, cost, problems = normalizer(server, max_tokens=1200).normalize_claims(claims(), TOPIC)
    assert (found, problems) == normalize_llm.parse(claims(), TOPIC, content("good"))
    assert [(a.subject, a.predicate, a.object) for a in found[8]] == [("Kenji", "works_for", "Northwind Health")]
    assert found[1][0].statement == "The billing migration cutover is scheduled for 2026-06-15."

    [request] = server.requests
    assert request["messages"] == normalize_llm.messages(claims(), TOPIC)
    assert request["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "normalize", "strict": True, "schema": normalize_llm.load_schema()}}
    assert (request["model"], request["max_tokens"], request["temperature"]) == (MODEL, 1200, 0.0)

    usage = recorded("good")["usage"]
    assert (cost.backend, cost.model, cost.calls) == ("openai", MODEL, 1)
    assert (cost.tokens_in, cost.tokens_out) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert cost.tokens_out > 0 and cost.device_seconds > 0


def test_version_names_model_and_prompt(server):
    ex = normalizer(server)
    assert ex.version == f"openai-normalize-1:{MODEL}:{normalize_llm.prompt_hash()}"
    assert ex.name == "openai"


def test_a_server_that_fails_twice_then_answers_is_retried_by_the_import_policy(server):
    server.script = [down, down]
    found, cost, problems = normalizer(server).normalize_claims(claims(), TOPIC)
    assert len(server.requests) == 3
    assert (found, problems) == normalize_llm.parse(claims(), TOPIC, content("good"))
    assert cost.calls == 1 and cost.tokens_out == recorded("good")["usage"]["completion_tokens"]


def test_a_server_that_always_fails_gives_up_after_the_policy_attempts_with_the_reason(server):
    server.default = down
    with pytest.raises(GaveUp) as raised:
        normalizer(server, retry=RetryPolicy(attempts=2, backoff_s=0.01)).normalize_claims(claims(), TOPIC)
    assert len(server.requests) == 2    # the policy's attempts, no hidden SDK retries on top
    reason = str(raised.value)
    assert server.base_url in reason and "InternalServerError" in reason and "engine died" in reason
    assert reason.endswith("(gave up after 2 attempts)") and raised.value.attempts == 2


def test_claims_go_25_to_a_call_and_a_refused_call_costs_only_its_claims(server):
    many = claims([(f"Worker {n} works on the invoice rewrite.", False) for n in range(1, 31)])
    server.default = nothing
    # the first request to arrive is refused for good; both calls run at once, so which is unknown
    server.script = [lambda request: (400, JSON, b'{"error": {"message": "bad request"}}')]
    found, cost, problems = normalizer(server).normalize_claims(many, TOPIC)
    assert sorted(len(LABEL.findall(r["messages"][1]["content"])) for r in server.requests) == [5, 25]
    assert server.max_in_flight <= 2
    failed = 25 if len(LABEL.findall(server.requests[0]["messages"][1]["content"])) == 25 else 5
    rules_read = [i for i, f in enumerate(found) if f]
    assert len(rules_read) == failed    # the rules read each worker's claim as a relation; the model said none
    assert rules_read == (list(range(25)) if failed == 25 else list(range(25, 30)))
    assert [p.split(":")[0] for p in problems] == [f"C{i + 1}" for i in rules_read]  # labels in the whole list
    assert all("BadRequestError" in p for p in problems)
    assert (cost.calls, cost.tokens_out) == (2, 7 * (30 - failed))


def test_concurrency_is_bounded(server):
    many = claims([("Ravi knows Dana.", False)] * 100)
    server.default, server.delay_s = nothing, 0.1
    normalizer(server, max_concurrency=2).normalize_claims(many, None)
    assert len(server.requests) == 4 and server.max_in_flight == 2


def test_truncated_and_ignored_schema_answers(server):
    server.script = [replay("truncated"), replay("bad")]
    ex = normalizer(server, max_concurrency=1)
    found, cost, problems = ex.normalize_claims(claims(), TOPIC)
    assert found[3:] == [normalize.normalize_claim(c, TOPIC) for c in claims()[3:]]
    assert problems == [f"C{i}: truncated output; rules fallback" for i in range(4, 10)]
    assert cost.tokens_out == recorded("truncated")["usage"]["completion_tokens"]
    found, _, problems = ex.normalize_claims(claims(), TOPIC)
    assert found[0] == [] and "C1: predicate 'moved_to' is not governed; relation dropped" in problems


def test_refusals_and_malformed_bodies_fall_back(server):
    def refuse(request: dict) -> Reply:
        body = recorded("good")
        body["choices"][0]["message"].update(content=None, refusal="I cannot help.")
        return 200, JSON, json.dumps(body).encode()

    server.script = [refuse, lambda request: (200, JSON, b'{"id": "x", "choices": [')]
    ex = normalizer(server, max_concurrency=1)
    found, cost, problems = ex.normalize_claims(claims()[:2], TOPIC)
    assert found == [normalize.normalize_claim(c, TOPIC) for c in claims()[:2]]
    assert problems == ["C1: the model refused: I cannot help.; rules fallback",
                        "C2: the model refused: I cannot help.; rules fallback"]
    assert cost.tokens_in == recorded("good")["usage"]["prompt_tokens"]
    found, _, problems = ex.normalize_claims(claims()[:1], TOPIC)
    assert found == [normalize.normalize_claim(claims()[0], TOPIC)]
    assert problems[0].startswith("C1: transport error: ")


def test_an_unreachable_endpoint_gives_up_with_its_address():
    config = OpenAIExtractorConfig(base_url="http://127.0.0.1:9/v1", model=MODEL, timeout_s=2)
    with pytest.raises(GaveUp, match=r"http://127\.0\.0\.1:9/v1: APIConnectionError.*gave up after 3 attempts"):
        OpenAINormalizer(config, retry=FAST).normalize_claims(claims()[:1], TOPIC)


def test_nothing_to_ask_makes_no_call(server):
    ex = normalizer(server)
    assert ex.normalize_claims([], TOPIC) == ([], None, [])
    assert ex.normalize_version([], lambda c, o: f"{c}-{o}") == ([], [])
    assert server.requests == []


def test_normalize_version_rows(server):
    ex = normalizer(server)
    rows, mentions = ex.normalize_version(claims(), lambda c, o: f"{c}-{o}")
    [request] = server.requests
    assert "Document topic: billing migration" in request["messages"][1]["content"]
    found, _ = normalize_llm.parse(claims(), TOPIC, content("good"))
    assert [r["assertion_id"] for r in rows] == [f"{c['claim_id']}-{a.ord}" for c, f in zip(claims(), found)
                                                 for a in f]
    # The rows have the rules normalizer's columns, with this normalizer's version.
    rules_rows, _ = normalize.normalize_version(claims(), lambda c, o: f"{c}-{o}")
    assert all(set(r) == set(rules_rows[0]) for r in rows)
    assert {r["normalizer"] for r in rows} == {ex.version}
    kenji = next(r for r in rows if r["claim_id"] == "c9")
    assert (kenji["subject_key"], kenji["predicate"], kenji["object_key"]) == ("kenji", "works_for", "northwind health")
    moved = next(r for r in rows if r["claim_id"] == "c1")
    assert (moved["change"], moved["ends_key"]) == (True, "billing migration")
    cutover = next(r for r in rows if r["claim_id"] == "c2")
    rules_cutover = next(r for r in rules_rows if r["claim_id"] == "c2")
    assert (cutover["attribute"], cutover["value"], cutover["statement"]) == (
        "cutover date", "2026-06-15", "The billing migration cutover is scheduled for 2026-06-15.")
    assert {k: v for k, v in cutover.items() if k != "normalizer"} == {
        k: v for k, v in rules_cutover.items() if k != "normalizer"}
    # A lone "Dana" in a document that also says "Dana Kim" is Dana Kim.
    assert next(r for r in rows if r["claim_id"] == "c3")["subject_key"] == "dana kim"
    assert {(m["mention_key"], m["surface"]) for m in mentions if m["mention_key"] == "dana kim"} == {
        ("dana kim", "Dana"), ("dana kim", "Dana Kim")}
    _, _, cost, problems = ex.normalize_version_costed(claims(), lambda c, o: f"{c}-{o}")
    assert cost.tokens_out > 0 and problems == []
