"""`corpusmem bench import --table-mb N`: one generated CSV of N megabytes imported into a new
memory, with what the import's processes and its PostgreSQL held while it ran.

A table file is read in parts of about 1 MiB, each a document (`pipeline/documents/tables.py`), so
what an import holds should level off with the file, not grow with it. The baseline is the same
import of a file a sixteenth the size, in the same run: the benchmark gives both peaks and their
ratio, with each component's peak (`memory_use.TreeMemory`, PSS every 5 s). The rows are four
columns, about 136 bytes each, seeded, so a size gives the same file on every machine. Embedding
is most of the time (on 2 cores, all-MiniLM-L6-v2 embeds about 55 table chunks a second: a 1 GB
file is hours); `CORPUSMEM_EMBEDDING_MODEL` may name a smaller local model for a memory-only run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

_WORDS = ("alpha beta gamma delta shipment invoice warehouse customer region quarterly forecast budget review "
          "team order route pallet carrier").split()
BASELINE_SHARE = 16   # the baseline file is this many times smaller


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table-mb", type=float, default=0, metavar="N",
                        help="import: one generated CSV of N megabytes, with the memory the import held, against "
                        "a file of N/16 (default 0: the text corpus)")


def write_csv(path: Path, megabytes: float, seed: int = 7) -> int:
    """A CSV of at least `megabytes` million bytes at `path`; its rows."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("id,customer,date,note\n")
        while out.tell() < megabytes * 1e6:
            note = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20)))
            out.write(f"{rows},Customer {rng.randint(1, 5000)},2024-{rng.randint(1, 12):02d}-"
                      f"{rng.randint(1, 28):02d},\"{note}\"\n")
            rows += 1
    return rows


def _one(work: Path, megabytes: float, args: argparse.Namespace) -> dict[str, Any]:
    from jobs.bench.imports import run_child
    from sql.read import bench_queries
    from sql.store import authority as store
    from sql.store import embedded

    corpus, home = work / f"table-{megabytes:g}", work / f"home-table-{megabytes:g}"
    print(f"generating a CSV of {megabytes:g} MB in {corpus}", file=sys.stderr, flush=True)
    rows = write_csv(corpus / "table.csv", megabytes)
    print("importing it into an empty memory", file=sys.stderr, flush=True)
    child = run_child(["jobs.import_corpus", str(corpus)], home, args, memory=True)
    with store.connect(embedded.start((home / "pg").resolve())) as conn:
        report = bench_queries.last_import_report(conn)
        landed = sorted(bench_queries.last_import_landings(conn))
    return {"megabytes": megabytes, "bytes": (corpus / "table.csv").stat().st_size, "rows": rows,
            "first_landed_seconds": round(landed[0], 1) if landed else None,
            "half_landed_seconds": round(landed[len(landed) // 2], 1) if landed else None,
            "parts": report["counts"]["new_versions"], "chunks": report["counts"]["chunks"],
            "failed": report["counts"]["failed"], "exit_seconds": round(child["exit_seconds"], 1),
            "embedding": report.get("embedding", {}).get("model"), "memory": child["memory"]}


def bench(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-table-"))
    baseline = _one(work, args.table_mb / BASELINE_SHARE, args)
    run = _one(work, args.table_mb, args)
    return {"baseline": baseline, "run": run,
            "peak_ratio": run["memory"]["peak_in_use_mib"] / max(baseline["memory"]["peak_in_use_mib"], 1)}


def render(results: dict[str, Any]) -> str:
    lines = ["CSV imports, each into a new memory, with the memory held while they ran (PSS, every 5 s)"]
    for name in ("baseline", "run"):
        r = results[name]
        m = r["memory"]
        lines += [f"  {r['bytes'] / 1e6:,.0f} MB ({r['rows']:,} rows): {r['parts']} parts, {r['chunks']:,} chunks, "
                  f"{r['failed']} failed, {r['exit_seconds']:,.0f} s to exit (embedding {r['embedding']}); "
                  f"the first part landed after {r['first_landed_seconds']} s, half of them after "
                  f"{r['half_landed_seconds']} s",
                  f"    memory in use above idle, peak {m['peak_in_use_mib']:,} MiB at {m['peak_at_seconds']:,.0f} s; "
                  "by component: " + ", ".join(f"{k} {v:,}" for k, v in list(m["by_component_mib"].items())[:6]),
                  "    largest processes: " + ", ".join(f"{t.strip()} {v:,}" for t, v in m["largest_processes_mib"][:4])]
    lines.append(f"  peak for {BASELINE_SHARE}x the file: x{results['peak_ratio']:.2f}")
    return "\n".join(lines)
