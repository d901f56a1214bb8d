"""MIME type of a document from its file name: a fixed table for the types the converters know.

The table is fixed so that the same file gets the same type, and so the same converter route, on
every machine; only names outside it fall back to Python's `mimetypes`, whose answers depend on
the host's mime.types files.
"""

from __future__ import annotations

import mimetypes
from pathlib import PurePosixPath

OCTET_STREAM = "application/octet-stream"

_BY_EXTENSION: dict[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".ods": "application/vnd.oasis.opendocument.spreadsheet",
    ".odp": "application/vnd.oasis.opendocument.presentation",
    ".rtf": "application/rtf",
    ".epub": "application/epub+zip",
    ".ipynb": "application/x-ipynb+json",
    ".eml": "message/rfc822",
    ".mbox": "application/mbox",
    ".msg": "application/vnd.ms-outlook",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".tab": "text/tab-separated-values",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".xml": "application/xml",
    # source code (`routes.CODE_LANGUAGES`)
    ".py": "text/x-python",
    ".pyi": "text/x-python",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".cjs": "text/javascript",
    ".jsx": "text/javascript",
    ".ts": "text/x-typescript",
    ".tsx": "text/x-typescript",
    ".java": "text/x-java",
    ".c": "text/x-c",
    ".h": "text/x-c",
    ".cc": "text/x-c++",
    ".cpp": "text/x-c++",
    ".cxx": "text/x-c++",
    ".hpp": "text/x-c++",
    ".cs": "text/x-csharp",
    ".go": "text/x-go",
    ".rs": "text/x-rust",
    ".rb": "text/x-ruby",
    ".php": "text/x-php",
    ".kt": "text/x-kotlin",
    ".kts": "text/x-kotlin",
    ".scala": "text/x-scala",
    ".swift": "text/x-swift",
    ".sh": "text/x-shellscript",
    ".bash": "text/x-shellscript",
    ".sql": "application/sql",
    ".r": "text/x-r",
    ".lua": "text/x-lua",
}


def mime_for(filename: str) -> str:
    """The MIME type for `filename` (extension matched case-insensitively)."""
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    known = _BY_EXTENSION.get(suffix)
    if known is not None:
        return known
    guessed, _encoding = mimetypes.guess_type(filename, strict=True)
    return guessed or OCTET_STREAM
