"""selection_rules: one outcome per target statement, named drop reasons, holders, flags."""

from __future__ import annotations


import pytest

from pipeline.claims.extraction import (
    DROP_REASONS,
    SELECTION_OUTCOMES,
    ChunkContext,
    Passage,
)
from pipeline.claims.segment import context_passages, document_header, split_passages
from pipeline.claims.selection_rules import DROP_CUES, RULE_ORDER, plain, select_rules
from pipeline.documents.chunk import structure_and_chunk
from pipeline.documents.convert import convert
from pipeline.documents.mime import mime_for
from tests.support.paths import EXAMPLES



def context(statements: list[str], *, speaker: str | None = None, before: tuple[str, ...] = (),
            role: str = "body", header: str = "Billing migration") -> ChunkContext:
    """A context whose target passages are `statements`, after neighbour passages `before`."""
    markdown = "\n".join([*before, *statements])
    passages, position = [], 0
    for index, text in enumerate([*before, *statements]):
        target = index >= len(before)
        label = f"P{index - len(before) + 1}" if target else f"N{index + 1}"
        passages.append(Passage(label, position, position + len(text), text, target,
                                speaker=speaker if target else None))
        position += len(text) + 1
    assert all(markdown[p.char_start:p.char_end] == p.text for p in passages)
    return ChunkContext("v1", 0, "Billing migration", header, None, role, tuple(passages))


def judged(statement: str, **kwargs) -> tuple[str, str | None]:
    [selected] = select_rules(context([statement], **kwargs)).statements
    return selected.outcome, selected.reason


DROPS = [
    ("references_boilerplate", "See https://wiki.example.com/billing/cutover."),
    ("references_boilerplate", "Doe, J. (2021). Billing systems at scale. Acme Press."),
    ("references_boilerplate", "Copyright 2026 Acme Inc. All rights reserved."),
    ("references_boilerplate", "Page 3 of 12"),
    ("references_boilerplate", "Written on 4 March 2026."),
    ("references_boilerplate", "Posted by Ravi on 2026-03-04."),
    ("references_boilerplate", "By Dana Kim"),
    ("references_boilerplate", "By Dana Kim and Priya Shah, March 4, 2026"),
    ("references_boilerplate", "Last updated: 12 May 2026 at 10:30 am"),
    ("references_boilerplate", "Published Wednesday, March 4, 2026."),
    ("question", "Can the invoice system move to the new database without changes?"),
    ("question", "Which finance reports read directly from the billing database?"),
    ("intro", "This section describes the cutover plan."),
    ("intro", "Below we list the open risks for the launch."),
    ("intro", "The following decisions were taken:"),
    ("conclusion", "In summary, the migration is on track."),
    ("conclusion", "Overall, the quarter went well for the payments team."),
    ("conclusion", "That's all for today."),
    ("conclusion", "Thanks everyone."),
    ("advice", "You should back up the legacy database first."),
    ("advice", "We should tell finance before the cutover."),
    ("advice", "Make sure the parallel run covers the month end."),
    ("advice", "Always page the backup engineer after fifteen minutes."),
    ("advice", "It is best to freeze writes before copying the data."),
    ("hypothetical", "If we delayed the cutover, costs would rise."),
    ("hypothetical", "Suppose the parallel run finds a difference."),
    ("hypothetical", "The team would have finished sooner with more testers."),
    ("hypothetical", "Keep a backup in case the copy fails."),
    ("no_info", "We don't know yet."),
    ("no_info", "The cutover date is TBD."),
    ("no_info", "The owner of the tax service is still unknown."),
    ("no_info", "No update from finance this week."),
    ("no_info", "Nothing to report on the invoice rewrite."),
    ("opinion", "This approach is cleaner."),
    ("opinion", "The June date is too tight."),
    ("opinion", "I think the new schema is better."),
    ("opinion", "The old exporter seems fragile."),
    ("generic", "Migrations are risky."),
    ("generic", "Testing takes time."),
    ("generic", "Documentation is important."),
    ("ambiguous", "It was moved."),
    ("ambiguous", "They approved it last week."),
    ("ambiguous", "She signed off on the plan."),
]


