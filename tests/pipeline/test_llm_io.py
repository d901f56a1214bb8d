"""llm_io: prompts show labels and never offsets; every model answer parses, bad ones to recorded causes."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime

import jsonschema
import pytest

from pipeline.claims import llm_io
from pipeline.claims.extraction import (
    CONTEXT_ORIGINS,
    DROP_REASONS,
    PRECISIONS,
    VALID_KINDS,
    ChunkContext,
    ClaimifyResult,
    DraftClaim,
    Omitted,
    Passage,
    Selected,
    SelectionResult,
)
from tests.support import paths

FIXTURES = paths.FIXTURES / "llm"
STANDUP = paths.EXAMPLES / "2026-03-04-standup.md"
TURN = re.compile(r"^\[(t\d+) \| ([^\]]+)\] (\w+): (.+)$", re.MULTILINE)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def standup_ctx(neighbours: tuple[int, ...] = ()) -> ChunkContext:
    """The stand-up's turns as passages; turn numbers in `neighbours` become neighbours N1.. instead."""
    text = STANDUP.read_text(encoding="utf-8")
    passages, targets, others = [], 0, 0
    for number, match in enumerate(TURN.finditer(text), start=1):
        in_target = number not in neighbours
        if in_target:
            targets += 1
        else:
            others += 1
        passages.append(Passage(label=f"P{targets}" if in_target else f"N{others}",
                                char_start=match.start(4), char_end=match.end(4), text=match.group(4),
                                in_target=in_target, speaker=match.group(3),
                                turn_time=datetime.fromisoformat(match.group(2)), turn_id=match.group(1)))
    header = text[:text.index("[t1")].strip()
    return ChunkContext(version_id="v-standup", chunk_ord=0, title="Billing migration stand-up — 2026-03-04",
                        header=header, asserted_at=datetime(2026, 3, 4, 15, 0, tzinfo=UTC), section_role="body",
                        passages=tuple(passages))


SPEC_SENTENCES = (
    ("N1", False, "Extraction runs two model calls per chunk, in two pipeline stages."),
    ("P1", True, ("The first call, **Selection**, reads a chunk with its surrounding context and judges every "
                  "statement in it.")),
    ("P2", True, ("Each candidate gets exactly one outcome: `keep`, `keep_flagged` (kept, but marked borderline), "
                  "or a drop with a named reason.")),
    ("P3", True, "The drop reasons are a fixed list:"),
    ("N2", False, ("Selection keeps specific, checkable assertions about events, states, decisions, quantities, "
                   "policies and relationships.")),
)


def spec_ctx() -> ChunkContext:
    passages, offset = [], 5000
    for label, in_target, text in SPEC_SENTENCES:
        passages.append(Passage(label, offset, offset + len(text), text, in_target))
        offset += len(text) + 2
    return ChunkContext(version_id="v-spec", chunk_ord=12, title="RememberStack: full documentation",
                        header="# RememberStack: full documentation\n\n# Claims: what a source said",
                        asserted_at=None, section_role="body", passages=tuple(passages),
                        introduced=(("RememberStack", "P1"),))


def standup_selection() -> SelectionResult:
    return llm_io.parse_selection(standup_ctx(), fixture("standup.selection.json"))


def shifted(ctx: ChunkContext, by: int) -> ChunkContext:
    return dataclasses.replace(ctx, passages=tuple(
        dataclasses.replace(p, char_start=p.char_start + by, char_end=p.char_end + by) for p in ctx.passages))


# --- prompts and schemas -------------------------------------------------------------------------

def test_standup_passages_are_the_files_text():
    ctx = standup_ctx()
    text = STANDUP.read_text(encoding="utf-8")
    assert [p.label for p in ctx.passages] == [f"P{i}" for i in range(1, 8)]
    assert all(text[p.char_start:p.char_end] == p.text for p in ctx.passages)


