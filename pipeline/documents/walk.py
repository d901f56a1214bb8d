"""Walking sources: list the files an import names, and read each one into `DOC_SCHEMA` rows.

`list_sources` walks the paths lazily, in sorted order, without following symbolic links.
`read_item` turns one listed item into document rows: one for a plain file, one per member for
an archive (expanded by `archives`). With `modified_at_from="sidecar"`, the `<file>.meta.json`
beside a file is read here and parsed by `sidecars`. Every refusal is a failed row at stage
"read" that says why.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypedDict

from pipeline import records
from pipeline.documents.archives import expand_archive, is_archive
from pipeline.documents.mail import expand_mail, is_mail
from pipeline.documents.mime import mime_for
from pipeline.documents.tables import split_parts
from pipeline.documents.sidecars import (
    MODIFIED_AT_FROM,
    SIDECAR_MAX_BYTES,
    SIDECAR_SUFFIX,
    SidecarError,
    set_source_metadata,
)

Row = dict[str, Any]

# A table file (CSV, TSV) larger than this is read as parts of about this size, each a document
# (`tables.split_parts`): every later stage then holds a part at a time, never the whole file.
TABLE_PART_BYTES = 1024 * 1024
_TABLE_SUFFIXES = (".csv", ".tsv", ".tab")


@dataclass(frozen=True)
class SourceOptions:
    """How sources are listed and read; in real imports the caps are the settings' values
    (`jobs.settings.Settings.source_options`)."""

    source_kind: str = "file"
    living: bool = False  # versioning_mode "living", else "snapshot"
    include: tuple[str, ...] = ()  # fnmatch globs; empty = everything
    exclude: tuple[str, ...] = ()  # fnmatch globs; an exclude wins over an include
    modified_at_from: str = "mtime"  # "mtime" | "path" | "sidecar"
    max_file_bytes: int = 64 * 1024 * 1024
    archive_max_bytes: int = 1024**3  # total expanded bytes per archive
    archive_max_ratio: float = 200.0  # expanded / compressed, per member
    archive_max_members: int = 100_000
    table_part_bytes: int = TABLE_PART_BYTES

    def __post_init__(self) -> None:
        if self.modified_at_from not in MODIFIED_AT_FROM:
            raise ValueError(
                f"modified_at_from={self.modified_at_from!r} is not one of {', '.join(MODIFIED_AT_FROM)}"
            )
        # Lists are accepted for convenience; tuples keep the options hashable and immutable.
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "exclude", tuple(self.exclude))

    @property
    def versioning_mode(self) -> str:
        return "living" if self.living else "snapshot"

    def base_row(self, item: str, source_ref: str, filename: str) -> Row:
        """The row a file or an archive member starts as, before its bytes are read."""
        return records.new_row(item=item, source_kind=self.source_kind, source_ref=source_ref,
                               filename=filename, title=PurePosixPath(filename).stem,
                               mime=mime_for(filename), versioning_mode=self.versioning_mode)


class SourceItem(TypedDict):
    """One listed source: a file, or a path that could not be listed (then `error` says why)."""

    item: str  # what the user pointed at: posix, relative to the working directory when inside it
    path: str  # absolute path
    source_ref: str
    size: int
    mtime: datetime | None  # UTC
    error: str | None


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


def read_item(item: dict[str, Any], options: SourceOptions) -> Iterator[Row]:
    """One source item → its document rows, lazily: an archive → one row per member, a mail file
    → one per message and attachment, a table file over `table_part_bytes` → one per part."""
    filename = PurePosixPath(item["item"]).name
    row = options.base_row(item["item"], item["source_ref"], filename)
    row["size_bytes"] = item.get("size")
    if item.get("error"):
        yield records.fail(row, "read", item["error"])
        return
    size = int(item.get("size") or 0)
    # An archive, an mbox or a large table is read from disk as a stream, never whole, so its own
    # size is not capped by max_file_bytes: its members are, and the archive caps bound the rest.
    streamed = is_archive(filename) or filename.lower().endswith(".mbox") or \
        (filename.lower().endswith(_TABLE_SUFFIXES) and size > options.table_part_bytes)
    if not streamed and size > options.max_file_bytes:
        yield records.fail(row, "read", f"file is {size} bytes, over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes}")
        return
    try:
        file = _open_no_follow(item["path"])
    except OSError as err:
        yield records.fail(row, "read", f"cannot read: {err.strerror or err}")
        return
    with file:
        try:
            if is_archive(filename):
                yield from expand_archive(filename, file, options, archive_item=item["item"],
                                          archive_ref=item["source_ref"])
            elif is_mail(filename):
                yield from expand_mail(filename, file, options, item=item["item"], ref=item["source_ref"],
                                       dated=lambda r, member: _date(r, item, options, member))
            elif streamed:
                yield from _table_parts(file, item, options)
            else:
                yield from _whole_file(file, row, item, options)
        except OSError as err:
            yield records.fail(row, "read", f"cannot read: {err.strerror or err}")


def _whole_file(file: BinaryIO, row: Row, item: dict[str, Any], options: SourceOptions) -> Iterator[Row]:
    # The file may have grown since it was listed: read one byte past the cap to know.
    content = file.read(options.max_file_bytes + 1)
    if len(content) > options.max_file_bytes:
        yield records.fail(row, "read", f"file is over CORPUSMEM_MAX_FILE_BYTES={options.max_file_bytes} bytes")
        return
    row.update(content=content, size_bytes=len(content))
    yield _date(row, item, options)


def _date(row: Row, item: dict[str, Any], options: SourceOptions, member: bool = False) -> Row:
    """`row` with its said-on time and sidecar metadata as the run asked (a failed row when the
    sidecar is bad). A `member` of the file (a part, a message of an mbox) takes only its time:
    the sidecar's identity and title are the file's."""
    target = dict(row) if member else row
    try:
        set_source_metadata(target, options.modified_at_from, item["item"],
                            mtime=item.get("mtime"), sidecar_name=item["item"] + SIDECAR_SUFFIX,
                            sidecar=lambda: _read_sidecar_file(item["path"] + SIDECAR_SUFFIX,
                                                               item["item"] + SIDECAR_SUFFIX))
    except SidecarError as err:
        return records.fail(row, "read", str(err))
    row["source_modified_at"] = target["source_modified_at"]
    return row


def _table_parts(file: BinaryIO, item: dict[str, Any], options: SourceOptions) -> Iterator[Row]:
    """A large table file as parts `name!part-00001.csv`, ..., each with the header line and
    about `table_part_bytes` of rows, dated as the file is."""
    name = PurePosixPath(item["item"]).name
    suffix = PurePosixPath(name).suffix.lower()
    for part in split_parts(file, options.table_part_bytes):
        member = f"part-{part.number:05d}{suffix}"
        row = options.base_row(f"{item['item']}!{member}", f"{item['source_ref']}!{member}", member)
        if len(part.content) > options.max_file_bytes:
            row["size_bytes"] = len(part.content)
            yield records.fail(row, "read", f"one record of it is over CORPUSMEM_MAX_FILE_BYTES="
                                            f"{options.max_file_bytes} bytes")
            continue
        row.update(content=part.content, size_bytes=len(part.content))
        _date(row, item, options, member=True)
        row["title"] = f"{PurePosixPath(name).stem} (lines {part.first_line}–{part.last_line})"
        yield row


def _open_no_follow(path: str) -> BinaryIO:
    # The path was listed as a regular file; if it became a link since, refuse rather than follow.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    return os.fdopen(fd, "rb")


def _read_sidecar_file(path: str, shown: str) -> bytes | None:
    """The bytes of the sidecar at `path` (one past the cap, for `sidecars` to refuse), or None
    when there is none."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise SidecarError(f"{shown} is not a regular file (links are not followed)")
        with _open_no_follow(path) as file:
            return file.read(SIDECAR_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise SidecarError(f"{shown} cannot be read: {err.strerror or err}") from None
