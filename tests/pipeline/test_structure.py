"""blocks and structure: exact block offsets, sections that tile the document, roles by rule."""

from __future__ import annotations

import io

import pytest
from docx import Document

from pipeline.documents.blocks import Block, split_blocks
from pipeline.documents.convert import convert
from pipeline.documents.structure import build_sections, heading_role

DOC = """Acme Corp annual report, prepared for the board.

# 1. Introduction

Acme Corp hired Jane Doe in 2021.

- first
- second

| a | b |
|---|---|
| 1 | 2 |

## Scope

```python
x = 1
```

> A quote.

---

Setext heading
--------------

[ref]: https://example.com

# References

1. Doe, J. (2020). A book.

## Online

- https://example.com

# Appendix B: Raw data

Numbers.

### Sources

Where the numbers come from.

## Method

How.

# Disclaimer

Not advice.
"""


def sections_of(markdown: str, cap: int = 10_000) -> list[dict]:
    return build_sections(markdown, split_blocks(markdown, cap))


def non_space(text: str) -> str:
    return "".join(text.split())


def test_block_offsets_are_exact_and_ordered():
    blocks = split_blocks(DOC, 10_000)
    for block in blocks:
        text = DOC[block.char_start:block.char_end]
        assert text and not text[0].isspace() and not text[-1].isspace()
    for before, after in zip(blocks, blocks[1:]):
        assert before.char_end < after.char_start
    assert non_space("".join(DOC[b.char_start:b.char_end] for b in blocks)) == non_space(DOC)


def test_block_kinds_and_headings():
    blocks = split_blocks(DOC, 10_000)
    assert [b.kind for b in blocks[:10]] == [
        "paragraph", "heading", "paragraph", "list", "table", "heading", "code", "quote", "hr",
        "heading",
    ]
    headings = [(b.level, b.text) for b in blocks if b.kind == "heading"]
    assert headings[:4] == [(1, "1. Introduction"), (2, "Scope"), (2, "Setext heading"),
                            (1, "References")]
    assert DOC[blocks[1].char_start:blocks[1].char_end] == "# 1. Introduction"


def test_reference_definition_is_kept_as_a_block():
    blocks = split_blocks(DOC, 10_000)
    other = [DOC[b.char_start:b.char_end] for b in blocks if b.kind == "other"]
    assert other == ["[ref]: https://example.com"]


def test_yaml_front_matter_is_one_block():
    markdown = "---\ntitle: Report\ntags: [a, b]\n---\n\n# Title\n\nText.\n"
    blocks = split_blocks(markdown, 10_000)
    assert blocks[0] == Block("front_matter", 0, len("---\ntitle: Report\ntags: [a, b]\n---"))
    assert [b.kind for b in blocks[1:]] == ["heading", "paragraph"]


def test_leading_rule_is_not_front_matter():
    markdown = "---\n\nJust text after a rule.\n\n---\n"
    assert [b.kind for b in split_blocks(markdown, 10_000)] == ["hr", "paragraph", "hr"]


def test_oversized_block_is_cut_at_line_breaks():
    lines = [f"line {i} " + "x" * 20 for i in range(10)]
    markdown = "```\n" + "\n".join(lines) + "\n```\n"
    blocks = split_blocks(markdown, 70)
    assert len(blocks) > 1
    assert all(b.char_end - b.char_start <= 70 for b in blocks)
    assert all(b.kind == "code" for b in blocks)
    for block in blocks[:-1]:
        assert markdown[block.char_end] == "\n"
    assert non_space("".join(markdown[b.char_start:b.char_end] for b in blocks)) == non_space(markdown)


def test_oversized_block_is_cut_at_sentence_ends():
    markdown = "One sentence here. Another one follows? Yes! And a last, rather long sentence.\n"
    blocks = split_blocks(markdown, 45)
    texts = [markdown[b.char_start:b.char_end] for b in blocks]
    assert texts == ["One sentence here. Another one follows? Yes!",
                     "And a last, rather long sentence."]


def test_oversized_block_without_breaks_is_cut_hard():
    markdown = "a" * 25 + "\n"
    blocks = split_blocks(markdown, 10)
    assert [(b.char_start, b.char_end) for b in blocks] == [(0, 10), (10, 20), (20, 25)]


def test_oversized_heading_keeps_one_heading():
    markdown = "# " + "word " * 20 + "\n\nText.\n"
    blocks = split_blocks(markdown, 30)
    assert [b.kind for b in blocks].count("heading") == 1
    assert blocks[0].kind == "heading"


def test_max_block_chars_must_be_positive():
    with pytest.raises(ValueError, match="max_block_chars"):
        split_blocks("text", 0)


