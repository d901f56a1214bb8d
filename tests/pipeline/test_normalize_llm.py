"""normalize_llm: the model normalizer's messages, and every answer parsed into governed assertions,
with anything unusable dropped or read by the rules normalizer instead, and said so."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest

from actors import vllm_normalizer
from pipeline.claims.extraction import CallCost
from pipeline.facts import normalize, normalize_llm, vocabulary
from pipeline.facts.normalize import Assertion
from tests.support.paths import ROOT
from tests.support.recorded_normalize import SAID, TEXTS, TOPIC, content


def claims() -> list[dict]:
    return [{"claim_id": f"c{i}", "doc_id": "d1", "claim_text": text, "is_attributed": attributed,
             "asserted_at": SAID, "valid_from": None, "valid_until": None, "precision": "unknown", "kind": None}
            for i, (text, attributed) in enumerate(TEXTS, start=1)]


def rules(i: int) -> list[Assertion]:
    return normalize.normalize_claim(claims()[i], TOPIC)


def shape(found: list[Assertion]) -> list[tuple]:
    return [(a.ord, a.kind, a.subject, a.predicate, a.object) if a.kind == "relation" else
            (a.ord, a.kind, a.subject, a.attribute, a.value) for a in found]


def one(entry: dict, attributed: bool = False) -> tuple[list[Assertion], list[str]]:
    claim = {"claim_text": "Dana Kim sponsors the invoice rewrite.", "is_attributed": attributed,
             "asserted_at": SAID}
    found, problems = normalize_llm.parse([claim], TOPIC, json.dumps({"assertions": [{"claim": "C1", **entry}]}))
    return found[0], problems


def relation(subject: str = "Dana Kim", predicate: str = "other:sponsors", obj: str = "invoice rewrite", **more):
    return {"kind": "relation", "subject": subject, "predicate": predicate, "object": obj, "negated": False,
            "change": False, "ends": None, **more}


# --- prompt, schema, messages --------------------------------------------------------------------

def test_the_schema_is_strict_and_the_good_answer_follows_it():
    schema = normalize_llm.load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(content("good")))
    assert not validator.is_valid(json.loads(content("bad")))    # a server that ignored the schema
    for variant in schema["properties"]["assertions"]["items"]["anyOf"]:
        assert variant["additionalProperties"] is False
        assert set(variant["required"]) == set(variant["properties"])
    predicate = schema["properties"]["assertions"]["items"]["anyOf"][0]["properties"]["predicate"]["anyOf"]
    assert predicate[0]["enum"] == [*vocabulary.CORE, *vocabulary.WORK_PACK]
    assert predicate[1]["pattern"] == vocabulary.OTHER.pattern


def test_the_prompt_names_the_vocabulary_and_the_escape_rule():
    prompt = normalize_llm.load_prompt()
    assert all(f"`{p}`" in prompt for p in (*vocabulary.CORE, *vocabulary.WORK_PACK))
    assert vocabulary.OTHER.pattern in prompt
    version = normalize_llm.version()
    assert normalize_llm.prompt_hash() in version and version.startswith(normalize_llm.VERSION)
    assert normalize_llm.version("m-8b", "openai") == f"openai-normalize-1:m-8b:{normalize_llm.prompt_hash()}"


def test_messages_show_the_topic_and_every_claim_by_label():
    system, user = normalize_llm.messages(claims(), TOPIC)
    assert system == {"role": "system", "content": normalize_llm.load_prompt()}
    text = user["content"]
    assert user["role"] == "user" and "Document topic: billing migration" in text
    for i, (claim_text, attributed) in enumerate(TEXTS, start=1):
        line = next(line for line in text.splitlines() if line.startswith(f"[C{i}] "))
        assert line.endswith(claim_text)
        assert ("(attributed," if attributed else "(not attributed,") in line
        assert "said on 2026-06-12, a Friday" in line
    assert "C1, C2, C3, C4, C5, C6, C7, C8, C9." in text
    assert "c1" not in re.findall(r"\bc\d\b", text)     # claim ids are not shown, labels are
    assert "Document topic: (none)" in normalize_llm.messages(claims()[:1], None)[1]["content"]
    unknown = normalize_llm.messages([{"claim_text": "Ravi knows Dana.\n\nTruly."}], None)[1]["content"]
    assert "[C1] (not attributed, said on an unknown day) Ravi knows Dana. Truly." in unknown


# --- parsing -------------------------------------------------------------------------------------

def test_a_good_answer():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("good"))
    assert problems == []
    assert [shape(f) for f in found] == [
        [(0, "relation", "Ravi", "works_on", "search team")],
        [(0, "observation", "billing migration", "cutover date", "2026-06-15")],
        [(0, "observation", "Dana", None, None)],
        [(0, "relation", "Priya", "works_on", "invoice rewrite"), (1, "relation", "Marco", "works_on", "invoice rewrite")],
        [(0, "relation", "Dana Kim", "other:sponsors", "invoice rewrite")],
        [],
        [(0, "observation", "Ravi", None, None)],
        [(0, "observation", "billing migration", "launch date", "2026-10")],
        [(0, "relation", "Kenji", "works_for", "Northwind Health")],
    ]
    moved = found[0][0]
    assert (moved.change, moved.ends, moved.negated, moved.window_applies) == (True, "billing migration", False, True)
    assert moved.statement == TEXTS[0][0]
    # Slots read as the rules normalizer's plans do, and agree with it where it reads them.
    assert found[1] == rules(1) and found[7] == rules(7)
    assert found[1][0].statement == "The billing migration cutover is scheduled for 2026-06-15."
    assert found[1][0].window_applies is False and found[7][0].change is True
    assert found[2] == rules(2) and found[3] == rules(3) and found[4] == rules(4)


def test_an_ungoverned_predicate_drops_the_relation_and_the_claim_keeps_its_statement():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("bad"))
    assert found[0] == []
    assert "C1: predicate 'moved_to' is not governed; relation dropped" in problems
    assert found[4] == []
    assert "C5: predicate 'other:Sponsors' is not governed; relation dropped" in problems


@pytest.mark.parametrize("predicate", ["other:sponsors", "other:a1", "other:signs_off", "other:" + "a" * 41,
                                       "other:ab", "works_on", "depends_on"])
def test_the_escape_rule_accepts(predicate):
    found, problems = one(relation(predicate=predicate))
    assert [a.predicate for a in found] == [predicate] and problems == []


@pytest.mark.parametrize("predicate", ["other:x", "other:Leads", "other:1abc", "other:", "other:signs-off",
                                       "other:" + "a" * 42, "employed_by", "Other:leads", "other: leads", 7, None])
def test_the_escape_rule_rejects(predicate):
    assert bool(isinstance(predicate, str) and vocabulary.OTHER.match(predicate)) is False
    found, problems = one(relation(predicate=predicate))
    assert found == [] and len(problems) == 1 and "is not governed; relation dropped" in problems[0]


def test_pronouns_and_bare_head_nouns_are_not_entities():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("bad"))
    assert shape(found[3]) == [(0, "relation", "Priya", "works_on", "invoice rewrite")]    # "the" comes off
    assert "C4: subject 'They' is not an entity; relation dropped" in problems
    assert found[5] == [] and "C6: subject 'He' is not an entity; relation dropped" in problems
    assert found[8] == [] and "C9: object 'the company' is not an entity; relation dropped" in problems
    for subject in ("it", "the system", "the new app", "", "   "):
        assert one(relation(subject=subject))[0] == []
        assert one({"kind": "observation", "subject": subject, "attribute": None, "value": None})[0] == []
    assert one(relation(obj="Ravi said that Priya would own it and more after the June cutover"))[0] == []


def test_an_attributed_claim_stays_one_observation_on_its_holder():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("bad"))
    assert found[2] == rules(2) == [Assertion(0, "observation", "Dana", TEXTS[2][0])]
    assert "C3: attributed claim: relation dropped (an observation on the holder only)" in problems
    # A slot on an attributed claim is the holder's view, not a date: a free statement.
    [view], _ = one({"kind": "observation", "subject": "Dana", "attribute": "cutover date", "value": "2026-06-08",
                     "change": False}, attributed=True)
    assert (view.attribute, view.value, view.window_applies) == (None, None, True)
    assert view.statement == "Dana Kim sponsors the invoice rewrite."
    # Relations only: the rules normalizer reads the claim instead.
    claim = {"claim_text": "Ravi said that Priya owns the schema change.", "is_attributed": True}
    found, problems = normalize_llm.parse([claim], None, json.dumps({"assertions": [
        {"claim": "C1", **relation("Priya", "other:owns", "schema change")}]}))
    assert shape(found[0]) == [(0, "observation", "Ravi", None, None)]
    assert problems[-1] == "C1: attributed claim answered with relations only; rules fallback"


def test_a_missing_claim_falls_back_to_the_rules():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("bad"))
    assert found[6] == rules(6)
    assert "C7: no output for this claim; rules fallback" in problems
    assert "unknown claim label 'C12' ignored" in problems
    # A slot value the model left in words is read the way the rules read it.
    assert shape(found[1]) == [(0, "observation", "billing migration", "cutover date", "2026-06-15")]
    assert shape(found[7]) == [(0, "observation", "billing migration", "launch date", "2026-10")]


def test_a_truncated_answer_keeps_what_was_whole_and_falls_back_for_the_rest():
    found, problems = normalize_llm.parse(claims(), TOPIC, content("truncated"))
    good, _ = normalize_llm.parse(claims(), TOPIC, content("good"))
    assert found[:3] == good[:3]
    assert found[3:] == [rules(i) for i in range(3, 9)]     # C4 was being written when it broke off
    assert problems == [f"C{i}: truncated output; rules fallback" for i in range(4, 10)]


@pytest.mark.parametrize("text, cause", [
    ("", "empty output"),
    ('{"assertions": [{"claim": "C1", "kind": "relation" "subject": "Ravi"}]}', "malformed JSON"),
    ('["C1"]', "the answer is not a JSON object"),
    ('{"facts": []}', "the answer has no 'assertions' list"),
    ('```json\n{"assertions": [{"claim": "C2", "kind": "none"}]}\n```', None),
])
def test_unreadable_answers_fall_back_for_every_claim(text, cause):
    found, problems = normalize_llm.parse(claims()[:2], TOPIC, text)
    if cause is None:   # a fenced answer is read; C1 is missing from it
        assert found == [rules(0), []] and problems == ["C1: no output for this claim; rules fallback"]
        return
    assert found == [rules(0), rules(1)]
    assert [p.split(": ", 1)[0] for p in problems] == ["C1", "C2"]
    assert all(cause in p and p.endswith("; rules fallback") for p in problems)


def test_duplicates_collapse_and_ords_count_per_claim():
    entries = [relation(), relation(obj="the invoice rewrite"), relation(predicate="other:funds"),
               {"kind": "none"}]
    claim = {"claim_text": "Dana Kim sponsors the invoice rewrite.", "is_attributed": False}
    found, problems = normalize_llm.parse([claim, claim], None, json.dumps({"assertions": [
        *({"claim": "C1", **e} for e in entries), {"claim": "C2", **relation(negated=True)}]}))
    assert [(a.ord, a.predicate) for a in found[0]] == [(0, "other:sponsors"), (1, "other:funds")]
    assert [(a.ord, a.negated) for a in found[1]] == [(0, True)] and problems == []


def test_ends_and_change():
    [moved], _ = one(relation(change=True, ends="the mobile squad"))
    assert moved.ends == "mobile squad"
    [moved], _ = one(relation(change=True, ends="the team"))
    assert moved.ends == "*"
    [steady], _ = one(relation(change=False, ends="mobile squad"))
    assert (steady.change, steady.ends) == (False, None)


# --- rows ----------------------------------------------------------------------------------------

def test_version_rows_mirror_normalize_version():
    version_claims = [{**c, "title": "Billing migration retro", "opening": "# Billing migration retro\n"}
                      for c in claims()]
    version_claims.append({**version_claims[0], "claim_id": "c10", "claim_text": "Dana leads the invoice rewrite."})
    assert normalize.version_topic(version_claims) == TOPIC
    expected = normalize.normalize_version(version_claims, lambda c, o: f"{c}-{o}")
    found = [(c, normalize.normalize_claim(c, TOPIC)) for c in version_claims]
    rows, mentions = normalize.version_rows(found, lambda c, o: f"{c}-{o}", "x-normalize")
    assert [{**r, "normalizer": normalize.VERSION} for r in rows] == expected[0]
    assert mentions == expected[1]
    assert {r["normalizer"] for r in rows} == {"x-normalize"}
    assert "dana kim" in {r["subject_key"] for r in rows if r["claim_id"] == "c10"}


def test_claims_travel_as_json():
    back = normalize_llm.claims_from_json(normalize_llm.claims_to_json(claims()))
    assert back == claims()
    with pytest.raises(TypeError):
        normalize_llm.claims_to_json([{"claim_text": "x", "odd": object()}])
    assert [len(b) for b in normalize_llm.batches([{}] * 56)] == [25, 25, 6]
    assert [len(b) for b in normalize_llm.batches([{}] * 5, size=2)] == [2, 2, 1]


# --- the vllm normalizer's rows (no ray.data.llm, no vLLM) ---------------------------------------

def test_the_vllm_normalizer_imports_without_vllm_or_ray_data_llm():
    # in a fresh interpreter: another test of the session may have imported ray.data.llm itself
    imported = subprocess.run([sys.executable, "-c", "import sys, actors.vllm_normalizer;"
                               " print(sorted({'vllm', 'ray.data.llm'} & set(sys.modules)))"],
                              capture_output=True, text=True, timeout=120, check=True, cwd=ROOT)
    assert imported.stdout.strip() == "[]"


def test_vllm_rows_carry_their_version_through_the_processor_and_parse():
    [row] = vllm_normalizer.rows_for("v1", claims(), TOPIC)
    assert (row["version_id"], row["part"], row["parts"], row["topic"]) == ("v1", 0, 1, TOPIC)
    request = vllm_normalizer.normalize_preprocess(row, max_tokens=900, temperature=0.0)
    assert request["messages"] == normalize_llm.messages(claims(), TOPIC)
    assert request["sampling_params"] == {"temperature": 0.0, "max_tokens": 900,
                                          "structured_outputs": {"json": normalize_llm.schema_text()}}
    out = vllm_normalizer.normalize_postprocess({**row, "messages": request["messages"],
                                                 "generated_text": content("good"), "num_input_tokens": 2951,
                                                 "num_generated_tokens": 310, "time_taken_llm": 1.5})
    assert out == {"version_id": "v1", "part": 0, "parts": 1, "claims_json": row["claims_json"], "topic": TOPIC,
                   "normalize_text": content("good"), "tokens_in": 2951, "tokens_out": 310, "device_seconds": 1.5}
    assert vllm_normalizer.inference_error(out) is None
    good, _ = normalize_llm.parse(claims(), TOPIC, content("good"))
    assert vllm_normalizer.assertions_from_row(out) == good
    assert vllm_normalizer.cost_from_row(out, "m") == CallCost("vllm", "m", calls=1, tokens_in=2951, tokens_out=310,
                                                               device_seconds=1.5)

    truncated = {**out, "normalize_text": content("truncated")}
    assert vllm_normalizer.assertions_from_row(truncated)[3:] == [rules(i) for i in range(3, 9)]
    no_topic = {"claims_json": normalize_llm.claims_to_json(claims()[1:2]), "topic": None,
                "normalize_text": '{"assertions": [{"claim": "C1", "kind": "none"}]}'}
    assert vllm_normalizer.assertions_from_row(no_topic) == [[]]
    rows = vllm_normalizer.rows_for("v2", claims() * 3, TOPIC)
    assert [(len(json.loads(r["claims_json"])), r["part"], r["parts"]) for r in rows] == [(25, 0, 2), (2, 1, 2)]


def test_a_row_the_engine_failed_on_says_why():
    [row] = vllm_normalizer.rows_for("v1", claims(), TOPIC)
    failed = {**row, "__inference_error__": "RuntimeError: CUDA out of memory\n  at step 3"}
    assert vllm_normalizer.inference_error(failed) == "inference error: RuntimeError: CUDA out of memory at step 3"
