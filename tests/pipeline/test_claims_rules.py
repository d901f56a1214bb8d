"""Claims from the `rules` extractor and the grounding gate, on the seed's own examples."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors.extractor import RulesExtractor
from pipeline.claims import extract as claims
from pipeline.claims import grounding
from pipeline.claims.claimify_rules import claimify_rules
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    DraftClaim,
    Passage,
    Selected,
    SelectionResult,
)
from pipeline.claims.segment import context_passages, document_header
from pipeline.documents.chunk import structure_and_chunk
from pipeline.facts import normalize

TRANSCRIPT = """# Billing stand-up

Participants: Dana, Ravi

**Ravi:** Dana and I agreed yesterday to move the cutover to June 8.
"""


def row_for(markdown: str, *, title: str = "doc", asserted_at: datetime | None = None,
            target: int = 1200) -> dict:
    sections, chunks = structure_and_chunk(markdown, target)
    for c in chunks:
        c.update(embedding=None, reused=False)
    return {"version_id": "00000000-0000-0000-0000-000000000001", "doc_id": "00000000-0000-0000-0000-000000000002",
            "title": title, "markdown": markdown, "source_modified_at": asserted_at, "sections": sections,
            "chunks": chunks, "prior_claims": None, "claims": None, "ledger": None}


def extract(markdown: str, **kw) -> dict:
    row = row_for(markdown, **kw)
    claims.extract_batch([row], RulesExtractor())
    return row


def texts(row: dict) -> list[str]:
    return [c["claim_text"] for c in row["claims"]]


def test_the_seeds_transcript_example():
    row = extract(TRANSCRIPT, asserted_at=datetime(2026, 3, 4, 15, tzinfo=UTC))

    [claim] = [c for c in row["claims"] if "cutover" in c["claim_text"]]
    assert claim["claim_text"] == "Ravi said that Dana and Ravi agreed on 2026-03-03 to move the cutover to June 8."
    assert claim["source_span"] == "Dana and I agreed yesterday to move the cutover to June 8."
    assert row["markdown"][claim["char_start"]:claim["char_end"]] == claim["source_span"]
    assert claim["evidence_spans"][0] == {"char_start": claim["char_start"], "char_end": claim["char_end"]}
    assert claim["is_attributed"] is True
    assert (claim["valid_from"], claim["valid_until"], claim["precision"], claim["kind"]) == (
        datetime(2026, 3, 3, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC), "day", "event_time")
    # the participants line frames the document and is not a claim
    assert all("Participants" not in t for t in texts(row))


def test_attribution_follows_each_speaker_over_several_turns():
    markdown = ("# Sync\n\n[t1 | 2026-05-20T09:30:00Z] Dana: I moved the cutover to June 15.\n\n"
                "[t2 | 2026-05-20T09:31:00Z] Ravi: I finished the schema change.\n\n"
                "[t3 | 2026-05-20T09:32:00Z] Dana: Priya owns the tax codes now.\n")
    row = extract(markdown, asserted_at=datetime(2026, 5, 20, tzinfo=UTC))
    # what a speaker says of themselves is a claim about them; of someone else, their report
    assert texts(row) == ["Dana moved the cutover to June 15.",
                          "Ravi finished the schema change.",
                          "Dana said that Priya owns the tax codes now."]
    assert [c["is_attributed"] for c in row["claims"]] == [False, False, True]


def test_plain_speaker_lines_are_attributed_too():
    row = extract("# Call\n\nRavi: The new tables are live in staging.\n",
                  asserted_at=datetime(2026, 3, 4, tzinfo=UTC))
    assert texts(row) == ["Ravi said that the new tables are live in staging."]


def test_an_opinion_with_a_holder_is_kept_and_attributed():
    row = extract("# Notes\n\nDana thinks the June date is too tight.\n")
    assert texts(row) == ["Dana thinks the June date is too tight."]
    assert row["claims"][0]["is_attributed"] is True


def test_year_precision_and_inclusive_end():
    row = extract("# Report\n\nBilling errors rose sharply in 2025 at Acme.\n")
    claim = row["claims"][0]
    assert (claim["valid_from"], claim["valid_until"], claim["precision"]) == (
        datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 12, 31, tzinfo=UTC), "year")


def test_vague_and_undated_relative_dates_are_left_as_written():
    vague = extract("# Notes\n\nRavi merged the schema change a few weeks ago.\n",
                    asserted_at=datetime(2026, 3, 4, tzinfo=UTC))
    assert texts(vague) == ["Ravi merged the schema change a few weeks ago."]
    assert vague["claims"][0]["precision"] == "unknown" and vague["claims"][0]["valid_from"] is None

    undated = extract("# Notes\n\nRavi merged the schema change yesterday.\n", asserted_at=None)
    assert texts(undated) == ["Ravi merged the schema change yesterday."]
    assert undated["claims"][0]["valid_from"] is None


def test_a_pronoun_is_resolved_from_the_passage_before_or_omitted():
    row = extract("# Notes\n\nRavi finished the schema change. He moved to the search team.\n")
    assert "Ravi moved to the search team." in texts(row)

    row = extract("# Notes\n\nRavi and Dana met Priya. She moved to the search team.\n")
    assert not any("search" in t for t in texts(row))
    omitted = [e for e in row["ledger"] if e["decision"] == "claimify_omitted"]
    assert omitted and "She" in omitted[0]["reason"]


def test_every_drop_is_in_the_ledger_with_its_reason():
    row = extract("# Notes\n\nShould we move the cutover?\n\nYou should always back up first.\n\n"
                  "Ravi leads the billing migration.\n")
    drops = {(e["decision"], e["reason"]) for e in row["ledger"]}
    assert ("selection_drop", "question") in drops and ("selection_drop", "advice") in drops
    assert texts(row) == ["Ravi leads the billing migration."]


def _context(text: str) -> ChunkContext:
    markdown = f"# Plan\n\n{text}\n"
    start = markdown.index(text)
    return ChunkContext(version_id="v", chunk_ord=0, title="Plan", header=document_header(markdown, "Plan"),
                        asserted_at=datetime(2026, 3, 4, tzinfo=UTC), section_role="body",
                        passages=tuple(context_passages(markdown, [(start, start + len(text))], 0)))


KEPT = SelectionResult((Selected("P1", "keep"),))


@pytest.mark.parametrize("claim_text, check", [
    ("Ravi cancelled the cutover.", "unsupported_word"),          # a word the source never used
    ("Ravi moved the cutover to June 9.", "unsupported_number"),  # an invented number
])
def test_the_gate_rejects_words_and_numbers_that_are_not_in_the_source(claim_text, check):
    ctx = _context("Ravi moved the cutover to June 8.")
    verdict = grounding.check(ctx, KEPT, DraftClaim(claim_text=claim_text, cited=("P1",)))
    assert (verdict.passed, verdict.check) == (False, check)


def test_the_gate_accepts_an_iso_date_only_where_the_time_fields_or_the_source_hold_it():
    ctx = _context("Ravi merged the schema change yesterday.")
    text = "Ravi merged the schema change on 2026-03-03."
    day = datetime(2026, 3, 3, tzinfo=UTC)
    ok = DraftClaim(text, ("P1",), valid_from=day, valid_until=day, precision="day", kind="event_time",
                    resolved_dates=("2026-03-03",))
    assert grounding.check(ctx, KEPT, ok).passed
    # "yesterday", read against the document's date, is that day: stated, though not recorded
    assert grounding.check(ctx, KEPT, DraftClaim(text, ("P1",), resolved_dates=("2026-03-03",))).passed
    invented = DraftClaim("Ravi merged the schema change on 2026-03-02.", ("P1",), resolved_dates=("2026-03-02",))
    assert grounding.check(ctx, KEPT, invented).check == "unsupported_number"


def test_a_sentence_of_two_relative_days_keeps_both_in_its_claim():
    # the window holds the first day; the second, as the sentence's own words resolve it, is
    # grounded too (it was rejected as an unsupported number)
    markdown = ("# Chat\n\nParticipants: user, assistant\n\n[q1s1:1 | 2023-05-25T13:47:00Z] user: I'm sluggish today "
                "because I didn't get to bed until 2 AM last Wednesday.\n")
    row = extract(markdown, asserted_at=datetime(2023, 5, 25, tzinfo=UTC))
    assert texts(row) == ["User is sluggish on 2023-05-25 because user didn't get to bed until 2 AM on Wednesday, 2023-05-24."]
    assert row["claims"][0]["valid_from"] == datetime(2023, 5, 25, tzinfo=UTC)


def test_the_gate_checks_the_cited_passages():
    ctx = _context("Ravi moved the cutover to June 8.")
    assert grounding.check(ctx, KEPT, DraftClaim("Ravi moved the cutover.", ("P7",))).check == "unknown_passage"
    dropped = SelectionResult((Selected("P1", "drop", "opinion"),))
    assert grounding.check(ctx, dropped, DraftClaim("Ravi moved the cutover.", ("P1",))).check == "origin_not_kept"


def test_a_neighbour_cannot_be_the_origin():
    markdown = "# Plan\n\nRavi moved the cutover to June 8.\n\nDana leads billing.\n"
    first = markdown.index("Ravi")
    second = markdown.index("Dana")
    ctx = ChunkContext(version_id="v", chunk_ord=1, title="Plan", header="Plan", asserted_at=None,
                       section_role="body",
                       passages=tuple(context_passages(markdown, [(first, second - 2), (second, len(markdown) - 1)], 1)))
    neighbour = next(p for p in ctx.passages if not p.in_target)
    verdict = grounding.check(ctx, SelectionResult((Selected("P1", "keep"),)),
                              DraftClaim("Ravi moved the cutover to June 8.", (neighbour.label,)))
    assert verdict.check == "origin_outside_target"


class _Recorded:
    """A model backend that answers with fixed text, to drive the engine's side of extraction."""

    name, version = "recorded", "recorded-1"

    def __init__(self, claimify_text: str) -> None:
        self._text = claimify_text

    def select(self, chunks):
        return [SelectionResult(tuple(Selected(p.label, "keep") for p in ctx.target)) for ctx in chunks], [
            CallCost("recorded", "m", calls=1, tokens_in=100, tokens_out=20, device_seconds=0.5)]

    def claimify(self, chunks, selections):
        from pipeline.claims.llm_io import parse_claimify

        return [parse_claimify(ctx, sel, self._text) for ctx, sel in zip(chunks, selections)], []