@pytest.mark.parametrize("reason, statement", DROPS)
def test_each_drop_reason(reason: str, statement: str) -> None:
    assert judged(statement) == ("drop", reason)


def test_every_drop_reason_is_covered_and_named() -> None:
    assert {reason for reason, _ in DROPS} == set(DROP_REASONS)
    assert set(DROP_CUES) <= set(DROP_REASONS)
    assert set(RULE_ORDER) >= set(DROP_REASONS) | {"keep_flagged", "keep"}


@pytest.mark.parametrize("reason, statement", [
    (reason, statement) for reason, statement in DROPS if reason in DROP_CUES])
def test_drop_cues_name_the_reason(reason: str, statement: str) -> None:
    assert any(pattern.search(plain(statement)) for pattern in DROP_CUES[reason])


@pytest.mark.parametrize("statement", [
    "Ravi wrote the cutover plan on 4 March 2026.", "By June the team had shipped the exporter.",
    "Written tests cover the exporter since 4 March 2026.", "Updated invoices go out on 2026-03-04 to every customer.",
    "By then Dana Kim leads the migration."])
def test_a_statement_that_only_starts_like_a_dateline_is_kept(statement: str) -> None:
    assert judged(statement)[0] != "drop"


def test_reference_and_boilerplate_sections_drop_everything() -> None:
    for role in ("references", "boilerplate"):
        assert judged("Billing migration kickoff notes, 15 January 2026.", role=role) == (
            "drop", "references_boilerplate")
    assert judged("Billing migration kickoff notes, 15 January 2026.", role="appendix")[0] != "drop"


@pytest.mark.parametrize("statement", [
    "Dana thinks the June date is too tight.",
    "Ravi believes the cutover will slip.",
    "Priya feels the validation scripts are better now.",
    "According to Marco, the finance reports are incomplete.",
    "Dana recommends that we back up the database first.",
])
def test_an_opinion_with_a_named_holder_is_kept(statement: str) -> None:
    assert judged(statement) == ("keep", None)


@pytest.mark.parametrize("statement", [
    "I think the June date is too tight.",
    "This approach is cleaner.",
    "I believe we should move the cutover.",
])
def test_a_speaker_holds_their_own_opinion(statement: str) -> None:
    assert judged(statement, speaker="Dana") == ("keep", None)
    assert judged(statement)[0] == "drop"


def test_advice_and_questions_in_a_turn_are_still_dropped() -> None:
    assert judged("We should tell finance today.", speaker="Dana") == ("drop", "advice")
    assert judged("Is the exporter done", speaker="Dana") == ("drop", "question")
    # Without a speaker, "Will" may be a name: only "?" makes a question.
    assert judged("Will owns the exporter") == ("keep", None)


@pytest.mark.parametrize("statement, reason", [
    ("The launch probably ships in June.", "hedged"),
    ("The cutover might move to July.", "hedged"),
    ("The schema change should be done by Friday.", "hedged"),
    ("Ravi leads billing.", "short"),
    ("Q4 errors: 31.", "short"),
    ("It seems the cutover is on June 8.", "opinion-phrased"),
    ("Error rates are better by 20 percent.", "opinion-phrased"),
])
def test_keep_flagged(statement: str, reason: str) -> None:
    assert judged(statement) == ("keep_flagged", reason)


def test_a_bare_assent_is_no_info_and_praise_without_a_holder_an_opinion() -> None:
    # An acknowledgement answers another turn and asserts nothing of its own.
    assert judged("Agreed.", speaker="Dana") == ("drop", "no_info")
    assert judged("Great stuff.", speaker="Dana") == ("drop", "opinion")


@pytest.mark.parametrize("line", ["Participants: Dana, Ravi, Priya", "Attendees: Ravi, Dana",
                                  "Date: 15 January 2026", "12 June 2026.", "2026-03-04"])
def test_header_lines_and_datelines_frame_the_document_and_are_dropped(line: str) -> None:
    assert judged(line) == ("drop", "intro")