def test_selection_prompt_shows_labels_header_date_and_speakers():
    system, user = llm_io.selection_messages(standup_ctx())
    assert system == {"role": "system", "content": llm_io.load_prompt("selection")}
    content = user["content"]
    assert user["role"] == "user"
    assert "Document date: 2026-03-04 (Wednesday)" in content
    assert "Participants: Dana, Ravi, Priya" in content
    assert "Section role: body" in content
    assert ("[P4] Ravi at 2026-03-04T09:32:10Z (Wednesday): Dana and I agreed yesterday to move the cutover "
            "to June 8.") in content
    assert "Judge every TARGET passage: P1, P2, P3, P4, P5, P6, P7." in content


def test_prompts_never_show_offsets():
    ctx = standup_ctx(neighbours=(7,))
    selection = standup_selection()
    # Moving every passage in the document changes nothing the model reads.
    assert llm_io.selection_messages(ctx) == llm_io.selection_messages(shifted(ctx, 1234))
    assert llm_io.claimify_messages(ctx, selection) == llm_io.claimify_messages(shifted(ctx, 1234), selection)
    for message in llm_io.selection_messages(ctx) + llm_io.claimify_messages(ctx, selection):
        assert "char_start" not in message["content"] and "char_end" not in message["content"]


def test_neighbours_are_marked_apart_from_the_target():
    content = llm_io.selection_messages(spec_ctx())[1]["content"]
    before = content.index("CONTEXT (before the chunk; read only)")
    target = content.index("TARGET (the chunk)")
    after = content.index("CONTEXT (after the chunk; read only)")
    assert before < content.index("[N1] Extraction runs") < target < content.index("[P1] The first call") \
        < content.index("[P3] The drop reasons") < after < content.index("[N2] Selection keeps")
    assert "Judge every TARGET passage: P1, P2, P3." in content


def test_unknown_document_date_says_so_and_introduced_names_carry_labels():
    content = llm_io.selection_messages(spec_ctx())[1]["content"]
    assert "Document date: unknown (resolve no relative dates)" in content
    assert "- RememberStack (introduced at P1)" in content
    ctx = dataclasses.replace(spec_ctx(), introduced=(("Acme", "P99"),))
    assert "- Acme\n" in llm_io.selection_messages(ctx)[1]["content"]


def test_claimify_prompt_lists_kept_statements_only():
    ctx = standup_ctx()
    content = llm_io.claimify_messages(ctx, standup_selection())[1]["content"]
    kept = content[content.index("Kept statements to rewrite:"):]
    assert "- P2\n" in kept and "- P4\n" in kept and "- P6\n" in kept
    assert "- P5 (borderline: partly a confirmation of P4)" in kept
    assert "- P1" not in kept and "- P7" not in kept
    assert "- finance (introduced at P5)" in kept
    assert llm_io.claimify_messages(ctx, standup_selection())[0]["content"] == llm_io.load_prompt("claimify")


def test_prompts_tell_the_model_to_answer_with_labels():
    for name in llm_io.PROMPT_NAMES:
        prompt = llm_io.load_prompt(name)
        assert "label" in prompt and "Never" in prompt
    selection = llm_io.load_prompt("selection")
    assert all(f"`{reason}`" in selection for reason in DROP_REASONS)
    claimify = llm_io.load_prompt("claimify")
    assert all(f"`{value}`" in claimify for value in PRECISIONS + VALID_KINDS + CONTEXT_ORIGINS)


@pytest.mark.parametrize("name", llm_io.PROMPT_NAMES)
def test_schemas_are_valid_and_strict(name):
    schema = llm_io.load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "object":
                # Strict structured outputs: closed objects, every property required.
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)


