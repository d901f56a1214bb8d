"""OpenAIExtractor end to end against a local server replaying the hand-written answer fixtures."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pydantic
import pytest

from actors.openai_extractor import OpenAIExtractor, OpenAIExtractorConfig
from actors.retries import GaveUp, RetryPolicy
from pipeline.claims import llm_io
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    Omitted,
    Passage,
    Selected,
    SelectionResult,
)
from tests.support import fake_openai, paths
from tests.support.fake_openai import FakeServer, Reply

FIXTURES = paths.FIXTURES / "llm"
STANDUP = paths.EXAMPLES / "2026-03-04-standup.md"
TURN = re.compile(r"^\[(t\d+) \| ([^\]]+)\] (\w+): (.+)$", re.MULTILINE)
MODEL = "test-model-8b"
# The import's own retry rule, with waits short enough for a test.
FAST = RetryPolicy(attempts=3, backoff_s=0.01, backoff_max_s=0.05)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def standup_ctx() -> ChunkContext:
    text = STANDUP.read_text(encoding="utf-8")
    passages = tuple(Passage(f"P{n}", m.start(4), m.end(4), m.group(4), True, speaker=m.group(3),
                             turn_time=datetime.fromisoformat(m.group(2)), turn_id=m.group(1))
                     for n, m in enumerate(TURN.finditer(text), start=1))
    return ChunkContext("v-standup", 0, "Billing migration stand-up — 2026-03-04", text[:text.index("[t1")].strip(),
                        datetime(2026, 3, 4, 15, 0, tzinfo=UTC), "body", passages)


def spec_ctx() -> ChunkContext:
    sentences = [("N1", False, "Extraction runs two model calls per chunk, in two pipeline stages."),
                 ("P1", True, ("The first call, **Selection**, reads a chunk with its surrounding context and "
                               "judges every statement in it.")),
                 ("P2", True, ("Each candidate gets exactly one outcome: `keep`, `keep_flagged` (kept, but marked "
                               "borderline), or a drop with a named reason.")),
                 ("P3", True, "The drop reasons are a fixed list:")]
    passages = tuple(Passage(label, 100 * i, 100 * i + len(text), text, in_target)
                     for i, (label, in_target, text) in enumerate(sentences))
    return ChunkContext("v-spec", 12, "RememberStack: full documentation",
                        "# RememberStack: full documentation\n\n# Claims: what a source said", None, "body", passages)


def answer_for(request: dict) -> str:
    """The fixture a model would have answered this request with: by prompt, then by document."""
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    step = "selection" if system == llm_io.load_prompt("selection") else "claimify"
    doc = "standup" if "stand-up" in user else "spec"
    return fixture(f"{doc}.{step}.json")


def usage_for(request: dict, answer: str) -> dict:
    prompt = len(request["messages"][1]["content"]) // 4
    return {"prompt_tokens": prompt, "completion_tokens": len(answer) // 4,
            "total_tokens": prompt + len(answer) // 4}


def completion(request: dict, answer: str, finish_reason: str = "stop") -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 1772600000, "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": finish_reason}],
            "usage": usage_for(request, answer)}


def ok(request: dict) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(completion(request, answer_for(request))).encode()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_openai.serving(FakeServer(default=ok)) as fake:
        yield fake


def extractor(server: FakeServer, retry: RetryPolicy = FAST, **overrides) -> OpenAIExtractor:
    return OpenAIExtractor(OpenAIExtractorConfig(base_url=server.base_url, model=MODEL, **overrides), retry)


def test_select_and_claimify_end_to_end(server):
    chunks = [standup_ctx(), spec_ctx()]
    ex = extractor(server, max_tokens=1500)
    selections, select_costs = ex.select(chunks)
    assert selections == [llm_io.parse_selection(chunks[0], fixture("standup.selection.json")),
                          llm_io.parse_selection(chunks[1], fixture("spec.selection.json"))]
    results, claimify_costs = ex.claimify(chunks, selections)
    assert results == [llm_io.parse_claimify(chunks[0], selections[0], fixture("standup.claimify.json")),
                       llm_io.parse_claimify(chunks[1], selections[1], fixture("spec.claimify.json"))]
    seed = results[0].drafts[3]
    assert seed.claim_text == ("Ravi said that Dana and Ravi agreed on 2026-03-03 to move the billing migration "
                               "cutover to June 8.")
    assert seed.cited[0] == "P4"
    assert results[1].omitted == (Omitted("P3", "the list it introduces is not among the passages shown, so the "
                                                "statement says nothing on its own"),)

    assert len(server.requests) == 4
    for request in server.requests:
        step = "selection" if request["messages"][0]["content"] == llm_io.load_prompt("selection") else "claimify"
        assert request["response_format"] == {"type": "json_schema", "json_schema": {
            "name": step, "strict": True, "schema": llm_io.load_schema(step)}}
        assert (request["model"], request["max_tokens"], request["temperature"]) == (MODEL, 1500, 0.0)
    selection_requests = [r for r in server.requests if r["response_format"]["json_schema"]["name"] == "selection"]
    assert sorted(r["messages"][1]["content"] for r in selection_requests) == sorted(
        llm_io.selection_messages(ctx)[1]["content"] for ctx in chunks)

    # One cost row per call, tokens as the server reported them.
    expected = []
    for ctx, name in ((chunks[0], "standup"), (chunks[1], "spec")):
        usage = usage_for({"messages": llm_io.selection_messages(ctx)}, fixture(f"{name}.selection.json"))
        expected.append((usage["prompt_tokens"], usage["completion_tokens"]))
    assert [(c.tokens_in, c.tokens_out) for c in select_costs] == expected
    assert all(c.backend == "openai" and c.model == MODEL and c.calls == 1 and c.device_seconds > 0
               for c in select_costs + claimify_costs)
    usage = usage_for({"messages": llm_io.claimify_messages(chunks[0], selections[0])},
                      fixture("standup.claimify.json"))
    assert (claimify_costs[0].tokens_in, claimify_costs[0].tokens_out) == (usage["prompt_tokens"],
                                                                           usage["completion_tokens"])


def test_version_names_model_and_prompts(server):
    assert extractor(server).version == f"openai-1:{MODEL}:{llm_io.prompt_hash()}"
    assert extractor(server).name == "openai"


def _failing(status: int, message: str) -> Callable[[dict], Reply]:
    return lambda request: (status, {"Content-Type": "application/json"},
                            json.dumps({"error": {"message": message}}).encode())


def test_a_server_that_fails_twice_then_answers_is_retried_by_the_import_policy(server):
    server.script = [_failing(500, "engine busy"), _failing(503, "engine busy")]
    selections, costs = extractor(server).select([standup_ctx()])
    assert selections == [llm_io.parse_selection(standup_ctx(), fixture("standup.selection.json"))]
    assert len(server.requests) == 3
    assert costs[0].tokens_out > 0


def test_a_server_that_always_fails_gives_up_after_the_policy_attempts_with_the_reason(server):
    server.default = _failing(503, "engine down")
    started = time.perf_counter()
    with pytest.raises(GaveUp) as raised:
        extractor(server, retry=RetryPolicy(attempts=4, backoff_s=0.05, backoff_max_s=0.1)).select([standup_ctx()])
    assert len(server.requests) == 4    # the policy's attempts, no hidden SDK retries on top
    assert time.perf_counter() - started >= 0.05 + 0.1 + 0.1   # its backoff between them
    assert raised.value.attempts == 4
    reason = str(raised.value)
    assert server.base_url in reason and "503" in reason and "engine down" in reason
    assert reason.endswith("(gave up after 4 attempts)")


def test_a_request_the_server_refuses_for_good_is_not_retried(server):
    server.script = [_failing(400, "bad schema")]
    selections, costs = extractor(server).select([spec_ctx()])
    assert len(server.requests) == 1
    assert all(s.outcome == "keep_flagged" and "BadRequestError" in s.reason for s in selections[0].statements)
    assert len(costs) == 1


def test_refused_answers_fall_back_per_chunk_and_the_batch_goes_on(server):
    def refuse_standup(request: dict) -> Reply:
        if "stand-up" in request["messages"][1]["content"]:
            return _failing(422, "cannot read this")(request)
        return ok(request)

    server.default = refuse_standup
    ex = extractor(server)
    chunks = [standup_ctx(), spec_ctx()]
    selections, costs = ex.select(chunks)
    standup = selections[0]
    assert [s.outcome for s in standup.statements] == ["keep_flagged"] * 7
    assert all(s.reason.startswith("selection failed: transport error: UnprocessableEntityError")
               for s in standup.statements)
    assert selections[1] == llm_io.parse_selection(chunks[1], fixture("spec.selection.json"))
    assert [c.calls for c in costs] == [1, 1] and costs[0].tokens_in == 0

    results, _ = ex.claimify(chunks, [llm_io.parse_selection(chunks[0], fixture("standup.selection.json")),
                                      selections[1]])
    assert results[0].drafts == ()
    assert [o.label for o in results[0].omitted] == ["P2", "P3", "P4", "P5", "P6"]
    assert all(o.cause.startswith("transport error: UnprocessableEntityError") for o in results[0].omitted)
    assert results[1].drafts


def test_a_malformed_body_omits_the_statements(server):
    server.default = lambda request: (200, {"Content-Type": "application/json"}, b'{"id": "x", "choices": [')
    selection = llm_io.parse_selection(standup_ctx(), fixture("standup.selection.json"))
    results, costs = extractor(server).claimify([standup_ctx()], [selection])
    assert results[0].drafts == ()
    assert [o.label for o in results[0].omitted] == ["P2", "P3", "P4", "P5", "P6"]
    assert all(o.cause.startswith("transport error: ") for o in results[0].omitted)
    assert costs == [CallCost("openai", MODEL, calls=1, tokens_in=0, tokens_out=0,
                              device_seconds=costs[0].device_seconds)]


def test_malformed_and_truncated_answers_omit_what_they_lost(server):
    answers = [("standup.claimify.malformed.txt", "stop"), ("standup.claimify.truncated.txt", "length")]
    server.script = [lambda request, a=a, f=f: (200, {"Content-Type": "application/json"},
                                                json.dumps(completion(request, fixture(a), f)).encode())
                     for a, f in answers]
    selection = llm_io.parse_selection(standup_ctx(), fixture("standup.selection.json"))
    ex = extractor(server, max_concurrency=1)
    malformed, _ = ex.claimify([standup_ctx()], [selection])
    truncated, costs = ex.claimify([standup_ctx()], [selection])
    assert [d.cited for d in malformed[0].drafts] == [("P2",)]
    assert all(o.cause.startswith("malformed JSON: Expecting ',' delimiter") for o in malformed[0].omitted)
    assert truncated[0].omitted == tuple(Omitted(label, "truncated output") for label in ("P4", "P5", "P6"))
    assert costs[0].tokens_out == len(fixture("standup.claimify.truncated.txt")) // 4


def test_refusals_and_empty_answers_become_causes(server):
    def refuse(request: dict) -> Reply:
        body = completion(request, "")
        body["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "I cannot help."}
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    server.default = refuse
    selection = SelectionResult((Selected("P4", "keep"),))
    results, _ = extractor(server).claimify([standup_ctx()], [selection])
    assert results[0].omitted == (Omitted("P4", "the model refused: I cannot help."),)


def test_timeouts_are_retried_then_given_up(server):
    server.delay_s = 1.0
    with pytest.raises(GaveUp, match=r"APITimeoutError.*\(gave up after 2 attempts\)"):
        extractor(server, retry=RetryPolicy(attempts=2, backoff_s=0.01), timeout_s=0.2).select([spec_ctx()])
    assert len(server.requests) == 2


def test_an_unreachable_endpoint_gives_up_with_its_address():
    config = OpenAIExtractorConfig(base_url="http://127.0.0.1:9/v1", model=MODEL, timeout_s=2)
    with pytest.raises(GaveUp, match=r"http://127\.0\.0\.1:9/v1: APIConnectionError.*gave up after 3 attempts"):
        OpenAIExtractor(config, FAST).select([spec_ctx()])


def test_concurrency_is_bounded(server):
    server.delay_s = 0.1
    chunks = [spec_ctx()] * 6
    extractor(server, max_concurrency=2).select(chunks)
    assert server.max_in_flight == 2
    server.max_in_flight = 0
    extractor(server, max_concurrency=6).select(chunks)
    assert server.max_in_flight > 2


def test_nothing_to_ask_makes_no_call(server):
    nothing_kept = SelectionResult((Selected("P1", "drop", "question"),))
    no_targets = ChunkContext("v", 1, "t", "h", None, "body", (Passage("N1", 0, 4, "text", False),))
    ex = extractor(server)
    assert ex.claimify([standup_ctx()], [nothing_kept]) == ([ClaimifyResult(())], [])
    assert ex.select([no_targets]) == ([SelectionResult(())], [])
    assert ex.select([]) == ([], [])
    assert server.requests == []
    with pytest.raises(ValueError, match="2 chunks and 1 selections"):
        ex.claimify([standup_ctx(), spec_ctx()], [nothing_kept])


def test_config_is_strict():
    with pytest.raises(pydantic.ValidationError):
        OpenAIExtractorConfig(base_url="http://x/v1", model=MODEL, temprature=0.5)
    config = OpenAIExtractorConfig(base_url="http://x/v1", model=MODEL)
    assert (config.api_key, config.temperature) == ("EMPTY", 0.0)
    with pytest.raises(pydantic.ValidationError):
        config.model = "other"   # type: ignore[misc]
    assert all(f.description for f in OpenAIExtractorConfig.model_fields.values())
