"""Reassembly: chunk records of a vector store joined back into their documents."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.documents import reassembly
from pipeline.documents.reassembly import GAP_MARK, Record, parse_date, reassemble, seam_overlap

KICKOFF = ("# Billing migration kickoff\n\nRavi has been on the billing migration since yesterday. "
           "Dana leads the payments team and owns the cutover plan.\n\n## Risks\n\nThe invoice "
           "backlog may slip the June date; Priya will size it by Friday.\n")


def chunks(text: str, size: int, overlap: int, source: str, dates=None, offsets=False) -> list[Record]:
    out, start, i = [], 0, 0
    while True:
        piece = text[start:start + size]
        out.append(Record(f"{source}#{i}", source, piece, position=i,
                          date=(dates or [None])[min(i, len(dates or [None]) - 1)],
                          char_start=start if offsets else None))
        if start + size >= len(text):
            return out
        start, i = start + size - overlap, i + 1


def test_shuffled_overlapping_chunks_come_back_as_the_document():
    records = chunks(KICKOFF, 60, 25, "kickoff.md", dates=["2026-01-15T09:00:00Z", "2026-01-16T10:30:00+02:00"])
    random.Random(3).shuffle(records)
    [doc], rejected = reassemble(records)
    assert doc.text == KICKOFF and doc.source == "kickoff.md" and doc.records == len(records)
    assert doc.overlap_chars == 25 * (len(records) - 1) and doc.gaps == 0
    assert doc.modified_at == datetime(2026, 1, 16, 8, 30, tzinfo=UTC)   # the newest record's date
    assert doc.title == "Billing migration kickoff"
    assert not rejected.counts


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.integers(40, 400), overlap=st.integers(20, 39))
def test_any_cut_with_an_overlap_of_twenty_or_more_is_undone(seed, size, overlap):
    rng = random.Random(seed)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     \n.,") for _ in range(rng.randint(50, 3000)))
    records = chunks(text, size, overlap, "doc")
    rng.shuffle(records)
    [doc], _ = reassemble(records)
    assert doc.text == text


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.integers(5, 200), overlap=st.integers(0, 4))
def test_offsets_place_every_chunk_exactly_whatever_the_overlap(seed, size, overlap):
    rng = random.Random(seed)
    # repetitive on purpose; a letter every third character, so no chunk is only whitespace
    text = "".join(rng.choice("ab") + rng.choice("ab \n") + rng.choice("ab \n") for _ in range(rng.randint(4, 270))) + "z"
    [doc], _ = reassemble(chunks(text, size, overlap, "doc", offsets=True))
    assert doc.text == text and (doc.seams_from_offsets or len(text) <= size)


def test_a_missing_position_is_a_visible_break_and_is_counted():
    records = [Record("a", "s", "First part of the notes."), Record("b", "s", "Second part."),
               Record("c", "s", "Fourth part.")]
    records = [Record(r.record_id, r.source, r.text, position=p) for r, p in zip(records, (0, 1, 3))]
    [doc], _ = reassemble(records)
    assert doc.gaps == 1 and doc.text == "First part of the notes.\nSecond part." + GAP_MARK + "Fourth part."


def test_a_cut_whose_whitespace_was_stripped_becomes_a_line_break_not_glued_words():
    [doc], _ = reassemble([Record("a", "s", "Dana leads billing.", position=0),
                           Record("b", "s", "Ravi moved to search.", position=1)])
    assert doc.text == "Dana leads billing.\nRavi moved to search."
    [doc], _ = reassemble([Record("a", "s", "Dana leads ", position=0), Record("b", "s", "billing.", position=1)])
    assert doc.text == "Dana leads billing."


def test_an_overlap_under_twenty_characters_is_taken_for_coincidence():
    assert seam_overlap("the cutover is on June 8", "June 8 was agreed") == 0
    assert seam_overlap("x" * 5 + "twenty characters ok!", "twenty characters ok! and more") == 21


def test_bad_records_are_counted_by_reason_and_the_rest_lands():
    records = [
        Record("ok0", "a.md", "Dana leads the billing migration.", position=0, date="2026-03-04"),
        Record("ok1", "a.md", "Ravi moved to search.", position=1, date=1772611200),
        Record("dup", "a.md", "Ravi moved to search.", position=1),
        Record("empty", "a.md", "   ", position=2),
        Record("nosrc", None, "orphan text", position=0),
        Record("nopos", "a.md", "where does this go?"),
        Record("baddate", "b.md", "text", position=0, date="last Tuesday"),
        Record("naive", "c.md", "text", position=0, date="2026-03-04T10:00:00"),
    ]
    docs, rejected = reassemble(records)
    assert [d.source for d in docs] == ["a.md"] and docs[0].records == 2
    assert docs[0].modified_at == datetime(2026, 3, 4, 8, 0, tzinfo=UTC)
    assert dict(rejected.counts) == {"duplicate_position": 1, "no_text": 1, "no_source": 1, "no_position": 1,
                                     "bad_date": 1, "naive_date": 1}
    assert rejected.examples["naive_date"] == ["naive"] and set(rejected.counts) <= set(reassembly.REASONS)
    docs, rejected = reassemble(records, assume_utc=True)
    assert "naive_date" not in rejected.counts and "c.md" in [d.source for d in docs]


@pytest.mark.parametrize("value, expected", [
    ("2026-03-04T10:00:00Z", datetime(2026, 3, 4, 10, tzinfo=UTC)),
    ("2026-03-04T12:00:00+02:00", datetime(2026, 3, 4, 10, tzinfo=UTC)),
    ("2026-03-04", datetime(2026, 3, 4, tzinfo=UTC)),
    (1772618400, datetime(2026, 3, 4, 10, tzinfo=UTC)),
    (1772618400000, datetime(2026, 3, 4, 10, tzinfo=UTC)),
    ("1772618400", datetime(2026, 3, 4, 10, tzinfo=UTC)),
    (None, None),
])
def test_dates_are_read_as_stores_keep_them(value, expected):
    assert parse_date(value) == expected


def test_a_date_that_is_not_one_is_refused():
    with pytest.raises(ValueError):
        parse_date("soon")
    with pytest.raises(reassembly.NaiveDate):
        parse_date(datetime(2026, 3, 4, 10))
    assert parse_date(datetime(2026, 3, 4, 10), assume_utc=True) == datetime(2026, 3, 4, 10, tzinfo=UTC)
