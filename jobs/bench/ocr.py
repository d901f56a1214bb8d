"""`corpusmem bench import --ocr-pages N`: an import of N generated scanned pages, in pages per
second, against the floor of calling the OCR library on the same pages in one process.

The corpus is N A4 pages at 150 DPI, each a PNG of a dozen generated sentences (Pillow's own
font, so the same pages on every machine). The floor is measured in this process in the same run:
each page decoded and recognised by the same recogniser the OCR actors hold (RapidOCR, loaded
once, warmed on the first page, on every core), one after the other. It is timed once before the
import and once after, and the two are averaged: on a shared machine the speed of the cores drifts
by a third between minutes (a 48-page floor took 56 s in one run and 74 s in another), and a floor
timed on one side only would carry that drift into the ratio. The import runs as a child process into an
empty memory; its rate is N over its pipeline seconds (from its first source item to its last
report row: the Ray start-up and the facts phase are outside, the OCR actors' start-up inside).
The figure is import rate / floor rate; the target is 0.7 or more.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Who and what the generated sentences are about: enough variety that pages differ.
_PEOPLE = ("Dana Whitfield", "Priya Raman", "Ravi Kumar", "Omar Haddad", "Grace Liu", "Marco Rossi",
           "Nadia Petrova", "Tomas Berg")
_WORK = ("the billing migration", "the search team", "the invoice rewrite", "the cutover plan",
         "the security review", "the platform team", "the data warehouse", "the mobile release")
_VERBS = ("leads", "joined", "reviewed", "approved", "works on", "paused", "planned", "audited")
_MONTHS = ("January", "March", "May", "June", "August", "October", "November", "December")
LINES_PER_PAGE = 12
TARGET = 0.7


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ocr-pages", type=int, default=0, metavar="N",
                        help="import: a corpus of N generated scanned pages (PNG), in pages per second against "
                        "the OCR library alone on the same pages (default 0: the text corpus)")


def write_pages(folder: Path, count: int, seed: int = 7) -> list[Path]:
    """`count` generated pages as PNG files in `folder`."""
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    font = ImageFont.load_default(size=32)
    paths = []
    for n in range(count):
        page = Image.new("L", (1240, 1754), 255)
        draw = ImageDraw.Draw(page)
        for i in range(LINES_PER_PAGE):
            line = (f"{rng.choice(_PEOPLE)} {rng.choice(_VERBS)} {rng.choice(_WORK)} in "
                    f"{rng.choice(_MONTHS)} {rng.randint(2019, 2026)}.")
            draw.text((100, 120 + i * 110), line, fill=0, font=font)
        path = folder / f"page-{n:05d}.png"
        page.save(path, "PNG")
        paths.append(path)
    return paths


def floor(pages: list[Path]) -> dict[str, Any]:
    """The same pages through the recogniser alone, one after the other, in this process."""
    from actors.ocr import Recogniser
    from pipeline.documents.ocr_pages import image_pages

    recognise = Recogniser()
    first = next(image_pages(pages[0].read_bytes(), 10**9))
    recognise(first.image)   # warm-up, as an actor's first page
    started, lines = time.perf_counter(), 0
    for path in pages:
        for page in image_pages(path.read_bytes(), 10**9):
            lines += len(recognise(page.image))
    seconds = time.perf_counter() - started
    return {"floor_seconds": round(seconds, 2), "floor_pages_per_s": len(pages) / seconds, "floor_lines": lines}


def bench(args: argparse.Namespace) -> dict[str, Any]:
    from jobs.bench.imports import run_child
    from sql.read import bench_queries
    from sql.store import authority as store
    from sql.store import embedded

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-ocr-"))
    corpus, home = work / f"ocr-{args.ocr_pages}", work / f"home-ocr-{args.ocr_pages}"
    print(f"generating {args.ocr_pages} scanned pages in {corpus}", file=sys.stderr, flush=True)
    pages = write_pages(corpus, args.ocr_pages)
    print("recognising them in this process (the floor, before the import)", file=sys.stderr, flush=True)
    before = floor(pages)
    print("importing them into an empty memory", file=sys.stderr, flush=True)
    child = run_child(["jobs.import_corpus", str(corpus)], home, args)
    with store.connect(embedded.start((home / "pg").resolve())) as conn:
        report = bench_queries.last_import_report(conn)
    print("recognising them in this process again (the floor, after the import)", file=sys.stderr, flush=True)
    after = floor(pages)
    seconds = (before["floor_seconds"] + after["floor_seconds"]) / 2
    results: dict[str, Any] = {"pages": len(pages), "workers": args.workers, "floor_seconds": round(seconds, 2),
                               "floor_pages_per_s": len(pages) / seconds, "floor_lines": after["floor_lines"],
                               "floor_runs_seconds": [before["floor_seconds"], after["floor_seconds"]]}
    pipeline = report["pipeline_seconds"]
    results.update({
        "ocr_pages": report["counts"]["ocr_pages"], "failed": report["counts"]["failed"],
        "import_seconds": round(child["seconds"], 2), "pipeline_seconds": round(pipeline, 2),
        "ocr_busy_seconds": round(report["stage_seconds"].get("ocr", 0.0), 2),
        "import_pages_per_s": len(pages) / pipeline, "stage_seconds": report["stage_seconds"]})
    results["ratio"] = results["import_pages_per_s"] / results["floor_pages_per_s"]
    return results


def render(results: dict[str, Any]) -> str:
    return "\n".join([
        f"OCR import of {results['pages']} generated scanned pages ({results['ocr_pages']} OCR'd, "
        f"{results['failed']} failed) against the OCR library alone on the same pages",
        f"  import: {results['import_pages_per_s']:.2f} pages/s over its {results['pipeline_seconds']:.1f} s "
        f"pipeline ({results['import_seconds']:.1f} s with start-up and the facts phase; OCR busy "
        f"{results['ocr_busy_seconds']:.1f} s)",
        f"  floor:  {results['floor_pages_per_s']:.2f} pages/s ({results['floor_seconds']:.1f} s, one process: the mean "
        f"of {' s before and '.join(f'{s:.1f}' for s in results['floor_runs_seconds'])} s after the import)",
        f"  import/floor = {results['ratio']:.2f} (target {TARGET})",
        "  busy seconds per stage: " + ", ".join(f"{stage} {secs:.1f}" for stage, secs
                                                 in results["stage_seconds"].items() if secs >= 0.05),
    ])
