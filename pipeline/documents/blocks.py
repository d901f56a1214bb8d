"""Split a Markdown string into top-level blocks with exact char offsets.

A block is one top-level construct of the CommonMark parse (heading, paragraph, list, table,
fenced code, quote, HTML, rule) or a leading YAML front matter. Blocks are the atoms of chunking:
a chunk is a run of whole blocks, so a block longer than the cap is cut into consecutive
sub-blocks here. Invariants: blocks are in order, never overlap, each `markdown[char_start:
char_end]` starts and ends with a non-whitespace character, no block exceeds the cap, and every
non-whitespace character of the document lies in exactly one block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

# Top-level token types → block kinds; an opening token stands for its whole construct.
_KINDS = {
    "heading_open": "heading",
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "fence": "code",
    "code_block": "code",
    "blockquote_open": "quote",
    "html_block": "html",
    "hr": "hr",
}

# Text the parser consumes without a token (link reference definitions) still has to reach a
# chunk, so gaps holding anything but whitespace become blocks of this kind.
OTHER = "other"

# Only the block structure is read (a heading's text is its inline token's `content`, which the block
# parse sets), so the inline parse of every paragraph is left out: the same blocks in about half the
# time (1,476 documents of four corpora: 1.83 → 0.99 CPU-s).
_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")

# A sentence end where an oversized block without line breaks may be cut: the cut falls after
# the punctuation, the following whitespace is dropped.
_SENTENCE_END = re.compile(r"[.?!](?=\s)")

# markdown-it treats `\r\n`, `\r` and `\n` as line ends (its `normalize` rule); line numbers of
# its token maps only match ours if we count lines the same way.
_LINE_END = re.compile(r"\r\n?|\n")

# `---` at the very start, a first line that looks like a YAML key, then `---` or `...` alone on
# a line. The key test keeps a leading thematic break from swallowing the text after it.
_FRONT_MATTER_OPEN = re.compile(r"---[ \t]*(?:\r\n?|\n)(?=[ \t]*[A-Za-z_][\w-]*[ \t]*:)")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    kind: str
    char_start: int
    char_end: int
    level: int = 0   # heading level 1–6; 0 for every other kind
    text: str = ""   # the heading's text; "" for every other kind


def split_blocks(markdown: str, max_block_chars: int) -> list[Block]:
    """The top-level blocks of `markdown`, none longer than `max_block_chars` characters."""
    if max_block_chars < 1:
        raise ValueError(f"max_block_chars must be at least 1, got {max_block_chars}")
    line_starts = _line_starts(markdown)
    front_lines = _front_matter_lines(markdown)
    spans: list[Block] = []
    if front_lines:
        spans.append(Block("front_matter", 0, line_starts[front_lines]))
    for kind, first, last, level, text in _parse(markdown, line_starts, front_lines):
        spans.append(Block(kind, line_starts[first], line_starts[last], level, text))
    blocks: list[Block] = []
    cursor = 0
    for span in spans:
        start = max(span.char_start, cursor)
        blocks.extend(_gap(markdown, cursor, start, max_block_chars))
        block = _trimmed(markdown, span, start)
        if block is not None:
            blocks.extend(_capped(markdown, block, max_block_chars))
            cursor = block.char_end
        else:
            cursor = max(cursor, span.char_end)
    blocks.extend(_gap(markdown, cursor, len(markdown), max_block_chars))
    return blocks


def _line_starts(markdown: str) -> list[int]:
    """Char offset of every line start, plus `len(markdown)` as the end of the last line."""
    starts = [0] + [m.end() for m in _LINE_END.finditer(markdown)]
    if starts[-1] != len(markdown):
        starts.append(len(markdown))
    return starts


def front_matter_close(markdown: str) -> re.Match[str] | None:
    """The closing fence of a leading YAML front matter, or None when the document has none."""
    opening = _FRONT_MATTER_OPEN.match(markdown)
    if opening is None:
        return None
    return _FRONT_MATTER_CLOSE.search(markdown, opening.end())


def _front_matter_lines(markdown: str) -> int:
    """Number of lines of a leading YAML front matter, closing fence included; 0 if none."""
    closing = front_matter_close(markdown)
    if closing is None:
        return 0
    return len(_LINE_END.findall(markdown, 0, closing.start())) + 1


def _parse(markdown: str, line_starts: list[int], skip_lines: int
           ) -> Iterator[tuple[str, int, int, int, str]]:
    """(kind, first line, end line, heading level, heading text) of each top-level construct."""
    body = markdown[line_starts[skip_lines]:]
    tokens = _PARSER.parse(body)
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        kind = _KINDS.get(token.type, OTHER)
        first, last = (line + skip_lines for line in token.map)
        last = min(last, len(line_starts) - 1)
        level, text = 0, ""
        if kind == "heading":
            level = int(token.tag[1:])
            text = " ".join(tokens[index + 1].content.split())
        yield kind, first, last, level, text


def _trimmed(markdown: str, span: Block, start: int) -> Block | None:
    """`span` starting no earlier than `start`, with whitespace trimmed off both ends."""
    end = span.char_end
    while end > start and markdown[end - 1].isspace():
        end -= 1
    while start < end and markdown[start].isspace():
        start += 1
    if start >= end:
        return None
    return Block(span.kind, start, end, span.level, span.text)


def _gap(markdown: str, start: int, end: int, cap: int) -> list[Block]:
    """Text between parsed blocks (e.g. link reference definitions) as capped `other` blocks."""
    block = _trimmed(markdown, Block(OTHER, start, end), start)
    return [] if block is None else _capped(markdown, block, cap)


def _capped(markdown: str, block: Block, cap: int) -> list[Block]:
    """`block` cut into consecutive sub-blocks of at most `cap` chars.

    Cuts fall at the last line break that fits, else after the last sentence end that fits,
    else hard at `cap`; only the whitespace at a cut is left out. The first piece keeps the
    block's kind, level and text; a heading's continuation pieces are paragraphs.
    """
    pieces: list[Block] = []
    start = block.char_start
    while True:
        if block.char_end - start <= cap:
            end = block.char_end
        else:
            end = _cut(markdown, start, start + cap)
        if not pieces:
            pieces.append(Block(block.kind, start, end, block.level, block.text))
        else:
            kind = "paragraph" if block.kind == "heading" else block.kind
            pieces.append(Block(kind, start, end))
        if end == block.char_end:
            return pieces
        start = end
        while markdown[start].isspace():
            start += 1


def _cut(markdown: str, start: int, limit: int) -> int:
    """End of the longest piece of `markdown[start:limit + 1]` worth cutting after, trimmed."""
    window = markdown[start:limit + 1]
    line_break = max(window.rfind("\n"), window.rfind("\r"))
    if line_break > 0:
        end = start + line_break
    else:
        sentence_ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit - start]
        end = start + sentence_ends[-1] if sentence_ends else limit
    while markdown[end - 1].isspace():
        end -= 1
    return end
