"""Which documents go to OCR, how their pages are read (one at a time), and the named failures of
bad input: truncated image, image bomb, encrypted PDF, nothing recognised. The recogniser here is a
stand-in that reports what it was given; tests/actors/test_ocr.py runs the real model."""

from __future__ import annotations

import io
import weakref

import pytest
from fpdf import FPDF
from PIL import Image

from pipeline.documents.convert import ConversionError, Converted, NeedsOcr, NoRoute, OcrOptions, convert, routable
from pipeline.documents.mime import mime_for
from pipeline.documents.ocr_convert import ocr_document
from pipeline.documents.ocr_text import Box, Line
from tests.support.ocr_pages import encode, render

OPTIONS = OcrOptions(min_pdf_page_chars=20)
PDF = "application/pdf"


def _text_pdf(pages: list[str | None], password: str | None = None) -> bytes:
    """A PDF whose pages have a text layer (str) or only a drawn box (None)."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text is None:
            pdf.rect(20, 20, 100, 50)
        else:
            pdf.multi_cell(0, 8, text)
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    return bytes(pdf.output())


@pytest.mark.parametrize("name", ["scan.png", "photo.JPG", "pages.tiff", "pages.tif", "slide.webp", "fax.bmp"])
def test_images_go_to_ocr_only_when_the_run_has_it(name):
    mime = mime_for(name)
    assert mime.startswith("image/") and mime in routable(ocr=True) and mime not in routable(ocr=False)
    assert convert(b"bytes", mime, name, OPTIONS) == NeedsOcr(None)
    with pytest.raises(NoRoute):
        convert(b"bytes", mime, name)


def test_a_pdf_with_a_text_layer_on_every_page_is_converted_as_before():
    done = convert(_text_pdf(["The board met on Tuesday and approved the budget."] * 2), PDF, "m.pdf", OPTIONS)
    assert isinstance(done, Converted) and "approved the budget" in done.markdown


def test_only_the_pdf_pages_without_a_text_layer_go_to_ocr():
    content = _text_pdf(["The board met on Tuesday and approved the budget.", None, "ok", None])
    assert convert(content, PDF, "m.pdf", OPTIONS) == NeedsOcr((1, 2, 3))


def test_an_encrypted_pdf_is_a_named_failure():
    with pytest.raises(ConversionError, match="^encrypted PDF"):
        convert(_text_pdf(["Secret minutes."], password="user"), PDF, "secret.pdf", OPTIONS)


def fake_recogniser(seen: list):
    """Says each page holds one line naming its size; remembers the images it was shown (weakly)."""
    def recognise(image: Image.Image) -> list[Line]:
        seen.append(weakref.ref(image))
        alive = sum(1 for ref in seen if ref() is not None)
        return [Line(f"page of {image.size[0]}x{image.size[1]} alive {alive}", Box(0, 0, 10, 10), 0.99)]
    return recognise


def test_a_multi_page_tiff_is_read_frame_by_frame_into_one_section_per_page():
    pages = [render([f"page {n}"], font_px=20) for n in (1, 2, 3)]
    doc = ocr_document(encode(pages, "TIFF"), None, fake_recogniser([]), max_pixels=10**7)
    assert [p["page"] for p in doc.pages] == [1, 2, 3]
    assert doc.markdown.count("## Page ") == 3


def test_a_300_page_scan_holds_one_rendered_page_at_a_time():
    page = Image.new("RGB", (120, 60), "white")
    content = encode([page] * 300, "PDF")
    seen: list = []
    doc = ocr_document(content, list(range(300)), fake_recogniser(seen), max_pixels=10**7)
    assert len(seen) == 300 and len(doc.pages) == 300
    # each line says how many rendered pages were alive while its page was recognised
    assert {doc.markdown[ln["char_start"]:ln["char_end"]].rsplit(" ", 1)[1] for ln in doc.lines} == {"1"}


def test_pdf_pages_are_rendered_smaller_to_fit_the_pixel_limit():
    content = encode([Image.new("RGB", (1000, 1000), "white")], "PDF")
    doc = ocr_document(content, [0], fake_recogniser([]), max_pixels=250_000)
    assert doc.pages[0]["width"] * doc.pages[0]["height"] <= 250_000


def test_an_image_over_the_pixel_limit_is_an_image_bomb_before_it_is_decoded():
    content = encode([Image.new("RGB", (3000, 2000), "white")], "PNG")
    with pytest.raises(ConversionError, match=r"^image bomb: page 1 is 3000x2000 = 6000000 pixels, over the limit "
                                              r"of 1000000 \(CORPUSMEM_OCR_MAX_PIXELS\)"):
        ocr_document(content, None, fake_recogniser([]), max_pixels=1_000_000)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_truncated_image_is_a_named_failure(fmt):
    content = encode([render(["cut short"], font_px=20)], fmt)
    with pytest.raises(ConversionError, match="^truncated image"):
        ocr_document(content[: len(content) // 2], None, fake_recogniser([]), max_pixels=10**7)


def test_bytes_that_are_no_image_are_a_named_failure():
    with pytest.raises(ConversionError, match="^unreadable image"):
        ocr_document(b"not an image at all", None, fake_recogniser([]), max_pixels=10**7)


def test_a_page_where_nothing_is_recognised_fails_the_document_with_its_reason():
    content = encode([Image.new("RGB", (200, 100), "white")], "PNG")
    with pytest.raises(ConversionError, match="^no_text_recognised: no text on any of its 1 pages"):
        ocr_document(content, None, lambda image: [], max_pixels=10**7)


def test_with_a_describer_next_a_document_where_nothing_is_recognised_goes_on_with_its_headings():
    content = encode([Image.new("RGB", (200, 100), "white")] * 2, "TIFF")
    doc = ocr_document(content, None, lambda image: [], max_pixels=10**7, describe_next=True)
    assert doc.markdown == "## Page 1\n\n## Page 2\n" and doc.lines == []
    assert [(p["page"], p["reason"], doc.markdown[p["char_start"]:p["char_end"]]) for p in doc.pages] == [
        (1, "no_text_recognised", "## Page 1\n"), (2, "no_text_recognised", "## Page 2\n")]


def test_the_pixel_limit_is_checked_on_every_frame():
    content = encode([Image.new("RGB", (100, 100)), Image.new("RGB", (2000, 2000))], "TIFF")
    with pytest.raises(ConversionError, match="^image bomb: page 2"):
        list(ocr_document(content, None, fake_recogniser([]), max_pixels=1_000_000).pages)


def test_a_pdf_that_pdfium_cannot_open_keeps_markitdowns_error():
    with pytest.raises(ConversionError, match="markitdown could not read"):
        convert(b"%PDF-1.4 garbage", PDF, "bad.pdf", OPTIONS)


def test_an_image_file_is_not_sniffed_from_its_bytes():
    png = io.BytesIO()
    Image.new("RGB", (10, 10)).save(png, "PNG")
    with pytest.raises(NoRoute):
        convert(png.getvalue(), "application/octet-stream", "x.bin", OPTIONS)
