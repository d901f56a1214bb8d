"""The source reader's caps are the `CORPUSMEM_*` settings: `Settings.source_options`."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.settings import load_settings
from pipeline import records
from pipeline.documents.walk import list_sources, read_item


def test_max_file_bytes_comes_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.md").write_bytes(b"x" * 11)
    options = load_settings({"CORPUSMEM_MAX_FILE_BYTES": "10"}).source_options(living=True)
    assert options.max_file_bytes == 10 and options.living
    [row] = read_item(dict(next(list_sources(["a.md"], options))), options)
    assert row["outcome"] == records.FAILED
    assert row["error"] == "file is 11 bytes, over CORPUSMEM_MAX_FILE_BYTES=10"


def test_every_archive_cap_comes_from_settings_and_a_keyword_wins() -> None:
    settings = load_settings({
        "CORPUSMEM_ARCHIVE_MAX_BYTES": "1000",
        "CORPUSMEM_ARCHIVE_MAX_RATIO": "7.5",
        "CORPUSMEM_ARCHIVE_MAX_MEMBERS": "3",
    })
    options = settings.source_options(modified_at_from="path", archive_max_members=2)
    assert (options.archive_max_bytes, options.archive_max_ratio) == (1000, 7.5)
    assert options.archive_max_members == 2 and options.modified_at_from == "path"
