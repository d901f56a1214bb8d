"""Reassembly against the chunkers that fill vector stores: documents cut, shuffled and joined back.

Three chunkers, each written here in a few lines (no splitter library is a dependency): fixed
character windows; a recursive splitter in LangChain's manner (`RecursiveCharacterTextSplitter`:
"\\n\\n", "\\n", " ", "" down to a chunk size, with an overlap, whitespace stripped at chunk edges);
sentence windows in LlamaIndex's manner (k sentences sliding by one or more), whose chunks are
kept whole or stripped as `SentenceSplitter` strips them.

What "exact" means here. A chunker that keeps every character gets its document back exactly.
One that strips whitespace at its cuts loses it: what comes back is the document from its first
chunk to its last, exact except that the whitespace stripped at a cut comes back as line breaks,
as many as were stripped when the records carry their offsets (`start_char_idx`, `start_index`),
one per cut with no overlap when they carry only positions (`stitched`). With offsets that holds
always. Without them it is owed only where the records tell the seams apart: each overlap is
none or at least `MIN_OVERLAP` characters (a fixed window's: shown over its seams together), and
no text repeats at a cut so that a longer overlap fits as well (`one_window_reading`,
`one_reading`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from datetime import date

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipeline.documents.reassembly import GAP_MARK, MIN_OVERLAP, Record, reassemble

Span = tuple[int, str]   # a chunk and its true offset in the document

# Held-out case: a plain sliding window (90-character records every 60) leaves an 11-character last
# record that lies wholly in the tail of the one before it.
HELD_OUT = ("Ops review, week 36. Dana Kim chairs; Ravi Patel takes the minutes.\n"
            "The billing cutover moved after the invoice backlog review.\n"
            "Priya has it now. The next review is scheduled for 2025-09-14.\n")

WORDS = ("Dana", "Ravi", "Priya", "Zoë", "the", "billing", "migration", "cutover", "moved", "to", "June",
         "on", "call", "café", "naïve", "東京", "Ελλάδα", "señor", "🙂", "—", "a", "backlog", "invoice")
PHRASES = ("Ravi Patel leads the billing migration.", "The cutover moved to June 8.", "Dana Kim is on call.")
LINES = ("# Notes", "## Risks", "- yes", "- no", "ok", "---", "| a | b |", "1. Ship it")
SEPARATORS = (" ", " ", "\n", "\n\n", " \n", "  ")

_sentence = st.builds(lambda words, stop: " ".join(words) + stop,
                      st.lists(st.sampled_from(WORDS), min_size=1, max_size=14), st.sampled_from(".?!;:"))
_date = st.dates(date(1990, 1, 1), date(2039, 12, 31)).map(lambda d: f"Due {d.isoformat()}.")
# any letters, marks, symbols; whitespace only ever comes from the separators
_unicode = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=8)
_piece = st.one_of(_sentence, _sentence, _date, st.sampled_from(PHRASES), st.sampled_from(LINES), _unicode)
# prose, repeated phrases, dates, short lines and unicode; ends with a newline, as a file does
documents = st.lists(st.tuples(_piece, st.sampled_from(SEPARATORS)), min_size=1, max_size=40).map(
    lambda parts: "".join(p + s for p, s in parts).rstrip() + "\n")


def sizes(text: str, smallest: int) -> st.SearchStrategy[int]:
    """Chunk sizes up to half the document, so most documents are cut more than once."""
    return st.integers(smallest, max(smallest, len(text) // 2))


def shuffled_records(spans: list[Span], *, offsets: bool, seed: int) -> list[Record]:
    records = [Record(f"doc#{i}", "doc.md", chunk, position=i, char_start=start if offsets else None)
               for i, (start, chunk) in enumerate(spans)]
    random.Random(seed).shuffle(records)
    return records


def rebuilt(spans: list[Span], *, offsets: bool, seed: int) -> str:
    [doc], rejected = reassemble(shuffled_records(spans, offsets=offsets, seed=seed))
    assert not rejected.counts and doc.gaps == 0
    return doc.text


def stitched(text: str, spans: list[Span], fill: Callable[[str], str]) -> str:
    """`text` from the first chunk's start to the last one's end, with `fill(left_out)` at each cut
    where the chunks neither overlap nor hold every character between them."""
    (start, first), *rest = spans
    out, end = [first], start + len(first)
    for start, chunk in rest:
        if start >= end:
            out.append(fill(text[end:start]))
        out.append(text[max(start, end):start + len(chunk)])
        end = max(end, start + len(chunk))
    return "".join(out)


def _runs(before: str, after: str) -> list[int]:
    """Every k for which `before` ends with the first k characters of `after`, by brute force."""
    return [k for k in range(1, min(len(before), len(after)) + 1) if before.endswith(after[:k])]


def _overlaps(spans: list[Span]) -> list[int]:
    return [max(0, min(s + len(c), t + len(d)) - t) for (s, c), (t, d) in zip(spans, spans[1:])]


# -- fixed character windows ---------------------------------------------------------------------

def windows(text: str, size: int, overlap: int, *, tail: bool) -> list[Span]:
    """Windows of `size` characters every `size - overlap`. With `tail`, one starts at every step
    before the end, as a plain sliding window does, so the last ones may lie wholly inside the one
    before; without, the window that reaches the end is the last."""
    out, start = [], 0
    while start < len(text):
        out.append((start, text[start:start + size]))
        if not tail and start + size >= len(text):
            break
        start += size - overlap
    return out


def one_window_reading(spans: list[Span], overlap: int) -> bool:
    """Whether fixed windows' records admit only their true overlap: no record lies by coincidence
    in its predecessor's tail, no longer overlap fits every seam with `MIN_OVERLAP` characters shown
    over the seams, and, with no overlap, no seam shows a long run of its own (a repeat at the cut)."""
    seams = [(b, a) for (_, b), (_, a) in zip(spans, spans[1:]) if len(a) > overlap]
    if any(b.endswith(a) for b, a in seams):
        return False
    common = set.intersection(*(set(_runs(b, a)) for b, a in seams)) if seams else set()
    if any(k > overlap and k * len(seams) >= MIN_OVERLAP for k in common):
        return False
    return overlap > 0 or not any(k >= MIN_OVERLAP for b, a in seams for k in _runs(b, a))


def test_a_last_record_inside_the_tail_of_its_predecessor_adds_nothing():
    records = [Record(f"notes#{i}", "notes.md", HELD_OUT[start:start + 90], position=i)
               for i, start in enumerate(range(0, len(HELD_OUT), 60))]
    assert [len(r.text) for r in records] == [90, 90, 71, 11] and records[-1].text == "025-09-14.\n"
    random.Random(5).shuffle(records)
    [doc], _ = reassemble(records)
    assert doc.text == HELD_OUT   # not "…scheduled for 2025-09-14.\n025-09-14.\n"


def test_a_last_window_that_is_all_overlap_adds_nothing():
    text = HELD_OUT.replace("Priya has it now.", "Priya has it now; Omar Kim reads it.")
    spans = windows(text, 90, 30, tail=True)
    assert len(spans[-1][1]) == 30
    assert rebuilt(spans, offsets=False, seed=1) == text


def test_a_repeat_at_one_seam_does_not_outweigh_the_overlap_every_seam_shows():
    rule = "=" * 70
    text = f"# Ledger\n\nRavi Patel closed the March books on time.\n{rule}\nPriya reviewed them; Dana signed.\n"
    spans = windows(text, 48, 24, tail=False)
    assert any(k > 24 and k >= MIN_OVERLAP for (_, b), (_, a) in zip(spans, spans[1:]) for k in _runs(b, a))
    assert rebuilt(spans, offsets=False, seed=2) == text


def test_a_short_overlap_shown_at_every_seam_of_a_fixed_window_is_found():
    text = HELD_OUT * 2
    spans = windows(text, 40, 7, tail=False)
    assert rebuilt(spans, offsets=False, seed=3) == text


@settings(max_examples=150, deadline=None)
@given(text=documents, data=st.data(), tail=st.booleans(), seed=st.integers(0, 99))
def test_fixed_windows_with_offsets_come_back_exactly(text, data, tail, seed):
    size = data.draw(sizes(text, 3), label="size")
    overlap = data.draw(st.integers(0, size - 1), label="overlap")
    spans = windows(text, size, overlap, tail=tail)
    assume(all(c.strip() for _, c in spans))   # a whitespace-only record is counted as no_text
    assert rebuilt(spans, offsets=True, seed=seed) == text


@settings(max_examples=150, deadline=None)
@given(text=documents, data=st.data(), tail=st.booleans(), seed=st.integers(0, 99))
def test_fixed_windows_without_offsets_come_back_exactly_where_the_records_tell(text, data, tail, seed):
    size = data.draw(sizes(text, 3), label="size")
    overlap = data.draw(st.integers(0, size - 1), label="overlap")
    spans = windows(text, size, overlap, tail=tail)
    assume(all(c.strip() for _, c in spans))
    cut = [c for _, c in spans if len(c) > overlap]   # records their predecessor does not hold
    seams = len(cut) - 1
    assume(overlap == 0 or overlap >= MIN_OVERLAP or (len(cut) > 2 and overlap * seams >= MIN_OVERLAP))
    assume(one_window_reading(spans, overlap))
    assert rebuilt(spans, offsets=False, seed=seed) == text


# -- a recursive splitter in LangChain's manner ----------------------------------------------------

def recursive_split(text: str, size: int, overlap: int) -> list[Span]:
    """LangChain's `RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)` with its
    defaults (separators "\\n\\n", "\\n", " ", ""; keep_separator=True, each split starting with its
    separator; strip_whitespace=True), each chunk with its true start. (LangChain's own `start_index`
    is found with `text.find` and can land on an earlier copy of repeated text.)"""
    return _split(text, 0, size, overlap, ["\n\n", "\n", " ", ""])


def _split(text: str, at: int, size: int, overlap: int, separators: list[str]) -> list[Span]:
    separator, finer = "", []
    for i, s in enumerate(separators):
        if s == "" or s in text:
            separator, finer = s, separators[i + 1:]
            break
    if separator:
        first, *others = text.split(separator)
        pieces = [first] + [separator + p for p in others]
    else:
        pieces = list(text)
    splits, pos = [], at
    for piece in pieces:
        if piece:
            splits.append((pos, piece))
        pos += len(piece)
    chunks: list[Span] = []
    good: list[Span] = []
    for split in splits:
        if len(split[1]) < size:
            good.append(split)
            continue
        if good:
            chunks += _merge(good, size, overlap)
            good = []
        chunks += _split(split[1], split[0], size, overlap, finer) if finer else [split]
    if good:
        chunks += _merge(good, size, overlap)
    return chunks


def _merge(splits: list[Span], size: int, overlap: int) -> list[Span]:
    chunks, current, total = [], [], 0
    for split in splits:
        if current and total + len(split[1]) > size:
            if joined := _joined(current):
                chunks.append(joined)
            while total > overlap or (total + len(split[1]) > size and total > 0):
                total -= len(current.pop(0)[1])
        current.append(split)
        total += len(split[1])
    if joined := _joined(current):
        chunks.append(joined)
    return chunks


def _joined(splits: list[Span]) -> Span | None:
    text = "".join(piece for _, piece in splits)
    return (splits[0][0] + len(text) - len(text.lstrip()), text.strip()) if text.strip() else None


def one_reading(spans: list[Span]) -> bool:
    """Whether varying chunks admit only their true seams: each overlap is none or at least
    `MIN_OVERLAP` long, the longest run a coincidence could pass for at each seam is the true overlap,
    and no overlap fits every seam as a fixed window's would unless it is every seam's."""
    true = _overlaps(spans)
    seams = [(b, a, o) for ((_, b), (_, a)), o in zip(zip(spans, spans[1:]), true) if o < len(a)]
    if any(0 < o < MIN_OVERLAP for _, _, o in seams):
        return False
    if any(b.endswith(a) or max((k for k in _runs(b, a) if k >= MIN_OVERLAP), default=0) != o for b, a, o in seams):
        return False
    common = set.intersection(*(set(_runs(b, a)) for b, a, _ in seams)) if seams else set()
    return not any(k * len(seams) >= MIN_OVERLAP and any(o != k for _, _, o in seams) for k in common)


def test_the_recursive_splitter_cuts_as_langchain_does():
    # langchain-text-splitters 1.1.2 gives these chunks (checked once, outside this project)
    text = "# Notes\n\nRavi leads billing.\nDana is on call.\n\nThe cutover moved to June 8 after review.\n"
    assert [c for _, c in recursive_split(text, 30, 12)] == [
        "# Notes", "Ravi leads billing.", "Dana is on call.", "The cutover moved to June 8", "to June 8 after review."]
    assert all(text[s:s + len(c)] == c for s, c in recursive_split(text, 30, 12))


@settings(max_examples=150, deadline=None)
@given(text=documents, data=st.data(), seed=st.integers(0, 99))
def test_a_recursive_splitter_with_start_index_comes_back_exact_up_to_the_whitespace_it_stripped(text, data, seed):
    size = data.draw(sizes(text, 8), label="size")
    overlap = data.draw(st.integers(0, size // 2), label="overlap")
    spans = recursive_split(text, size, overlap)
    assert rebuilt(spans, offsets=True, seed=seed) == stitched(text, spans, lambda gap: "\n" * len(gap))


@settings(max_examples=150, deadline=None)
@given(text=documents, data=st.data(), seed=st.integers(0, 99))
def test_a_recursive_splitter_with_positions_comes_back_with_a_line_break_for_each_stripped_cut(text, data, seed):
    size = data.draw(sizes(text, 2 * MIN_OVERLAP), label="size")
    overlap = data.draw(st.integers(MIN_OVERLAP, size // 2), label="overlap")
    spans = recursive_split(text, size, overlap)
    assume(one_reading(spans))
    assert rebuilt(spans, offsets=False, seed=seed) == stitched(text, spans, lambda gap: "\n")


# -- sentence windows in LlamaIndex's manner -----------------------------------------------------

def sentences(text: str) -> list[Span]:
    """Sentences that keep the whitespace after them, as LlamaIndex's sentence tokenizer splits."""
    out = [(m.start(), m.group()) for m in re.finditer(r".+?(?:[.!?](?=\s|\Z)\s*|\Z)", text, re.S)]
    assert "".join(s for _, s in out) == text
    return out


