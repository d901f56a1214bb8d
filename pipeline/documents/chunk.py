"""Chunks: non-overlapping runs of whole blocks, within one section, up to about a target size.

A chunk's text is exactly `markdown[char_start:char_end]`, so a claim grounded in a chunk can be
pointed back at characters of the converted document. Chunking is pure and deterministic: the
same Markdown gives the same chunks and the same `text_hash`es, which is what lets a re-import
reuse the vectors of unchanged chunks.
"""

from __future__ import annotations

import bisect
import hashlib
from typing import Any

from pipeline.documents.blocks import Block, split_blocks
from pipeline.documents.structure import build_sections

# A block may be twice the chunk target before it is cut, so that a paragraph slightly over the
# target stays whole rather than becoming a full chunk plus a sliver.
BLOCK_CAP_FACTOR = 2


def build_chunks(markdown: str, blocks: list[Block], sections: list[dict[str, Any]],
                 target_chars: int) -> list[dict[str, Any]]:
    """Chunks of `markdown` (records.CHUNK fields), in document order.

    Within each section, blocks are taken greedily: a run is closed before a block that would
    make it longer than `target_chars` (measured from the first block's start to the last
    block's end), unless the run is empty or holds only a heading — a heading is never left
    alone at the end of a chunk, it always starts one together with the block after it. A
    heading always starts a new chunk. So a chunk exceeds the target only when it is a single
    block, or a heading with the single block that follows it. Every block lies in exactly one
    chunk; a block must lie inside one section.
    """
    if target_chars < 1:
        raise ValueError(f"target_chars must be at least 1, got {target_chars}")
    section_starts = [section["char_start"] for section in sections]
    runs: list[tuple[int, list[Block]]] = []
    for block in blocks:
        section_ord = _section_of(block, sections, section_starts)
        if runs and runs[-1][0] == section_ord and _fits(runs[-1][1], block, target_chars):
            runs[-1][1].append(block)
        else:
            runs.append((section_ord, [block]))
    return [_chunk(markdown, ord_, section_ord, run) for ord_, (section_ord, run) in enumerate(runs)]


def structure_and_chunk(markdown: str, target_chars: int
                        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(sections, chunks) of `markdown`, with blocks capped at twice `target_chars`."""
    blocks = split_blocks(markdown, max_block_chars=BLOCK_CAP_FACTOR * target_chars)
    sections = build_sections(markdown, blocks)
    return sections, build_chunks(markdown, blocks, sections, target_chars)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _fits(run: list[Block], block: Block, target_chars: int) -> bool:
    if block.kind == "heading":
        return False
    if len(run) == 1 and run[0].kind == "heading":
        return True
    return block.char_end - run[0].char_start <= target_chars


def _section_of(block: Block, sections: list[dict[str, Any]], starts: list[int]) -> int:
    index = bisect.bisect_right(starts, block.char_start) - 1
    if index < 0 or block.char_end > sections[index]["char_end"]:
        raise ValueError(f"block at chars {block.char_start}–{block.char_end} lies in no one section")
    return sections[index]["ord"]


def _chunk(markdown: str, ord_: int, section_ord: int, run: list[Block]) -> dict[str, Any]:
    start, end = run[0].char_start, run[-1].char_end
    text = markdown[start:end]
    return {"ord": ord_, "section_ord": section_ord, "char_start": start, "char_end": end,
            "text": text, "text_hash": text_hash(text), "embedding": None, "reused": False}
