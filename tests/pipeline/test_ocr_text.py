"""OCR text → Markdown: reading order (blocks, columns), one section per page, exact offsets,
text layers kept, pages with nothing recognised named, low-confidence lines flagged."""

from __future__ import annotations

from pipeline.documents.blocks import split_blocks
from pipeline.documents.ocr_text import (
    NO_TEXT_RECOGNISED,
    OCR,
    TEXT_LAYER,
    Box,
    Line,
    Page,
    blocks_in_reading_order,
    build_document,
    pages_needing_ocr,
)
from pipeline.documents.structure import build_sections


def line(text: str, x0: float, y0: float, x1: float, y1: float, confidence: float = 0.95) -> Line:
    return Line(text, Box(x0, y0, x1, y1), confidence)


# A two-column page under a full-width title, its lines given in the model's (shuffled) order.
TWO_COLUMNS = [
    line("right column, second line", 520, 240, 900, 270),
    line("left column, first line", 40, 200, 420, 230),
    line("Quarterly report", 40, 40, 900, 90),
    line("right column, first line", 520, 200, 900, 230),
    line("left column, second line", 40, 240, 420, 270),
    line("left column, new paragraph", 40, 400, 420, 430),
    line("footer across the page", 40, 900, 900, 930),
]


def test_blocks_read_the_title_then_each_column_top_to_bottom_then_the_footer():
    order = [[ln.text for ln in b.lines] for b in blocks_in_reading_order(TWO_COLUMNS)]
    assert order == [
        ["Quarterly report"],
        ["left column, first line", "left column, second line"],
        ["left column, new paragraph"],
        ["right column, first line", "right column, second line"],
        ["footer across the page"],
    ]


def test_lines_of_a_block_are_stacked_closely_and_a_wide_gap_starts_a_new_block():
    blocks = blocks_in_reading_order([line("one", 0, 0, 100, 30), line("two", 0, 38, 100, 68),
                                      line("three", 0, 200, 100, 230), line("  ", 0, 300, 100, 330)])
    assert [[ln.text for ln in b.lines] for b in blocks] == [["one", "two"], ["three"]]


def test_pieces_of_one_text_line_are_one_line_but_columns_stay_apart():
    blocks = blocks_in_reading_order([line("March 2024.", 968, 52, 1238, 90), line("Dana leads since", 42, 49, 965, 93),
                                      line("gutter apart", 1300, 52, 1500, 90)])
    assert [[ln.text for ln in b.lines] for b in blocks] == [["Dana leads since March 2024."], ["gutter apart"]]
    assert blocks[0].lines[0].box == Box(42, 49, 1238, 93)


def test_every_line_indexes_its_own_text_in_the_markdown_and_names_its_page_and_line():
    doc = build_document([Page(1, 1000, 1000, OCR, tuple(TWO_COLUMNS)),
                          Page(2, 1000, 1000, OCR, (line("# not a heading", 10, 10, 500, 40),
                                                    line("------", 10, 60, 500, 90, confidence=0.4)))])
    for row in doc.lines:
        assert doc.markdown[row["char_start"]:row["char_end"]] in {ln.text for ln in TWO_COLUMNS} | {
            "\\# not a heading", "\\------"}
    first = doc.lines[0]
    assert (first["page"], first["line"], first["block"]) == (1, 1, 1)
    assert doc.markdown[first["char_start"]:first["char_end"]] == "Quarterly report"
    assert [r["line"] for r in doc.lines if r["page"] == 2] == [1, 2]
    assert [r["low_confidence"] for r in doc.lines if r["page"] == 2] == [False, True]
    assert 0 <= first["x0"] < first["x1"] <= 1 and first["y0"] == 0.04
    # recognised text that looks like Markdown markup stays text: no heading, no rule
    sections = build_sections(doc.markdown, split_blocks(doc.markdown, max_block_chars=2000))
    assert [s["heading"] for s in sections] == ["Page 1", "Page 2"]


def test_one_section_per_page_whose_span_is_the_page_row():
    doc = build_document([Page(1, 100, 100, OCR, (line("alpha", 0, 0, 50, 10),)),
                          Page(2, 0, 0, TEXT_LAYER, text="  kept from the text layer  \n\n second line "),
                          Page(3, 100, 100, OCR, ())])
    assert doc.markdown == ("## Page 1\n\nalpha\n\n## Page 2\n\nkept from the text layer\nsecond line\n"
                            "\n## Page 3\n")
    sections = build_sections(doc.markdown, split_blocks(doc.markdown, max_block_chars=2000))
    assert [(s["char_start"], s["heading"]) for s in sections] == [(p["char_start"], f"Page {p['page']}")
                                                                  for p in doc.pages]
    assert [(p["source"], p["lines"], p["reason"]) for p in doc.pages] == [
        (OCR, 1, None), (TEXT_LAYER, 0, None), (OCR, 0, NO_TEXT_RECOGNISED)]
    assert doc.recognised


def test_a_document_with_nothing_on_any_page_is_not_recognised():
    doc = build_document([Page(1, 100, 100, OCR, ()), Page(2, 0, 0, TEXT_LAYER, text=" \n")])
    assert not doc.recognised and {p["reason"] for p in doc.pages} == {NO_TEXT_RECOGNISED}


def test_pages_below_the_threshold_are_the_ones_to_ocr():
    assert pages_needing_ocr([0, 500, 19, 20], min_chars=20) == [0, 2]