def test_a_pronoun_with_an_antecedent_is_kept() -> None:
    assert judged("It was moved.", before=("The cutover was planned for June 8.",)) == (
        "keep", None)
    assert judged("She signed off on the plan.", before=("Dana reviewed the plan.",)) == (
        "keep", None)
    # "he"/"she" need a person earlier, not just any words.
    assert judged("She signed off on the plan.", before=("The plan was reviewed.",)) == (
        "drop", "ambiguous")


@pytest.mark.parametrize("statement", [
    "Migrations at Acme are risky.",
    "Migrations took 3 weeks.",
    "The migrations are risky.",
    "Invoices keep their current numbering.",
    "Finance, e.g. Marco, signs off by 5 June 2026.",
    "The following week, Ravi merged the schema.",
    "May to September: the invoice rewrite.",
    "The cutover date is not fixed yet.",
    "Thanks to Priya, the scripts found 214 invoices.",
    "Launch is planned for June.",
])
def test_look_alikes_of_drop_cues_are_kept(statement: str) -> None:
    assert judged(statement) == ("keep", None)


def test_a_table_header_row_introduces_and_its_rows_are_kept() -> None:
    ctx = context(["| Area | Owner | Due |", "| Schema change | Ravi | Done on 3 March |",
                   "| Finance sign-off | Marco | 5 June |"])
    assert [(s.outcome, s.reason) for s in select_rules(ctx).statements] == [
        ("drop", "intro"), ("keep", None), ("keep", None)]


def test_one_outcome_per_target_passage_and_neighbours_never_judged() -> None:
    ctx = context(["Ravi leads the billing migration.", "Migrations are risky.",
                   "Where is the schema change?"],
                  before=("Dana manages the payments team.", "This section covers owners."))
    result = select_rules(ctx)
    assert [s.label for s in result.statements] == [p.label for p in ctx.target] == [
        "P1", "P2", "P3"]
    assert all(s.outcome in SELECTION_OUTCOMES for s in result.statements)
    for selected in result.statements:
        assert (selected.outcome == "drop") == (selected.reason in DROP_REASONS)
    assert not any(s.label.startswith("N") for s in result.statements)


def test_introduced_names_once_per_chunk_with_their_first_label() -> None:
    ctx = context(["Marco is the finance contact.", "Priya and Marco own the scripts.",
                   "The team moved to PostgreSQL in June."],
                  before=("Dana manages the payments team.",), speaker="Ravi")
    assert select_rules(ctx).introduced == (
        ("Ravi", "P1"), ("Marco", "P1"), ("Priya", "P2"), ("PostgreSQL", "P3"))


def test_selection_is_deterministic() -> None:
    ctx = context([statement for _, statement in DROPS] + ["Ravi leads the billing migration."])
    assert select_rules(ctx) == select_rules(ctx)


def corpus_contexts(filename: str) -> list[ChunkContext]:
    path = EXAMPLES / filename
    markdown = convert(path.read_bytes(), mime_for(filename), filename).markdown
    sections, chunks = structure_and_chunk(markdown, 400)
    spans = [(chunk["char_start"], chunk["char_end"]) for chunk in chunks]
    header = document_header(markdown, path.stem)
    return [ChunkContext("v1", index, path.stem, header, None,
                         sections[chunk["section_ord"]]["role"],
                         tuple(context_passages(markdown, spans, index)))
            for index, chunk in enumerate(chunks)]


@pytest.fixture(scope="module")
def corpus() -> dict[str, tuple[str, str | None]]:
    """Every target statement of the example corpus → (outcome, reason)."""
    judged_statements = {}
    for filename in ("2026-01-15-kickoff.md", "2026-03-04-standup.md", "2026-05-20-standup.txt",
                     "2026-05-02-billing-spec.html", "2026-06-12-retro.pdf",
                     "2026-04-20-planning.docx", "oncall-roster.md"):
        for ctx in corpus_contexts(filename):
            for selected in select_rules(ctx).statements:
                text = " ".join(ctx.passage(selected.label).text.split())
                judged_statements[text] = (selected.outcome, selected.reason)
    return judged_statements


