"""Turn a document's bytes into the one Markdown string every later offset indexes.

The route is chosen from the declared MIME type (and, where an operator routed an extension,
the file's name: `routes.py`), never sniffed from the bytes: a file that says it is a PDF is read
as a PDF or fails as one. Markdown and plain text pass through (strict UTF-8); HTML, the Office
and PDF formats, EPUB and notebooks go through markitdown's converter for that format; tables,
data, code, mail, OpenDocument and RTF through the modules named in `_convert_text`. A type
without a route raises `NoRoute` (the version is stored and parked); bad input raises
`ConversionError` with a reason a user can act on, whose first words name it (`binary content`,
`undecodable text`, `zip bomb`, `ragged rows`, `malformed message`, ...). Images, and PDFs with
pages whose text layer is empty or nearly so, are left to the OCR stage (`NeedsOcr`) when the run
has one; without it an image has no route and such a PDF is converted from what text it has.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import re
import zipfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeline.documents import routes as routes_mod
from pipeline.documents.routes import DEFAULT_ROUTES, Routes
from pipeline.documents.structure import TABLE

if TYPE_CHECKING:
    from markitdown import DocumentConverter

PASSTHROUGH = "passthrough"
MARKITDOWN = "markitdown"
CONVERTED = "converted"
PASSTHROUGH_VERSION = "1"
OCR = "ocr"
# The version of the converters written here (tables' grouping, data, code, mail): a change in
# what they write is a new number, so a representation says which rendering it holds.
OWN_VERSION = "1"


@dataclass(frozen=True)
class Route:
    converter: str          # PASSTHROUGH, MARKITDOWN, OCR, or the route's name for the others
    markitdown_class: str   # name in `markitdown.converters`; "" when markitdown does not read it
    extension: str          # what markitdown is told the file's extension is


# Route name → how it converts.
_BY_NAME: dict[str, Route] = {
    routes_mod.PASSTHROUGH: Route(PASSTHROUGH, "", ""),
    "html": Route(MARKITDOWN, "HtmlConverter", ".html"),
    "docx": Route(MARKITDOWN, "DocxConverter", ".docx"),
    "pptx": Route(MARKITDOWN, "PptxConverter", ".pptx"),
    "xlsx": Route(MARKITDOWN, "XlsxConverter", ".xlsx"),
    "pdf": Route(MARKITDOWN, "PdfConverter", ".pdf"),
    "epub": Route(MARKITDOWN, "EpubConverter", ".epub"),
    "notebook": Route(MARKITDOWN, "IpynbConverter", ".ipynb"),
    routes_mod.OCR: Route(OCR, "", ""),
    **{name: Route(name, "", "") for name in ("csv", "tsv", "json", "jsonl", "yaml", "xml", "code", "mail",
                                             "mbox", "msg", "opendocument", "rtf")},
}

# Exact MIME essence → route of the built-in table (an operator's entries are in `Routes`).
ROUTES: dict[str, Route] = {mime: _BY_NAME[name] for mime, name in DEFAULT_ROUTES.items()}

# Formats that are zip containers: their members are checked against the archive caps before a
# converter opens them (markitdown and odfpy read members whole).
_ZIPPED = ("docx", "pptx", "xlsx", "epub", "opendocument")
# Routes whose documents are tables: every section has the role `table`, which states nothing
# (`structure.SILENT_ROLES`).
TABLE_ROUTES = ("csv", "tsv")


def routable(ocr: bool) -> tuple[str, ...]:
    """The MIME types of the built-in table a run converts: all, or without OCR all but images."""
    return tuple(m for m, r in ROUTES.items() if ocr or r.converter != OCR)


def section_role(converter: str | None) -> str | None:
    """The role every section of a document converted by `converter` has, or None: by heading."""
    return TABLE if converter in TABLE_ROUTES else None


@dataclass(frozen=True)
class OcrOptions:
    """What a run with an OCR stage asks of `convert`."""

    min_pdf_page_chars: int   # a PDF page whose text layer has fewer non-space chars is OCR'd


@dataclass(frozen=True)
class ConvertOptions:
    """What a run asks of `convert` beyond OCR: its routes, the chunk target (the size of a
    table's groups of rows, of a code file's blocks) and the caps a zip container is held to."""

    routes: Routes = field(default_factory=Routes)
    target_chars: int = 800
    zip_max_bytes: int = 1024**3        # CORPUSMEM_ARCHIVE_MAX_BYTES
    zip_max_ratio: float = 200.0        # CORPUSMEM_ARCHIVE_MAX_RATIO
    zip_max_members: int = 100_000      # CORPUSMEM_ARCHIVE_MAX_MEMBERS

# Long library messages (pdfminer, zipfile) are cut so that the import report stays readable.
_CAUSE_MAX_CHARS = 200
# A zip member that expands to less is never refused for its ratio (as for archives).
_RATIO_FLOOR_BYTES = 1024 * 1024

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


def convert(content: bytes, mime: str, filename: str, ocr: OcrOptions | None = None,
            options: ConvertOptions = ConvertOptions()) -> Converted | NeedsOcr:
    """Convert `content`, declared as `mime`, into normalised Markdown, or say that the OCR stage
    must (only when `ocr` is given: a run without OCR has no route for images).

    The MIME type is matched on its essence (parameters such as `; charset=...` dropped, case
    folded, as RFC 2045 compares types); nothing is guessed from `content`, and `filename` counts
    only where the run's routes name its extension. Raises `NoRoute` for a type without a route
    and `ConversionError` for input that cannot be read. The returned Markdown has `\\n` line
    ends only, no trailing whitespace, and exactly one final newline; every char offset
    downstream indexes this exact string.
    """
    essence = routes_mod.essence(mime)
    name = dataclasses.replace(options.routes, ocr=ocr is not None).route(mime, filename)
    if name is None:
        raise NoRoute(mime)
    route = _BY_NAME[name]
    if not content:
        raise ConversionError("document is empty (0 bytes)")
    if route.converter == OCR:
        return NeedsOcr(None)
    if essence == "application/pdf" and ocr is not None and name == "pdf":
        scanned = _scanned_pages(content, ocr.min_pdf_page_chars)
        if scanned:
            return NeedsOcr(scanned)
    if route.converter == PASSTHROUGH:
        text = _decode_text(content)
        return Converted(_normalise(text), PASSTHROUGH, PASSTHROUGH_VERSION, PASSTHROUGH)
    if name in _ZIPPED:
        _check_zip(content, options)
    if route.converter == MARKITDOWN:
        if name == "notebook":
            _decode_text(content)   # a notebook is JSON text: binary or undecodable bytes are named so
        text = _markitdown(content, essence, route, filename)
        return Converted(_normalise(text), MARKITDOWN, _markitdown_version(), CONVERTED)
    text, version = _convert_other(name, content, essence, filename, options)
    return Converted(_normalise(_clean(text)), name, version, CONVERTED)


def _convert_other(name: str, content: bytes, essence: str, filename: str,
                   options: ConvertOptions) -> tuple[str, str]:
    """(Markdown, converter version) of a route markitdown does not take."""
    from pipeline.documents import code, data, mail, richtext, tables

    try:
        if name in ("csv", "tsv"):
            return tables.to_markdown(_decode_text(content), tables.DELIMITERS[name], options.target_chars), \
                f"{OWN_VERSION} (markitdown {_markitdown_version()})"
        if name == "json":
            return data.to_markdown(data.json_records(_decode_text(content))), OWN_VERSION
        if name == "jsonl":
            return data.to_markdown(data.jsonl_records(_decode_text(content))), OWN_VERSION
        if name == "yaml":
            return data.to_markdown(data.yaml_records(_decode_text(content))), OWN_VERSION
        if name == "xml":
            _no_nul(content)
            return data.to_markdown(data.xml_records(content)), OWN_VERSION
        if name == "code":
            language = routes_mod.CODE_LANGUAGES.get(essence) or _language_of(filename)
            return code.to_markdown(_decode_text(content), language, filename, options.target_chars), OWN_VERSION
        if name == "mail":
            return mail.message_markdown(content), OWN_VERSION
        if name == "mbox":
            return mail.mbox_markdown(content), OWN_VERSION
        if name == "msg":
            return mail.msg_markdown(content), OWN_VERSION
        if name == "opendocument":
            return richtext.opendocument_markdown(content), richtext.versions()[name]
        return richtext.rtf_markdown(content), richtext.versions()["rtf"]
    except (tables.RaggedRows, data.DataError, mail.MailError, richtext.RichTextError) as err:
        raise ConversionError(str(err)) from None
    except ValueError as err:   # `code`: source its own parser refuses
        raise ConversionError(f"unreadable {name}: {err}") from None


def _language_of(filename: str) -> str:
    """The language of a file routed `code` by an operator's entry for its extension."""
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(filename).aliases[0]
    except (ClassNotFound, IndexError):
        return ""


