"""Listing and reading sources: folders, files, sidecars, and archives with hostile members."""

from __future__ import annotations

import functools
import io
import json
import os
import random
import stat
import tarfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline import records
from pipeline.documents import walk
from pipeline.documents.archives import expand_archive, is_archive
from pipeline.documents.mime import mime_for
from pipeline.documents.walk import SourceOptions, list_sources, read_item

Row = dict[str, Any]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(path: str, data: bytes | str = b"x") -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.encode() if isinstance(data, str) else data)
    return target


def items(*paths: str, **kw: Any) -> list[dict]:
    return [dict(i) for i in list_sources(list(paths), SourceOptions(**kw))]


def read(path: str, **kw: Any) -> list[Row]:
    options = SourceOptions(**kw)
    rows: list[Row] = []
    for item in list_sources([path], options):
        rows.extend(read_item(dict(item), options))
    return rows


def by_item(rows: list[Row]) -> dict[str, Row]:
    return {row["item"]: row for row in rows}


def landed(rows: list[Row]) -> dict[str, bytes]:
    return {row["item"]: row["content"] for row in rows if row["outcome"] is None}


def refused(rows: list[Row]) -> dict[str, str]:
    assert all(row["error_stage"] == "read" for row in rows if row["outcome"] == records.FAILED)
    return {row["item"]: row["error"] for row in rows if row["outcome"] == records.FAILED}


def make_zip(path: str, entries: list[tuple[str | zipfile.ZipInfo, bytes]],
             compression: int = zipfile.ZIP_DEFLATED) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return write(path, buffer.getvalue())