def test_schema_enums_are_the_interfaces():
    selection = llm_io.load_schema("selection")["properties"]["statements"]["items"]["anyOf"]
    assert [v["properties"]["outcome"]["enum"] for v in selection] == [["keep"], ["keep_flagged"], ["drop"]]
    assert tuple(selection[2]["properties"]["reason"]["enum"]) == DROP_REASONS
    draft = llm_io.load_schema("claimify")["properties"]["drafts"]["items"]["properties"]
    assert tuple(draft["precision"]["enum"]) == PRECISIONS
    assert tuple(draft["kind"]["anyOf"][0]["enum"]) == VALID_KINDS
    assert tuple(draft["added_context"]["items"]["properties"]["origin"]["enum"]) == CONTEXT_ORIGINS
    assert tuple(draft["entailment_self_verdict"]["enum"]) == llm_io.ENTAILMENT_VERDICTS
    assert draft["valid_from"]["anyOf"][0]["pattern"] == llm_io.WHEN_PATTERN
    assert next(iter(draft)) == "cited"    # the origin comes first, so a cut answer still names it


@pytest.mark.parametrize("name, schema", [
    ("standup.selection.json", "selection"), ("spec.selection.json", "selection"),
    ("standup.claimify.json", "claimify"), ("spec.claimify.json", "claimify"),
    ("standup.claimify.unknown_label.json", "claimify"),
])
def test_fixtures_follow_the_schema(name, schema):
    jsonschema.validate(json.loads(fixture(name)), llm_io.load_schema(schema))


def test_invented_dates_break_the_schema():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(fixture("standup.claimify.invented_date.json")), llm_io.load_schema("claimify"))


def test_prompt_hash_is_stable_and_short():
    assert llm_io.prompt_hash() == llm_io.prompt_hash()
    assert re.fullmatch(r"[0-9a-f]{12}", llm_io.prompt_hash())


# --- Selection -----------------------------------------------------------------------------------

def test_standup_selection_parses():
    result = standup_selection()
    assert result.statements == (
        Selected("P1", "drop", "question"), Selected("P2", "keep"), Selected("P3", "keep"), Selected("P4", "keep"),
        Selected("P5", "keep_flagged", "partly a confirmation of P4"), Selected("P6", "keep"),
        Selected("P7", "drop", "conclusion"))
    assert result.introduced == (("finance", "P5"),)


def test_spec_selection_parses():
    result = llm_io.parse_selection(spec_ctx(), fixture("spec.selection.json"))
    assert [s.outcome for s in result.statements] == ["keep", "keep", "keep_flagged"]
    assert result.introduced == (("Selection", "P1"),)


def flagged(result: SelectionResult) -> dict[str, str]:
    return {s.label: s.reason for s in result.statements if s.outcome == "keep_flagged"}


@pytest.mark.parametrize("text, cause", [
    ("", "empty output"),
    ('{"statements": [{"label": "P1" "outcome": "keep"}]}', "malformed JSON: Expecting ',' delimiter at char 31"),
    ("[1, 2]", "the answer is not a JSON object"),
    ('{"introduced": []}', "the answer has no 'statements' list"),
    ("{}", "the answer has no 'statements' list"),
    ('{"statements": {"P1": "keep"}, "introduced": []}', "'statements' is not a list"),
])
def test_unusable_selection_keeps_every_target_flagged_with_the_cause(text, cause):
    result = llm_io.parse_selection(standup_ctx(), text)
    assert [s.label for s in result.statements] == [f"P{i}" for i in range(1, 8)]
    assert set(flagged(result).values()) == {f"selection failed: {cause}"}


def test_truncated_selection_keeps_the_complete_outcomes():
    text = fixture("standup.selection.json")
    result = llm_io.parse_selection(standup_ctx(), text[:text.index('{"label": "P5"') + 12])
    assert result.statements[:4] == standup_selection().statements[:4]
    assert flagged(result) == {label: "selection failed: truncated output" for label in ("P5", "P6", "P7")}


