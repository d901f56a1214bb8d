"""Conversion routes: which converter reads a declared MIME type, and what an operator may change.

Every route has a name. The built-in table maps MIME types to route names; an operator's
`CORPUSMEM_CONVERSION_ROUTES` (`jobs/settings.py` parses it once, with `parse_routes`) maps MIME
types or file extensions to route names too, or to `park`:

    text/x-foo=passthrough,.log=passthrough,application/octet-stream=park

An extension entry wins over a MIME entry, which wins over the built-in table; an extension is
matched case-insensitively on the name's last suffix. `park` stores a version and parks it
(`no_route`), as a type without a route is; `corpusmem retry` converts it once a route exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

PARK = "park"

# Route names, and what each reads. `ocr` routes exist only in a run with an OCR stage.
PASSTHROUGH = "passthrough"
OCR = "ocr"
ROUTE_NAMES: dict[str, str] = {
    PASSTHROUGH: "Markdown or plain text, as it is (strict UTF-8)",
    "html": "HTML, by markitdown",
    "docx": "Word documents, by markitdown",
    "pptx": "PowerPoint decks, by markitdown",
    "xlsx": "Excel workbooks, by markitdown",
    "pdf": "PDF with a text layer, by markitdown (pages without one go to OCR)",
    "epub": "EPUB books, by markitdown",
    "notebook": "Jupyter notebooks, by markitdown: Markdown cells are prose, code cells code",
    "csv": "comma-separated tables, as Markdown tables with the header in every group of rows",
    "tsv": "tab-separated tables, the same way",
    "json": "a JSON document, one section per record",
    "jsonl": "JSON Lines, one section per line",
    "yaml": "YAML (every document of the stream), one section per record",
    "xml": "XML (entities refused), one section per child of the root",
    "code": "source code: definitions as sections, code fenced, comments and docstrings prose",
    "mail": "one email message (RFC 5322)",
    "mbox": "an mbox of messages, one section per message (a file on a drive is split by the reader)",
    "msg": "an Outlook message (.msg)",
    "opendocument": "OpenDocument text, spreadsheets and presentations, by odfpy",
    "rtf": "RTF, by striprtf",
    OCR: "images and scanned pages, by the OCR stage",
}

_OOXML = "application/vnd.openxmlformats-officedocument."
_ODF = "application/vnd.oasis.opendocument."

# Exact MIME essence → route name. `text/x-markdown` and friends are deliberately absent: the
# reader names types canonically (`mime.py`), so an unknown spelling is a gap to fix there, or an
# operator's route to add, not a guess here.
DEFAULT_ROUTES: dict[str, str] = {
    "text/markdown": PASSTHROUGH,
    "text/plain": PASSTHROUGH,
    "text/html": "html",
    _OOXML + "wordprocessingml.document": "docx",
    _OOXML + "presentationml.presentation": "pptx",
    _OOXML + "spreadsheetml.sheet": "xlsx",
    "application/pdf": "pdf",
    "application/epub+zip": "epub",
    "application/x-ipynb+json": "notebook",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
    "application/json": "json",
    "application/x-ndjson": "jsonl",
    "application/yaml": "yaml",
    "application/xml": "xml",
    "text/xml": "xml",
    "message/rfc822": "mail",
    "application/mbox": "mbox",
    "application/vnd.ms-outlook": "msg",
    _ODF + "text": "opendocument",
    _ODF + "spreadsheet": "opendocument",
    _ODF + "presentation": "opendocument",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "image/png": OCR,
    "image/jpeg": OCR,
    "image/tiff": OCR,
    "image/webp": OCR,
    "image/bmp": OCR,
}

# Source code: MIME type → the language its definitions are read in (`code.py`). Each is a route
# `code`; the reader names these types from the file's extension (`mime.py`).
CODE_LANGUAGES: dict[str, str] = {
    "text/x-python": "python",
    "text/javascript": "javascript",
    "text/x-typescript": "typescript",
    "text/x-java": "java",
    "text/x-c": "c",
    "text/x-c++": "cpp",
    "text/x-csharp": "csharp",
    "text/x-go": "go",
    "text/x-rust": "rust",
    "text/x-ruby": "ruby",
    "text/x-php": "php",
    "text/x-kotlin": "kotlin",
    "text/x-scala": "scala",
    "text/x-swift": "swift",
    "text/x-shellscript": "bash",
    "application/sql": "sql",
    "text/x-r": "r",
    "text/x-lua": "lua",
}
DEFAULT_ROUTES.update(dict.fromkeys(CODE_LANGUAGES, "code"))

_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_EXTENSION = re.compile(r"^\.[a-z0-9][a-z0-9_+-]*$")


def essence(mime: str) -> str:
    """A MIME type without its parameters, case folded (RFC 2045 compares types so)."""
    return mime.split(";", 1)[0].strip().lower()


def extension(filename: str) -> str:
    return PurePosixPath((filename or "").replace("\\", "/")).suffix.lower()


def parse_routes(text: str) -> tuple[tuple[str, str], ...]:
    """`TYPE=ROUTE` entries, comma-separated, into (key, route) pairs in the order given; a key
    is a MIME type (`text/x-foo`) or an extension (`.log`), a route one of `ROUTE_NAMES` or
    `park`. Raises ValueError naming the first bad entry."""
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        key, sep, route = (part.strip() for part in entry.partition("="))
        key, route = key.lower(), route.lower()
        if not sep or not key or not route:
            raise ValueError(f"entry {entry!r} is not TYPE=ROUTE")
        if not (_MIME.match(key) or _EXTENSION.match(key)):
            raise ValueError(f"entry {entry!r}: {key!r} is neither a MIME type (text/x-foo) nor an extension (.log)")
        if route != PARK and route not in ROUTE_NAMES:
            raise ValueError(f"entry {entry!r}: no route {route!r} (routes: {', '.join([*ROUTE_NAMES, PARK])})")
        if key in seen:
            raise ValueError(f"entry {entry!r}: {key} is routed twice")
        seen.add(key)
        pairs.append((key, route))
    return tuple(pairs)


@dataclass(frozen=True)
class Routes:
    """The routes of a run: the built-in table, the operator's entries over it, and whether the
    run has an OCR stage (without one an `ocr` route parks, so images are stored, not failed)."""

    overrides: tuple[tuple[str, str], ...] = ()
    ocr: bool = True

    def route(self, mime: str, filename: str = "") -> str | None:
        """The route name for a document declared `mime` and named `filename`; None: park it."""
        entries = dict(self.overrides)
        found = entries.get(extension(filename)) if extension(filename) else None
        if found is None:
            kind = essence(mime)
            found = entries.get(kind) or DEFAULT_ROUTES.get(kind)
        if found is None or found == PARK or (found == OCR and not self.ocr):
            return None
        return found

    def may_need_ocr(self, filename: str) -> bool:
        """Whether a file of this name can reach the OCR stage: one routed to OCR or to the PDF
        reader (its pages without a text layer), or a container (an archive, a mail file) whose
        members are known only once it is read."""
        from pipeline.documents.archives import is_archive
        from pipeline.documents.mail import is_mail
        from pipeline.documents.mime import mime_for

        return is_archive(filename) or is_mail(filename) or self.route(mime_for(filename), filename) in (OCR, "pdf")

    def routable_types(self, filename: str, mime: str) -> tuple[str, ...]:
        """The MIME types that a document named `filename` has a route for, as the authority's
        queue compares a stored type with them (`sql/write/ingest.py`): those of the table and the
        operator's entries, and `mime` itself when the name routes it."""
        known = [m for m in {*DEFAULT_ROUTES, *(k for k, _ in self.overrides if "/" in k)}
                 if self.route(m, filename)]
        if self.route(mime, filename) and essence(mime) not in known:
            known.append(essence(mime))
        return tuple(sorted(known))
