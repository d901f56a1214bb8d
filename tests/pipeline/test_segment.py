"""segment: statements as passages with exact absolute offsets, turns, neighbours, the header."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.claims.extraction import Passage
from pipeline.claims.segment import (context_passages, document_header, participants, split_passages,
                                     turn_openings, turn_speakers)
from pipeline.documents.chunk import structure_and_chunk
from tests.support.paths import EXAMPLES


REPORT = """\
<!-- Slide number: 1 -->
# Billing migration review

Prepared by Dr. Jane Smith for Acme Inc. in March. Error rates fell 3.5 percent, i.e. below
the target. J. Smith signed off. "The cutover moves to June," Dana said. Revenue grew in Q1. The
team celebrated.

## Decisions

- The new billing database is PostgreSQL.
* Invoices keep their current numbering. Nothing else changes.
1. Ravi drafts the schema change by 6 February.
- [x] Priya wrote the first validation script.

---

| Area | Owner |
|------|-------|
| Schema change | Ravi |
| Data validation | Priya |

```python
x = 1. Not a sentence.
```

Setext heading
--------------

The rollback takes about forty minutes, e.g. when totals differ. Ends with etc. and goes on.
"""

REPORT_STATEMENTS = [
    "Prepared by Dr. Jane Smith for Acme Inc. in March.",
    "Error rates fell 3.5 percent, i.e. below\nthe target.",
    "J. Smith signed off.",
    '"The cutover moves to June," Dana said.',
    "Revenue grew in Q1.",
    "The\nteam celebrated.",
    "The new billing database is PostgreSQL.",
    "Invoices keep their current numbering.",
    "Nothing else changes.",
    "Ravi drafts the schema change by 6 February.",
    "Priya wrote the first validation script.",
    "| Area | Owner |",
    "| Schema change | Ravi |",
    "| Data validation | Priya |",
    "The rollback takes about forty minutes, e.g. when totals differ.",
    "Ends with etc. and goes on.",
]

STANDUP = """\
# Billing migration stand-up — 2026-09-17

Participants: Dana, Ravi, Priya, Marco

[t1 | 2026-09-17T09:30:00Z] Dana: Where are we on the invoice exporter?

[t2 | 2026-09-17T11:31:10+02:00] Ravi: It needs a rewrite. The migration moves from June to October.

[t3] Priya: The scripts found 214 invoices.
The tax codes are wrong.

[t4 | 2026-09-17T09:33:00] Marco: Finance needs two weeks of notice.

Dana: Agreed. I will tell finance today.

**Ravi:** Dana and I agreed yesterday to move the cutover to June 8.

**Priya**: I will fix the tax codes by Friday.