def test_empty_document_has_no_blocks_and_no_sections():
    assert split_blocks("", 100) == []
    assert split_blocks("\n\n  \n", 100) == []
    assert build_sections("", []) == []


def test_sections_tile_the_document():
    sections = sections_of(DOC)
    assert sections[0]["char_start"] == 0
    assert sections[-1]["char_end"] == len(DOC)
    for before, after in zip(sections, sections[1:]):
        assert before["char_end"] == after["char_start"]
    assert [s["ord"] for s in sections] == list(range(len(sections)))
    for section in sections[1:]:
        assert DOC[section["char_start"]:].startswith(("#", "Setext"))


def test_roles_by_heading():
    roles = [(s["heading"], s["level"], s["role"]) for s in sections_of(DOC)]
    assert roles == [
        (None, 0, "front_matter"),
        ("1. Introduction", 1, "body"),
        ("Scope", 2, "body"),
        ("Setext heading", 2, "body"),
        ("References", 1, "references"),
        ("Online", 2, "references"),
        ("Appendix B: Raw data", 1, "appendix"),
        ("Sources", 3, "references"),
        ("Method", 2, "appendix"),
        ("Disclaimer", 1, "boilerplate"),
    ]


def test_inherited_role_ends_at_same_or_higher_level():
    markdown = "## References\n\n### Books\n\nx\n\n## Results\n\ny\n\n# Annex 2\n\n## Tables\n\nz\n"
    roles = [(s["heading"], s["role"]) for s in sections_of(markdown)]
    assert roles == [("References", "references"), ("Books", "references"), ("Results", "body"),
                     ("Annex 2", "appendix"), ("Tables", "appendix")]


def test_document_without_headings_is_one_body_section():
    markdown = "First paragraph.\n\nSecond paragraph.\n"
    assert sections_of(markdown) == [{"ord": 0, "heading": None, "level": 0, "role": "body",
                                      "char_start": 0, "char_end": len(markdown)}]


def test_front_matter_then_preamble():
    markdown = "---\ntitle: T\n---\n\nPreamble.\n\n# Body\n\nText.\n"
    sections = sections_of(markdown)
    assert [(s["heading"], s["role"]) for s in sections] == [
        (None, "front_matter"), (None, "front_matter"), ("Body", "body")]
    assert markdown[sections[1]["char_start"]:sections[1]["char_end"]] == "Preamble.\n\n"


def test_front_matter_without_headings_leaves_body():
    markdown = "---\ntitle: T\n---\nText only.\n"
    assert [s["role"] for s in sections_of(markdown)] == ["front_matter", "body"]


def test_oversized_front_matter_is_one_section():
    markdown = "---\n" + "".join(f"key{i}: value\n" for i in range(20)) + "---\n\n# H\n\nText.\n"
    assert [s["role"] for s in sections_of(markdown, cap=40)] == ["front_matter", "body"]


@pytest.mark.parametrize(("heading", "role"), [
    ("References", "references"),
    ("7. References", "references"),
    ("**Bibliography**", "references"),
    ("Works Cited", "references"),
    ("IV. Further reading", "references"),
    ("Links", "references"),
    ("Links between trade and growth", None),
    ("Appendix", "appendix"),
    ("Appendix A: Questionnaire", "appendix"),
    ("Appendices", "appendix"),
    ("Annex 3 - Tables", "appendix"),
    ("Appendix removal in children", None),
    ("Table of Contents", "front_matter"),
    ("Contents", "front_matter"),
    ("Abstract", None),
    ("Legal", "boilerplate"),
    ("Disclaimer:", "boilerplate"),
    ("Copyright notice", "boilerplate"),
    ("Licence", "boilerplate"),
    ("Confidentiality notice", "boilerplate"),
    ("Mild disclaimer", None),
    ("Results", None),
])
def test_heading_role(heading, role):
    assert heading_role(heading) == role


def test_converted_docx_headings_make_sections():
    document = Document()
    document.add_heading("Report", level=1)
    document.add_paragraph("Body text.")
    document.add_heading("Bibliography", level=1)
    document.add_paragraph("Doe 2020.")
    buffer = io.BytesIO()
    document.save(buffer)
    markdown = convert(buffer.getvalue(), "application/vnd.openxmlformats-officedocument."
                       "wordprocessingml.document", "r.docx").markdown
    assert [(s["heading"], s["role"]) for s in sections_of(markdown)] == [
        ("Report", "body"), ("Bibliography", "references")]


def test_crlf_input_gives_the_same_sections_as_lf():
    lf = "# Title\n\nText.\n\n# References\n\nA.\n"
    crlf = convert(lf.replace("\n", "\r\n").encode(), "text/markdown", "a.md").markdown
    assert crlf == lf
    assert sections_of(crlf) == sections_of(lf)
