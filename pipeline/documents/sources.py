"""Source reader: list the files an import names, and read each one into `DOC_SCHEMA` rows.

`list_sources` walks the paths lazily, in sorted order, without following symbolic links.
`read_item` turns one listed item into document rows: one for a plain file, one per member for
an archive. Archives are expanded in memory only, never onto disk, behind the defences a
hostile archive calls for (path traversal, links, duplicates, zip bombs, member floods). Every
refusal is a failed row at stage "read" that says why, and every other member still lands.

With `modified_at_from="sidecar"`, a `<file>.meta.json` beside a file describes it: corpusmem's
own keys, or the metadata a drive export leaves there (a Google Drive `files` resource, an rclone
`lsjson` entry). A sidecar that names a file id makes the id the document's identity, so a file
renamed or moved in the drive stays the same document.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypedDict

from jobs.settings import Settings
from pipeline import records
from pipeline.documents.mime import mime_for

Row = dict[str, Any]

MODIFIED_AT_FROM = ("mtime", "path", "sidecar")
SIDECAR_SUFFIX = ".meta.json"

# A sidecar holds a few keys; anything bigger is not a sidecar, and reading it whole would let a
# single stray file cost as much memory as a document.
_SIDECAR_MAX_BYTES = 1024 * 1024

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

# Members that expand to less than this are never refused for their compression ratio: a tiny
# file of repeated bytes can exceed any sane ratio, and it costs nothing to read.
_RATIO_FLOOR_BYTES = 1024 * 1024

# A tar stream carries headers and the data of members that are refused but must still be read
# past. Per member: a header block, an extended (pax or GNU long-name) header block and the
# padding of the last data block. Reading is stopped past archive_max_bytes plus this allowance
# per member, so a compressed tar can never cost more decompression than that.
_TAR_OVERHEAD_PER_MEMBER = 3 * tarfile.BLOCKSIZE

_GZIP_MAGIC = b"\x1f\x8b"
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
# A date, optionally with THH:MM or THH:MM:SS; the trailing Z may be left off, since every time
# found in a path is read as UTC. The digit guards keep 12026-01-150 from reading as a date.
_PATH_DATE = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?Z?)?(?!\d)"
)


@dataclass(frozen=True)
class SourceOptions:
    """How sources are listed and read; the byte caps come from `Settings` in real imports."""

    source_kind: str = "file"
    living: bool = False  # versioning_mode "living", else "snapshot"
    include: tuple[str, ...] = ()  # fnmatch globs; empty = everything
    exclude: tuple[str, ...] = ()  # fnmatch globs; an exclude wins over an include
    modified_at_from: str = "mtime"  # "mtime" | "path" | "sidecar"
    max_file_bytes: int = 64 * 1024 * 1024
    archive_max_bytes: int = 1024**3  # total expanded bytes per archive
    archive_max_ratio: float = 200.0  # expanded / compressed, per member
    archive_max_members: int = 100_000

    def __post_init__(self) -> None:
        if self.modified_at_from not in MODIFIED_AT_FROM:
            raise ValueError(
                f"modified_at_from={self.modified_at_from!r} is not one of {', '.join(MODIFIED_AT_FROM)}"
            )
        # Lists are accepted for convenience; tuples keep the options hashable and immutable.
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @classmethod
    def from_settings(cls, settings: Settings, **kw: Any) -> SourceOptions:
        """Options whose byte and member caps are the `CORPUSMEM_*` settings."""
        caps = {
            "max_file_bytes": settings.max_file_bytes,
            "archive_max_bytes": settings.archive_max_bytes,
            "archive_max_ratio": settings.archive_max_ratio,
            "archive_max_members": settings.archive_max_members,
        }
        return cls(**{**caps, **kw})

    @property
    def versioning_mode(self) -> str:
        return "living" if self.living else "snapshot"


class SourceItem(TypedDict):
    """One listed source: a file, or a path that could not be listed (then `error` says why)."""

    item: str  # what the user pointed at: posix, relative to the working directory when inside it
    path: str  # absolute path
    source_ref: str
    size: int
    mtime: datetime | None  # UTC
    error: str | None


# ---------------------------------------------------------------------------------------------
# Listing


def list_sources(paths: Sequence[str], options: SourceOptions) -> Iterator[SourceItem]:
    """Yield a source item for every file under `paths`, lazily, folders in sorted order."""
    cwd = Path.cwd()
    for given in paths:
        absolute = os.path.abspath(os.path.join(cwd, given))
        name = os.path.basename(absolute)
        # A path named outright is reported when it cannot be read, whatever the globs say; the
        # globs select among files, matched here against the file's own name.
        if os.path.islink(absolute):
            yield _error_item(absolute, cwd, "symbolic link not followed")
        elif not os.path.lexists(absolute):
            yield _error_item(absolute, cwd, "no such file or directory")
        elif os.path.isdir(absolute):
            yield from _walk(absolute, cwd, options)
        elif _selected(name, name, options):
            yield _file_item(absolute, cwd)


def _walk(root: str, cwd: Path, options: SourceOptions) -> Iterator[SourceItem]:
    # One sorted listing per open folder, depth first: memory is the current branch, not the drive.
    try:
        top = _sorted_entries(root)
    except OSError as err:
        yield _error_item(root, cwd, f"cannot list folder: {err.strerror or err}")
        return
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", iter(top))]
    while stack:
        prefix, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        relative = prefix + entry.name
        try:
            if entry.is_symlink():
                if _selected(relative, entry.name, options):
                    yield _error_item(entry.path, cwd, "symbolic link not followed")
            elif entry.is_dir(follow_symlinks=False):
                # An excluded folder is pruned whole, so `--exclude .git` skips the tree under it.
                if not _excluded(relative, entry.name, options):
                    stack.append((relative + "/", iter(_sorted_entries(entry.path))))
            elif _selected(relative, entry.name, options):
                yield _file_item(entry.path, cwd)
        except OSError as err:
            yield _error_item(entry.path, cwd, f"cannot read: {err.strerror or err}")


def _sorted_entries(folder: str) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as found:
        return sorted(found, key=lambda entry: entry.name)


def _excluded(relative: str, name: str, options: SourceOptions) -> bool:
    return any(fnmatch.fnmatchcase(relative, g) or fnmatch.fnmatchcase(name, g) for g in options.exclude)


def _selected(relative: str, name: str, options: SourceOptions) -> bool:
    if options.modified_at_from == "sidecar" and name.lower().endswith(SIDECAR_SUFFIX):
        return False
    if _excluded(relative, name, options):
        return False
    if not options.include:
        return True
    return any(fnmatch.fnmatchcase(relative, g) or fnmatch.fnmatchcase(name, g) for g in options.include)


def _display(absolute: str, cwd: Path) -> str:
    path = Path(absolute)
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _error_item(absolute: str, cwd: Path, error: str) -> SourceItem:
    shown = _display(absolute, cwd)
    return SourceItem(item=shown, path=absolute, source_ref=shown, size=0, mtime=None, error=error)


def _file_item(absolute: str, cwd: Path) -> SourceItem:
    info = os.lstat(absolute)
    if not stat.S_ISREG(info.st_mode):
        return _error_item(absolute, cwd, "not a regular file")
    shown = _display(absolute, cwd)
    return SourceItem(item=shown, path=absolute, source_ref=shown, size=info.st_size,
                      mtime=datetime.fromtimestamp(info.st_mtime, tz=UTC), error=None)


# ---------------------------------------------------------------------------------------------
# Reading


def is_archive(filename: str) -> bool:
    """True for the archive types that are expanded into their members."""
    return filename.lower().endswith((".zip", ".tar", ".tar.gz", ".tgz"))


def read_item(item: dict[str, Any], options: SourceOptions) -> list[Row]:
    """One source item → its document rows (an archive → one row per member)."""
    filename = PurePosixPath(item["item"]).name
    row = _base_row(options, item["item"], item["source_ref"], filename)
    row["size_bytes"] = item.get("size")
    if item.get("error"):
        return [records.fail(row, "read", item["error"])]
    if is_archive(filename):
        # An archive is read from disk as a stream, never whole, so its own size is not capped by
        # max_file_bytes: its members are, and the archive caps bound what it may expand to.
        try:
            with _open_no_follow(item["path"]) as archive:
                return list(expand_archive(filename, archive, options,
                                           archive_item=item["item"], archive_ref=item["source_ref"]))
        except OSError as err:
            return [records.fail(row, "read", f"cannot read: {err.strerror or err}")]
    size = int(item.get("size") or 0)
    if size > options.max_file_bytes:
        return [records.fail(row, "read",
                             f"file is {size} bytes, over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes}")]
    try:
        with _open_no_follow(item["path"]) as file:
            # The file may have grown since it was listed: read one byte past the cap to know.
            content = file.read(options.max_file_bytes + 1)
    except OSError as err:
        return [records.fail(row, "read", f"cannot read: {err.strerror or err}")]
    if len(content) > options.max_file_bytes:
        return [records.fail(row, "read",
                             f"file is over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes} bytes")]
    row.update(content=content, size_bytes=len(content))
    try:
        _set_source_metadata(row, options, item["item"],
                             mtime=item.get("mtime"), sidecar_name=item["item"] + SIDECAR_SUFFIX,
                             sidecar=lambda: _read_sidecar_file(item["path"] + SIDECAR_SUFFIX,
                                                                item["item"] + SIDECAR_SUFFIX))
    except _SidecarError as err:
        return [records.fail(row, "read", str(err))]
    return [row]


def _open_no_follow(path: str) -> BinaryIO:
    # The path was listed as a regular file; if it became a link since, refuse rather than follow.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    return os.fdopen(fd, "rb")


def _base_row(options: SourceOptions, item: str, source_ref: str, filename: str) -> Row:
    return records.new_row(item=item, source_kind=options.source_kind, source_ref=source_ref,
                           filename=filename, title=PurePosixPath(filename).stem,
                           mime=mime_for(filename), versioning_mode=options.versioning_mode)


class _SidecarError(ValueError):
    """A sidecar exists but cannot be used; the message names it and says why."""


def _read_sidecar_file(path: str, shown: str) -> bytes | None:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise _SidecarError(f"{shown} is not a regular file (links are not followed)")
        with _open_no_follow(path) as file:
            return file.read(_SIDECAR_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise _SidecarError(f"{shown} cannot be read: {err.strerror or err}") from None


def _set_source_metadata(row: Row, options: SourceOptions, *paths: str, mtime: datetime | None,
                         sidecar: Callable[[], bytes | None], sidecar_name: str) -> None:
    """Fill `source_modified_at` as `modified_at_from` says, and whatever a sidecar overrides
    (`source_ref`, `source_version_ref`, `title`)."""
    if options.modified_at_from == "mtime":
        row["source_modified_at"] = mtime
    elif options.modified_at_from == "path":
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
    if len(raw) > _SIDECAR_MAX_BYTES:
        raise _SidecarError(f"{name} is over {_SIDECAR_MAX_BYTES} bytes: not a sidecar")
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _SidecarError(f"{name} is not UTF-8 JSON") from None
    except json.JSONDecodeError as err:
        raise _SidecarError(f"{name} is not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(meta, dict):
        raise _SidecarError(f"{name} must hold a JSON object, not {type(meta).__name__}")
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
        raise _SidecarError(f"{key} in {name} must be a non-empty string, got {value!r}")
    return value


def _sidecar_revision(value: object, key: str, name: str) -> str:
    # Drive writes `version` as a decimal string, tools that re-encode it as a number.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise _SidecarError(f"{key} in {name} must be a string or an integer, got {value!r}")
    return value


def _sidecar_time(value: object, key: str, name: str) -> datetime:
    if not isinstance(value, str):
        raise _SidecarError(f"{key} in {name} must be an ISO 8601 string, got {value!r}")
    try:
        # Fractions past microseconds (rclone writes nanoseconds) are cut, not rounded.
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _SidecarError(f"{key} {value!r} in {name} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise _SidecarError(f"{key} {value!r} in {name} is naive: "
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


# ---------------------------------------------------------------------------------------------
# Archives


@dataclass
class _Member:
    """One archive entry, before any rule is applied to it."""

    name: str  # as stored in the archive
    kind: str  # "file" | "dir" | "symlink" | "hardlink" | "special"
    declared_size: int
    compressed_size: int | None  # zip only: a tar.gz has no per-member compressed size
    modified_at: datetime | None
    read: Callable[[int], bytes]  # at most n bytes of the member's data
    link_target: str = ""


class _ArchiveStopped(Exception):
    """The rest of the archive cannot, or may not, be read; members already yielded stand."""


class _StreamCapExceeded(Exception):
    """A tar stream was read past its decompressed-bytes allowance."""


class _MemberUnreadable(Exception):
    """One member cannot be read, but the archive can (zip members are independent)."""


def expand_archive(archive_name: str, data: bytes | BinaryIO, options: SourceOptions, *,
                   archive_item: str, archive_ref: str) -> Iterator[Row]:
    """Yield one row per member of an archive, in archive order; refused members as failed rows.

    `data` is the archive's bytes or a seekable binary file. Nothing is written to disk, members
    are read with bounded reads (a lying header cannot exhaust memory), and a member that is
    itself an archive is not expanded. A corrupt archive, or one with too many members, ends in
    one failed row for the archive itself.
    """
    stream: BinaryIO = io.BytesIO(data) if isinstance(data, bytes) else data
    expander = _Expander(options, archive_item, archive_ref)
    archive_row = _base_row(options, archive_item, archive_ref, PurePosixPath(archive_item).name)
    try:
        if archive_name.lower().endswith(".zip"):
            yield from _expand_zip(stream, expander)
        else:
            yield from _expand_tar(stream, expander)
    except _ArchiveStopped as err:
        yield records.fail(archive_row, "read", str(err))


class _Expander:
    """The rules every member goes through, with the running totals of one archive."""

    def __init__(self, options: SourceOptions, archive_item: str, archive_ref: str):
        self.options = options
        self.archive_item = archive_item
        self.archive_ref = archive_ref
        self.members_seen = 0
        self.expanded_bytes = 0
        self.exhausted = False  # past archive_max_bytes: every later member is refused
        self.names: set[str] = set()

    def over_member_cap(self) -> bool:
        self.members_seen += 1
        return self.members_seen > self.options.archive_max_members

    def member_rows(self, member: _Member, sidecar: Callable[[str], bytes | None]) -> Iterator[Row]:
        """Zero rows (directories, sidecars) or one row, landed or refused, for `member`."""
        options = self.options
        if member.kind == "dir" or member.name.replace("\\", "/").endswith("/"):
            return
        path = _safe_member_path(member.name)
        if path is None:
            reason = f"unsafe member path {member.name!r}: it would escape the archive"
            yield self._refused(member.name, member, reason)
            return
        if member.kind in ("symlink", "hardlink"):
            kind = "symbolic link" if member.kind == "symlink" else "hard link"
            target = f" to {member.link_target!r}" if member.link_target else ""
            yield self._refused(path, member, f"links are not imported ({kind}{target})")
            return
        if member.kind != "file":
            yield self._refused(path, member, "not a regular file (device, fifo or socket)")
            return
        if path in self.names:
            yield self._refused(path, member, f"duplicate member name {path!r}: only the first is read")
            return
        self.names.add(path)
        if options.modified_at_from == "sidecar" and path.lower().endswith(SIDECAR_SUFFIX):
            return
        refusal = self._size_refusal(member)
        if refusal:
            yield self._refused(path, member, refusal)
            return
        limit = min(options.max_file_bytes, options.archive_max_bytes - self.expanded_bytes)
        try:
            content = member.read(limit + 1)
        except _MemberUnreadable as err:
            yield self._refused(path, member, f"cannot read member: {err}")
            return
        refusal = self._content_refusal(member, len(content))
        if refusal:
            yield self._refused(path, member, refusal)
            return
        self.expanded_bytes += len(content)
        row = self._row(path)
        row.update(content=content, size_bytes=len(content))
        try:
            _set_source_metadata(row, options, path, self.archive_item, mtime=member.modified_at,
                                 sidecar=lambda: sidecar(path + SIDECAR_SUFFIX),
                                 sidecar_name=f"{self.archive_item}!{path}{SIDECAR_SUFFIX}")
        except _SidecarError as err:
            records.fail(row, "read", str(err))
        yield row

    def _size_refusal(self, member: _Member) -> str | None:
        """Why the member is refused from its header alone, before a byte of it is read."""
        options = self.options
        if self.exhausted:
            return self.total_message()
        if member.declared_size > options.max_file_bytes:
            return (f"member is {member.declared_size} bytes, "
                    f"over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes}")
        refusal = self._ratio_refusal(member, member.declared_size)
        if refusal:
            return refusal
        if self.expanded_bytes + member.declared_size > options.archive_max_bytes:
            self.exhausted = True
            return self.total_message()
        return None

    def _content_refusal(self, member: _Member, got: int) -> str | None:
        """Why the member is refused from what was actually read (headers can lie)."""
        options = self.options
        if got > options.max_file_bytes:
            return f"member is over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes} bytes"
        if self.expanded_bytes + got > options.archive_max_bytes:
            self.exhausted = True
            return self.total_message()
        return self._ratio_refusal(member, got)

    def _ratio_refusal(self, member: _Member, size: int) -> str | None:
        if member.compressed_size is None or size < _RATIO_FLOOR_BYTES:
            return None
        ratio = size / max(member.compressed_size, 1)
        if ratio <= self.options.archive_max_ratio:
            return None
        return (f"member expands {member.compressed_size} compressed bytes to {size} "
                f"(ratio {ratio:.0f}), over CORPUSMEM_ARCHIVE_MAX_RATIO={self.options.archive_max_ratio:g}")

    def total_message(self) -> str:
        return f"archive expands past CORPUSMEM_ARCHIVE_MAX_BYTES={self.options.archive_max_bytes}"

    def _row(self, path: str) -> Row:
        return _base_row(self.options, f"{self.archive_item}!{path}", f"{self.archive_ref}!{path}",
                         PurePosixPath(path.replace("\\", "/")).name)

    def _refused(self, path: str, member: _Member, reason: str) -> Row:
        row = self._row(path)
        row["size_bytes"] = member.declared_size
        return records.fail(row, "read", reason)

    def too_many_members(self, total: int | None) -> str:
        cap = self.options.archive_max_members
        count = f"{total} members" if total is not None else f"more than {cap} members"
        return (f"archive has {count}, over CORPUSMEM_ARCHIVE_MAX_MEMBERS={cap}; "
                f"members after the first {cap} were not read")


def _safe_member_path(name: str) -> str | None:
    """The member's normalised posix path, or None when it could escape the archive's root."""
    if "\x00" in name:
        return None
    posix = name.replace("\\", "/")  # Windows tools write backslashes; `..\\x` escapes all the same
    if posix.startswith("/") or _WINDOWS_DRIVE.match(posix):
        return None
    parts = [part for part in posix.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


# -- zip

# What reading one zip member can raise: a bad CRC or header, a broken deflate stream, an
# encrypted member (RuntimeError), an unsupported compression method.
_ZIP_MEMBER_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError,
                      ValueError, OSError)


def _expand_zip(stream: BinaryIO, expander: _Expander) -> Iterator[Row]:
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as err:
        raise _ArchiveStopped(f"not a readable zip archive: {err}") from None
    with archive:
        infos = archive.infolist()
        sidecars: dict[str, zipfile.ZipInfo] = {}
        if expander.options.modified_at_from == "sidecar":
            for info in infos[: expander.options.archive_max_members]:
                path = _safe_member_path(info.filename)
                if path and path.lower().endswith(SIDECAR_SUFFIX) and _zip_kind(info) == "file":
                    sidecars.setdefault(path, info)

        def sidecar(path: str) -> bytes | None:
            info = sidecars.get(path)
            if info is None:
                return None
            try:
                with archive.open(info) as member:
                    return member.read(_SIDECAR_MAX_BYTES + 1)
            except _ZIP_MEMBER_ERRORS as err:
                raise _SidecarError(f"{expander.archive_item}!{path} cannot be read: {err}") from None

        for info in infos:
            if expander.over_member_cap():
                raise _ArchiveStopped(expander.too_many_members(len(infos)))
            yield from expander.member_rows(_zip_member(archive, info), sidecar)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    if info.is_dir():
        return "dir"
    # The high 16 bits of external_attr are the Unix mode when a Unix tool wrote the entry; zero
    # (DOS and most Windows tools) means a plain file.
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if file_type in (0, stat.S_IFREG):
        return "file"
    if file_type == stat.S_IFLNK:
        return "symlink"
    if file_type == stat.S_IFDIR:
        return "dir"
    return "special"


def _zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> _Member:
    def read(limit: int) -> bytes:
        try:
            with archive.open(info) as member:
                return member.read(limit)
        except _ZIP_MEMBER_ERRORS as err:
            raise _MemberUnreadable(str(err)) from None

    try:
        # A zip time has no zone (it is the writer's local time); we read it as UTC, the only
        # reading that is the same on every machine.
        modified_at: datetime | None = datetime(*info.date_time, tzinfo=UTC)
    except ValueError:
        modified_at = None
    return _Member(name=info.filename, kind=_zip_kind(info), declared_size=info.file_size,
                   compressed_size=info.compress_size, modified_at=modified_at, read=read)


# -- tar


class _CappedReader(io.RawIOBase):
    """A read-only stream that stops with `_StreamCapExceeded` once `cap` bytes were read."""

    def __init__(self, inner: BinaryIO, cap: int):
        self._inner = inner
        self._cap = cap
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        chunk = self._inner.read(len(view))
        self._read += len(chunk)
        if self._read > self._cap:
            raise _StreamCapExceeded
        view[: len(chunk)] = chunk
        return len(chunk)


def _tar_stream(stream: BinaryIO, options: SourceOptions) -> tarfile.TarFile:
    start = stream.tell()
    magic = stream.read(len(_GZIP_MAGIC))
    stream.seek(start)
    # Decompress ourselves rather than through tarfile, so the decompressed bytes can be counted.
    inner: BinaryIO = gzip.GzipFile(fileobj=stream, mode="rb") if magic == _GZIP_MAGIC else stream
    cap = options.archive_max_bytes + options.archive_max_members * _TAR_OVERHEAD_PER_MEMBER
    try:
        return tarfile.open(fileobj=_CappedReader(inner, cap), mode="r|")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise _ArchiveStopped(f"not a readable tar archive: {err}") from None


def _expand_tar(stream: BinaryIO, expander: _Expander) -> Iterator[Row]:
    options = expander.options
    start = stream.tell()
    sidecars: dict[str, bytes] = {}
    if options.modified_at_from == "sidecar":
        # A stream cannot look ahead, and a sidecar may come after its document: one pass first
        # collects the sidecars (each at most _SIDECAR_MAX_BYTES), the second reads documents.
        sidecars = _tar_sidecars(stream, options)
        stream.seek(start)

    def sidecar(path: str) -> bytes | None:
        return sidecars.get(path)

    try:
        archive = _tar_stream(stream, options)
        for info in archive:
            if expander.over_member_cap():
                raise _ArchiveStopped(expander.too_many_members(None))
            yield from expander.member_rows(_tar_member(archive, info), sidecar)
    except _StreamCapExceeded:
        raise _ArchiveStopped(expander.total_message()) from None
    except (tarfile.TarError, OSError, EOFError, zlib.error) as err:
        raise _ArchiveStopped(f"corrupt or truncated tar archive: {err}") from None


def _tar_sidecars(stream: BinaryIO, options: SourceOptions) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    try:
        archive = _tar_stream(stream, options)
        for seen, info in enumerate(archive, start=1):
            if seen > options.archive_max_members:
                break
            path = _safe_member_path(info.name)
            if path and info.isreg() and path.lower().endswith(SIDECAR_SUFFIX) and path not in found:
                member = archive.extractfile(info)
                if member is not None:
                    found[path] = member.read(_SIDECAR_MAX_BYTES + 1)
    except (_ArchiveStopped, _StreamCapExceeded, tarfile.TarError, OSError, EOFError, zlib.error):
        pass  # the document pass meets the same fault and reports it for the archive
    return found


def _tar_member(archive: tarfile.TarFile, info: tarfile.TarInfo) -> _Member:
    if info.isdir():
        kind = "dir"
    elif info.issym():
        kind = "symlink"
    elif info.islnk():
        kind = "hardlink"
    elif info.isreg():
        kind = "file"
    else:
        kind = "special"

    def read(limit: int) -> bytes:
        member = archive.extractfile(info)
        return member.read(limit) if member is not None else b""

    try:
        modified_at: datetime | None = datetime.fromtimestamp(info.mtime, tz=UTC)
    except (OverflowError, OSError, ValueError):
        modified_at = None
    return _Member(name=info.name, kind=kind, declared_size=info.size, compressed_size=None,
                   modified_at=modified_at, read=read, link_target=info.linkname)