@pytest.mark.parametrize("statement", [
    "Ravi leads the billing migration.",
    "Dana now leads the billing migration.",
    "The cutover is scheduled for June 8.",
    "Ravi moved from the billing migration to the search team on 1 June.",
    "Dana and I agreed yesterday to move the cutover to June 8.",
    "The validation scripts found 214 invoices with mismatched tax codes.",
    "The new database handles the monthly invoice run in 50 minutes.",
    "Ravi is the on-call engineer for billing incidents.",
    "If the on-call engineer does not answer within fifteen minutes, page the backup.",
    "The new billing database is PostgreSQL.",
    "| Finance sign-off | Marco | 5 June |",
])
def test_factual_statements_of_the_example_corpus_are_kept(
        corpus: dict[str, tuple[str, str | None]], statement: str) -> None:
    assert corpus[statement] == ("keep", None)


@pytest.mark.parametrize("statement, expected", [
    ("Can the invoice system move to the new database without changes?", ("drop", "question")),
    ("Ravi, where is the schema change?", ("drop", "question")),
    ("Thanks, both.", ("drop", "no_info")),
    ("Same time tomorrow.", ("drop", "conclusion")),
    ("Yes.", ("drop", "no_info")),
    ("Billing migration kickoff notes, 15 January 2026.", ("drop", "references_boilerplate")),
    ("| Quarter | Billing errors |", ("drop", "intro")),
    ("Patching it would take as long as rewriting it.", ("keep_flagged", "hedged")),
])
def test_example_corpus_drops_and_flags(corpus: dict[str, tuple[str, str | None]],
                                        statement: str, expected: tuple[str, str | None]) -> None:
    assert corpus[statement] == expected


def test_segmented_turns_keep_their_speaker_as_holder() -> None:
    markdown = "[t1 | 2026-03-04T09:30:00Z] Dana: I think the June date is too tight.\n"
    passages = split_passages(markdown, 0, len(markdown))
    ctx = ChunkContext("v1", 0, "Stand-up", "Stand-up", None, "body", tuple(passages))
    assert [(s.outcome, s.reason) for s in select_rules(ctx).statements] == [("keep", None)]
    assert select_rules(ctx).introduced == (("Dana", "P1"),)


@pytest.mark.parametrize("said", [
    "I actually redeemed a $5 coupon on coffee creamer last Sunday, which was a nice surprise since I "
    "didn't know I had it in my email inbox.",
    "I've used Ibotta before and liked it, but I didn't know much about Fetch Rewards.",
])
def test_what_a_speaker_did_not_know_then_is_told_not_unknown(said: str) -> None:
    # not knowing, in the past, is part of what happened; "we don't know yet" is what says nothing
    markdown = f"[t1 | 2023-05-27T07:11:00Z] Dana: {said}\n"
    ctx = ChunkContext("v1", 0, "Chat", "Chat", None, "body", tuple(split_passages(markdown, 0, len(markdown))))
    assert [s.outcome for s in select_rules(ctx).statements] == ["keep"]


@pytest.mark.parametrize(("said", "outcome"), [
    ("I should probably make sure to invite David and his wife, they just had a baby boy named Jasper.", "keep"),
    ("I'm planning a trip to Europe and I want to make sure I'm prepared.", "keep"),
    ("I'll make sure to book the rooms with bike storage in advance.", "keep"),
    ("Make sure to back up the database first.", "drop"),
    ("You should make sure to back up the database first.", "drop"),
    ("I'd recommend you make sure to back up the database first.", "drop"),
])
def test_what_a_speaker_makes_sure_of_is_their_plan_not_advice(said: str, outcome: str) -> None:
    markdown = f"[t1 | 2023-05-27T07:11:00Z] Dana: {said}\n"
    ctx = ChunkContext("v1", 0, "Chat", "Chat", None, "body", tuple(split_passages(markdown, 0, len(markdown))))
    assert [s.outcome.split("_")[0] for s in select_rules(ctx).statements] == [outcome]
