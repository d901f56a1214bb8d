"""`corpusmem bench import-vectors`: a Qdrant collection of chunk records imported end to end,
against importing the same documents from a folder, in the same run.

The generated notes are written as a folder, and cut into overlapping, shuffled chunk records in
a Qdrant local collection (at least `--records` of them). Three figures:

- reassembly alone: records per second of the pure rebuild step over all the records in memory
  (fields read, records grouped and ordered, seams found, document rows built);
- the import from Qdrant against the import of the folder of the same documents, each a child
  process in an empty memory timed to its run report (the baseline is the folder: the same
  documents, with nothing to rebuild);
- with the collection doubled, the driver's peak memory, which must stay flat.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from jobs.bench import imports, synthetic, vector_corpus

COLLECTION = "notes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=50_000,
                        help="import-vectors: chunk records in the collection, at least (default 50000)")
    parser.add_argument("--chunk-chars", type=int, default=120, help="import-vectors: characters per chunk")
    parser.add_argument("--overlap", type=int, default=30, help="import-vectors: characters shared by neighbours")


def _documents(records: int, size: int, overlap: int) -> list[synthetic.GeneratedDoc]:
    """Enough generated notes for `records` chunk records."""
    per_doc = sum(len(vector_corpus.windows(d.text, size, overlap)) for d in synthetic.generate(50)) / 50
    docs = list(synthetic.generate(int(records / per_doc) + 1))
    while sum(len(vector_corpus.windows(d.text, size, overlap)) for d in docs) < records:
        docs = list(synthetic.generate(len(docs) + max(1, len(docs) // 20)))
    return docs


def _date(doc: synthetic.GeneratedDoc) -> str:
    """The note's date (its file name starts with it), as the folder import reads it from the path."""
    return Path(doc.path).name[:10] + "T00:00:00Z"


def _reassembly_rate(recs: list[vector_corpus.Record]) -> dict[str, Any]:
    from pipeline.documents.rebuild import rebuild
    from pipeline.documents.vector_fields import FieldMap, guess

    fields = guess([p for _, p in recs[:200]], FieldMap())
    by_source: dict[str, list] = defaultdict(list)
    started = time.perf_counter()
    for rec in recs:
        by_source[rec[1]["metadata"]["source"]].append(rec)
    documents = 0
    groups = list(by_source.values())
    for i in range(0, len(groups), 200):
        batch = [r for g in groups[i:i + 200] for r in g]
        table, _ = rebuild(batch, fields, source_kind="bench", versioning_mode="snapshot", assume_utc=False)
        documents += table.num_rows
    seconds = time.perf_counter() - started
    return {"records": len(recs), "documents": documents, "seconds": seconds, "records_per_second": len(recs) / seconds}


def _one_size(work: Path, records: int, args: argparse.Namespace) -> dict[str, Any]:
    docs = _documents(records, args.chunk_chars, args.overlap)
    folder = work / f"notes-{len(docs)}"
    if not folder.exists():
        print(f"writing {len(docs)} notes to {folder}", file=sys.stderr, flush=True)
        for doc in docs:
            path = folder / doc.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(doc.text, encoding="utf-8")
    recs = vector_corpus.chunk_records([(d.path, d.text, _date(d)) for d in docs], size=args.chunk_chars,
                                       overlap=args.overlap)
    store = work / f"qdrant-{len(recs)}"
    if not store.exists():
        print(f"filling a Qdrant local collection with {len(recs)} records in {store}", file=sys.stderr, flush=True)
        vector_corpus.fill_qdrant(store, COLLECTION, recs)
    rate = _reassembly_rate(recs)
    del recs
    print(f"importing {len(docs)} notes from the folder", file=sys.stderr, flush=True)
    folder_run = imports.run_child(["jobs.import_corpus", str(folder), "--modified-at-from", "path"],
                                   work / f"home-folder-{len(docs)}", args)
    print(f"importing the {rate['records']} records from Qdrant", file=sys.stderr, flush=True)
    vector_run = imports.run_child(["jobs.import_vectors", "qdrant", str(store), "--collection", COLLECTION,
                                    "--source-kind", "file"], work / f"home-qdrant-{len(docs)}", args)
    return {"documents": len(docs), "reassembly": rate,
            "folder": {k: folder_run[k] for k in ("seconds", "exit_seconds", "driver_peak_rss_mib")},
            "qdrant": {k: vector_run[k] for k in ("seconds", "exit_seconds", "driver_peak_rss_mib")},
            "time_ratio": vector_run["seconds"] / folder_run["seconds"],
            "qdrant_report": vector_run["report"]}


def bench(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = [args.records] if args.no_double else [args.records, 2 * args.records]
    runs = [_one_size(work, n, args) for n in sizes]
    results: dict[str, Any] = {"chunk_chars": args.chunk_chars, "overlap": args.overlap, "runs": runs}
    if len(runs) == 2:
        results["driver_rss_ratio_2x"] = runs[1]["qdrant"]["driver_peak_rss_mib"] / runs[0]["qdrant"]["driver_peak_rss_mib"]
        results["time_ratio_2x"] = runs[1]["qdrant"]["seconds"] / runs[0]["qdrant"]["seconds"]
    return results


def render(results: dict[str, Any]) -> str:
    lines = [f"import-vectors from a Qdrant local collection against the folder of the same documents "
             f"(chunks of {results['chunk_chars']} characters, {results['overlap']} shared with the next)"]
    for run in results["runs"]:
        r, f, q = run["reassembly"], run["folder"], run["qdrant"]
        lines += [f"{r['records']} records → {r['documents']} documents",
                  f"  reassembly alone: {r['records_per_second']:,.0f} records/s ({r['seconds']:.2f} s)",
                  f"  import from Qdrant {q['seconds']:.1f} s, from the folder {f['seconds']:.1f} s "
                  f"→ {run['time_ratio']:.2f}x the folder (target ≤ 1.20)",
                  f"  driver peak RSS: Qdrant {q['driver_peak_rss_mib']:.0f} MiB, folder {f['driver_peak_rss_mib']:.0f} MiB"]
    if "driver_rss_ratio_2x" in results:
        lines.append(f"2x the collection: driver peak RSS {results['driver_rss_ratio_2x']:.2f}x, "
                     f"import time {results['time_ratio_2x']:.2f}x")
    return "\n".join(lines)
