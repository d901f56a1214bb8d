"""The rules normalizer: claims → relations and observations over the governed vocabulary."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from jobs.bench import normalize_score
from pipeline.facts import names, normalize, vocabulary
from tests.support import paths

FIXTURES = paths.FIXTURES / "normalize"
SAID = datetime(2026, 6, 12, 14, tzinfo=timezone.utc)


def _read(text: str, topic: str | None = None, **claim) -> list[tuple]:
    found = normalize.normalize_claim({"claim_text": text, "asserted_at": SAID, **claim}, topic)
    return [(a.kind, a.subject, a.predicate, a.object) if a.kind == "relation" else
            (a.kind, a.subject, a.attribute, a.value) for a in found]


def test_precision_and_recall_on_the_labelled_sets():
    """The floors sit just under what was measured: tuning set 1.00 / 1.00, held-out 0.88 / 0.90."""
    tuned = normalize_score.score_file(FIXTURES / "labelled.jsonl")
    held_out = normalize_score.score_file(FIXTURES / "heldout.jsonl")
    assert tuned.lines >= 100 and held_out.lines >= 100
    assert tuned.precision >= 0.97 and tuned.recall >= 0.97, tuned.misses
    assert held_out.precision >= 0.85 and held_out.recall >= 0.85


@pytest.mark.parametrize("text, expected", [
    ("Ravi moved from the billing migration to the search team on 1 June.",
     [("relation", "Ravi", "works_on", "search team")]),
    ("Ravi leads the billing migration and owns the schema change.",
     [("relation", "Ravi", "other:leads", "billing migration"), ("relation", "Ravi", "other:owns", "schema change")]),
    ("The schema change is owned by Priya.", [("relation", "Priya", "other:owns", "schema change")]),
    ("Ravi is employed by Northwind.", [("relation", "Ravi", "works_for", "Northwind")]),
    ("Priya and Marco work on the invoice rewrite.",
     [("relation", "Priya", "works_on", "invoice rewrite"), ("relation", "Marco", "works_on", "invoice rewrite")]),
    ("Ravi is the on-call engineer for billing incidents.",
     [("observation", "Ravi", None, None)]),
])
def test_claims_become_relations_and_observations(text, expected):
    assert _read(text) == expected


def test_an_attributed_claim_is_an_observation_on_the_holder_only():
    assert _read("Dana believes the June date is too tight.") == [("observation", "Dana", None, None)]
    assert _read("Ravi said that Priya owns the schema change.") == [("observation", "Ravi", None, None)]


def test_a_dated_plan_is_a_slot_on_the_documents_topic():
    assert _read("The cutover is on June 15.", "billing migration") == [
        ("observation", "billing migration", "cutover date", "2026-06-15")]
    moved = normalize.normalize_claim({"claim_text": "The launch moves to October.", "asserted_at": SAID},
                                      "billing migration")
    assert [(a.attribute, a.value, a.change) for a in moved] == [("launch date", "2026-10", True)]
    assert moved[0].statement == "The billing migration launch is scheduled for 2026-10."


def test_bare_head_nouns_and_pronouns_are_not_entities():
    assert _read("The system depends on the cache.") == []
    assert _read("He leads the billing migration.") == []
    assert _read("Ravi leads the team.") == [("observation", "Ravi", None, None)]
    assert names.is_bare_head("the new system") and not names.is_bare_head("the billing migration")


def test_negation_is_kept():
    [a] = normalize.normalize_claim({"claim_text": "Ravi does not work on the search team."})
    assert (a.predicate, a.object, a.negated) == ("works_on", "search team", True)


def test_a_move_names_what_it_ends():
    [a] = normalize.normalize_claim({"claim_text": "Ravi moved from the billing migration to the search team."})
    assert (a.change, a.ends) == (True, "billing migration")
    [b] = normalize.normalize_claim({"claim_text": "Ravi is moving to the search team on 1 June."})
    assert (b.change, b.ends) == (True, "*")


def test_the_governed_vocabulary_and_its_escape_rule():
    assert vocabulary.governed("works_on") and vocabulary.governed("depends_on")
    assert vocabulary.governed("other:sponsors") and vocabulary.governed("other:a1")
    for bad in ("other:", "other:A", "other:1abc", "other:x", "employed_by", "other:" + "a" * 42):
        assert not vocabulary.governed(bad), bad
    assert vocabulary.relation_label("Ravi", "works_on", "billing migration") == "Ravi works on billing migration"
    assert vocabulary.relation_label("Dana", "other:leads", "billing migration") == "Dana leads billing migration"


def test_topics_come_from_titles():
    assert names.topic_from_title("Billing migration: cutover specification") == "billing migration"
    assert names.topic_from_title("Billing migration stand-up notes, 20 May 2026") == "billing migration"
    assert names.topic_from_title("Atlas kickoff") == "Atlas"
    assert names.first_line("<!-- Slide number: 1 -->\n# Billing migration review\n") == "Billing migration review"


def test_a_lone_first_name_takes_the_full_name_used_in_the_same_document():
    claims = [{"claim_id": "c1", "doc_id": "d", "claim_text": "Dana Kim leads the billing migration."},
              {"claim_id": "c2", "doc_id": "d", "claim_text": "Dana approves the plan for the search team."}]
    rows, mentions = normalize.normalize_version(claims, lambda c, o: f"{c}-{o}")
    assert {r["subject_key"] for r in rows} == {"dana kim"}
    assert {(m["mention_key"], m["surface"]) for m in mentions if m["mention_key"] == "dana kim"} == {
        ("dana kim", "Dana Kim"), ("dana kim", "Dana")}


def test_the_names_a_question_uses():
    assert names.named_in("When did Melanie paint a sunrise?") == ["Melanie"]
    assert names.named_in("What is Caroline's identity?") == ["Caroline"]
    assert names.named_in("Melanie and John went where?") == ["Melanie", "John"]
    assert names.named_in("What did Dana Kim decide about the Billing Migration?") == ["Dana Kim", "Billing Migration"]
    assert names.named_in("when did i go there?") == []



def test_a_function_of_the_code_is_not_an_entity():
    for text in ("AddMemories(): Adds user memories to enhance contextual responses.",
                 "search() returns the memories that match."):
        assert all(subject not in ("AddMemories", "search") for _, subject, *_ in _read(text)), text
