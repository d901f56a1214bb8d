"""Turn a document's bytes into the one Markdown string every later offset indexes.

The route is chosen from the declared MIME type alone, never sniffed from the bytes: a file that
says it is a PDF is read as a PDF or fails as one. Markdown and plain text pass through (strict
UTF-8); HTML and the Office/PDF formats go through markitdown's converter for that format. A type
without a route raises `NoRoute` (the version is stored and parked); bad input raises
`ConversionError` with a reason a user can act on. Images, and PDFs with pages whose text layer
is empty or nearly so, are left to the OCR stage (`NeedsOcr`) when the run has one; without it an
image has no route and such a PDF is converted from what text it has.
"""

from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.documents.archives import is_archive
from pipeline.documents.mime import mime_for

if TYPE_CHECKING:
    from markitdown import DocumentConverter

PASSTHROUGH = "passthrough"
MARKITDOWN = "markitdown"
CONVERTED = "converted"
PASSTHROUGH_VERSION = "1"
OCR = "ocr"

_OOXML = "application/vnd.openxmlformats-officedocument."


@dataclass(frozen=True)
class Route:
    converter: str          # PASSTHROUGH, MARKITDOWN or OCR
    markitdown_class: str   # name in `markitdown.converters`; "" for passthrough
    extension: str          # what markitdown is told the file's extension is


# Exact MIME essence → route. `text/x-markdown` and friends are deliberately absent: the ingest
# stage names types canonically, so an unknown spelling is a gap to fix there, not here.
ROUTES: dict[str, Route] = {
    "text/markdown": Route(PASSTHROUGH, "", ".md"),
    "text/plain": Route(PASSTHROUGH, "", ".txt"),
    "text/html": Route(MARKITDOWN, "HtmlConverter", ".html"),
    _OOXML + "wordprocessingml.document": Route(MARKITDOWN, "DocxConverter", ".docx"),
    _OOXML + "presentationml.presentation": Route(MARKITDOWN, "PptxConverter", ".pptx"),
    _OOXML + "spreadsheetml.sheet": Route(MARKITDOWN, "XlsxConverter", ".xlsx"),
    "application/pdf": Route(MARKITDOWN, "PdfConverter", ".pdf"),
    "image/png": Route(OCR, "", ".png"),
    "image/jpeg": Route(OCR, "", ".jpg"),
    "image/tiff": Route(OCR, "", ".tif"),
    "image/webp": Route(OCR, "", ".webp"),
    "image/bmp": Route(OCR, "", ".bmp"),
}


def routable(ocr: bool) -> tuple[str, ...]:
    """The MIME types a run converts: every route, or without OCR all but the images."""
    return tuple(m for m, r in ROUTES.items() if ocr or r.converter != OCR)


def may_need_ocr(filename: str) -> bool:
    """Whether a file of this name can reach the OCR stage: an image, a PDF (its pages without a
    text layer), or an archive (its members are known only once it is read)."""
    mime = mime_for(filename)
    return is_archive(filename) or mime == "application/pdf" or (mime in ROUTES and ROUTES[mime].converter == OCR)


@dataclass(frozen=True)
class OcrOptions:
    """What a run with an OCR stage asks of `convert`."""

    min_pdf_page_chars: int   # a PDF page whose text layer has fewer non-space chars is OCR'd

# Long library messages (pdfminer, zipfile) are cut so that the import report stays readable.
_CAUSE_MAX_CHARS = 200

_NEWLINES = re.compile(r"\r\n?")
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class Converted:
    markdown: str
    converter: str
    converter_version: str
    derivation: str


@dataclass(frozen=True)
class NeedsOcr:
    """The OCR stage converts this document: `pdf_pages`, the 0-based PDF pages to recognise (the
    others keep their text layer); None for an image, every frame of which is recognised."""

    pdf_pages: tuple[int, ...] | None


class ConversionError(Exception):
    """The document has a route but cannot be turned into text; the message says why."""


class NoRoute(Exception):
    """No converter for this declared MIME type: the version is stored and parked, not failed."""

    def __init__(self, mime: str):
        self.mime = mime
        super().__init__(f"no converter route for MIME type {mime!r}")