def test_bad_entries_fall_back_one_passage_at_a_time():
    answer = {"statements": [
        {"label": "P1", "outcome": "drop", "reason": "irrelevant"},
        {"label": "P2", "outcome": "maybe", "reason": None},
        {"label": "P3", "outcome": "keep", "reason": None},
        {"label": "P3", "outcome": "drop", "reason": "generic"},
        {"label": "P9", "outcome": "keep", "reason": None},
        {"label": "P4", "outcome": "keep", "reason": "ignored for a keep"},
        {"label": "P5", "outcome": "drop", "reason": "opinion"},
        {"label": "P6", "outcome": "keep_flagged", "reason": ""},
    ], "introduced": [{"name": "Finance", "label": "P5"}, {"name": "finance", "label": "P6"},
                      {"name": "Ghost", "label": "P9"}, {"name": " ", "label": "P2"}]}
    result = llm_io.parse_selection(standup_ctx(), json.dumps(answer))
    assert result.statements == (
        Selected("P1", "keep_flagged", "selection failed: drop reason 'irrelevant' is not in the fixed list"),
        Selected("P2", "keep_flagged", "selection failed: unknown outcome 'maybe'"),
        Selected("P3", "keep"),                                  # the first of two outcomes counts
        Selected("P4", "keep"),
        Selected("P5", "drop", "opinion"),
        Selected("P6", "keep_flagged", "flagged"),
        Selected("P7", "keep_flagged", "selection failed: no outcome; the answer had: unknown label P9"))
    assert result.introduced == (("Finance", "P5"),)


def test_neighbours_get_no_outcome():
    ctx = spec_ctx()
    answer = {"statements": [{"label": "N1", "outcome": "drop", "reason": "intro"}]
              + [{"label": f"P{i}", "outcome": "keep", "reason": None} for i in (1, 2, 3)], "introduced": []}
    result = llm_io.parse_selection(ctx, json.dumps(answer))
    assert [s.label for s in result.statements] == ["P1", "P2", "P3"]


def test_code_fences_and_trailing_text_are_tolerated():
    text = "```json\n" + fixture("standup.selection.json") + "\n```"
    assert llm_io.parse_selection(standup_ctx(), text) == standup_selection()
    assert llm_io.parse_selection(standup_ctx(), fixture("standup.selection.json") + "\nDone.") == standup_selection()


# --- Claimify ------------------------------------------------------------------------------------

def claimify(name: str) -> ClaimifyResult:
    return llm_io.parse_claimify(standup_ctx(), standup_selection(), fixture(name))