def test_malformed_model_output_is_recorded_as_omitted_and_never_fails_the_batch():
    row = row_for("# Plan\n\nRavi moved the cutover to June 8.\n")
    costs = claims.extract_batch([row], _Recorded('{"claims": [{"cited": ["P1"], "claim_text": "Ravi mo'))
    assert row["claims"] == []
    [entry] = [e for e in row["ledger"] if e["decision"] == "claimify_omitted"]
    assert entry["reason"] and row["markdown"][entry["char_start"]:entry["char_end"]].startswith("Ravi moved")
    assert [(c.calls, c.tokens_in, c.tokens_out) for c in costs] == [(1, 100, 20)]


def test_unchanged_chunks_reuse_their_claims_without_reading_them_again():
    first = extract("Ravi leads the billing migration.\n")
    claim = first["claims"][0]
    chunk = first["chunks"][0]
    prior = [{"chunk_text_hash": chunk["text_hash"], "claim_id": claim["claim_id"], "extractor": "rules-1",
              "rel_start": claim["char_start"] - chunk["char_start"], "rel_end": claim["char_end"] - chunk["char_start"],
              "rel_evidence": [{"char_start": s["char_start"] - chunk["char_start"],
                                "char_end": s["char_end"] - chunk["char_start"]} for s in claim["evidence_spans"]]}]
    moved = row_for("Dana joined the payments team on Monday.\n\nRavi leads the billing migration.\n",
                    target=40)
    assert moved["chunks"][1]["text_hash"] == chunk["text_hash"]
    moved["prior_claims"] = prior

    class Refuses(RulesExtractor):
        def select(self, chunks):
            assert all("Ravi" not in p.text for ctx in chunks for p in ctx.target), "an unchanged chunk was read"
            return super().select(chunks)

    claims.extract_batch([moved], Refuses())
    [again] = [c for c in moved["claims"] if c["reused"]]
    assert again["claim_id"] == claim["claim_id"]
    assert moved["markdown"][again["char_start"]:again["char_end"]] == "Ravi leads the billing migration."