def sentence_windows(text: str, k: int, step: int, *, strip: bool, tail: bool) -> list[Span]:
    """Windows of `k` sentences every `step`; stripped at the edges as `SentenceSplitter` strips."""
    sents, out = sentences(text), []
    for i in range(0, len(sents), step):
        chunk = "".join(s for _, s in sents[i:i + k])
        start = sents[i][0]
        if strip:
            start, chunk = start + len(chunk) - len(chunk.lstrip()), chunk.strip()
        if chunk:
            out.append((start, chunk))
        if not tail and i + k >= len(sents):
            break
    return out


@settings(max_examples=150, deadline=None)
@given(text=documents, k=st.integers(1, 6), data=st.data(), strip=st.booleans(), tail=st.booleans(),
       seed=st.integers(0, 99))
def test_sentence_windows_with_start_char_idx_come_back_exactly(text, k, data, strip, tail, seed):
    step = data.draw(st.integers(1, k), label="step")
    spans = sentence_windows(text, k, step, strip=strip, tail=tail)
    expected = stitched(text, spans, lambda gap: "\n" * len(gap)) if strip else text
    assert rebuilt(spans, offsets=True, seed=seed) == expected


def test_whitespace_stripped_between_records_with_offsets_keeps_every_offset_and_is_no_gap():
    text = "# Risks\n\nThe invoice backlog may slip. Priya sizes it by Friday.\n"
    spans = [(0, "# Risks"), (9, "The invoice backlog may slip."), (39, "Priya sizes it by Friday.")]
    assert all(text[s:s + len(c)] == c for s, c in spans)
    [doc], _ = reassemble(shuffled_records(spans, offsets=True, seed=4))
    assert doc.text == "# Risks\n\nThe invoice backlog may slip.\nPriya sizes it by Friday." and doc.gaps == 0
    # wider than stripped whitespace, or a position skipped: a record is missing there
    [doc], _ = reassemble([Record("a", "s", "# Risks", char_start=0), Record("b", "s", "Friday.", char_start=57)])
    assert doc.text == "# Risks" + GAP_MARK + "Friday." and doc.gaps == 1
    [doc], _ = reassemble([Record("a", "s", "# Risks", position=0, char_start=0),
                           Record("c", "s", "The invoice", position=2, char_start=9)])
    assert doc.gaps == 1