def _check_zip(content: bytes, options: ConvertOptions) -> None:
    """Refuse a zip container that would expand past the archive caps, from its directory alone:
    zipfile reads no member past its declared size, so a lying header cannot get past this. One
    that is no zip at all is left to its converter, whose error names the format."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(content)).infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        return
    if len(infos) > options.zip_max_members:
        raise ConversionError(f"zip bomb: {len(infos)} members, over CORPUSMEM_ARCHIVE_MAX_MEMBERS="
                              f"{options.zip_max_members}")
    total = 0
    for info in infos:
        total += info.file_size
        if total > options.zip_max_bytes:
            raise ConversionError(f"zip bomb: it expands past CORPUSMEM_ARCHIVE_MAX_BYTES={options.zip_max_bytes}")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size >= _RATIO_FLOOR_BYTES and ratio > options.zip_max_ratio:
            raise ConversionError(f"zip bomb: member {info.filename!r} expands {info.compress_size} compressed "
                                  f"bytes to {info.file_size} (ratio {ratio:.0f}), over "
                                  f"CORPUSMEM_ARCHIVE_MAX_RATIO={options.zip_max_ratio:g}")


def _scanned_pages(content: bytes, min_chars: int) -> tuple[int, ...]:
    """PDF pages whose text layer is too thin; none when pdfium cannot open the file, so that
    markitdown's reading of it (and its error) stands. An encrypted PDF is refused here."""
    from pipeline.documents.ocr_pages import UnreadablePdf, text_layer_chars
    from pipeline.documents.ocr_text import pages_needing_ocr

    try:
        return tuple(pages_needing_ocr(text_layer_chars(content), min_chars))
    except UnreadablePdf:
        return ()


def _no_nul(content: bytes) -> None:
    nul = content.find(b"\x00")
    if nul >= 0:
        raise ConversionError(f"binary content: contains NUL bytes (first at byte {nul})")


def _decode_text(content: bytes) -> str:
    _no_nul(content)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConversionError(f"undecodable text: not valid UTF-8 at byte {exc.start}") from None
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
    text = _clean(result.text_content)
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


def _clean(text: str) -> str:
    """The same clean-up MarkItDown.convert_stream applies to every converter's output; also no
    form feed (pdfminer ends every page with one) and no NUL (PostgreSQL text cannot hold it)."""
    text = text.replace("\x0c", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in _NEWLINES.sub("\n", text).split("\n"))
    return _BLANK_RUNS.sub("\n\n", text)


def _normalise(text: str) -> str:
    text = _NEWLINES.sub("\n", text).rstrip()
    if not text:
        raise ConversionError("no text found")
    return text + "\n"
