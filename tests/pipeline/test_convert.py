"""convert: routes by declared MIME type, normalised Markdown, clear errors for bad input."""

from __future__ import annotations

import io

import pytest
from docx import Document
from fpdf import FPDF
from markitdown import __version__ as markitdown_version
from openpyxl import Workbook
from pptx import Presentation

from pipeline.documents.convert import ConversionError, Converted, NoRoute, convert

OOXML = "application/vnd.openxmlformats-officedocument."
DOCX = OOXML + "wordprocessingml.document"
PPTX = OOXML + "presentationml.presentation"
XLSX = OOXML + "spreadsheetml.sheet"
PDF = "application/pdf"


def docx_bytes() -> bytes:
    document = Document()
    document.add_heading("Annual Report", level=1)
    document.add_heading("Staff", level=2)
    document.add_paragraph("Acme Corp hired Jane Doe in 2021.")
    document.add_paragraph("first item", style="List Bullet")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_bytes() -> bytes:
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Quarterly Review"
    slide.placeholders[1].text = "Revenue grew 12 percent"
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_bytes() -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Staff"
    sheet.append(["Name", "Role"])
    sheet.append(["Jane Doe", "Engineer"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def pdf_bytes(text: str | None = "Acme Corp hired Jane Doe in 2021.") -> bytes:
    pdf = FPDF()
    pdf.add_page()
    if text is None:
        pdf.rect(20, 20, 100, 50)
    else:
        pdf.set_font("Helvetica", size=12)
        pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def assert_normalised(markdown: str) -> None:
    assert "\r" not in markdown
    assert markdown.endswith("\n") and not markdown.endswith("\n\n")
    assert markdown == markdown.rstrip() + "\n"


def test_docx_keeps_headings_and_text():
    result = convert(docx_bytes(), DOCX, "report.docx")
    assert result.converter == "markitdown"
    assert result.converter_version == markitdown_version
    assert result.derivation == "converted"
    assert "# Annual Report" in result.markdown
    assert "## Staff" in result.markdown
    assert "Acme Corp hired Jane Doe in 2021." in result.markdown
    assert_normalised(result.markdown)


def test_pptx_slide_title_becomes_heading():
    markdown = convert(pptx_bytes(), PPTX, "deck.pptx").markdown
    assert "# Quarterly Review" in markdown
    assert "Revenue grew 12 percent" in markdown


def test_xlsx_sheet_becomes_table():
    markdown = convert(xlsx_bytes(), XLSX, "staff.xlsx").markdown
    assert "## Staff" in markdown
    assert "| Jane Doe | Engineer |" in markdown


def test_pdf_text_layer_survives():
    markdown = convert(pdf_bytes(), PDF, "memo.pdf").markdown
    assert "Acme Corp hired Jane Doe in 2021." in markdown
    assert "\x0c" not in markdown
    assert_normalised(markdown)


def test_html_becomes_markdown():
    html = b"<html><body><h1>Hello</h1><p>World <b>bold</b></p><ul><li>item</li></ul></body></html>"
    markdown = convert(html, "text/html", "page.html").markdown
    assert "# Hello" in markdown
    assert "World **bold**" in markdown
    assert "item" in markdown


@pytest.mark.parametrize("mime", ["text/markdown", "text/plain"])
def test_text_passes_through(mime):
    result = convert("# Título\n\nAcme  \nhard break kept\n".encode(), mime, "a.md")
    assert result == Converted("# Título\n\nAcme  \nhard break kept\n", "passthrough", "1", "passthrough")


def test_passthrough_drops_bom_and_normalises_line_ends():
    content = b"\xef\xbb\xbfline one\r\nline two\rline three\n\n\n  \n"
    assert convert(content, "text/plain", "a.txt").markdown == "line one\nline two\nline three\n"


def test_mime_parameters_and_case_are_ignored():
    assert convert(b"hi", "Text/Markdown; charset=utf-8", "a.md").markdown == "hi\n"


def test_empty_document_is_an_error():
    with pytest.raises(ConversionError, match=r"document is empty \(0 bytes\)"):
        convert(b"", "text/plain", "a.txt")


def test_invalid_utf8_names_the_byte():
    with pytest.raises(ConversionError, match="not valid UTF-8 at byte 6"):
        convert(b"hello \xff world", "text/markdown", "a.md")


def test_invalid_utf8_offset_counts_the_bom():
    with pytest.raises(ConversionError, match="not valid UTF-8 at byte 4"):
        convert(b"\xef\xbb\xbfa\xc3", "text/plain", "a.txt")


def test_nul_bytes_are_refused():
    with pytest.raises(ConversionError, match="contains NUL bytes"):
        convert(b"text\x00more", "text/plain", "a.txt")


def test_whitespace_only_text_has_no_text():
    with pytest.raises(ConversionError, match="no text found"):
        convert(b" \n\t\n", "text/plain", "a.txt")


def test_corrupt_docx_is_an_error_not_sniffed_text():
    with pytest.raises(ConversionError, match=f"markitdown could not read this {DOCX}: BadZipFile"):
        convert(b"plain words that are not a zip file", DOCX, "broken.docx")


def test_random_bytes_as_docx_are_an_error():
    content = bytes(range(256)) * 8
    with pytest.raises(ConversionError, match="markitdown could not read this"):
        convert(content, DOCX, "broken.docx")


def test_truncated_pdf_is_an_error():
    with pytest.raises(ConversionError, match="markitdown could not read this application/pdf: "):
        convert(pdf_bytes()[:20], PDF, "broken.pdf")


def test_pdf_without_text_layer_needs_ocr():
    with pytest.raises(ConversionError, match=r"no text found \(a PDF without a text layer needs OCR\)"):
        convert(pdf_bytes(None), PDF, "scan.pdf")


@pytest.mark.parametrize("mime", ["text/x-markdown", "application/zip", "image/png", ""])
def test_unknown_mime_has_no_route(mime):
    with pytest.raises(NoRoute) as caught:
        convert(b"# hello", mime, "a.md")
    assert caught.value.mime == mime


def test_no_route_wins_over_empty_content():
    with pytest.raises(NoRoute):
        convert(b"", "application/octet-stream", "blob")
