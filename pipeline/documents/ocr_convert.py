"""The OCR stage's work on one row, given a recogniser: pages in, `document.md` and side rows out.

The recogniser (an image → its lines) is the only thing the actor brings (`actors/ocr.py`, which
owns the model); everything else — which pages to read, in what order the text goes, what
counts as nothing recognised — is decided here, so it is tested without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.documents.convert import CONVERTED, OCR, ConversionError
from pipeline.documents.ocr_pages import PageText, image_pages, pdf_pages
from pipeline.documents.ocr_text import NO_TEXT_RECOGNISED, TEXT_LAYER, Document, Line, Page, build_document
from pipeline.documents.ocr_text import OCR as OCR_SOURCE

if TYPE_CHECKING:
    from PIL.Image import Image

Recognise = Callable[["Image"], Sequence[Line]]


def _pages(content: bytes, pdf_page_list: Sequence[int] | None, recognise: Recognise,
           max_pixels: int) -> Iterator[Page]:
    source = image_pages(content, max_pixels) if pdf_page_list is None else pdf_pages(content, pdf_page_list,
                                                                                        max_pixels)
    for page in source:
        if isinstance(page, PageText):
            yield Page(page.number, 0, 0, TEXT_LAYER, text=page.text)
        else:
            width, height = page.image.size
            lines = tuple(recognise(page.image))
            number = page.number
            # the bitmap is let go before the next page is rendered: one page held at a time
            del page
            yield Page(number, width, height, OCR_SOURCE, lines)


def ocr_document(content: bytes, pdf_page_list: Sequence[int] | None, recognise: Recognise,
                 max_pixels: int, *, describe_next: bool = False) -> Document:
    """The document of an image (`pdf_page_list` None: every frame) or a PDF (those 0-based pages
    recognised, the others from their text layer). Raises `ConversionError` for a bad input and,
    unless a vision model describes the pages next (`describe_next`), when no page holds any text
    (`no_text_recognised`): a photo or a diagram without words is what a description is for, so
    then its document is the pages' headings alone, each page recorded with that reason, and the
    describe step decides (`ocr_describe.add_descriptions`)."""
    document = build_document(_pages(content, pdf_page_list, recognise, max_pixels))
    if not document.recognised and not describe_next:
        raise ConversionError(f"{NO_TEXT_RECOGNISED}: no text on any of its {len(document.pages)} pages")
    return document


def ocr_row(row: dict[str, Any], recognise: Recognise, max_pixels: int, version: str, *,
            describe_next: bool = False) -> None:
    """Fill the row's `document.md` and side rows; its bytes are dropped once read."""
    document = ocr_document(row["content"], row["ocr_pdf_pages"], recognise, max_pixels, describe_next=describe_next)
    row.update(markdown=document.markdown, converter=OCR, converter_version=version, derivation=CONVERTED,
               ocr_lines=document.lines, ocr_pages=document.pages, content=None)


def pages_recognised(row: dict[str, Any]) -> int:
    """Pages of the row that went through the recogniser."""
    return sum(1 for p in row["ocr_pages"] or [] if p["source"] == OCR_SOURCE)
