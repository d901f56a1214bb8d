"""Sidecars and path dates: the time, identity, revision and title a document's path and its
`<file>.meta.json` give it.

`set_source_metadata` fills a document row's `source_modified_at` as `modified_at_from` says (the
file's mtime, the first date in its path, or its sidecar), and whatever a sidecar overrides. A
sidecar is corpusmem's own keys, or the metadata a drive export leaves beside a file (a Google
Drive `files` resource, an rclone `lsjson` entry). A sidecar that names a file id makes the id
the document's identity, so a file renamed or moved in the drive stays the same document.

Nothing here reads a file: callers hand over the sidecar's bytes, from disk or from an archive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

Row = dict[str, Any]

# Where a document's `source_modified_at` comes from: the file's mtime, the first date in its
# path, or its sidecar (falling back to the mtime).
MODIFIED_AT_FROM = ("mtime", "path", "sidecar")
SIDECAR_SUFFIX = ".meta.json"

# A sidecar holds a few keys; anything bigger is not a sidecar, and reading it whole would let a
# single stray file cost as much memory as a document.
SIDECAR_MAX_BYTES = 1024 * 1024

# Which sidecar keys give which field of a document row, first present key first. A sidecar is
# corpusmem's own, a Google Drive `files` resource (API v3, or v2's `title` and `modifiedDate`) or
# an rclone `lsjson --original --hash` entry; they name the same facts differently and are told
# apart by their keys alone, so the names live in one table instead of one parser per tool. A
# revision comes before a content hash because a hash cannot say which of two versions is newer.
# A dotted name is a key inside an object (rclone's `Hashes`).
_SIDECAR_KEYS: dict[str, tuple[str, ...]] = {
    "source_ref": ("source_ref", "id", "ID", "OrigID"),
    "source_version_ref": ("source_version_ref", "headRevisionId", "version", "md5Checksum",
                           "Hashes.md5", "Hashes.sha1"),
    "source_modified_at": ("source_modified_at", "modifiedTime", "modifiedDate", "ModTime"),
    "title": ("title", "name", "Name"),
}
# A drive listing describes its folders too; a folder's entry is no document and says nothing.
_DRIVE_FOLDER_MIME = "application/vnd.google-apps.folder"

# A date, optionally with THH:MM or THH:MM:SS; the trailing Z may be left off, since every time
# found in a path is read as UTC. The digit guards keep 12026-01-150 from reading as a date.
_PATH_DATE = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?Z?)?(?!\d)"
)


class SidecarError(ValueError):
    """A sidecar exists but cannot be used; the message names it and says why."""


def set_source_metadata(row: Row, modified_at_from: str, *paths: str, mtime: datetime | None,
                        sidecar: Callable[[], bytes | None], sidecar_name: str) -> None:
    """Fill `source_modified_at` as `modified_at_from` says, and whatever a sidecar overrides
    (`source_ref`, `source_version_ref`, `title`)."""
    if modified_at_from == "mtime":
        row["source_modified_at"] = mtime
    elif modified_at_from == "path":
        row["source_modified_at"] = next(filter(None, map(_date_in_path, paths)), None)
    else:
        # What the sidecar does not say, the file itself does: its path stays its identity and
        # its mtime its time, so a plain folder imports in sidecar mode as it would without.
        row["source_modified_at"] = mtime
        raw = sidecar()
        if raw is not None:
            row.update(_parse_sidecar(raw, sidecar_name, row["filename"]))


def _date_in_path(path: str) -> datetime | None:
    """The first real date (YYYY-MM-DD, optionally THH:MM[:SS][Z]) in `path`, as UTC."""
    for found in _PATH_DATE.finditer(path):
        year, month, day, hour, minute, second = found.groups()
        try:
            date = datetime(int(year), int(month), int(day), tzinfo=UTC)
        except ValueError:
            continue  # 2026-13-45 is not a date
        if hour is not None:
            try:
                return date.replace(hour=int(hour), minute=int(minute), second=int(second or 0))
            except ValueError:
                pass  # an impossible time leaves the date standing
        return date
    return None


def _parse_sidecar(raw: bytes, name: str, filename: str) -> Row:
    """The row fields a sidecar gives (only those it has), for the file `filename` it describes."""
    meta = _sidecar_object(raw, name)
    if _describes_folder(meta):
        return {}
    found: Row = {}
    for field, keys in _SIDECAR_KEYS.items():
        for key in keys:
            value = _sidecar_value(meta, key)
            if value is not None:
                found[field] = _READ_FIELD[field](value, key, name)
                break
    if "title" in found:
        found["title"] = _title_from_name(found["title"], filename)
    return found


def _sidecar_object(raw: bytes, name: str) -> dict[str, Any]:
    if len(raw) > SIDECAR_MAX_BYTES:
        raise SidecarError(f"{name} is over {SIDECAR_MAX_BYTES} bytes: not a sidecar")
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SidecarError(f"{name} is not UTF-8 JSON") from None
    except json.JSONDecodeError as err:
        raise SidecarError(f"{name} is not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(meta, dict):
        raise SidecarError(f"{name} must hold a JSON object, not {type(meta).__name__}")
    return meta


def _describes_folder(meta: dict[str, Any]) -> bool:
    return meta.get("IsDir") is True or meta.get("mimeType") == _DRIVE_FOLDER_MIME


def _sidecar_value(meta: dict[str, Any], key: str) -> object:
    """The value at `key` (dotted for a key inside an object), None when it is not there."""
    value: object = meta
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _sidecar_text(value: object, key: str, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise SidecarError(f"{key} in {name} must be a non-empty string, got {value!r}")
    return value


def _sidecar_revision(value: object, key: str, name: str) -> str:
    # Drive writes `version` as a decimal string, tools that re-encode it as a number.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise SidecarError(f"{key} in {name} must be a string or an integer, got {value!r}")
    return value


def _sidecar_time(value: object, key: str, name: str) -> datetime:
    if not isinstance(value, str):
        raise SidecarError(f"{key} in {name} must be an ISO 8601 string, got {value!r}")
    try:
        # Fractions past microseconds (rclone writes nanoseconds) are cut, not rounded.
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise SidecarError(f"{key} {value!r} in {name} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise SidecarError(f"{key} {value!r} in {name} is naive: "
                            "it must be timezone-aware UTC (end with Z or +00:00)")
    return parsed.astimezone(UTC)


_READ_FIELD: dict[str, Callable[[object, str, str], Any]] = {
    "source_ref": _sidecar_text,
    "source_version_ref": _sidecar_revision,
    "source_modified_at": _sidecar_time,
    "title": _sidecar_text,
}


def _title_from_name(title: str, filename: str) -> str:
    """A drive's name of the file, as the title a file of that name has: without its extension.

    The extension goes only when it is the file's own, so a Google document named `Plan v2.1`
    and exported as `Plan v2.1.docx` keeps its whole name.
    """
    suffix = PurePosixPath(filename).suffix
    if suffix and len(title) > len(suffix) and title.lower().endswith(suffix.lower()):
        return title[: -len(suffix)]
    return title