Note: Decision taken by Dana.
"""


def assert_exact(markdown: str, passages: list[Passage]) -> None:
    for passage in passages:
        assert markdown[passage.char_start:passage.char_end] == passage.text
        assert passage.text == passage.text.strip()
    for before, after in itertools.pairwise(passages):
        assert before.char_end <= after.char_start


def test_statements_of_a_markdown_document_with_exact_offsets() -> None:
    passages = split_passages(REPORT, 0, len(REPORT))
    assert_exact(REPORT, passages)
    assert [p.text for p in passages] == REPORT_STATEMENTS
    assert [p.label for p in passages] == [f"P{n}" for n in range(1, len(REPORT_STATEMENTS) + 1)]
    assert all(p.in_target and p.speaker is None and p.turn_time is None for p in passages)


def test_headings_rules_comments_and_code_give_no_passages() -> None:
    texts = " ".join(p.text for p in split_passages(REPORT, 0, len(REPORT)))
    for absent in ("Billing migration review", "Decisions", "Slide number", "---", "|------",
                   "x = 1", "Setext heading", "- [x]"):
        assert absent not in texts


def test_list_markers_are_outside_the_span() -> None:
    passages = split_passages(REPORT, 0, len(REPORT))
    item = next(p for p in passages if p.text.startswith("Ravi drafts"))
    assert REPORT[item.char_start - 3:item.char_start] == "1. "


def test_conversation_turns_in_every_layout() -> None:
    passages = split_passages(STANDUP, 0, len(STANDUP))
    assert_exact(STANDUP, passages)
    got = [(p.text, p.speaker, p.turn_id, p.turn_time) for p in passages]
    t1 = datetime(2026, 9, 17, 9, 30, tzinfo=UTC)
    t2 = datetime(2026, 9, 17, 9, 31, 10, tzinfo=UTC)  # +02:00 converted to UTC
    assert got == [
        ("Participants: Dana, Ravi, Priya, Marco", None, None, None),
        ("Where are we on the invoice exporter?", "Dana", "t1", t1),
        ("It needs a rewrite.", "Ravi", "t2", t2),
        ("The migration moves from June to October.", "Ravi", "t2", t2),
        ("The scripts found 214 invoices.", "Priya", "t3", None),
        ("The tax codes are wrong.", "Priya", "t3", None),
        ("Finance needs two weeks of notice.", "Marco", "t4", None),  # naive time: no guess
        ("Agreed.", "Dana", None, None),
        ("I will tell finance today.", "Dana", None, None),
        ("Dana and I agreed yesterday to move the cutover to June 8.", "Ravi", None, None),
        ("I will fix the tax codes by Friday.", "Priya", None, None),
        ("Note: Decision taken by Dana.", None, None, None),
    ]
    assert all(p.turn_time is None or p.turn_time.tzinfo is not None for p in passages)


def test_speaker_prefix_is_outside_the_span() -> None:
    passages = split_passages(STANDUP, 0, len(STANDUP))
    first = passages[1]
    assert STANDUP[:first.char_start].endswith("[t1 | 2026-09-17T09:30:00Z] Dana: ")
    bold = next(p for p in passages if p.text.startswith("Dana and I"))
    assert STANDUP[:bold.char_start].endswith("**Ravi:** ")


@pytest.mark.parametrize("line, speaker", [
    ("Ravi Kumar: The schema is merged.", "Ravi Kumar"),
    ("Mary Ann O'Neil: The schema is merged.", "Mary Ann O'Neil"),
    ("Decision: The schema is merged.", None),
    ("Action: The schema is merged.", None),
    ("Owner: Ravi owns the schema.", None),
    ("June: the schema is merged.", None),
    ("Next stand-up: 21 May 2026.", None),
    ("The plan: merge the schema.", None),
    ("Initialization: the class is initialized with the memory configuration.", None),
    ("Performance: the search answers in 20 ms.", None),
    ("Clarence: I moved the schema.", "Clarence"),
    ("Florence: I moved the schema.", "Florence"),
    # a list item's label in documentation, of English words the page also writes in lower case,
    # or a property, is no one
    ("**Asking Questions:** the ask method stores the questions it is asked.", None),
    ("Error Handling: failed calls get the same handling twice.", None),
    ("Thread-safe: one client serves every thread.", None),
    ("**Memory Management:** old entries are pruned nightly.", None),
    ("**Clear Agent Roles:** each agent owns one task.", None),
    ("Mark Webber: I moved the schema.", "Mark Webber"),
    ("John Smith: I moved the schema.", "John Smith"),
    ("Grace Young: I moved the schema.", "Grace Young"),
])
def test_speaker_labels(line: str, speaker: str | None) -> None:
    [passage] = split_passages(line, 0, len(line))
    assert passage.speaker == speaker
    assert passage.text == (line.split(": ", 1)[1] if speaker else line)


ASSISTANT_CHAT = """\
# Chat 7, session 2

Participants: user, assistant

[q7s2:1 | 2023-05-21T19:50:00Z] user: I bought a road bike last week. Which helmet should I get?

[q7s2:2 | 2023-05-21T19:50:00Z] assistant: Congrats on the bike! A few options:

**Helmet:** look for MIPS protection.

Fit: it should sit level on your head.