def day(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def test_standup_claimify_parses_with_the_seed_example():
    result = claimify("standup.claimify.json")
    assert result.omitted == ()
    assert [d.cited for d in result.drafts] == [("P2",), ("P2",), ("P3",), ("P4",), ("P5", "P4"), ("P6",)]
    seed = result.drafts[3]
    assert seed.claim_text == ("Ravi said that Dana and Ravi agreed on 2026-03-03 to move the billing migration "
                               "cutover to June 8.")
    assert seed.is_attributed is True
    assert seed.valid_from == seed.valid_until == datetime(2026, 3, 3, tzinfo=UTC)
    assert (seed.precision, seed.kind, seed.resolved_dates) == ("day", "event_time", ("2026-03-03",))
    assert [(a.text, a.origin, a.label) for a in seed.added_context] == [
        ("Ravi", "speaker", "P4"), ("billing migration", "header", None), ("2026-03-03", "date_resolution", "P4")]
    assert seed.entailment_self_verdict == "supported"
    deadline = result.drafts[5]
    assert (deadline.valid_from, deadline.valid_until) == (None, day("2026-03-06"))
    undated = result.drafts[2]
    assert (undated.valid_from, undated.valid_until, undated.precision, undated.kind) == (None, None, "unknown", None)


def test_spec_claimify_keeps_the_models_omission():
    ctx = spec_ctx()
    selection = llm_io.parse_selection(ctx, fixture("spec.selection.json"))
    result = llm_io.parse_claimify(ctx, selection, fixture("spec.claimify.json"))
    assert [d.cited for d in result.drafts] == [("P1", "N1"), ("P2", "P1")]
    assert result.drafts[0].added_context[1].origin == "neighbour"
    assert result.omitted == (Omitted("P3", "the list it introduces is not among the passages shown, so the "
                                            "statement says nothing on its own"),)


def test_a_neighbour_as_origin_is_left_to_the_gate():
    ctx = spec_ctx()
    selection = llm_io.parse_selection(ctx, fixture("spec.selection.json"))
    answer = json.loads(fixture("spec.claimify.json"))
    answer["drafts"][0]["cited"] = ["N1", "P1"]
    result = llm_io.parse_claimify(ctx, selection, json.dumps(answer))
    assert result.drafts[0].cited == ("N1", "P1")
    assert [o.label for o in result.omitted] == ["P3"]


def test_malformed_claimify_omits_what_it_did_not_finish():
    result = claimify("standup.claimify.malformed.txt")
    assert [d.cited for d in result.drafts] == [("P2",)]      # complete before the break
    assert [o.label for o in result.omitted] == ["P2", "P3", "P4", "P5", "P6"]
    causes = {o.cause for o in result.omitted}
    assert len(causes) == 1
    assert re.fullmatch(r"malformed JSON: Expecting ',' delimiter at char \d+", causes.pop())


def test_truncated_claimify_keeps_complete_drafts():
    result = claimify("standup.claimify.truncated.txt")
    assert [d.cited for d in result.drafts] == [("P2",), ("P2",), ("P3",)]
    assert result.omitted == tuple(Omitted(label, "truncated output") for label in ("P4", "P5", "P6"))


def test_truncated_inside_a_draft_of_a_covered_statement_records_the_loss():
    text = fixture("standup.claimify.json")
    cut = text.index("the new billing migration tables")
    result = llm_io.parse_claimify(standup_ctx(), standup_selection(), text[:cut])
    assert [d.cited for d in result.drafts] == [("P2",)]
    assert result.omitted == tuple(Omitted(label, "truncated output") for label in ("P2", "P3", "P4", "P5", "P6"))


def test_unknown_labels_omit_their_statements():
    result = claimify("standup.claimify.unknown_label.json")
    assert [d.cited[0] for d in result.drafts] == ["P2", "P2", "P3", "P5"]
    assert result.omitted == (
        Omitted("P4", "unknown label P9"),
        Omitted("P6", "no valid claim; the answer had: unknown label P11"))


def test_invented_date_formats_omit_their_drafts():
    result = claimify("standup.claimify.invented_date.json")
    assert [d.cited[0] for d in result.drafts] == ["P2", "P2", "P3", "P5"]
    assert result.omitted == (
        Omitted("P4", "invalid date '3 March 2026' in valid_from (want YYYY-MM-DD)"),
        Omitted("P6", "invalid date '2026-03-06 (Friday)' in valid_until (want YYYY-MM-DD)"))


def one_draft(**changes) -> dict:
    draft = json.loads(fixture("standup.claimify.json"))["drafts"][3]
    draft.update(changes)
    return draft


@pytest.mark.parametrize("changes, cause", [
    ({"valid_from": "2026-02-30", "valid_until": "2026-02-30"},
     "invalid date '2026-02-30' in valid_from (no such day)"),
    ({"valid_from": "20260303"}, "invalid date '20260303' in valid_from (want YYYY-MM-DD)"),
    ({"valid_from": "2026-03-03T10:00:00"}, "invalid date '2026-03-03T10:00:00' in valid_from (want YYYY-MM-DD)"),
    ({"valid_from": "2026-03-04", "valid_until": "2026-03-03"}, "valid_from is after valid_until"),
    ({"valid_from": None, "valid_until": None},
     "precision 'day' and kind 'event_time' without valid_from or valid_until"),
    ({"precision": "unknown"}, "valid_from or valid_until given with precision 'unknown'"),
    ({"precision": "open"}, "precision 'open' needs a valid_from and no valid_until"),
    ({"precision": "week"}, "precision 'week' is not one of instant, day, month, quarter, year, open, unknown"),
    ({"kind": "deadline"},
     "kind 'deadline' is not one of event_time, effective_period, measurement_period, proposition_validity"),
    ({"claim_text": "  "}, "empty claim_text"),
    ({"is_attributed": "yes"}, "is_attributed 'yes' is not true or false"),
    ({"resolved_dates": ["yesterday"]}, "invalid date 'yesterday' in resolved_dates (want YYYY-MM-DD)"),
    ({"added_context": [{"text": "Ravi", "origin": "memory", "label": None}]},
     "added_context origin 'memory' is not one of header, target, neighbour, introduced, speaker, date_resolution"),
    ({"added_context": [{"text": "Ravi", "origin": "speaker", "label": "P8"}]}, "unknown label 'P8' in added_context"),
])
def test_each_invalid_draft_becomes_an_omission_with_its_cause(changes, cause):
    text = json.dumps({"drafts": [one_draft(**changes)], "omitted": []})
    selection = SelectionResult((Selected("P4", "keep"),))
    assert llm_io.parse_claimify(standup_ctx(), selection, text) == ClaimifyResult((), (Omitted("P4", cause),))


def test_time_moments_are_utc_and_bad_verdicts_do_not_cost_the_claim():
    draft = one_draft(valid_from="2026-03-03T10:00:00+02:00", valid_until="2026-03-03T10:00:00+02:00",
                      precision="instant", entailment_self_verdict="probably")
    selection = SelectionResult((Selected("P4", "keep"),))
    result = llm_io.parse_claimify(standup_ctx(), selection, json.dumps({"drafts": [draft], "omitted": []}))
    assert result.drafts[0].valid_from == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)
    assert result.drafts[0].entailment_self_verdict is None


