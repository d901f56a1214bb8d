"""chunk: runs of whole blocks within a section, exact offsets, tiling, determinism."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.documents.blocks import split_blocks
from pipeline.documents.chunk import build_chunks, structure_and_chunk
from pipeline.documents.convert import convert
from pipeline.documents.structure import build_sections

PARAGRAPH = "Acme Corp hired Jane Doe in 2021, and the team grew by a third that year."  # 73


def report(paragraphs: int = 6) -> str:
    body = "\n\n".join(f"{PARAGRAPH} ({i})" for i in range(paragraphs))
    return (f"Prepared for the board.\n\n# Introduction\n\n{body}\n\n## Details\n\n- one\n- two\n\n"
            f"{body}\n\n# References\n\n1. Doe, J. A book.\n")


def non_space(text: str) -> str:
    return "".join(text.split())


def assert_chunks_valid(markdown: str, sections: list[dict], chunks: list[dict]) -> None:
    for ord_, chunk in enumerate(chunks):
        assert chunk["ord"] == ord_
        assert markdown[chunk["char_start"]:chunk["char_end"]] == chunk["text"]
        assert chunk["text_hash"] == hashlib.sha256(chunk["text"].encode()).hexdigest()
        assert chunk["embedding"] is None and chunk["reused"] is False
        section = sections[chunk["section_ord"]]
        assert section["char_start"] <= chunk["char_start"] < chunk["char_end"] <= section["char_end"]
    for before, after in zip(chunks, chunks[1:]):
        assert before["char_end"] <= after["char_start"]
        assert markdown[before["char_end"]:after["char_start"]].strip() == ""
    if chunks:
        assert markdown[:chunks[0]["char_start"]].strip() == ""
        assert markdown[chunks[-1]["char_end"]:].strip() == ""
    assert non_space("".join(c["text"] for c in chunks)) == non_space(markdown)


@pytest.mark.parametrize("target", [50, 120, 200, 400, 5000])
def test_chunks_are_exact_and_tile_the_document(target):
    markdown = report()
    sections, chunks = structure_and_chunk(markdown, target)
    assert_chunks_valid(markdown, sections, chunks)


def test_chunks_never_cross_a_section():
    markdown = report()
    sections, chunks = structure_and_chunk(markdown, 100_000)
    assert [c["section_ord"] for c in chunks] == [s["ord"] for s in sections]
    assert [c["text"].split("\n")[0] for c in chunks] == [
        "Prepared for the board.", "# Introduction", "## Details", "# References"]


def test_target_is_respected_except_single_blocks():
    markdown = report(12) + "\n# Long\n\n" + "Words and more words. " * 30 + "\n"
    target = 200
    blocks = split_blocks(markdown, 2 * target)
    sections = build_sections(markdown, blocks)
    chunks = build_chunks(markdown, blocks, sections, target)
    oversized = 0
    for chunk in chunks:
        inside = [b for b in blocks if chunk["char_start"] <= b.char_start < chunk["char_end"]]
        if len(chunk["text"]) > target:
            oversized += 1
            assert len(inside) == 1 or (len(inside) == 2 and inside[0].kind == "heading")
    assert oversized >= 1
    assert max(len(c["text"]) for c in chunks) <= 2 * target + len("# Long\n\n")


def test_greedy_runs_fill_up_to_the_target():
    markdown = "\n\n".join(f"{PARAGRAPH} ({i})" for i in range(10)) + "\n"
    _, chunks = structure_and_chunk(markdown, 3 * 77 + 4)
    assert [c["text"].count(PARAGRAPH) for c in chunks] == [3, 3, 3, 1]


def test_heading_starts_a_chunk_and_is_never_left_alone():
    markdown = f"# Title\n\n{PARAGRAPH * 2}\n\n{PARAGRAPH}\n"
    blocks = split_blocks(markdown, 10_000)
    chunks = build_chunks(markdown, blocks, build_sections(markdown, blocks), 40)
    assert chunks[0]["text"] == f"# Title\n\n{PARAGRAPH * 2}"
    assert chunks[1]["text"] == PARAGRAPH


def test_heading_at_the_end_of_a_section_is_its_own_chunk():
    markdown = "# One\n\n# Two\n\nText.\n"
    _, chunks = structure_and_chunk(markdown, 1000)
    assert [c["text"] for c in chunks] == ["# One", "# Two\n\nText."]


def test_oversized_block_is_split_into_several_chunks():
    markdown = "# Long\n\n" + " ".join(f"Sentence number {i} is here." for i in range(200)) + "\n"
    sections, chunks = structure_and_chunk(markdown, 300)
    assert len(chunks) >= 9
    assert all(len(c["text"]) <= 600 + len("# Long\n\n") for c in chunks)
    assert all(c["text"].endswith("is here.") for c in chunks)
    assert_chunks_valid(markdown, sections, chunks)


def test_front_matter_is_chunked_under_its_section():
    markdown = "---\ntitle: T\n---\n\n# Body\n\nText.\n"
    sections, chunks = structure_and_chunk(markdown, 1000)
    assert chunks[0]["text"] == "---\ntitle: T\n---"
    assert sections[chunks[0]["section_ord"]]["role"] == "front_matter"


def test_document_without_headings():
    markdown = "One.\n\nTwo.\n\nThree.\n"
    sections, chunks = structure_and_chunk(markdown, 8)
    assert len(sections) == 1
    assert [c["text"] for c in chunks] == ["One.", "Two.", "Three."]
    assert {c["section_ord"] for c in chunks} == {0}


def test_empty_document_has_no_chunks():
    assert structure_and_chunk("", 100) == ([], [])
    assert structure_and_chunk("\n", 100) == ([], [])


def test_deterministic_and_hash_follows_text():
    markdown = report()
    assert structure_and_chunk(markdown, 150) == structure_and_chunk(markdown, 150)
    _, chunks = structure_and_chunk(markdown + "\nExtra paragraph.\n", 150)
    _, before = structure_and_chunk(markdown, 150)
    assert [c["text_hash"] for c in chunks[:3]] == [c["text_hash"] for c in before[:3]]


def test_crlf_input_gives_the_same_chunks():
    markdown = report()
    converted = convert(markdown.replace("\n", "\r\n").encode(), "text/markdown", "r.md").markdown
    assert structure_and_chunk(converted, 150) == structure_and_chunk(markdown, 150)


def test_target_must_be_positive():
    with pytest.raises(ValueError, match="target_chars"):
        build_chunks("x", [], [], 0)


def test_block_outside_the_sections_is_refused():
    markdown = "# A\n\nText.\n"
    blocks = split_blocks(markdown, 100)
    sections = [{"ord": 0, "heading": "A", "level": 1, "role": "body", "char_start": 0, "char_end": 5}]
    with pytest.raises(ValueError, match="no one section"):
        build_chunks(markdown, blocks, sections, 100)


_WORD = st.text(alphabet="abcdefghij XYZ.,!?*_`|-#>:0123456789é中\t", min_size=1, max_size=30)
_LINE = st.one_of(
    _WORD,
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), _WORD),
    st.builds(lambda w: "- " + w, _WORD),
    st.builds(lambda w: "1. " + w, _WORD),
    st.builds(lambda w: "> " + w, _WORD),
    st.builds(lambda w: "    " + w, _WORD),
    st.builds(lambda w: "| " + w + " | x |", _WORD),
    st.sampled_from(["---", "```", "***", "|---|---|", "", "", "  ", "<div>", "</div>",
                     "[ref]: http://x.y", "===", "Sources"]),
    st.builds(lambda w, n: (w + " ") * n, _WORD, st.integers(5, 60)),
)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(_LINE, max_size=40), target=st.integers(5, 400))
def test_property_chunks_tile_non_whitespace_exactly_once(lines, target):
    markdown = "\n".join(lines)
    sections, chunks = structure_and_chunk(markdown, target)
    assert_chunks_valid(markdown, sections, chunks)
    blocks = split_blocks(markdown, 2 * target)
    assert all(b.char_end - b.char_start <= 2 * target for b in blocks)
    assert all(markdown[b.char_start:b.char_end].strip() for b in blocks)
