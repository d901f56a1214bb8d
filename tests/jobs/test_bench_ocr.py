"""The OCR benchmark's pure parts: its generated pages and its table."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from jobs.bench import ocr
from jobs.cli import build_parser


def test_pages_are_a4_scans_that_differ_and_are_the_same_on_every_run(tmp_path: Path):
    first = ocr.write_pages(tmp_path / "a", 3)
    again = ocr.write_pages(tmp_path / "b", 3)
    assert [p.name for p in first] == ["page-00000.png", "page-00001.png", "page-00002.png"]
    assert Image.open(first[0]).size == (1240, 1754)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert first[0].read_bytes() != first[1].read_bytes()


def test_the_import_command_takes_the_ocr_corpus():
    assert build_parser().parse_args(["bench", "import", "--ocr-pages", "48"]).ocr_pages == 48


def test_the_table_gives_both_rates_and_their_ratio():
    table = ocr.render({"pages": 48, "ocr_pages": 48, "failed": 0, "import_pages_per_s": 0.61,
                        "pipeline_seconds": 78.7, "import_seconds": 86.0, "ocr_busy_seconds": 60.2,
                        "floor_pages_per_s": 0.8, "floor_seconds": 60.0, "floor_runs_seconds": [55.0, 65.0],
                        "ratio": 0.7625,
                        "stage_seconds": {"ocr": 60.2, "embed": 1.0, "read": 0.01}})
    assert "import: 0.61 pages/s over its 78.7 s pipeline" in table and "floor:  0.80 pages/s (60.0 s, one process: the mean of 55.0 s before and 65.0 s after" in table
    assert "import/floor = 0.76 (target 0.7)" in table
    assert "ocr 60.2, embed 1.0" in table and "read" not in table.split("busy seconds per stage:")[1]