def test_statements_without_answer_are_omitted_and_drops_are_not_asked():
    selection = SelectionResult((Selected("P1", "drop", "question"), Selected("P2", "keep"), Selected("P3", "keep")))
    text = json.dumps({"drafts": [], "omitted": [{"label": "P3", "cause": " "}, {"label": "P1", "cause": "x"}]})
    result = llm_io.parse_claimify(standup_ctx(), selection, text)
    assert result.omitted == (Omitted("P3", "omitted without a cause"), Omitted("P2", "no claim or omission returned"))
    nothing_kept = SelectionResult((Selected("P1", "drop", "question"),))
    assert llm_io.parse_claimify(standup_ctx(), nothing_kept, "not even JSON") == ClaimifyResult(())


@pytest.mark.parametrize("text", ["", "null", "{", '{"drafts": 3}', "\x00\x01", '{"drafts": [1, "x", null]}',
                                  '{"drafts": [{"cited": [], "claim_text": "x"}]}'])
def test_claimify_never_raises(text):
    result = llm_io.parse_claimify(standup_ctx(), standup_selection(), text)
    assert result.drafts == ()
    assert [o.label for o in result.omitted] == ["P2", "P3", "P4", "P5", "P6"]
    assert all(o.cause for o in result.omitted)


def test_fallbacks_cover_every_statement():
    ctx = standup_ctx()
    assert set(flagged(llm_io.selection_fallback(ctx, "transport error: boom")).values()) == {
        "selection failed: transport error: boom"}
    result = llm_io.claimify_fallback(standup_selection(), "transport error: boom")
    assert result == ClaimifyResult((), tuple(Omitted(label, "transport error: boom")
                                              for label in ("P2", "P3", "P4", "P5", "P6")))


# --- row serialisation ---------------------------------------------------------------------------

def test_rows_round_trip():
    for ctx in (standup_ctx(neighbours=(1, 7)), spec_ctx()):
        assert llm_io.ctx_from_json(llm_io.ctx_to_json(ctx)) == ctx
    selection = standup_selection()
    assert llm_io.selection_from_json(llm_io.selection_to_json(selection)) == selection
    result = claimify("standup.claimify.invented_date.json")
    assert llm_io.claimify_from_json(llm_io.claimify_to_json(result)) == result
    assert isinstance(result.drafts[0], DraftClaim)