def convert(content: bytes, mime: str, filename: str, ocr: OcrOptions | None = None) -> Converted | NeedsOcr:
    """Convert `content`, declared as `mime`, into normalised Markdown, or say that the OCR stage
    must (only when `ocr` is given: a run without OCR has no route for images).

    The MIME type is matched on its essence (parameters such as `; charset=...` dropped, case
    folded, as RFC 2045 compares types); nothing is guessed from `content` or `filename`.
    Raises `NoRoute` for a type without a route and `ConversionError` for input that cannot be
    read. The returned Markdown has `\\n` line ends only, no trailing whitespace, and exactly one
    final newline; every char offset downstream indexes this exact string.
    """
    essence = mime.split(";", 1)[0].strip().lower()
    route = ROUTES.get(essence)
    if route is None or (route.converter == OCR and ocr is None):
        raise NoRoute(mime)
    if not content:
        raise ConversionError("document is empty (0 bytes)")
    if route.converter == OCR:
        return NeedsOcr(None)
    if essence == "application/pdf" and ocr is not None:
        scanned = _scanned_pages(content, ocr.min_pdf_page_chars)
        if scanned:
            return NeedsOcr(scanned)
    if route.converter == PASSTHROUGH:
        text = _decode_text(content)
        return Converted(_normalise(text), PASSTHROUGH, PASSTHROUGH_VERSION, PASSTHROUGH)
    text = _markitdown(content, essence, route, filename)
    return Converted(_normalise(text), MARKITDOWN, _markitdown_version(), CONVERTED)


def _scanned_pages(content: bytes, min_chars: int) -> tuple[int, ...]:
    """PDF pages whose text layer is too thin; none when pdfium cannot open the file, so that
    markitdown's reading of it (and its error) stands. An encrypted PDF is refused here."""
    from pipeline.documents.ocr_pages import UnreadablePdf, text_layer_chars
    from pipeline.documents.ocr_text import pages_needing_ocr

    try:
        return tuple(pages_needing_ocr(text_layer_chars(content), min_chars))
    except UnreadablePdf:
        return ()


def _decode_text(content: bytes) -> str:
    nul = content.find(b"\x00")
    if nul >= 0:
        raise ConversionError(f"contains NUL bytes (first at byte {nul})")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConversionError(f"not valid UTF-8 at byte {exc.start}") from None
    # Decoding first and dropping the BOM after keeps error offsets relative to the raw bytes.
    return text.removeprefix("\ufeff")


def _markitdown(content: bytes, mime: str, route: Route, filename: str) -> str:
    from markitdown import MissingDependencyException, StreamInfo

    converter = _markitdown_converter(route.markitdown_class)
    info = StreamInfo(mimetype=mime, extension=route.extension, filename=filename or None)
    try:
        result = converter.convert(io.BytesIO(content), info)
    except MissingDependencyException:
        # A broken install fails every document of the type; that is a deployment error to
        # surface loudly, not one more bad file in the report.
        raise
    except Exception as exc:
        raise ConversionError(f"markitdown could not read this {mime}: {_short_cause(exc)}") from exc
    # pdfminer ends every page with a form feed; PostgreSQL text cannot hold NUL.
    text = result.text_content.replace("\x0c", "\n").replace("\x00", "")
    # The same clean-up MarkItDown.convert_stream applies to every converter's output.
    text = "\n".join(line.rstrip() for line in _NEWLINES.sub("\n", text).split("\n"))
    text = _BLANK_RUNS.sub("\n\n", text)
    if not text.strip():
        hint = " (a PDF without a text layer needs OCR)" if mime == "application/pdf" else ""
        raise ConversionError(f"no text found{hint}")
    return text


# The converters are called directly rather than through `MarkItDown.convert_stream`: that entry
# point adds magika's guess from the bytes and, when the declared format's converter fails, tries
# the others — a corrupt .docx holding plain text came back as that text, and `%PDF-1.4` garbage
# came back verbatim. Routing stays on the declared type, and the magika model is never loaded.
@functools.cache
def _markitdown_converter(name: str) -> DocumentConverter:
    from markitdown import converters

    return getattr(converters, name)()


@functools.cache
def _markitdown_version() -> str:
    from markitdown import __version__

    return __version__


def _short_cause(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    cause = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    if len(cause) > _CAUSE_MAX_CHARS:
        cause = cause[: _CAUSE_MAX_CHARS - 1] + "…"
    return cause


def _normalise(text: str) -> str:
    text = _NEWLINES.sub("\n", text).rstrip()
    if not text:
        raise ConversionError("no text found")
    return text + "\n"
