"""Visual description: which pages a model is shown, the multimodal chat messages, the parsing of
answers (hand-written in tests/fixtures/llm/, as a model writes them: valid, fenced, truncated, off
the schema), and the description's section in `document.md` with every offset kept exact."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import jsonschema
import pytest
from fpdf import FPDF
from PIL import Image

from pipeline import records
from pipeline.documents.convert import OCR
from pipeline.documents.ocr_convert import ocr_row
from pipeline.documents.ocr_describe import (
    KINDS,
    MAX_SIDE_PX,
    Description,
    DescriptionFailed,
    PageToDescribe,
    add_descriptions,
    describe_messages,
    pages_to_describe,
    pages_wanted,
    parse_descriptions,
    schema,
    with_descriptions,
)
from pipeline.documents.ocr_text import Box, Line
from tests.support.ocr_pages import encode, render

FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm"
MAX_PIXELS = 10**8


def _recognise(image: Image.Image) -> list[Line]:
    """Two lines a page, one block, naming the page's width (pages of one test differ in width)."""
    return [Line(f"Printed at {image.size[0]} wide.", Box(10, 10, 200, 30), 0.99),
            Line("Second line of the page.", Box(10, 40, 200, 60), 0.99)]


def _ocr_row(content: bytes, mime: str, pdf_pages: list[int] | None = None) -> dict:
    row = records.new_row(item="scan", filename="scan", mime=mime, content=content, outcome=records.PROCESS,
                          converter=OCR, ocr_pdf_pages=pdf_pages)
    ocr_row(row, _recognise, MAX_PIXELS, "rapidocr test")
    return row


def _unread_row(pages: int) -> dict:
    """A row as the OCR stage leaves a picture without words when a describer follows."""
    content = encode([Image.new("RGB", (640, 480), "skyblue")] * pages, "TIFF")
    row = records.new_row(item="photo.tiff", filename="photo.tiff", mime="image/tiff", content=content,
                          outcome=records.PROCESS, converter=OCR)
    ocr_row(row, lambda image: [], MAX_PIXELS, "rapidocr test", describe_next=True)
    return row


