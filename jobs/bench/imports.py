"""`corpusmem bench import`: import throughput against raw encode speed, measured in one run.

For a generated corpus of N documents (and 2N, for driver memory) the benchmark imports into an
empty memory in a child process (so the driver's peak memory can be read), then encodes the very
chunk texts that import wrote with `SentenceTransformer.encode` in this process, with the same
model and threads. On a small CPU machine embedding is the floor of the import's cost, so the
figure that matters is the ratio of the two throughputs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from jobs import runtime
from jobs.bench import recall as bench_recall
from jobs.bench import serve as bench_serve
from jobs.bench import synthetic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=("import", "facts", "serve", "recall"), help="which benchmark: import "
                        "throughput against raw encode, facts (adjudication rate and import time at N and 2N "
                        "documents), serve (read-API latency under 1 and 8 clients against a bare pgvector "
                        "query), or recall (LoCoMo evidence recall against retrieval over the raw turns)")
    parser.add_argument("--docs", type=int, default=2000, help="documents in the base corpus (default 2000)")
    parser.add_argument("--no-double", action="store_true",
                        help="skip the 2N run that checks driver memory stays flat")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temp dir)")
    bench_serve.add_arguments(parser)
    bench_recall.add_arguments(parser)


def write_corpus(root: Path, count: int, generator=synthetic.generate) -> None:
    for doc in generator(count):
        path = root / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text, encoding="utf-8")


def _import_child(corpus: Path, home: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Run `python -m jobs.import_corpus` in a child process; sample its RSS every 50 ms."""
    env = {k: v for k, v in os.environ.items() if k != "CORPUSMEM_DSN"}
    env.update(CORPUSMEM_HOME=str(home), CORPUSMEM_OBJECT_STORE="")
    cmd = [sys.executable, "-m", "jobs.import_corpus", str(corpus), "--modified-at-from", "path",
           "--workers", str(args.workers), "--batch-size", str(args.batch_size), "--no-progress"]
    started = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=runtime.PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    proc, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    out = child.stdout.read() if child.stdout else ""
    if child.returncode != 0:
        raise RuntimeError(f"import failed ({child.returncode}):\n{out}")
    return {"process_seconds": time.perf_counter() - started, "driver_peak_rss_mib": peak / 2**20,
            "report": out}


def _last_run(home: Path) -> tuple[dict[str, Any], list[str]]:
    from sql.read import bench_queries
    from sql.store import authority as store
    from sql.store import embedded

    dsn = embedded.start((home / "pg").resolve())
    with store.connect(dsn) as conn:
        return bench_queries.last_import_report(conn), bench_queries.embedded_texts(conn)


def _raw_encode(texts: list[str], threads: int, batch_size: int) -> float:
    from actors.embedder import load_model, resolve_model

    settings = runtime.settings()
    model = load_model(resolve_model(settings.embedding_model), "cpu", threads)
    model.encode(texts[:batch_size], batch_size=batch_size)  # warm-up, as the actor's first batch
    started = time.perf_counter()
    model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
    return len(texts) / (time.perf_counter() - started)


