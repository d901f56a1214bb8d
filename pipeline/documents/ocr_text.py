"""Recognised text lines → the Markdown of an OCR'd document, with each line's exact offsets.

The OCR model returns lines (text, box, confidence) in no useful order. Here they are grouped
into blocks (lines stacked closely, one under the other), the blocks put in reading order by a
recursive XY cut (bands top to bottom, columns left to right inside a band), and every page
becomes one section, `## Page N`, holding its blocks as paragraphs, one recognised line per
Markdown line. A PDF page that has a text layer keeps that text instead. Every line records the
page, block, line number and box it came from and the chars of the Markdown it became, so a
claim can cite "page 3, lines 4–6".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A line the recogniser scores below this is kept (dropping text would lose evidence) but flagged
# in the side table, so a reader can weigh it. A chosen threshold, not a calibrated one; no line
# of a clean render falls under it (tests/actors/test_ocr.py).
LOW_CONFIDENCE = 0.8
# A line joins the block above it when the gap between them is under this many line heights and
# they overlap horizontally: the spacing of lines within a paragraph, never between paragraphs.
_BLOCK_GAP_LINES = 0.8
# Pieces of one text line closer than this many line heights are one line (a word gap is about
# half a line height; a column gutter is wider than one).
_WORD_GAP_LINES = 1.0
# A band of blocks narrower than this share of the text's width may be part of a column.
_COLUMN_WIDTH = 0.6
# Why a page holds no text (the side table's `reason`); the only one so far.
NO_TEXT_RECOGNISED = "no_text_recognised"
TEXT_LAYER = "text_layer"
OCR = "ocr"

# Markdown that would turn a recognised line into a heading or a rule, and so into a section of
# its own: a leading `#`, or a line of only `-`, `=`, `*` or `_` (a setext underline).
_MARKUP_LINE = re.compile(r"^(?:#|[-=*_\s]+$)")


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in page pixels (the model's quadrilateral, bounded)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @classmethod
    def around(cls, points: Sequence[Sequence[float]]) -> Box:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return cls(min(xs), min(ys), max(xs), max(ys))

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    def overlaps_x(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1

    def union(self, other: Box) -> Box:
        return Box(min(self.x0, other.x0), min(self.y0, other.y0), max(self.x1, other.x1), max(self.y1, other.y1))


@dataclass(frozen=True)
class Line:
    text: str
    box: Box
    confidence: float


@dataclass
class TextBlock:
    lines: list[Line] = field(default_factory=list)

    @property
    def box(self) -> Box:
        box = self.lines[0].box
        for line in self.lines[1:]:
            box = box.union(line.box)
        return box


@dataclass(frozen=True)
class Page:
    """One page as the OCR stage saw it: recognised `lines` (OCR) or a text layer's `text`."""

    number: int                 # 1-based
    width: int                  # pixels of the image the boxes are in (0 for a text layer)
    height: int
    source: str                 # OCR or TEXT_LAYER
    lines: tuple[Line, ...] = ()
    text: str = ""


def _same_line(left: Box, right: Box) -> bool:
    overlap = min(left.y1, right.y1) - max(left.y0, right.y0)
    height = max(min(left.height, right.height), 1.0)
    return overlap >= 0.5 * height and left.x0 <= right.x0 and right.x0 - left.x1 <= _WORD_GAP_LINES * height


def join_fragments(lines: Iterable[Line]) -> list[Line]:
    """One line per text line: the detector sometimes cuts a line into pieces side by side."""
    joined: list[Line] = []
    for line in sorted((ln for ln in lines if ln.text.strip()), key=lambda ln: (ln.box.x0, ln.box.y0)):
        home = next((i for i, j in enumerate(joined) if _same_line(j.box, line.box)), None)
        if home is None:
            joined.append(line)
        else:
            left = joined[home]
            joined[home] = Line(f"{left.text} {line.text}", left.box.union(line.box),
                                min(left.confidence, line.confidence))
    return joined


def blocks_in_reading_order(lines: Iterable[Line]) -> list[TextBlock]:
    """Join the pieces of each text line, group lines into blocks, then order the blocks (XY cut)
    and the lines inside each block (top to bottom). Empty lines are dropped."""
    blocks: list[TextBlock] = []
    for line in sorted(join_fragments(lines), key=lambda ln: (ln.box.y0, ln.box.x0)):
        home = next((b for b in reversed(blocks) if _continues(b.lines[-1].box, line.box)), None)
        if home is None:
            blocks.append(TextBlock([line]))
        else:
            home.lines.append(line)
    return _xy_cut(blocks)


def _continues(above: Box, below: Box) -> bool:
    gap = below.y0 - above.y1
    height = max(above.height, below.height, 1.0)
    return above.overlaps_x(below) and -0.5 * height <= gap <= _BLOCK_GAP_LINES * height


def _xy_cut(blocks: list[TextBlock], x_first: bool = False) -> list[TextBlock]:
    """Reading order of `blocks`: cut into horizontal bands where no block straddles a gap, each
    band into columns the same way, recursively; what cannot be cut is read top to bottom.

    Bands that belong to one set of columns are cut into columns together (`_columns`), so a
    column's paragraph that ends below the other column's text is read before the next column.
    """
    if len(blocks) <= 1:
        return blocks
    for axis in ("x", "y") if x_first else ("y", "x"):
        parts = _split(blocks, axis)
        if len(parts) > 1:
            if axis == "y" and not x_first:
                return [b for group, columns in _columns(parts) for b in _xy_cut(group, x_first=columns)]
            return [b for part in parts for b in _xy_cut(part)]
    return sorted(blocks, key=lambda b: (b.box.y0, b.box.x0))