def test_claim_ids_are_stable_and_per_document():
    one = extract("# Plan\n\nRavi leads the billing migration.\n")
    two = extract("# Plan\n\nRavi leads the billing migration.\n")
    assert one["claims"][0]["claim_id"] == two["claims"][0]["claim_id"]
    other = row_for("# Plan\n\nRavi leads the billing migration.\n")
    other["doc_id"] = "00000000-0000-0000-0000-000000000099"
    claims.extract_batch([other], RulesExtractor())
    assert other["claims"][0]["claim_id"] != one["claims"][0]["claim_id"]


def test_claimify_rules_returns_only_kept_statements():
    ctx = _context("Ravi moved the cutover to June 8.")
    result = claimify_rules(ctx, SelectionResult((Selected("P1", "drop", "opinion"),)))
    assert result == ClaimifyResult((), ())


def test_passage_offsets_are_what_the_engine_cites():
    ctx = _context("Ravi moved the cutover to June 8.")
    p: Passage = ctx.passage("P1")
    assert p.text == "Ravi moved the cutover to June 8."


def test_a_table_row_takes_its_header_and_stays_grounded():
    markdown = ("# Plan\n\n| Step | Owner | Status |\n|---|---|---|\n| Schema change | Ravi | Done on 3 March |\n")
    row = extract(markdown, asserted_at=datetime(2026, 5, 2, tzinfo=UTC))
    assert texts(row) == ["Step: Schema change, Owner: Ravi, Status: Done on 3 March."]
    assert row["claims"][0]["valid_from"] == datetime(2026, 3, 3, tzinfo=UTC)