@functools.cache
def zip_bomb() -> bytes:
    """50 MB of zeros between two small members: about 50 kB on disk."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("good.md", b"g")
        archive.writestr("zeros.bin", bytes(50_000_000))
        archive.writestr("after.md", b"a")
    return buffer.getvalue()


def tar_entry(name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE, linkname: str = "",
              mtime: float = 1_700_000_000) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.linkname = linkname
    info.mtime = mtime
    return info, data


def tar_bytes(entries: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for info, data in entries:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


# -- MIME types and archive names


@pytest.mark.parametrize(("filename", "mime"), [
    ("a.md", "text/markdown"),
    ("A.MARKDOWN", "text/markdown"),
    ("notes.txt", "text/plain"),
    ("page.html", "text/html"),
    ("page.HTM", "text/html"),
    ("paper.pdf", "application/pdf"),
    ("fig.png", "image/png"),
    ("photo.jpg", "image/jpeg"),
    ("photo.JPEG", "image/jpeg"),
    ("letter.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("deck.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    ("sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("data.json", "application/json"),
    ("blob.nosuchext", "application/octet-stream"),
    ("README", "application/octet-stream"),
])
def test_mime_table(filename: str, mime: str) -> None:
    assert mime_for(filename) == mime


@pytest.mark.parametrize(("filename", "expected"), [
    ("a.zip", True), ("A.ZIP", True), ("a.tar", True), ("a.tar.gz", True), ("a.TGZ", True),
    ("a.gz", False), ("a.md", False), ("zip", False),
])
def test_is_archive(filename: str, expected: bool) -> None:
    assert is_archive(filename) is expected


# -- listing


def test_folder_walk_is_recursive_sorted_and_relative_to_cwd(tmp_path: Path) -> None:
    for name in ("docs/c.txt", "docs/a/z.txt", "docs/b.md", "docs/a/b.txt", "docs/a/deep/x.md"):
        write(name, name)
    found = items("docs")
    assert [i["item"] for i in found] == [
        "docs/a/b.txt", "docs/a/deep/x.md", "docs/a/z.txt", "docs/b.md", "docs/c.txt"]
    first = found[0]
    assert first["source_ref"] == "docs/a/b.txt"
    assert first["path"] == str(tmp_path / "docs/a/b.txt")
    assert first["size"] == len("docs/a/b.txt")
    assert first["error"] is None
    assert first["mtime"].tzinfo is not None and first["mtime"].utcoffset().total_seconds() == 0


def test_path_outside_cwd_is_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write("outside/a.md")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    found = items("../outside")
    assert [i["item"] for i in found] == [(tmp_path / "outside/a.md").as_posix()]
    assert found[0]["source_ref"] == found[0]["item"]


def test_include_matches_basename_or_relative_path_and_exclude_wins() -> None:
    for name in ("d/a.md", "d/b.txt", "d/sub/c.md", "d/sub/d.txt", "d/sub/draft.md"):
        write(name)
    assert [i["item"] for i in items("d", include=("*.md",))] == ["d/a.md", "d/sub/c.md", "d/sub/draft.md"]
    assert [i["item"] for i in items("d", include=("sub/*.txt",))] == ["d/sub/d.txt"]
    assert [i["item"] for i in items("d", include=("*.md",), exclude=("draft*",))] == ["d/a.md", "d/sub/c.md"]


def test_an_excluded_folder_is_pruned() -> None:
    write("d/.git/objects/x")
    write("d/keep.md")
    assert [i["item"] for i in items("d", exclude=(".git",))] == ["d/keep.md"]


def test_symbolic_links_are_reported_not_followed(tmp_path: Path) -> None:
    write("real/secret.md", "secret")
    write("d/a.md")
    os.symlink(tmp_path / "real", "d/linked-folder")
    os.symlink(tmp_path / "real/secret.md", "d/linked-file.md")
    found = by_item([dict(i) for i in list_sources(["d", "d/linked-file.md"], SourceOptions())])
    assert found["d/linked-folder"]["error"] == "symbolic link not followed"
    assert found["d/linked-file.md"]["error"] == "symbolic link not followed"
    assert not any("secret" in key for key in found)
    rows = read("d/linked-file.md")
    assert refused(rows) == {"d/linked-file.md": "symbolic link not followed"}
    assert rows[0]["content"] is None


def test_a_fifo_is_reported_not_opened() -> None:
    write("d/a.md")
    os.mkfifo("d/pipe")
    found = items("d")
    assert [(i["item"], i["error"]) for i in found] == [("d/a.md", None), ("d/pipe", "not a regular file")]
    assert refused(read("d/pipe")) == {"d/pipe": "not a regular file"}


def test_missing_path_is_an_error_item_and_a_failed_row() -> None:
    write("here.md")
    found = items("nope.md", "here.md")
    assert found[0]["item"] == "nope.md" and found[0]["error"] == "no such file or directory"
    assert found[1]["item"] == "here.md" and found[1]["error"] is None
    assert refused(read("nope.md")) == {"nope.md": "no such file or directory"}


def test_oversize_file_is_refused_without_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    with open("big.bin", "wb") as sparse:
        sparse.truncate(70_000_000)

    def never(path: str) -> None:
        raise AssertionError(f"{path} was opened")

    monkeypatch.setattr(walk, "_open_no_follow", never)
    rows = read("big.bin")
    assert refused(rows) == {"big.bin": "file is 70000000 bytes, over CORPUSMEM_MAX_FILE_BYTES=67108864"}
    assert rows[0]["content"] is None


def test_empty_file_passes_through() -> None:
    write("empty.md", b"")
    [row] = read("empty.md")
    assert row["outcome"] is None and row["content"] == b"" and row["size_bytes"] == 0


def test_plain_file_row() -> None:
    path = write("notes/Report.Final.md", "# hi")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    [row] = read("notes/Report.Final.md", source_kind="drive", living=True)
    assert row["item"] == row["source_ref"] == "notes/Report.Final.md"
    assert row["filename"] == "Report.Final.md" and row["title"] == "Report.Final"
    assert row["mime"] == "text/markdown" and row["content"] == b"# hi" and row["size_bytes"] == 4
    assert row["source_kind"] == "drive" and row["versioning_mode"] == "living"
    assert row["source_modified_at"] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert read("notes/Report.Final.md")[0]["versioning_mode"] == "snapshot"
    records.to_table([row])  # the row fits DOC_SCHEMA


# -- source_modified_at


def test_modified_at_from_must_be_known() -> None:
    with pytest.raises(ValueError, match=r"modified_at_from='ctime' is not one of mtime, path, sidecar"):
        SourceOptions(modified_at_from="ctime")


@pytest.mark.parametrize(("path", "expected"), [
    ("minutes/2026-01-15 board.md", datetime(2026, 1, 15, tzinfo=UTC)),
    ("2026-13-45/log-2025-02-03T10:30Z.md", datetime(2025, 2, 3, 10, 30, tzinfo=UTC)),
    ("log/2025-02-03T10:30:15Z.txt", datetime(2025, 2, 3, 10, 30, 15, tzinfo=UTC)),
    ("plain/notes.md", None),
])
def test_modified_at_from_path(path: str, expected: datetime | None) -> None:
    write(path)
    [row] = read(path, modified_at_from="path")
    assert row["outcome"] is None and row["source_modified_at"] == expected


def test_sidecar_sets_time_title_and_version_and_is_not_a_source() -> None:
    write("d/a.md", "a")
    write("d/a.md.meta.json", json.dumps({"source_modified_at": "2026-01-15T10:00:00+02:00",
                                          "title": "Board minutes", "source_version_ref": "v7"}))
    os.utime(write("d/b.md", "b"), (1_700_000_000, 1_700_000_000))
    assert [i["item"] for i in items("d", modified_at_from="sidecar")] == ["d/a.md", "d/b.md"]
    assert [i["item"] for i in items("d")] == ["d/a.md", "d/a.md.meta.json", "d/b.md"]
    rows = by_item(read("d", modified_at_from="sidecar"))
    assert rows["d/a.md"]["source_modified_at"] == datetime(2026, 1, 15, 8, 0, tzinfo=UTC)
    assert rows["d/a.md"]["title"] == "Board minutes" and rows["d/a.md"]["source_version_ref"] == "v7"
    # without a sidecar, a file keeps its path as identity and its mtime as its time
    assert rows["d/b.md"]["outcome"] is None and rows["d/b.md"]["source_ref"] == "d/b.md"
    assert rows["d/b.md"]["source_modified_at"] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


def test_naive_sidecar_timestamp_fails_the_row() -> None:
    write("x.md")
    write("x.md.meta.json", json.dumps({"source_modified_at": "2026-01-15T10:00:00"}))
    assert refused(read("x.md", modified_at_from="sidecar")) == {"x.md": (
        "source_modified_at '2026-01-15T10:00:00' in x.md.meta.json is naive: "
        "it must be timezone-aware UTC (end with Z or +00:00)")}


def test_sidecar_that_is_not_json_fails_the_row() -> None:
    write("x.md")
    write("x.md.meta.json", "{not json")
    [error] = refused(read("x.md", modified_at_from="sidecar")).values()
    assert error.startswith("x.md.meta.json is not valid JSON")


# -- archives: members


def test_zip_members_land_with_bang_refs_and_member_times() -> None:
    dated = zipfile.ZipInfo("docs/a.md", date_time=(2024, 5, 6, 7, 8, 10))
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as nested:
        nested.writestr("n.md", "nested")
    make_zip("in/pack.zip", [(zipfile.ZipInfo("docs/"), b""), (dated, b"# a"), ("b.txt", b"b"),
                             ("inner.zip", inner.getvalue())])
    rows = read("in/pack.zip")
    assert [r["item"] for r in rows] == [
        "in/pack.zip!docs/a.md", "in/pack.zip!b.txt", "in/pack.zip!inner.zip"]
    a = rows[0]
    assert a["outcome"] is None and a["content"] == b"# a" and a["size_bytes"] == 3
    assert a["source_ref"] == "in/pack.zip!docs/a.md"
    assert a["filename"] == "a.md" and a["title"] == "a" and a["mime"] == "text/markdown"
    assert a["source_modified_at"] == datetime(2024, 5, 6, 7, 8, 10, tzinfo=UTC)
    # A member that is itself an archive is a document, not expanded.
    assert rows[2]["content"] == inner.getvalue() and rows[2]["outcome"] is None
    records.to_table(rows)


def test_tar_gz_members_land_with_member_times() -> None:
    write("p.tar.gz", tar_bytes([tar_entry("./d/", kind=tarfile.DIRTYPE),
                                 tar_entry("./d/a.md", b"# a", mtime=1_700_000_000),
                                 tar_entry("b.txt", b"b", mtime=1_600_000_000)]))
    rows = read("p.tar.gz")
    assert landed(rows) == {"p.tar.gz!d/a.md": b"# a", "p.tar.gz!b.txt": b"b"}
    assert rows[0]["source_ref"] == "p.tar.gz!d/a.md"
    assert rows[0]["source_modified_at"] == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert rows[1]["source_modified_at"] == datetime(2020, 9, 13, 12, 26, 40, tzinfo=UTC)


def test_plain_tar_and_tgz_expand() -> None:
    write("p.tar", tar_bytes([tar_entry("a.md", b"a")], mode="w"))
    write("p.tgz", tar_bytes([tar_entry("a.md", b"a")]))
    assert landed(read("p.tar")) == {"p.tar!a.md": b"a"}
    assert landed(read("p.tgz")) == {"p.tgz!a.md": b"a"}


def test_member_dates_from_member_path_then_archive_path() -> None:
    make_zip("2020-01-01 box.zip", [("2024-02-03 a.md", b"a"), ("b.md", b"b")])
    rows = by_item(read("2020-01-01 box.zip", modified_at_from="path"))
    in_member = rows["2020-01-01 box.zip!2024-02-03 a.md"]
    assert in_member["source_modified_at"] == datetime(2024, 2, 3, tzinfo=UTC)
    assert rows["2020-01-01 box.zip!b.md"]["source_modified_at"] == datetime(2020, 1, 1, tzinfo=UTC)


def test_member_sidecars_in_zip_and_in_tar_after_their_document() -> None:
    meta = json.dumps({"source_modified_at": "2026-03-01T12:00:00Z", "title": "A"}).encode()
    make_zip("m.zip", [("a.md", b"a"), ("a.md.meta.json", meta), ("b.md", b"b"),
                       ("b.md.meta.json", b'{"source_modified_at": "2026-03-01T12:00:00"}')])
    write("m.tar.gz", tar_bytes([tar_entry("a.md", b"a"), tar_entry("a.md.meta.json", meta)]))
    zipped = by_item(read("m.zip", modified_at_from="sidecar"))
    assert set(zipped) == {"m.zip!a.md", "m.zip!b.md"}
    assert zipped["m.zip!a.md"]["source_modified_at"] == datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert zipped["m.zip!a.md"]["title"] == "A"
    assert zipped["m.zip!b.md"]["error"].startswith(
        "source_modified_at '2026-03-01T12:00:00' in m.zip!b.md.meta.json is naive")
    [tarred] = read("m.tar.gz", modified_at_from="sidecar")
    assert tarred["item"] == "m.tar.gz!a.md" and tarred["outcome"] is None
    assert tarred["source_modified_at"] == datetime(2026, 3, 1, 12, tzinfo=UTC)


# -- archives: attacks (each refused member is reported; the good ones still land)


def test_zip_path_traversal_is_refused(tmp_path: Path) -> None:
    make_zip("evil.zip", [("../evil.txt", b"e"), ("/etc/passwd", b"p"), ("C:\\x.txt", b"c"),
                          ("..\\up.txt", b"u"), ("good.md", b"g"), ("sub\\ok.md", b"o")])
    rows = read("evil.zip")
    assert landed(rows) == {"evil.zip!good.md": b"g", "evil.zip!sub/ok.md": b"o"}
    reasons = refused(rows)
    assert len(reasons) == 4
    assert all(reason.startswith("unsafe member path") for reason in reasons.values())
    assert "evil.zip!../evil.txt" in reasons
    assert not (tmp_path.parent / "evil.txt").exists() and sorted(os.listdir(tmp_path)) == ["evil.zip"]


def test_tar_path_traversal_is_refused() -> None:
    write("evil.tar.gz", tar_bytes([tar_entry("../../evil.txt", b"e"), tar_entry("/abs.txt", b"a"),
                                    tar_entry("good.md", b"g")]))
    rows = read("evil.tar.gz")
    assert landed(rows) == {"evil.tar.gz!good.md": b"g"}
    assert [reason.split(" '")[0] for reason in refused(rows).values()] == ["unsafe member path"] * 2


def test_zip_symlink_member_is_refused() -> None:
    link = zipfile.ZipInfo("link.md")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    make_zip("l.zip", [(link, b"/etc/passwd"), ("good.md", b"g")])
    rows = read("l.zip")
    assert landed(rows) == {"l.zip!good.md": b"g"}
    assert refused(rows) == {"l.zip!link.md": "links are not imported (symbolic link)"}


def test_tar_links_and_fifos_are_refused() -> None:
    write("l.tar.gz", tar_bytes([
        tar_entry("sym.md", kind=tarfile.SYMTYPE, linkname="/etc/passwd"),
        tar_entry("hard.md", kind=tarfile.LNKTYPE, linkname="good.md"),
        tar_entry("pipe", kind=tarfile.FIFOTYPE),
        tar_entry("good.md", b"g"),
    ]))
    rows = read("l.tar.gz")
    assert landed(rows) == {"l.tar.gz!good.md": b"g"}
    assert refused(rows) == {
        "l.tar.gz!sym.md": "links are not imported (symbolic link to '/etc/passwd')",
        "l.tar.gz!hard.md": "links are not imported (hard link to 'good.md')",
        "l.tar.gz!pipe": "not a regular file (device, fifo or socket)",
    }


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_duplicate_member_names_keep_the_first() -> None:
    make_zip("d.zip", [("a.md", b"first"), ("./a.md", b"second"), ("a.md", b"third"), ("b.md", b"b")])
    write("d.tar.gz", tar_bytes([tar_entry("a.md", b"first"), tar_entry("./a.md", b"second")]))
    rows = read("d.zip")
    assert landed(rows) == {"d.zip!a.md": b"first", "d.zip!b.md": b"b"}
    assert [r["error"] for r in rows if r["outcome"] == records.FAILED] == [
        "duplicate member name 'a.md': only the first is read"] * 2
    tarred = read("d.tar.gz")
    assert landed(tarred) == {"d.tar.gz!a.md": b"first"}
    assert tarred[1]["error"].startswith("duplicate member name")


def test_zip_bomb_member_is_refused_by_ratio() -> None:
    write("bomb.zip", zip_bomb())
    rows = read("bomb.zip")
    assert landed(rows) == {"bomb.zip!good.md": b"g", "bomb.zip!after.md": b"a"}
    [reason] = refused(rows).values()
    assert reason.startswith("member expands ") and "to 50000000 (ratio " in reason
    assert reason.endswith("over CORPUSMEM_ARCHIVE_MAX_RATIO=200")
    # Lower the cap and a merely compressible member is refused too.
    words = ("claim", "fact", "entity", "source", "evidence", "window", "archive", "member")
    rng = random.Random(7)
    text = " ".join(rng.choice(words) for _ in range(400_000)).encode()
    make_zip("text.zip", [("text.txt", text)])
    assert landed(read("text.zip")) == {"text.zip!text.txt": text}
    assert refused(read("text.zip", archive_max_ratio=5.0))["text.zip!text.txt"].endswith(
        "over CORPUSMEM_ARCHIVE_MAX_RATIO=5")


def test_zip_bomb_is_refused_by_total_expanded_bytes() -> None:
    write("bomb.zip", zip_bomb())
    rows = read("bomb.zip", archive_max_ratio=1e9, archive_max_bytes=10_000_000)
    assert landed(rows) == {"bomb.zip!good.md": b"g"}
    assert refused(rows) == {
        "bomb.zip!zeros.bin": "archive expands past CORPUSMEM_ARCHIVE_MAX_BYTES=10000000",
        "bomb.zip!after.md": "archive expands past CORPUSMEM_ARCHIVE_MAX_BYTES=10000000",
    }


def test_total_expanded_bytes_refuses_that_member_and_every_later_one() -> None:
    make_zip("t.zip", [("a.txt", b"a" * 600), ("b.txt", b"b" * 600), ("c.txt", b"c")])
    rows = read("t.zip", archive_max_bytes=1000)
    assert landed(rows) == {"t.zip!a.txt": b"a" * 600}
    assert set(refused(rows)) == {"t.zip!b.txt", "t.zip!c.txt"}


def test_tar_gz_bomb_stops_decompression_and_keeps_earlier_members() -> None:
    write("bomb.tar.gz", tar_bytes([tar_entry("good.md", b"g"), tar_entry("zeros.bin", bytes(20_000_000)),
                                    tar_entry("after.md", b"a")]))
    started = time.perf_counter()
    rows = read("bomb.tar.gz", archive_max_bytes=1_000_000, archive_max_members=10)
    assert time.perf_counter() - started < 2
    assert landed(rows) == {"bomb.tar.gz!good.md": b"g"}
    cap = "archive expands past CORPUSMEM_ARCHIVE_MAX_BYTES=1000000"
    # The bomb is refused, and reading past it trips the stream cap: the archive row says so.
    assert refused(rows) == {"bomb.tar.gz!zeros.bin": cap, "bomb.tar.gz": cap}


def test_oversize_member_is_refused() -> None:
    make_zip("o.zip", [("big.bin", b"x" * 2000), ("small.md", b"s")], compression=zipfile.ZIP_STORED)
    write("o.tar.gz", tar_bytes([tar_entry("big.bin", b"x" * 2000), tar_entry("small.md", b"s")]))
    message = "member is 2000 bytes, over CORPUSMEM_MAX_FILE_BYTES=1000"
    zipped = read("o.zip", max_file_bytes=1000)
    assert landed(zipped) == {"o.zip!small.md": b"s"}
    assert refused(zipped) == {"o.zip!big.bin": message}
    tarred = read("o.tar.gz", max_file_bytes=1000)
    assert landed(tarred) == {"o.tar.gz!small.md": b"s"}
    assert refused(tarred) == {"o.tar.gz!big.bin": message}


def test_member_count_cap() -> None:
    entries = [(f"{n}.md", str(n).encode()) for n in range(5)]
    make_zip("many.zip", entries)
    write("many.tar.gz", tar_bytes([tar_entry(name, data) for name, data in entries]))
    zipped = read("many.zip", archive_max_members=3)
    assert list(landed(zipped)) == ["many.zip!0.md", "many.zip!1.md", "many.zip!2.md"]
    assert refused(zipped) == {"many.zip": "archive has 5 members, over CORPUSMEM_ARCHIVE_MAX_MEMBERS=3; "
                                           "members after the first 3 were not read"}
    tarred = read("many.tar.gz", archive_max_members=3)
    assert list(landed(tarred)) == ["many.tar.gz!0.md", "many.tar.gz!1.md", "many.tar.gz!2.md"]
    assert refused(tarred)["many.tar.gz"].startswith("archive has more than 3 members")


def test_corrupt_zip_is_one_failed_row() -> None:
    write("bad.zip", b"PK\x03\x04 this is not a zip")
    [row] = read("bad.zip")
    assert row["item"] == "bad.zip" and row["error_stage"] == "read"
    assert row["error"].startswith("not a readable zip archive")


def test_unreadable_tar_is_one_failed_row() -> None:
    write("bad.tar", b"this is not a tar archive" * 40)
    assert [(r["item"], r["error"].split(":")[0]) for r in read("bad.tar")] == [
        ("bad.tar", "not a readable tar archive")]


def test_corrupt_zip_member_is_refused_alone() -> None:
    path = make_zip("crc.zip", [("good.md", b"good"), ("bad.md", b"BADBADBAD"), ("also.md", b"also")],
                    compression=zipfile.ZIP_STORED)
    path.write_bytes(path.read_bytes().replace(b"BADBADBAD", b"BADXADBAD"))
    rows = read("crc.zip")
    assert landed(rows) == {"crc.zip!good.md": b"good", "crc.zip!also.md": b"also"}
    assert refused(rows)["crc.zip!bad.md"].startswith("cannot read member: Bad CRC-32")


def test_truncated_tar_gz_keeps_members_before_the_damage() -> None:
    data = tar_bytes([tar_entry("good.md", b"g"), tar_entry("noise.bin", os.urandom(200_000)),
                      tar_entry("after.md", b"a")])
    write("cut.tar.gz", data[: len(data) // 2])
    rows = read("cut.tar.gz")
    assert landed(rows) == {"cut.tar.gz!good.md": b"g"}
    assert refused(rows)["cut.tar.gz"].startswith("corrupt or truncated tar archive")


def test_expand_archive_reads_bytes_in_memory() -> None:
    data = tar_bytes([tar_entry("a.md", b"a")])
    rows = expand_archive("x.tar.gz", data, SourceOptions(), archive_item="x.tar.gz", archive_ref="ref.tgz")
    assert [(r["item"], r["source_ref"], r["content"]) for r in rows] == [
        ("x.tar.gz!a.md", "ref.tgz!a.md", b"a")]


# -- drive exports: sidecars from Google Drive and rclone

DRIVE_V3 = {"kind": "drive#file", "id": "1AbCdEfGhIjK-v3", "name": "Board minutes.md",
            "mimeType": "text/markdown", "modifiedTime": "2026-03-04T10:11:12.345Z",
            "headRevisionId": "0B7xRevHead42", "version": "17", "md5Checksum": "9e107d9d372bb6826bd81d3542a419d6"}
DRIVE_V3_GOOGLE_DOC = {"id": "1GoogleDocId", "name": "Plan v2.1", "mimeType": "application/vnd.google-apps.document",
                       "modifiedTime": "2026-02-01T08:00:00Z", "version": 42}
DRIVE_V2 = {"kind": "drive#file", "id": "0Bv2FileId", "title": "Roadmap.txt", "mimeType": "text/plain",
            "modifiedDate": "2025-12-31T23:59:59.000Z", "headRevisionId": "0Bv2Rev9", "version": "9"}
RCLONE = {"Path": "team/notes.md", "Name": "notes.md", "Size": 1, "MimeType": "text/markdown",
          "ModTime": "2026-03-04T10:11:12.123456789+01:00", "IsDir": False, "ID": "1RcloneId",
          "OrigID": "1RcloneOrigId", "Hashes": {"md5": "5d41402abc4b2a76b9719d911017c592"}}
CORPUSMEM = {"source_ref": "crm://accounts/42", "source_version_ref": "v3",
             "source_modified_at": "2026-01-15T10:00:00+02:00", "title": "Account 42"}


@pytest.mark.parametrize(("filename", "meta", "expected"), [
    ("Board minutes.md", DRIVE_V3, ("1AbCdEfGhIjK-v3", "0B7xRevHead42",
                                    datetime(2026, 3, 4, 10, 11, 12, 345000, tzinfo=UTC), "Board minutes")),
    ("Plan v2.1.docx", DRIVE_V3_GOOGLE_DOC, ("1GoogleDocId", "42", datetime(2026, 2, 1, 8, tzinfo=UTC), "Plan v2.1")),
    ("Roadmap.txt", DRIVE_V2, ("0Bv2FileId", "0Bv2Rev9", datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC), "Roadmap")),
    ("notes.md", RCLONE, ("1RcloneId", "5d41402abc4b2a76b9719d911017c592",
                          datetime(2026, 3, 4, 9, 11, 12, 123456, tzinfo=UTC), "notes")),
    ("account.md", CORPUSMEM, ("crm://accounts/42", "v3", datetime(2026, 1, 15, 8, tzinfo=UTC), "Account 42")),
], ids=["drive-v3", "drive-v3-google-doc", "drive-v2", "rclone-lsjson", "corpusmem"])
def test_sidecar_shapes_give_identity_revision_time_and_title(filename: str, meta: dict, expected: tuple) -> None:
    os.utime(write(f"export/{filename}", "x"), (1_700_000_000, 1_700_000_000))
    write(f"export/{filename}.meta.json", json.dumps(meta))
    [row] = read(f"export/{filename}", modified_at_from="sidecar", source_kind="gdrive")
    assert row["outcome"] is None and row["item"] == f"export/{filename}" and row["filename"] == filename
    assert (row["source_ref"], row["source_version_ref"], row["source_modified_at"], row["title"]) == expected
    records.to_table([row])


def test_a_file_moved_in_the_drive_keeps_its_identity_and_takes_its_new_title() -> None:
    write("before/q3.md", "same")
    write("before/q3.md.meta.json", json.dumps({**DRIVE_V3, "name": "q3.md"}))
    write("after/archive/Q3 review.md", "same")
    write("after/archive/Q3 review.md.meta.json", json.dumps({**DRIVE_V3, "name": "Q3 review.md"}))
    [before] = read("before", modified_at_from="sidecar")
    [after] = read("after", modified_at_from="sidecar")
    assert before["source_ref"] == after["source_ref"] == "1AbCdEfGhIjK-v3"
    assert (before["title"], after["title"]) == ("q3", "Q3 review")


@pytest.mark.parametrize(("meta", "error"), [
    ({"id": 12345}, "id in x.md.meta.json must be a non-empty string, got 12345"),
    ({"ID": ""}, "ID in x.md.meta.json must be a non-empty string, got ''"),
    ({"id": "1x", "modifiedTime": "2026-03-04T10:11:12"},
     ("modifiedTime '2026-03-04T10:11:12' in x.md.meta.json is naive: "
      "it must be timezone-aware UTC (end with Z or +00:00)")),
    ({"ModTime": "last tuesday"}, "ModTime 'last tuesday' in x.md.meta.json is not an ISO 8601 timestamp"),
    ({"modifiedDate": 1767225599}, "modifiedDate in x.md.meta.json must be an ISO 8601 string, got 1767225599"),
    ({"headRevisionId": ["r1"]}, "headRevisionId in x.md.meta.json must be a string or an integer, got ['r1']"),
    ({"Hashes": {"md5": True}}, "Hashes.md5 in x.md.meta.json must be a string or an integer, got True"),
])
def test_bad_drive_sidecar_fails_its_row_naming_the_key_and_the_rest_land(meta: dict, error: str) -> None:
    write("x.md")
    write("x.md.meta.json", json.dumps(meta))
    write("y.md", "y")
    write("y.md.meta.json", json.dumps(DRIVE_V3))
    rows = read(".", modified_at_from="sidecar")
    assert refused(rows) == {"x.md": error}
    assert landed(rows) == {"y.md": b"y"}
    assert by_item(rows)["x.md"]["source_ref"] == "x.md"


def test_folder_entries_and_missing_sidecars_fall_back_to_path_and_mtime() -> None:
    for name in ("listed-dir.md", "drive-folder.md", "plain.md"):
        os.utime(write(f"d/{name}", name), (1_700_000_000, 1_700_000_000))
    write("d/listed-dir.md.meta.json", json.dumps({**RCLONE, "IsDir": True, "MimeType": "inode/directory"}))
    write("d/drive-folder.md.meta.json", json.dumps(
        {**DRIVE_V3, "mimeType": "application/vnd.google-apps.folder"}))
    rows = read("d", modified_at_from="sidecar")
    assert refused(rows) == {}
    assert [(r["source_ref"], r["source_version_ref"], r["source_modified_at"], r["title"]) for r in rows] == [
        (f"d/{name}", None, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), name.removesuffix(".md"))
        for name in ("drive-folder.md", "listed-dir.md", "plain.md")]


def test_drive_sidecars_inside_an_archive() -> None:
    make_zip("export.zip", [
        (zipfile.ZipInfo("team/minutes.md", date_time=(2024, 5, 6, 7, 8, 10)), b"m"),
        ("team/minutes.md.meta.json", json.dumps(DRIVE_V3).encode()),
        ("team/notes.md", b"n"), ("team/notes.md.meta.json", json.dumps(RCLONE).encode()),
        (zipfile.ZipInfo("team/plain.md", date_time=(2024, 5, 6, 7, 8, 10)), b"p"),
        ("team/bad.md", b"b"), ("team/bad.md.meta.json", json.dumps({"id": 7}).encode()),
    ])
    write("export.tar.gz", tar_bytes([tar_entry("notes.md", b"n"),
                                      tar_entry("notes.md.meta.json", json.dumps(RCLONE).encode())]))
    rows = by_item(read("export.zip", modified_at_from="sidecar"))
    assert set(rows) == {"export.zip!team/minutes.md", "export.zip!team/notes.md", "export.zip!team/plain.md",
                         "export.zip!team/bad.md"}
    minutes, notes, plain = (rows[f"export.zip!team/{n}.md"] for n in ("minutes", "notes", "plain"))
    assert (minutes["source_ref"], minutes["source_version_ref"], minutes["title"]) == (
        "1AbCdEfGhIjK-v3", "0B7xRevHead42", "Board minutes")
    assert minutes["source_modified_at"] == datetime(2026, 3, 4, 10, 11, 12, 345000, tzinfo=UTC)
    assert notes["source_ref"] == "1RcloneId"
    assert notes["source_modified_at"] == datetime(2026, 3, 4, 9, 11, 12, 123456, tzinfo=UTC)
    assert (plain["source_ref"], plain["source_version_ref"]) == ("export.zip!team/plain.md", None)
    assert plain["source_modified_at"] == datetime(2024, 5, 6, 7, 8, 10, tzinfo=UTC)
    assert refused(list(rows.values())) == {
        "export.zip!team/bad.md": "id in export.zip!team/bad.md.meta.json must be a non-empty string, got 7"}
    [tarred] = read("export.tar.gz", modified_at_from="sidecar")
    assert (tarred["source_ref"], tarred["source_version_ref"]) == ("1RcloneId", "5d41402abc4b2a76b9719d911017c592")
