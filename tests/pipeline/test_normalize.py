"""The rules normalizer: claims → relations and observations over the governed vocabulary."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from jobs.bench import normalize_score
from pipeline.facts import names, normalize, vocabulary
from tests.support import paths
from tests.support.normalized import normalized

FIXTURES = paths.FIXTURES / "normalize"
SAID = datetime(2026, 6, 12, 14, tzinfo=timezone.utc)
# (precision, recall) floors of the labelled sets read as documents
TUNED_AS_DOCUMENT = (0.95, 0.82)
HELD_OUT_AS_DOCUMENT = (0.81, 0.73)
WORD_NAMES_AS_DOCUMENT = (0.89, 0.93)


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


def test_precision_and_recall_of_the_labelled_sets_as_an_import_reads_them():
    """Each line a document of its own, its ends decided by the document's name rules. The floors
    sit just under what was measured (docs/performance.md, "Names that are also words")."""
    tuned = normalize_score.score_file(FIXTURES / "labelled.jsonl", as_document=True)
    held_out = normalize_score.score_file(FIXTURES / "heldout.jsonl", as_document=True)
    assert tuned.precision >= TUNED_AS_DOCUMENT[0] and tuned.recall >= TUNED_AS_DOCUMENT[1], tuned.misses
    assert held_out.precision >= HELD_OUT_AS_DOCUMENT[0] and held_out.recall >= HELD_OUT_AS_DOCUMENT[1]
    # names that are also words ("Stripe", "Blue Harbor Bank"), and capitalised words that name nothing
    words = normalize_score.score_file(FIXTURES / "word_names.jsonl", as_document=True)
    assert words.precision >= WORD_NAMES_AS_DOCUMENT[0] and words.recall >= WORD_NAMES_AS_DOCUMENT[1], words.misses


@pytest.mark.parametrize("text, expected", [
    ("The SSO integration blocks the Globex rollout.", [("relation", "sso integration", "blocks", "globex rollout")]),
    ("The fraud detection service uses Redis Streams.",
     [("relation", "fraud detection service", "uses", "redis streams")]),
    # no relation, or a bare head: nothing pins the thing
    ("The fraud detection service is slow.", []),
    ("The service uses Redis Streams.", []),
])
def test_a_relation_pins_the_thing_a_note_sets_as_its_subject(text, expected):
    assert _document(text) == expected


def test_a_note_names_what_it_capitalises_mid_sentence_where_documentation_heads_its_features():
    text = "We booked Virgin Atlantic for the offsite and moved the runbooks to Confluence."
    for page, expected in ((text, {"Virgin Atlantic", "Confluence"}),
                           (text + "\n\nRun `make offsite` first.", set())):
        claims = [{"claim_id": "c", "doc_id": "d", "claim_text": text, "asserted_at": SAID, "version_text": page}]
        _, mentions = normalize.normalize_version(claims, lambda c, o: f"{c}-{o}")
        assert {m["surface"] for m in mentions} == expected


def test_a_page_that_opens_on_front_matter_is_documentation():
    assert names.is_documentation('---\ntitle: "Raycast Extension"\ndescription: "Mem0 for Raycast"\n---\n\nMem0 is …')
    assert not names.is_documentation("# Billing migration kickoff\n\nDate: 15 January 2026\n\n---\n")


def test_in_documentation_that_sets_code_a_thing_must_recur():
    text = "The embedding model uses Ollama."
    for page, expected in ((text, [("relation", "embedding model", "uses", "ollama")]),
                           (text + "\n\nRun `ollama pull nomic-embed-text` first.", [])):
        claims = [{"claim_id": "c", "doc_id": "d", "claim_text": text, "asserted_at": SAID, "version_text": page}]
        rows, _ = normalize.normalize_version(claims, lambda c, o: f"{c}-{o}")
        assert [(r["kind"], r["subject_key"], r["predicate"], r["object_key"]) for r in rows] == expected


def _document(*texts: str) -> list[tuple]:
    return normalized(texts, said=SAID)[0]


@pytest.mark.parametrize("text, expected", [
    ("Ravi works for Stripe.", ("relation", "ravi", "works_for", "stripe")),
    ("Priya works at Blue Harbor Bank.", ("relation", "priya", "works_for", "blue harbor bank")),
    ("Nadia Brook works for Kestrel Logistics since 2021.", ("relation", "nadia brook", "works_for", "kestrel logistics")),
    ("Dev has reported to Grace Young since March.", ("relation", "dev", "reports_to", "grace young")),
    ("Tom lives in Salt Lake City.", ("relation", "tom", "other:lives_in", "salt lake city")),
])
def test_an_end_only_names_take_is_a_name_though_its_words_are_english(text, expected):
    assert _document(text) == [expected]


def test_the_slot_proves_only_its_capitalised_end_and_no_vetoed_form():
    # a lower-case end is a thing, and "works on" takes things: nothing is proven
    assert _document("Ravi works for the payments team.") == [("relation", "ravi", "works_for", "payments team")]
    assert _document("Documentation covers the Voice Configuration.") == []
    # structure still decides: an abbreviation of a kind is no organisation
    assert _document("Ravi works for AI.") == [("observation", "ravi", None, None)]


@pytest.mark.parametrize("text, expected", [
    ("Dr. Patel heads the infection control team.", ("relation", "dr patel", "other:leads", "infection control team")),
    ("Professor Lindqvist is employed at Uppsala University.",
     ("relation", "professor lindqvist", "works_for", "uppsala university")),
    ("Marco owns the CI pipeline.", ("relation", "marco", "other:owns", "ci pipeline")),
    ("Aisha is working on the Medicaid billing backlog.", ("relation", "aisha", "works_on", "medicaid billing backlog")),
])
def test_titled_names_and_things_named_by_their_modifiers(text, expected):
    assert _document(text) == [expected]


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