def bench_import(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    settings = runtime.settings()
    sizes = [args.docs] if args.no_double else [args.docs, 2 * args.docs]
    results: dict[str, Any] = {"docs": args.docs, "workers": args.workers, "runs": []}
    for size in sizes:
        corpus, home = work / f"corpus-{size}", work / f"home-{size}"
        if not corpus.exists():
            print(f"generating {size} documents in {corpus}", file=sys.stderr)
            write_corpus(corpus, size)
        print(f"importing {size} documents into an empty memory", file=sys.stderr)
        child = _import_child(corpus, home, args)
        report, texts = _last_run(home)
        counts = report["counts"]
        run = {"documents": counts["documents_seen"], "chunks": counts["chunks"], "claims": counts["claims"],
               "ledger_rows": counts["ledger_rows"], "texts_embedded": len(texts),
               "pipeline_seconds": report["pipeline_seconds"], "wall_seconds": report["wall_seconds"],
               "driver_peak_rss_mib": round(child["driver_peak_rss_mib"], 1),
               "docs_per_s": counts["documents_seen"] / report["pipeline_seconds"],
               "chunks_per_s": counts["chunks"] / report["pipeline_seconds"],
               "claims_per_s": counts["claims"] / report["pipeline_seconds"],
               "ledger_rows_per_s": counts["ledger_rows"] / report["pipeline_seconds"],
               "texts_per_s": len(texts) / report["pipeline_seconds"],
               "stage_seconds": report["stage_seconds"]}
        if size == args.docs:
            threads = max(1, (os.cpu_count() or 1) // max(args.workers, 1))
            print(f"encoding the same {len(texts)} texts directly ({threads} threads)", file=sys.stderr)
            run["raw_encode_texts_per_s"] = _raw_encode(texts, threads, settings.embed_batch_size)
            run["ratio_to_raw_encode"] = run["texts_per_s"] / run["raw_encode_texts_per_s"]
        results["runs"].append(run)
    if len(results["runs"]) == 2:
        a, b = results["runs"]
        results["driver_rss_ratio_2n_over_n"] = b["driver_peak_rss_mib"] / a["driver_peak_rss_mib"]
    return results


def render(results: dict[str, Any]) -> str:
    lines = []
    for run in results["runs"]:
        lines.append(f"{run['documents']} documents, {run['chunks']} chunks, {run['claims']} claims, "
                     f"{run['ledger_rows']} ledger rows: "
                     f"{run['docs_per_s']:.1f} docs/s, {run['chunks_per_s']:.1f} chunks/s, "
                     f"{run['claims_per_s']:.1f} claims/s, {run['ledger_rows_per_s']:.1f} ledger rows/s "
                     f"({run['pipeline_seconds']:.1f} s in the pipeline, {run['wall_seconds']:.1f} s with "
                     f"start-up); driver peak RSS {run['driver_peak_rss_mib']:.0f} MiB")
        if "raw_encode_texts_per_s" in run:
            lines.append(f"  embedded {run['texts_embedded']} texts (chunks and claims) at "
                         f"{run['texts_per_s']:.1f}/s end to end; raw SentenceTransformer.encode on the "
                         f"same texts: {run['raw_encode_texts_per_s']:.1f}/s → import/raw = "
                         f"{run['ratio_to_raw_encode']:.2f}")
        busy = sum(run["stage_seconds"].values()) or 1.0
        per_stage = ", ".join(
            f"{stage} {run['documents'] / secs:.0f} docs/s ({100 * secs / busy:.0f}%)"
            for stage, secs in run["stage_seconds"].items() if secs > 0)
        lines.append(f"  per stage, busy time and its share: {per_stage}")
    if "driver_rss_ratio_2n_over_n" in results:
        lines.append(f"driver peak RSS, 2N over N: {results['driver_rss_ratio_2n_over_n']:.2f}")
    return "\n".join(lines)


def bench_facts(args: argparse.Namespace) -> dict[str, Any]:
    """Import generated notes about a recurring cast at N and 2N documents into empty memories:
    total import time must grow no worse than linearly, adjudication cost per assertion must stay
    flat as entities accumulate facts."""
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"docs": args.docs, "workers": args.workers, "runs": []}
    for size in ([args.docs] if args.no_double else [args.docs, 2 * args.docs]):
        corpus, home = work / f"facts-corpus-{size}", work / f"facts-home-{size}"
        if not corpus.exists():
            print(f"generating {size} documents in {corpus}", file=sys.stderr)
            write_corpus(corpus, size, synthetic.generate_facts)
        print(f"importing {size} documents into an empty memory", file=sys.stderr)
        child = _import_child(corpus, home, args)
        report, _ = _last_run(home)
        facts = report["facts"]
        adjudicate = facts["seconds"]["adjudicate"]
        results["runs"].append({
            "documents": report["counts"]["documents_seen"], "claims": report["counts"]["claims"],
            "assertions": facts["assertions"], "entities": facts["anchors"], "decisions": facts["decisions"],
            "import_seconds": child["process_seconds"], "pipeline_seconds": report["pipeline_seconds"],
            "facts_seconds": facts["seconds"], "decisions_per_s": facts["decisions"] / max(adjudicate, 1e-9),
            "per_entity_work": facts["per_entity_work"]})
    if len(results["runs"]) == 2:
        a, b = results["runs"]
        results["import_time_ratio_2n_over_n"] = b["import_seconds"] / a["import_seconds"]
    return results


def render_facts(results: dict[str, Any]) -> str:
    lines = []
    for run in results["runs"]:
        secs = run["facts_seconds"]
        lines.append(f"{run['documents']} documents, {run['claims']} claims, {run['assertions']} assertions on "
                     f"{run['entities']} entities: import {run['import_seconds']:.1f} s "
                     f"({run['pipeline_seconds']:.1f} s from the first document to the end of the facts phase, of which facts: "
                     + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()) + ")")
        lines.append(f"  adjudication: {run['decisions']} decisions at {run['decisions_per_s']:.0f} decisions/s")
        lines.append("  per-entity work by candidate facts loaded: " + "; ".join(
            f"{b['candidate_facts']}: {b['entities']} entities, {b['ms_per_assertion']:.2f} ms/assertion"
            for b in run["per_entity_work"]))
    if "import_time_ratio_2n_over_n" in results:
        lines.append(f"import time, 2N over N: {results['import_time_ratio_2n_over_n']:.2f} (linear is 2.00)")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.what == "serve":
        results = bench_serve.bench(args)
        print(bench_serve.render(results))
    elif args.what == "recall":
        results = bench_recall.bench(args)
        print(bench_recall.render(results))
    elif args.what == "facts":
        results = bench_facts(args)
        print(render_facts(results))
    else:
        results = bench_import(args)
        print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float))
    return 0
