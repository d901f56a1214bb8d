"""The OCR actor with the real model (RapidOCR, from its wheel): rendered sentences come back as
text with a character error rate under 5 % (edit distance over the expected length, whitespace
runs counted as one space), from PNG, JPEG, a two-page TIFF and a PDF of images with no text
layer; bad rows fail with their reason and the rest of the batch is converted."""

from __future__ import annotations

import pytest
from PIL import ImageDraw, ImageFont

from actors.ocr import Ocr
from pipeline import records
from pipeline.documents.convert import OCR
from tests.support.ocr_pages import cer, encode, photo, render

PAGE_ONE = ["Dana Whitfield leads the search team since March 2024.",
            "The billing migration moved to Postgres in May 2025."]
PAGE_TWO = ["Priya Raman approved the invoice rewrite on 3 June 2025.",
            "Ravi Kumar works on the cutover plan for the billing system."]
MAX_CER = 0.05


@pytest.fixture(scope="module")
def ocr() -> Ocr:
    return Ocr(max_pixels=40_000_000)


def _row(name: str, mime: str, content: bytes, pdf_pages: list[int] | None = None) -> dict:
    return records.new_row(item=name, filename=name, mime=mime, content=content, outcome=records.PROCESS,
                           version_id=name, converter=OCR, ocr_pdf_pages=pdf_pages)


def _page_text(row: dict, page: int) -> str:
    return " ".join(row["markdown"][ln["char_start"]:ln["char_end"]] for ln in row["ocr_lines"] if ln["page"] == page)


def test_rendered_sentences_come_back_with_a_character_error_rate_under_5_percent(ocr):
    one, two = render(PAGE_ONE), render(PAGE_TWO)
    batch = records.to_table([
        _row("scan.png", "image/png", encode([one], "PNG")),
        _row("photo.jpg", "image/jpeg", encode([one], "JPEG")),
        _row("pages.tiff", "image/tiff", encode([one, two], "TIFF")),
        _row("scan.pdf", "application/pdf", encode([one, two], "PDF"), pdf_pages=[0, 1]),
    ])
    rows = records.to_rows(ocr(batch))
    rates = {}
    for row in rows:
        assert row["outcome"] == records.PROCESS, row["error"]
        assert row["content"] is None and row["converter"] == OCR and row["derivation"] == "converted"
        for page, expected in enumerate([PAGE_ONE, PAGE_TWO][:len(row["ocr_pages"])], start=1):
            rates[(row["item"], page)] = cer(" ".join(expected), _page_text(row, page))
            assert f"## Page {page}\n" in row["markdown"]
        assert row["s_ocr"] > 0
    assert len(rates) == 6
    assert max(rates.values()) < MAX_CER, rates
    assert not any(ln["low_confidence"] for row in rows for ln in row["ocr_lines"])
    tiff = rows[2]
    assert [(ln["page"], ln["line"]) for ln in tiff["ocr_lines"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(0 <= ln["x0"] < ln["x1"] <= 1 and 0 <= ln["y0"] < ln["y1"] <= 1 for ln in tiff["ocr_lines"])


def test_text_is_read_in_shadow_and_in_faint_ink(ocr):
    page = render([])
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=32)
    draw.text((100, 150), "Faint pencil notes on the whiteboard margin.", fill=(175, 175, 175), font=font)
    draw.rectangle((0, 900, 1240, 1754), fill="black")   # the desk under a photographed page
    draw.text((100, 1200), "White chalk on the dark half.", fill="white", font=font)
    [row] = records.to_rows(ocr(records.to_table([_row("photo.png", "image/png", encode([page], "PNG"))])))
    assert cer("Faint pencil notes on the whiteboard margin. White chalk on the dark half.",
               _page_text(row, 1)) < MAX_CER, row["markdown"]


def test_a_bad_row_fails_with_its_reason_and_the_others_are_read(ocr):
    good = encode([render(PAGE_ONE[:1])], "PNG")
    batch = records.to_table([
        _row("cut.png", "image/png", good[: len(good) // 2]),
        _row("fine.png", "image/png", good),
        records.new_row(item="notes.md", mime="text/markdown", outcome=records.PROCESS, markdown="# kept\n",
                        converter="passthrough"),
    ])
    cut, fine, notes = records.to_rows(ocr(batch))
    assert (cut["outcome"], cut["error_stage"]) == (records.FAILED, "ocr")
    assert cut["error"].startswith("truncated image")
    assert fine["outcome"] == records.PROCESS and "Dana Whitfield" in fine["markdown"]
    assert notes["markdown"] == "# kept\n" and notes["ocr_pages"] is None


def test_a_photo_without_words_fails_unless_a_describer_follows(ocr):
    picture = _row("hills.jpg", "image/jpeg", encode([photo()], "JPEG"))
    [alone] = records.to_rows(ocr(records.to_table([picture])))
    assert (alone["outcome"], alone["error_stage"], alone["error"]) == (
        records.FAILED, "ocr", "no_text_recognised: no text on any of its 1 pages")
    [described] = records.to_rows(Ocr(max_pixels=40_000_000, describe_next=True)(records.to_table([picture])))
    assert described["outcome"] == records.PROCESS and described["markdown"] == "## Page 1\n"
    assert [(p["lines"], p["reason"]) for p in described["ocr_pages"]] == [(0, "no_text_recognised")]


def test_a_batch_without_images_or_scans_never_loads_the_models():
    stage = Ocr(max_pixels=40_000_000)
    typed = records.new_row(item="a.md", filename="a.md", mime="text/markdown", outcome=records.PROCESS,
                            version_id="a", converter="passthrough", markdown="# A\n")
    [out] = records.to_rows(stage(records.to_table([typed])))
    assert stage._recogniser is None and out["markdown"] == "# A\n"