def test_a_dateline_and_a_byline_are_neither_claims_nor_entities():
    row = extract("# Billing notes\n\nWritten on 4 March 2026.\n\nBy Dana Kim\n\nRavi leads the billing migration.\n",
                  asserted_at=datetime(2026, 3, 4, tzinfo=UTC))
    assert texts(row) == ["Ravi leads the billing migration."]
    drops = {(e["decision"], e["reason"]) for e in row["ledger"]}
    assert ("selection_drop", "references_boilerplate") in drops
    named = {name for c in row["claims"] for a in normalize.normalize_claim(c, "billing migration")
             for name in (a.subject, a.object) if name}
    assert named == {"Ravi", "billing migration"}



def test_a_sentence_that_points_back_joins_the_claim_before_it_in_the_same_turn():
    markdown = ("# Chat\n\nParticipants: Nate, Joanna\n\n"
                "[D1:1 | 2022-01-23T14:01:00Z] Nate: I tried a new coconut ice cream recipe. It was rich and creamy!\n\n"
                "[D1:2 | 2022-01-23T14:02:00Z] Joanna: It sounds like a plan.\n")
    row = extract(markdown, asserted_at=datetime(2022, 1, 23, tzinfo=UTC))
    [claim] = row["claims"]
    assert claim["claim_text"] == "Nate tried a new coconut ice cream recipe; it was rich and creamy."
    # the origin is the first sentence; both sentences are evidence
    assert claim["source_span"] == "I tried a new coconut ice cream recipe."
    assert len(claim["evidence_spans"]) == 2
    second = claim["evidence_spans"][1]
    assert row["markdown"][second["char_start"]:second["char_end"]] == "It was rich and creamy!"


