"""The pages of an image or a PDF, one at a time: what the OCR stage reads and what it may not.

An image file is its frames (a TIFF has one per page); a PDF is its pages, each either its text
layer or a bitmap rendered for OCR. Pages are yielded one by one and nothing keeps a reference to
a page already yielded, so a 300-page scan holds one rendered page at a time, never the whole
document. Every refusal is a `ConversionError` whose message starts with a named reason:
`truncated image`, `image bomb` (more pixels than the limit, checked from the header before any
pixel is decoded), `encrypted PDF`, `unreadable image`, `unreadable PDF`.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.documents.convert import ConversionError

if TYPE_CHECKING:
    from PIL.Image import Image

# PDF pages are rendered at this resolution for OCR: small print (9 pt) is then about 25 px
# high, what the recogniser reads well; more costs time quadratically and gains little.
PDF_DPI = 200
_PDFIUM_PASSWORD_ERROR = 4   # FPDF_ERR_PASSWORD


class UnreadablePdf(ConversionError):
    """pdfium cannot open the file (not a PDF, or damaged beyond its repair)."""


@dataclass(frozen=True)
class PageImage:
    """A page to recognise (`number` is 1-based)."""

    number: int
    image: Image


@dataclass(frozen=True)
class PageText:
    """A PDF page whose text layer is kept."""

    number: int
    text: str


def _open_pdf(content: bytes):
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(content)
    except pdfium.PdfiumError as err:
        if getattr(err, "err_code", None) == _PDFIUM_PASSWORD_ERROR:
            raise ConversionError("encrypted PDF: it cannot be read without its password") from None
        raise UnreadablePdf(f"unreadable PDF: {err}") from None


def text_layer_chars(content: bytes) -> list[int]:
    """Non-space characters of each PDF page's text layer, page by page."""
    pdf = _open_pdf(content)
    try:
        counts = []
        for i in range(len(pdf)):
            page = pdf[i]
            text = page.get_textpage()
            counts.append(sum(1 for c in text.get_text_range() if not c.isspace()))
            text.close()
            page.close()
        return counts
    finally:
        pdf.close()


def pdf_pages(content: bytes, ocr_pages: Sequence[int], max_pixels: int) -> Iterator[PageImage | PageText]:
    """Each page of a PDF: rendered for OCR when its 0-based index is in `ocr_pages`, else its text
    layer. A page that would render to more than `max_pixels` is rendered smaller to fit."""
    pdf = _open_pdf(content)
    wanted = set(ocr_pages)
    try:
        for i in range(len(pdf)):
            page = pdf[i]
            try:
                if i in wanted:
                    width, height = page.get_size()
                    scale = PDF_DPI / 72
                    # 1 % under the limit: pdfium rounds each side up to a whole pixel
                    scale = min(scale, 0.99 * (max_pixels / max(width * height, 1.0)) ** 0.5)
                    bitmap = page.render(scale=scale)
                    image = bitmap.to_pil()
                    bitmap.close()
                    yield PageImage(i + 1, image)
                    del image
                else:
                    text = page.get_textpage()
                    yield PageText(i + 1, text.get_text_range())
                    text.close()
            finally:
                page.close()
    finally:
        pdf.close()


def image_pages(content: bytes, max_pixels: int) -> Iterator[PageImage]:
    """Each frame of an image file (a multi-page TIFF has several), decoded one at a time."""
    from PIL import Image as PilImage
    from PIL import UnidentifiedImageError

    try:
        opened = PilImage.open(io.BytesIO(content))
    except PilImage.DecompressionBombError as err:   # Pillow's own ceiling, above any sane limit
        raise ConversionError(f"image bomb: {err}") from None
    except (UnidentifiedImageError, OSError) as err:
        raise ConversionError(f"unreadable image: {err}") from None
    with opened:
        frames = getattr(opened, "n_frames", 1)
        for i in range(frames):
            opened.seek(i)
            width, height = opened.size
            if width * height > max_pixels:
                raise ConversionError(f"image bomb: page {i + 1} is {width}x{height} = {width * height} pixels, "
                                      f"over the limit of {max_pixels} (CORPUSMEM_OCR_MAX_PIXELS)")
            try:
                opened.load()
                frame = opened.convert("RGB")
            except OSError as err:
                raise ConversionError(f"truncated image: page {i + 1}: {err}") from None
            yield PageImage(i + 1, frame)
            del frame
