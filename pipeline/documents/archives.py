"""Archives: expand a zip or tar (optionally gzipped) into one document row per member.

Archives are expanded in memory only, never onto disk, behind the defences a hostile archive
calls for: path traversal, links, duplicates, zip bombs (a ratio cap per member, a cap on the
expanded bytes of the whole archive) and member floods (a member cap). Every refusal is a failed
row at stage "read" that says why, and every other member still lands.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from pipeline import records
from pipeline.documents.sidecars import (
    SIDECAR_MAX_BYTES,
    SIDECAR_SUFFIX,
    SidecarError,
    set_source_metadata,
)

if TYPE_CHECKING:
    # Only a type here: walk.py reads an archive through this module, so importing it back at run
    # time would be a cycle.
    from pipeline.documents.walk import SourceOptions

Row = dict[str, Any]

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


def is_archive(filename: str) -> bool:
    """True for the archive types that are expanded into their members."""
    return filename.lower().endswith((".zip", ".tar", ".tar.gz", ".tgz"))


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
    archive_row = options.base_row(archive_item, archive_ref, PurePosixPath(archive_item).name)
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
            set_source_metadata(row, options.modified_at_from, path, self.archive_item,
                                mtime=member.modified_at, sidecar=lambda: sidecar(path + SIDECAR_SUFFIX),
                                sidecar_name=f"{self.archive_item}!{path}{SIDECAR_SUFFIX}")
        except SidecarError as err:
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
        return self.options.base_row(f"{self.archive_item}!{path}", f"{self.archive_ref}!{path}",
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
                    return member.read(SIDECAR_MAX_BYTES + 1)
            except _ZIP_MEMBER_ERRORS as err:
                raise SidecarError(f"{expander.archive_item}!{path} cannot be read: {err}") from None

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
        # collects the sidecars (each at most SIDECAR_MAX_BYTES), the second reads documents.
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
                    found[path] = member.read(SIDECAR_MAX_BYTES + 1)
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