def test_a_speakers_own_clause_after_a_pointing_opening_stands_alone():
    markdown = ("# Chat\n\nParticipants: John, Maria\n\n"
                "[D1:1 | 2023-05-08T13:56:00Z] John: It wasn't easy, but I'm proud of what I achieved.\n")
    row = extract(markdown, asserted_at=datetime(2023, 5, 8, tzinfo=UTC))
    assert texts(row) == ["John is proud of what John achieved."]


@pytest.mark.parametrize(("said", "claim"), [
    ("I think I'll try out the Korg B1 first.", "Nate thinks Nate will try out the Korg B1 first."),
    ("I just checked and I'm now at 600 followers.", "Nate just checked and Nate is now at 600 followers."),
    ("If I find a design I like, I'll save it.", "If Nate finds a design Nate likes, Nate will save it."),
    ("I think I need a new yoga mat.", "Nate thinks Nate needs a new yoga mat."),
])
def test_every_i_of_a_sentence_is_the_speaker_where_it_stands(said: str, claim: str):
    # the verb after one "I" was looked for across the next "I", whose words were then written
    # twice ("Nate thinks I'll try outNate will try out ..."), and grounding rejected the claim
    markdown = f"# Chat\n\nParticipants: Nate, Joanna\n\n[D1:1 | 2022-01-23T14:01:00Z] Nate: {said}\n"
    row = extract(markdown, asserted_at=datetime(2022, 1, 23, tzinfo=UTC))
    assert texts(row) == [claim]
    assert not [e for e in row["ledger"] if e["decision"] == "grounding_rejected"]


@pytest.mark.parametrize(("said", "claim"), [
    ("I'm getting ready for a charity 5K run and I was wondering if you could give me some tips.",
     "Nate is getting ready for a charity 5K run."),
    ("I completed 10 laps at the track today, and I'm wondering if you have any advice on suspension upgrades?",
     "Nate completed 10 laps at the track on 2022-01-23."),
    ("I was thinking of making BBQ beef, but I want to know if you have any recommendations for sides.",
     "Nate was thinking of making BBQ beef."),
    ("I was wondering if you could recommend some online resources.", None),
    ("I'm thinking of getting my cat microchipped, do you know anything about the process?",
     "Nate is thinking of getting their cat microchipped."),
    ("What do you think, can you help?", None),
    ("I'm not sure, can you help?", None),
])
def test_what_a_speaker_tells_before_a_request_is_kept(said: str, claim: str | None):
    # "wondering if you could ..." asks; it is neither a condition on the clause before it nor a
    # question that clause asks
    markdown = f"# Chat\n\nParticipants: Nate, Joanna\n\n[D1:1 | 2022-01-23T14:01:00Z] Nate: {said}\n"
    row = extract(markdown, asserted_at=datetime(2022, 1, 23, tzinfo=UTC))
    assert texts(row) == ([claim] if claim else [])
    if claim:
        assert row["claims"][0]["source_span"] == said


def test_a_shared_photo_joins_the_claim_of_its_sentence_or_stands_alone():
    markdown = ("# Chat\n\nParticipants: Nate, Joanna\n\n"
                "[D1:1 | 2022-01-23T14:01:00Z] Nate: I adopted a puppy last week. "
                "[shares a photo: a puppy on a couch]\n\n"
                "[D1:2 | 2022-01-23T14:02:00Z] Joanna: They loved the cake I made for them. "
                "[shares a photo: a cake with raspberries]\n")
    row = extract(markdown, asserted_at=datetime(2022, 1, 23, tzinfo=UTC))
    assert texts(row) == ["Nate adopted a puppy in the week of 2022-01-10; Nate shared a photo of a puppy on a couch.",
                          "Joanna shared a photo of a cake with raspberries."]
