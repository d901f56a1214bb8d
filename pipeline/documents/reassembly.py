"""Reassembly: the chunk records of a vector store joined back into the documents they came from.

A vector store holds chunks, not documents: each record has its text, the source it was cut
from, its position there and, often, a date. `reassemble` groups records per source, orders
them by position and joins neighbours, removing the overlap chunkers leave at a seam. What a
seam's overlap is, the records themselves tell:

- A record that the tail of its predecessor already holds (`before.endswith(after)`, any length)
  adds nothing: it is a sliding window's last window, no longer than the overlap.
- Otherwise the overlap is the longest run that ends one record and starts the next, if at least
  `MIN_OVERLAP` characters long; a shorter match is taken for coincidence.
- A fixed window (three or more records, all but the last of one length, once those its
  predecessor holds are set aside) leaves one overlap, the same at every seam: the longest run
  every seam shows, taken once the seams together match `MIN_OVERLAP` characters of it (else
  each seam's own). So a short overlap is found too, and text repeating at one seam cannot mislead.
- Records that never begin or end with whitespace lost it at each cut (LangChain's and
  LlamaIndex's splitters strip it): where no overlap shows it, a line break stands for it, never
  two words glued. Records of a chunker that keeps whitespace are joined as they were cut.

Where the records carry character offsets into the source (LlamaIndex's `start_char_idx`,
LangChain's `start_index`), the seams come from the offsets instead, exactly; between stripped
records, a gap of at most `STRIPPED_GAP` characters is the whitespace stripped there and comes
back as as many line breaks, so every character keeps its offset. A missing position, or a wider
gap, is kept as a visible break and counted. What the records cannot tell stays as cut: without
offsets, an overlap under `MIN_OVERLAP` that varies from seam to seam, which whitespace a chunker
stripped, and text that repeats in step with a fixed window.

Records that cannot be placed are never dropped silently: each is counted under its reason
(`REASONS`), with a few record ids for the report. No peer library rebuilds documents from
chunks (migration tools copy points), so this is written here; it is pure, so the same rule
serves every store's reader.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

MIN_OVERLAP = 20
# Wider than a blank line and a nested list's indentation, narrower than any record a chunker cuts:
# a gap up to this between stripped records is whitespace, a wider one a missing record.
STRIPPED_GAP = 16
# Stands for the records a source is missing between two positions: visible, never glued over.
GAP_MARK = "\n\n[…]\n\n"
REASONS = ("no_text", "no_source", "no_position", "bad_date", "naive_date", "duplicate_position")
_EXAMPLES = 5
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Record:
    record_id: str
    source: str | None
    text: str | None
    position: int | None = None
    date: object = None            # ISO 8601 text, epoch seconds or milliseconds, or a datetime
    title: str | None = None
    char_start: int | None = None  # offset of the text in its source, when the store kept it


@dataclass
class Document:
    source: str
    text: str
    modified_at: datetime | None
    title: str | None
    records: int
    gaps: int = 0
    overlap_chars: int = 0          # characters removed at seams
    seams_from_offsets: bool = False


@dataclass
class Rejections:
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, record_id: str) -> None:
        self.counts[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < _EXAMPLES:
            shown.append(record_id)


class NaiveDate(ValueError):
    pass


def parse_date(value: object, *, assume_utc: bool = False) -> datetime | None:
    """A record's date as an aware UTC datetime. Raises ValueError when it cannot be read, and
    NaiveDate for a time without a zone unless `assume_utc`."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a date: {value!r}")
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > 1e11 else value   # epoch milliseconds or seconds
        return datetime.fromtimestamp(seconds, UTC)
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+(\.\d+)?", text):
            return parse_date(float(text), assume_utc=assume_utc)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):   # a day has no clock time to misplace
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    else:
        raise ValueError(f"not a date: {value!r}")
    if parsed.tzinfo is None:
        if not assume_utc:
            raise NaiveDate(f"{value!r} has no time zone")
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _runs(before: str, after: str, minimum: int) -> Iterator[int]:
    """Each length k >= `minimum` at which `before` ends with the first k characters of `after`, longest first."""
    if minimum > min(len(before), len(after)):
        return
    probe, start = after[:max(minimum, 1)], max(0, len(before) - len(after))
    while (at := before.find(probe, start)) != -1:
        if after.startswith(before[at:]):
            yield len(before) - at
        start = at + 1


def seam_overlap(before: str, after: str, minimum: int = MIN_OVERLAP) -> int:
    """How much of `after` its predecessor `before` already holds: all of it when `before` ends with
    it, whatever its length; else the longest run that ends `before` and starts `after`, if at least
    `minimum` long; else 0."""
    if after and before.endswith(after):
        return len(after)
    return next(_runs(before, after, minimum), 0)


