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
from pipeline.documents.mime import mime_for
from pipeline.documents.sidecars import (
    MODIFIED_AT_FROM,
    SIDECAR_MAX_BYTES,
    SIDECAR_SUFFIX,
    SidecarError,
    set_source_metadata,
)

Row = dict[str, Any]


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


def read_item(item: dict[str, Any], options: SourceOptions) -> list[Row]:
    """One source item → its document rows (an archive → one row per member)."""
    filename = PurePosixPath(item["item"]).name
    row = options.base_row(item["item"], item["source_ref"], filename)
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
        set_source_metadata(row, options.modified_at_from, item["item"],
                            mtime=item.get("mtime"), sidecar_name=item["item"] + SIDECAR_SUFFIX,
                            sidecar=lambda: _read_sidecar_file(item["path"] + SIDECAR_SUFFIX,
                                                               item["item"] + SIDECAR_SUFFIX))
    except SidecarError as err:
        return [records.fail(row, "read", str(err))]
    return [row]


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