def _columns(bands: list[list[TextBlock]]) -> list[tuple[list[TextBlock], bool]]:
    """Consecutive bands that are narrow (under `_COLUMN_WIDTH` of the text's width) or side by side
    (they cut into columns), joined when at least one of them is side by side: (blocks, joined)."""
    left = min(b.box.x0 for band in bands for b in band)
    width = max(b.box.x1 for band in bands for b in band) - left

    def side_by_side(band: list[TextBlock]) -> bool:
        return len(_split(band, "x")) > 1

    def narrow(band: list[TextBlock]) -> bool:
        return max(b.box.x1 for b in band) - min(b.box.x0 for b in band) < _COLUMN_WIDTH * width

    def columnar(band: list[TextBlock]) -> bool:
        return side_by_side(band) or narrow(band)

    runs: list[list[list[TextBlock]]] = []
    for band in bands:
        if runs and columnar(band) and columnar(runs[-1][-1]):
            runs[-1].append(band)
        else:
            runs.append([band])
    out: list[tuple[list[TextBlock], bool]] = []
    for run in runs:
        if len(run) > 1 and any(side_by_side(band) for band in run):
            out.append(([b for band in run for b in band], True))
        else:
            out.extend((band, False) for band in run)
    return out


def _split(blocks: list[TextBlock], axis: str) -> list[list[TextBlock]]:
    def span(b: TextBlock) -> tuple[float, float]:
        box = b.box
        return (box.y0, box.y1) if axis == "y" else (box.x0, box.x1)

    parts: list[list[TextBlock]] = []
    end = float("-inf")
    for block in sorted(blocks, key=span):
        start, stop = span(block)
        if start >= end:
            parts.append([])
        parts[-1].append(block)
        end = max(end, stop)
    return parts


def escape_line(text: str) -> str:
    """`text` as one Markdown line that stays a paragraph's line: whitespace runs as one space,
    and a backslash before what would make it a heading or a rule."""
    text = " ".join(text.split())
    return "\\" + text if _MARKUP_LINE.match(text) else text


@dataclass(frozen=True)
class Document:
    """The Markdown of an OCR'd document and its side rows (`records.OCR_LINE`, `records.OCR_PAGE`)."""

    markdown: str
    lines: list[dict[str, Any]]
    pages: list[dict[str, Any]]

    @property
    def recognised(self) -> bool:
        """True when some page holds text (recognised or from a text layer)."""
        return holds_text(self.pages)


def holds_text(pages: Iterable[Mapping[str, Any]]) -> bool:
    """True when some page (an `OCR_PAGE` row) holds text, recognised or from a text layer."""
    return any(p["reason"] is None for p in pages)


def build_document(pages: Iterable[Page]) -> Document:
    """One section per page, `## Page N`, then its text; offsets index the returned Markdown.

    An OCR page's blocks are paragraphs (blank line between), its lines one per Markdown line,
    numbered 1.. down the page in reading order. A text layer's text is kept as it is (its lines
    are not boxed). A page with no text has its heading only and the reason NO_TEXT_RECOGNISED.
    """
    parts: list[str] = []
    at = 0
    out_lines: list[dict[str, Any]] = []
    out_pages: list[dict[str, Any]] = []

    def emit(text: str) -> int:
        nonlocal at
        start = at
        parts.append(text)
        at += len(text)
        return start

    for page in pages:
        if parts:
            emit("\n")
        page_start = emit(f"## Page {page.number}\n")
        body_start, lines = at, 0
        if page.source == TEXT_LAYER:
            text = "\n".join(escape_line(t) for t in page.text.splitlines() if t.strip())
            if text:
                emit("\n" + text + "\n")
        else:
            for block_no, block in enumerate(blocks_in_reading_order(page.lines), start=1):
                emit("\n")
                for line in block.lines:
                    lines += 1
                    text = escape_line(line.text)
                    start = emit(text)
                    emit("\n")
                    out_lines.append(_line_row(page, block_no, lines, start, start + len(text), line))
        out_pages.append({"page": page.number, "source": page.source, "width": page.width, "height": page.height,
                          "char_start": page_start, "char_end": at, "lines": lines,
                          "reason": None if at > body_start else NO_TEXT_RECOGNISED})
    return Document("".join(parts), out_lines, out_pages)


def _line_row(page: Page, block: int, line_no: int, start: int, end: int, line: Line) -> dict[str, Any]:
    # boxes as fractions of the page, so they do not depend on the resolution it was read at
    w, h = max(page.width, 1), max(page.height, 1)
    return {"page": page.number, "block": block, "line": line_no, "char_start": start, "char_end": end,
            "x0": line.box.x0 / w, "y0": line.box.y0 / h, "x1": line.box.x1 / w, "y1": line.box.y1 / h,
            "confidence": float(line.confidence), "low_confidence": line.confidence < LOW_CONFIDENCE}


def pages_needing_ocr(page_chars: Sequence[int], min_chars: int) -> list[int]:
    """0-based pages of a PDF whose text layer holds fewer than `min_chars` non-space chars."""
    return [i for i, n in enumerate(page_chars) if n < min_chars]