def agreed_overlap(seams: list[tuple[str, str]], minimum: int = MIN_OVERLAP) -> int:
    """The longest overlap every seam `(before, after)` shows, if the seams together match `minimum`
    characters of it; else 0. A fixed window's overlap is the same at each seam; a coincidence is not."""
    if not seams:
        return 0
    (before, after), rest = seams[0], seams[1:]
    for k in _runs(before, after, 1):
        if k * len(seams) < minimum:
            return 0
        if all(b.endswith(a[:k]) for b, a in rest):
            return k
    return 0


def reassemble(records: Iterable[Record], *, assume_utc: bool = False) -> tuple[list[Document], Rejections]:
    """One document per source, in source order; and what was left out, by reason."""
    rejected = Rejections()
    by_source: dict[str, list[tuple[Record, datetime | None]]] = {}
    for r in records:
        if r.text is None or not r.text.strip():
            rejected.add("no_text", r.record_id)
            continue
        if r.source is None or not str(r.source).strip():
            rejected.add("no_source", r.record_id)
            continue
        try:
            when = parse_date(r.date, assume_utc=assume_utc)
        except NaiveDate:
            rejected.add("naive_date", r.record_id)
            continue
        except (ValueError, OverflowError, OSError):
            rejected.add("bad_date", r.record_id)
            continue
        by_source.setdefault(str(r.source), []).append((r, when))
    documents = []
    for source in sorted(by_source):
        doc = _join(source, by_source[source], rejected)
        if doc is not None:
            documents.append(doc)
    return documents, rejected


def _join(source: str, got: list[tuple[Record, datetime | None]], rejected: Rejections) -> Document | None:
    dates = [w for _, w in got if w is not None]   # a duplicate's date is still the source's date
    # Offsets into the source order and join the records by themselves; positions are then not needed.
    offsets = len(got) > 1 and all(r.char_start is not None for r, _ in got)
    records = [r for r, _ in got]
    if len(got) > 1 and not offsets:
        for r in records:
            if r.position is None:
                rejected.add("no_position", r.record_id)
        records = sorted((r for r in records if r.position is not None), key=lambda r: (r.position, r.record_id))
        kept: list[Record] = []
        for r in records:
            if kept and kept[-1].position == r.position:
                rejected.add("duplicate_position", r.record_id)
            else:
                kept.append(r)
        records = kept
    if not records:
        return None
    text, gaps, removed = (_by_offsets if offsets else _by_seams)(records)
    title = next((r.title.strip() for r in records if r.title and r.title.strip()), None)
    if title is None and (heading := _HEADING.search(text)):
        title = heading.group(1)
    return Document(source=source, text=text, modified_at=max(dates) if dates else None, title=title,
                    records=len(records), gaps=gaps, overlap_chars=removed, seams_from_offsets=offsets)


def _missing(before: Record, after: Record) -> bool:
    return before.position is not None and after.position is not None and after.position > before.position + 1


def _stripped(records: list[Record]) -> bool:
    """Whether the chunker stripped whitespace at its cuts: no record begins or ends with any."""
    return all(r.text == r.text.strip() for r in records)


def _by_seams(records: list[Record]) -> tuple[str, int, int]:
    # A record its predecessor holds is set aside before asking whether the rest are a fixed window's.
    held = [i > 0 and not _missing(records[i - 1], r) and records[i - 1].text.endswith(r.text)
            for i, r in enumerate(records)]
    cut = [r for r, h in zip(records, held) if not h]
    fixed = len(cut) > 2 and len({len(r.text) for r in cut[:-1]}) == 1
    seams = [(b.text, a.text) for b, a, h in zip(records, records[1:], held[1:]) if not h and not _missing(b, a)]
    # Lengths can agree by chance (a splitter's chunks): with no overlap agreed, each seam shows its own.
    agreed = agreed_overlap(seams) if fixed else 0
    stripped = _stripped(records)
    parts, gaps, removed = [records[0].text], 0, 0
    for before, after, inside in zip(records, records[1:], held[1:]):
        text = after.text
        if _missing(before, after):
            parts.append(GAP_MARK)
            gaps += 1
        elif (overlap := len(text) if inside else agreed or seam_overlap(before.text, text)) > 0:
            text = text[overlap:]
            removed += overlap
        elif stripped:
            # The whitespace the chunker stripped at its cut: a line break, never two words glued.
            parts.append("\n")
        parts.append(text)
    return "".join(parts), gaps, removed


def _by_offsets(records: list[Record]) -> tuple[str, int, int]:
    records = sorted(records, key=lambda r: (r.char_start, r.position or 0, r.record_id))
    stripped = _stripped(records)
    parts, end, gaps, removed = [records[0].text], records[0].char_start + len(records[0].text), 0, 0
    for before, after in zip(records, records[1:]):
        start = after.char_start
        if start > end:
            if stripped and start - end <= STRIPPED_GAP and not _missing(before, after):
                parts.append("\n" * (start - end))   # what was stripped there, so offsets still hold
            else:
                parts.append(GAP_MARK)
                gaps += 1
            parts.append(after.text)
        else:
            cut = min(end - start, len(after.text))
            removed += cut
            parts.append(after.text[cut:])
        end = max(end, start + len(after.text))
    return "".join(parts), gaps, removed