def _scanned_pdf(pages: int) -> bytes:
    """A PDF with a text layer on its first page and drawn boxes only on the others."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for i in range(pages):
        pdf.add_page()
        if i == 0:
            pdf.multi_cell(0, 8, "The board met on Tuesday and approved the budget.")
        else:
            pdf.rect(20, 20, 100 + i, 50)
    return bytes(pdf.output())


# --- the pages shown ------------------------------------------------------------------------------


def test_each_recognised_page_is_shown_as_a_jpeg_no_larger_than_the_cap_with_its_ocr_text():
    content = encode([render(["One."], size=(2000, 1400)), render(["Two."], size=(800, 600))], "TIFF")
    row = _ocr_row(content, "image/tiff")
    shown = pages_to_describe(row, lambda: content, MAX_PIXELS, max_pages=4)
    assert [p.number for p in shown] == [1, 2]
    sizes = [Image.open(io.BytesIO(p.jpeg)).size for p in shown]
    assert sizes == [(MAX_SIDE_PX, 717), (800, 600)]   # scaled to the cap, never enlarged
    assert all(Image.open(io.BytesIO(p.jpeg)).format == "JPEG" for p in shown)
    assert shown[0].ocr_text == "\nPrinted at 2000 wide.\nSecond line of the page.\n"


def test_only_the_first_pages_up_to_the_cap_and_only_recognised_ones_are_shown():
    content = _scanned_pdf(5)
    row = _ocr_row(content, "application/pdf", pdf_pages=[1, 2, 3, 4])
    assert [p["source"] for p in row["ocr_pages"]] == ["text_layer", "ocr", "ocr", "ocr", "ocr"]
    assert [p.number for p in pages_to_describe(row, lambda: content, MAX_PIXELS, max_pages=2)] == [2, 3]


def test_a_page_where_ocr_recognised_nothing_is_shown_with_no_ocr_text():
    row = _unread_row(2)
    content = encode([Image.new("RGB", (640, 480), "skyblue")] * 2, "TIFF")
    assert pages_wanted(row, max_pages=4) == [1, 2] and pages_wanted(row, max_pages=1) == [1]
    shown = pages_to_describe(row, lambda: content, MAX_PIXELS, max_pages=4)
    assert [(p.number, p.ocr_text) for p in shown] == [(1, ""), (2, "")]
    assert describe_messages(shown, filename="photo.tiff")[1]["content"][0]["text"] == (
        "Page 1. OCR text of the page: (none)")


def test_a_document_ocr_did_not_convert_shows_nothing_and_its_original_is_not_read():
    def original() -> bytes:
        raise AssertionError("read")
    typed = records.new_row(outcome=records.PROCESS, converter="markitdown", markdown="# Notes\n")
    failed = records.new_row(outcome=records.FAILED, converter=OCR, markdown=None)
    assert pages_to_describe(typed, original, MAX_PIXELS, 4) == []
    assert pages_to_describe(failed, original, MAX_PIXELS, 4) == []


# --- the request ----------------------------------------------------------------------------------


def test_each_page_goes_as_a_data_url_after_its_number_and_ocr_text():
    pages = [PageToDescribe(1, b"\xff\xd8jpeg one", "\nIngest\n  Convert   Write\n"), PageToDescribe(3, b"two", "")]
    system, user = describe_messages(pages, filename="board.tiff")
    assert system["role"] == "system" and "JSON object only" in system["content"]
    label1, image1, label3, image3, task = user["content"]
    assert label1 == {"type": "text", "text": "Page 1. OCR text of the page: Ingest Convert Write"}
    assert image1 == {"type": "image_url", "image_url": {
        "url": "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8jpeg one").decode()}}
    assert label3["text"] == "Page 3. OCR text of the page: (none)" and image3["type"] == "image_url"
    assert "File name: board.tiff" in task["text"] and "(pages 1, 3)" in task["text"]


def test_the_schema_names_the_kinds_the_parser_accepts_and_the_valid_fixtures_follow_it():
    assert tuple(schema()["properties"]["pages"]["items"]["properties"]["kind"]["enum"]) == KINDS
    for name in ("describe.whiteboard.json", "describe.minutes.json"):
        jsonschema.validate(json.loads((FIXTURES / name).read_text()), schema())


# --- the answer -----------------------------------------------------------------------------------


def test_a_valid_answer_describes_its_page():
    found = parse_descriptions((FIXTURES / "describe.whiteboard.json").read_text(), [1])
    assert found[1].kind == "whiteboard" and found[1].text.startswith("A whiteboard photographed at an angle.")


def test_a_fenced_answer_is_read():
    found = parse_descriptions((FIXTURES / "describe.chart.fenced.txt").read_text(), [1])
    assert found[1] == Description("chart", found[1].text) and "bar chart of monthly invoices" in found[1].text


@pytest.mark.parametrize("name, reason, cause", [
    ("describe.diagram.truncated.txt", "unparsable_answer", "not JSON (Unterminated string"),
    ("describe.unknown_kind.json", "off_schema", "kind 'painting' is not one of photo,"),
])
def test_an_unusable_answer_is_a_failure_with_its_reason_and_cause(name, reason, cause):
    found = parse_descriptions((FIXTURES / name).read_text(), [1])
    assert isinstance(found[1], DescriptionFailed) and found[1].cause.startswith(cause), found
    assert found[1].reason == reason


def test_only_the_first_entry_of_a_page_shown_counts_and_a_page_left_out_is_a_failure():
    found = parse_descriptions((FIXTURES / "describe.minutes.json").read_text(), [1, 2])
    assert list(found) == [1, 2]
    assert found[1].text.startswith("A typed page of meeting minutes")
    assert found[2] == DescriptionFailed("page_left_out", "the answer has no entry for this page")


@pytest.mark.parametrize("text, reason, cause", [
    ('[{"page": 1, "kind": "photo", "description": "a dog"}]', "unparsable_answer",
     "not a JSON object with a list of pages"),
    ('{"pages": {"page": 1}}', "unparsable_answer", "not a JSON object with a list of pages"),
    ('{"pages": [{"page": 1, "kind": "photo", "description": "   "}]}', "off_schema", "no description"),
    ('{"pages": [{"page": 1, "kind": "photo"}]}', "off_schema", "no description"),
    ('{"pages": [{"page": "1", "kind": "photo", "description": "a dog"}]}', "page_left_out",
     "the answer has no entry for this page"),
    ('{"pages": ["photo of a dog"]}', "page_left_out", "the answer has no entry for this page"),
])
def test_answers_off_the_schema_never_raise(text, reason, cause):
    assert parse_descriptions(text, [1]) == {1: DescriptionFailed(reason, cause)}


def test_a_failure_names_a_reason_the_report_counts():
    with pytest.raises(ValueError, match="^reason 'bad answer' is not one of unparsable_answer, off_schema,"):
        DescriptionFailed("bad answer", "not JSON")


def test_an_overlong_description_is_cut_not_refused():
    found = parse_descriptions(json.dumps({"pages": [{"page": 1, "kind": "photo", "description": "word " * 1000}]}), [1])
    assert isinstance(found[1], Description) and len(found[1].text) == 1200


# --- its place in document.md -----------------------------------------------------------------------


def test_a_description_ends_its_page_and_every_offset_stays_exact():
    content = encode([render(["One."], size=(900, 700)), render(["Two."], size=(800, 600)),
                      render(["Three."], size=(700, 500))], "TIFF")
    row = _ocr_row(content, "image/tiff")
    before = {(ln["page"], ln["line"]): row["markdown"][ln["char_start"]:ln["char_end"]] for ln in row["ocr_lines"]}
    descriptions = {1: Description("photo", "# A dog on a sofa."), 3: Description("chart", "Bars.")}
    markdown, lines, pages = with_descriptions(row["markdown"], row["ocr_lines"], row["ocr_pages"], descriptions)

    assert {(ln["page"], ln["line"]): markdown[ln["char_start"]:ln["char_end"]] for ln in lines} == before
    sections = [markdown[p["char_start"]:p["char_end"]] for p in pages]
    assert sections[0] == ("## Page 1\n\nPrinted at 900 wide.\nSecond line of the page.\n"
                           "\n### Description (photo, by a vision model)\n\n\\# A dog on a sofa.\n")
    assert sections[1] == "## Page 2\n\nPrinted at 800 wide.\nSecond line of the page.\n"
    assert sections[2].endswith("Second line of the page.\n\n### Description (chart, by a vision model)\n\nBars.\n")
    # nothing else moved: the pages are still separated as before, and the document ends with page 3
    assert markdown == "\n".join(sections) and pages[-1]["char_end"] == len(markdown)


# --- what becomes of the document ------------------------------------------------------------------


def test_a_picture_without_words_becomes_its_description_with_exact_offsets():
    row = _unread_row(2)
    found = {1: Description("photo", "A red house under two grey hills."),
             2: DescriptionFailed("engine_failed", "ValueError: boom")}
    add_descriptions(row, found, "vlm")
    assert row["outcome"] == records.PROCESS and row["converter_version"] == "rapidocr test + vlm"
    assert row["markdown"] == ("## Page 1\n\n### Description (photo, by a vision model)\n\n"
                               "A red house under two grey hills.\n\n## Page 2\n")
    # the pages still say OCR read nothing there; their spans hold what is there now
    assert [(p["reason"], row["markdown"][p["char_start"]:p["char_end"]]) for p in row["ocr_pages"]] == [
        ("no_text_recognised", "## Page 1\n\n### Description (photo, by a vision model)\n\n"
                               "A red house under two grey hills.\n"),
        ("no_text_recognised", "## Page 2\n")]
    assert row["descriptions"] == [{"page": 1, "kind": "photo", "reason": None},
                                   {"page": 2, "kind": None, "reason": "engine_failed"}]


def test_a_picture_without_words_and_without_a_description_fails_with_its_own_reason():
    row = _unread_row(1)
    add_descriptions(row, {1: DescriptionFailed("engine_failed", "ValueError: boom")}, "vlm")
    assert (row["outcome"], row["error_stage"], row["error"]) == (
        records.FAILED, "describe", "nothing_recognised_or_described: no text on any of its 1 pages, and no "
                                    "description (engine_failed: ValueError: boom)")
    assert row["markdown"] is None
    assert row["descriptions"] == [{"page": 1, "kind": None, "reason": "engine_failed"}]


def test_a_page_with_text_keeps_it_when_its_description_fails():
    content = encode([render(["One."], size=(900, 700))], "PNG")
    row = _ocr_row(content, "image/png")
    before = dict(row)
    add_descriptions(row, {1: DescriptionFailed("unparsable_answer", "not JSON")}, "vlm")
    assert row["outcome"] == records.PROCESS
    assert {k: v for k, v in row.items() if k != "descriptions"} == {
        k: v for k, v in before.items() if k != "descriptions"}
    assert row["descriptions"] == [{"page": 1, "kind": None, "reason": "unparsable_answer"}]