[q7s2:3 | 2023-05-21T19:50:00Z] user: My sister Anna recommended Giro.
"""


def test_roles_in_lower_case_behind_turn_markers_and_labels_no_participant_has() -> None:
    """A chat export's `user:` and `assistant:` turns are turns; a bold label inside an answer,
    in a document whose header names who takes part, is not a speaker."""
    passages = split_passages(ASSISTANT_CHAT, 0, len(ASSISTANT_CHAT))
    assert_exact(ASSISTANT_CHAT, passages)
    got = [(p.text, p.speaker, p.turn_id) for p in passages]
    assert got == [
        ("Participants: user, assistant", None, None),
        ("I bought a road bike last week.", "user", "q7s2:1"),
        ("Which helmet should I get?", "user", "q7s2:1"),
        ("Congrats on the bike!", "assistant", "q7s2:2"),
        ("A few options:", "assistant", "q7s2:2"),
        ("**Helmet:** look for MIPS protection.", None, None),
        ("Fit: it should sit level on your head.", None, None),
        ("My sister Anna recommended Giro.", "user", "q7s2:3"),
    ]


@pytest.mark.parametrize("markdown, speaker", [
    ("user: I bought a road bike.", None),                                   # a role needs a marker
    ("Participants: user, assistant\n\nuser: I bought a road bike.", "user"),  # or a declaration
    ("Participants: Dana Kim, Ravi\n\nDana: The schema is merged.", "Dana"),   # a first name declared
    ("Participants: Dana Kim, Ravi\n\nPriya: The schema is merged.", None),    # not declared
    ("Priya: The schema is merged.", "Priya"),                                 # nothing declared
])
def test_who_takes_turns_without_a_marker(markdown: str, speaker: str | None) -> None:
    *_, last = split_passages(markdown, 0, len(markdown))
    assert last.speaker == speaker, last


@pytest.mark.parametrize("item", ["5. **Multi-Agent Support**: A single service gives all agents the same memory.",
                                  "- **Restore Config**: Uncomment your local vector store.",
                                  "2. **Dana:** The schema is merged.", "**Cost Saver**: Spend less on tokens."])
def test_a_bold_label_of_documentation_is_no_speaker(item: str) -> None:
    page = f"# Setup\n\nRun `mem0 init` first.\n\n{item}\n"
    *_, last = split_passages(page, 0, len(page))
    assert last.speaker is None, last
    # outside documentation the same item still opens a turn
    note = f"# Standup\n\n{item}\n"
    *_, last = split_passages(note, 0, len(note))
    assert last.speaker is not None, last


def test_a_chunk_in_the_middle_has_absolute_offsets() -> None:
    markdown = (EXAMPLES / "2026-01-15-kickoff.md").read_text()
    _, chunks = structure_and_chunk(markdown, 300)
    whole = {(p.char_start, p.char_end) for p in split_passages(markdown, 0, len(markdown))}
    middle = chunks[len(chunks) // 2]
    passages = split_passages(markdown, middle["char_start"], middle["char_end"], label_start=7)
    assert passages and passages[0].label == "P7"
    assert_exact(markdown, passages)
    assert all(middle["char_start"] <= p.char_start and p.char_end <= middle["char_end"]
               for p in passages)
    assert {(p.char_start, p.char_end) for p in passages} <= whole


def test_example_corpus_statements() -> None:
    markdown = (EXAMPLES / "2026-01-15-kickoff.md").read_text()
    texts = [p.text for p in split_passages(markdown, 0, len(markdown))]
    assert "Ravi leads the billing migration." in texts
    assert "The monthly\ninvoice run takes eleven hours." in texts
    assert "Can the invoice system move to the new database without changes?" in texts
    assert not any(t.startswith("#") for t in texts)

    notes = (EXAMPLES / "2026-05-20-standup.txt").read_text()
    texts = [p.text for p in split_passages(notes, 0, len(notes))]
    # The first line is the title and "Cutover" heads a list: neither is a statement.
    assert texts[:3] == [
        "Present: Dana, Ravi, Priya, Marco", "The cutover is on June 15.",
        "Marco needs the final invoice export from the legacy database by 12 June."]
    assert "Cutover" not in texts and "Next stand-up: 21 May 2026, 09:30 UTC." in texts


def test_pseudo_headings_of_converted_pdfs_give_no_passages() -> None:
    markdown = ("Billing migration retrospective\n\n12 June 2026. Attendees: Dana, Ravi.\n\n"
                "What went well\n\n- The parallel run was clean.\n\n**Actions**\n\n"
                "Dana sends the weekly status email.\n")
    texts = [p.text for p in split_passages(markdown, 0, len(markdown))]
    assert texts == ["12 June 2026.", "Attendees: Dana, Ravi.", "The parallel run was clean.",
                     "Dana sends the weekly status email."]


def test_context_passages_label_target_and_neighbours_uniquely() -> None:
    markdown = (EXAMPLES / "2026-01-15-kickoff.md").read_text()
    _, chunks = structure_and_chunk(markdown, 300)
    spans = [(c["char_start"], c["char_end"]) for c in chunks]
    target = len(spans) // 2
    passages = context_passages(markdown, spans, target)
    labels = [p.label for p in passages]
    assert len(labels) == len(set(labels))
    assert [p.char_start for p in passages] == sorted(p.char_start for p in passages)
    inside = [p for p in passages if p.in_target]
    assert [p.label for p in inside] == [f"P{n}" for n in range(1, len(inside) + 1)]
    assert inside == split_passages(markdown, *spans[target])
    neighbours = [p for p in passages if not p.in_target]
    assert [p.label for p in neighbours] == [f"N{n}" for n in range(1, len(neighbours) + 1)]
    before = split_passages(markdown, *spans[target - 1])
    after = split_passages(markdown, *spans[target + 1])
    assert [p.text for p in neighbours] == [p.text for p in before + after]
    assert_exact(markdown, passages)


def test_context_passages_at_the_edges_and_out_of_range() -> None:
    markdown = STANDUP
    cut = markdown.index("[t3]")
    spans = [(0, cut - 2), (cut, len(markdown))]
    first = context_passages(markdown, spans, 0)
    assert [p.in_target for p in first] == [True] * 4 + [False] * 8
    last = context_passages(markdown, spans, 1)
    assert [p.label for p in last][:5] == ["N1", "N2", "N3", "N4", "P1"]
    assert context_passages(markdown, spans, 0, window=0) == split_passages(markdown, *spans[0])
    with pytest.raises(IndexError):
        context_passages(markdown, spans, 2)
    with pytest.raises(ValueError):
        split_passages(markdown, 10, len(markdown) + 1)


def test_a_passage_names_the_speakers_of_the_turns_that_open_in_it_as_its_document_would() -> None:
    chat = "# Chat 7, session 1\n\nParticipants: user, assistant\n\n"
    passage = ("Here is the list.\n\n[q7s1:4 | 2023-05-21T19:50:00Z] user: I have three bikes.\n\n"
               "[q7s1:5 | 2023-05-21T19:50:00Z] assistant: Good choice:\n\n**Helmet:** wear one\nBlack Hills: tours\n")
    # the header declares who takes part: the labels in the assistant's answer open no turn
    assert turn_speakers(passage, chat) == ["user", "assistant"]
    assert turn_speakers(passage) == ["user", "assistant", "Helmet", "Black Hills"]
    assert turn_speakers("Caroline: I went to the park.\nMelanie: Nice!") == ["Caroline", "Melanie"]
    assert turn_speakers("* Local bike shops know the routes.\n1. Storage: a rack") == []
    # where each turn opens, for what a reader places inside a chunk
    assert [(passage[at:at + 8], who) for at, who in turn_openings(passage, chat)] == [
        ("[q7s1:4 ", "user"), ("[q7s1:5 ", "assistant")]
    assert participants(chat) == {"user", "assistant"} and participants("# Notes\n\nNo one.") == frozenset()


def test_document_header() -> None:
    kickoff = (EXAMPLES / "2026-01-15-kickoff.md").read_text()
    assert document_header(kickoff, "Kickoff notes") == (
        "Kickoff notes\nBilling migration kickoff\nDate: 15 January 2026\n"
        "Attendees: Ravi, Dana, Priya, Marco")
    assert document_header(STANDUP, "Billing migration stand-up — 2026-09-17") == (
        "Billing migration stand-up — 2026-09-17\nParticipants: Dana, Ravi, Priya, Marco")
    notes = (EXAMPLES / "2026-05-20-standup.txt").read_text()
    assert document_header(notes, "standup") == (
        "standup\nBilling migration stand-up notes, 20 May 2026\nPresent: Dana, Ravi, Priya, Marco")
    capped = document_header(kickoff, "Kickoff notes", max_chars=61)
    assert capped == "Kickoff notes\nBilling migration kickoff\nDate: 15 January 2026"
    assert len(document_header("# " + "word " * 200, "T", max_chars=50)) <= 50


def test_a_later_participants_line_is_not_header() -> None:
    markdown = "# Notes\n\nDate: 1 May 2026\n\n## Later\n\nParticipants: Zed\n"
    assert document_header(markdown, "Notes") == "Notes\nDate: 1 May 2026"


_LINES = st.sampled_from([
    "# Heading", "Plain sentence one. Sentence two?", "- item one", "1. Ordered item.", "",
    "| a | b |", "|---|---|", "[t1 | 2026-01-01T00:00:00Z] Dana: Hi there. Bye.", "> quoted",
    "**Ravi:** ok.", "<!-- c -->", "```", "code. Line.", "Dr. Who came e.g. late.", "   ",
    "trailing   ", "x", "Wrapped line\ncontinued here.", "\r\n", "Q1. 2026 was good.",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=14), st.data())
def test_offsets_are_exact_for_any_document(lines: list[str], data: st.DataObject) -> None:
    markdown = "\n".join(lines)
    start = data.draw(st.integers(0, len(markdown)))
    end = data.draw(st.integers(start, len(markdown)))
    passages = split_passages(markdown, start, end)
    assert_exact(markdown, passages)
    assert all(start <= p.char_start < p.char_end <= end for p in passages)
    assert len({p.label for p in passages}) == len(passages)
