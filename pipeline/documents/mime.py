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
}


def mime_for(filename: str) -> str:
    """The MIME type for `filename` (extension matched case-insensitively)."""
    suffix = PurePosixPath(filename.replace("\\", "/")).suffix.lower()
    known = _BY_EXTENSION.get(suffix)
    if known is not None:
        return known
    guessed, _encoding = mimetypes.guess_type(filename, strict=True)
    return guessed or OCTET_STREAM
