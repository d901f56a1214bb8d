"""`corpusmem bench import`: an import, end to end, against the least any import could cost.

On a CPU machine the least an import can spend is encoding the corpus's text once with the
embedding model. The floor is exactly that, measured in this process in the same run: the
corpus's documents cut into 1,000-character pieces, encoded once with the same model and threads
by the fastest execution this machine offers on a sample of those pieces, or by the import's own
where that is faster on all of them (`_floors`). The import runs as a child process in an empty memory,
on a Ray of its own, and is timed from its start to the moment its run report says the run is
done (the facts decided and served), and to its exit (Ray stopped); its driver's peak memory is
sampled all along. The ratios floor / import, to the report and to the exit, are the figures:
1.0 would be an import that costs nothing but the embedding of its text.

Two corpora: the generated notes (`--docs N`, and 2N for the scaling) and, with `--locomo DIR`,
the LoCoMo conversations rendered as the recall benchmark renders them (half of each
conversation's sessions, then all of them, for the scaling).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from jobs import runtime
from jobs.bench import cpu_use, locomo, memory_use
from jobs.bench import recall as bench_recall
from jobs.bench import serve as bench_serve
from jobs.bench import synthetic
from sql.store import embedded

PIECE_CHARS = 1000
# Pieces each execution encodes to find the fastest on this corpus's pieces, before the floor.
FLOOR_SAMPLE = 48


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=("import", "import-vectors", "facts", "serve", "recall", "docs"),
                        help="which benchmark: import (end to end against the corpus's embedding floor), "
                        "import-vectors (a Qdrant collection of chunk records against a folder of the same "
                        "documents), facts (adjudication rate and import time at N and 2N documents), serve "
                        "(read-API latency under 1 and 8 clients against a bare pgvector query), recall "
                        "(LoCoMo or LongMemEval evidence recall against retrieval over the raw turns), or docs "
                        "(junk entities and claims on code in a memory of documentation pages)")
    parser.add_argument("--docs", type=int, default=2000, help="documents in the base corpus (default 2000)")
    parser.add_argument("--no-double", action="store_true",
                        help="skip the 2x run that checks time and driver memory scale")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temp dir)")
    parser.add_argument("--gpu-figures", metavar="PATH", type=Path,
                        help="the --json of a `bench import` run on a GPU node (scripts/gpu_bench_import.sh): "
                        "its steady state is shown beside this machine's as the one-GPU-node projection")
    bench_serve.add_arguments(parser)
    bench_recall.add_arguments(parser)
    from jobs.bench import docs as bench_docs

    bench_docs.add_arguments(parser)
    from jobs.bench import import_vectors as bench_vectors   # it uses `run_child` from here

    bench_vectors.add_arguments(parser)
    from jobs.bench import ocr as bench_ocr

    bench_ocr.add_arguments(parser)
    from jobs.bench import table as bench_table

    bench_table.add_arguments(parser)


def write_corpus(root: Path, count: int, generator=synthetic.generate) -> None:
    for doc in generator(count):
        path = root / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text, encoding="utf-8")


def corpus_pieces(root: Path, chars: int = PIECE_CHARS) -> list[str]:
    """Every document's text cut into `chars`-character pieces (a piece never spans two)."""
    pieces = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        pieces += [text[i:i + chars] for i in range(0, len(text), chars)]
    return pieces


def _import_child(corpus: Path, home: Path, args: argparse.Namespace, dated_by: str = "path") -> dict[str, Any]:
    return run_child(["jobs.import_corpus", str(corpus), "--modified-at-from", dated_by], home, args)


def run_child(module_args: list[str], home: Path, args: argparse.Namespace, *, memory: bool = False) -> dict[str, Any]:
    """`python -m MODULE ARGS...` (an import) in a child process on the memory under `home`: the
    seconds until its report says the run is done, the seconds until it exited, and its peak RSS
    (sampled every 50 ms); with `memory`, what its processes and its PostgreSQL held, every 5 s
    (`memory_use.TreeMemory`)."""
    env = bench_serve.memory_env(home) | {"PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", *module_args, "--workers", str(args.workers), "--batch-size", str(args.batch_size),
           "--no-progress"]
    started = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=runtime.PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    done: list[float] = []

    def read() -> None:
        for line in child.stdout:
            lines.append(line)
            if line.startswith("import run ") and not done:
                done.append(time.perf_counter() - started)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc, peak = psutil.Process(child.pid), 0
    # the import's processes (Ray's are its children) and its database server's, every half second
    cpu, server, data_dir = cpu_use.TreeCpu(), None, (home / "pg").resolve()
    held = memory_use.TreeMemory() if memory else None
    who = _PostgresNames(data_dir)
    try:
        for tick in itertools.count():
            if child.poll() is not None:
                break
            try:
                peak = max(peak, proc.memory_info().rss)
            except psutil.NoSuchProcess:
                break
            if tick % 10 == 0:
                server = server or embedded.server_process(data_dir)
                roots, names = [proc, *([server] if server is not None else [])], who.read()
                cpu.sample(*roots, names=names)
                if held is not None and tick % 100 == 0:
                    held.sample(time.perf_counter() - started, *roots, names=names)
            time.sleep(0.05)
    finally:
        who.close()
    exited = time.perf_counter() - started
    reader.join(timeout=10)
    if child.returncode != 0 or not done:
        raise RuntimeError(f"import failed ({child.returncode}):\n{''.join(lines)}")
    return {"seconds": done[0], "exit_seconds": exited, "driver_peak_rss_mib": peak / 2**20, "report": "".join(lines),
            "cpu_seconds": cpu.seconds, "cpu_by_process": cpu.by_component(),
            **({"memory": held.summary()} if held is not None else {})}


class _PostgresNames:
    """Which PostgreSQL backend is whose, read while the import runs (`cpu_use.postgres_components`),
    over a connection of the benchmark's own that joins nothing; its own queries are named too."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._conn = None
        self._names: dict[int, str] = {}

    def read(self) -> dict[int, str]:
        import psycopg

        try:
            if self._conn is None:
                dsn = embedded.socket_dsn(self._data_dir)
                if dsn is None:
                    return self._names
                self._conn = psycopg.connect(dsn, autocommit=True, application_name="corpusmem bench",
                                             connect_timeout=2)
            self._names.update(cpu_use.postgres_components(self._conn))
        except psycopg.Error:   # not up yet (the database is made after the server), or stopping
            self.close()
        return self._names

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _encoding_alone(home: Path, execution: str, threads: int, batch_size: int) -> dict[str, Any]:
    """The second reference: the import's own chunks and claims (every distinct text it encoded),
    through its own execution and threads, in this process with nothing else running."""
    from actors.embedder import resolve_model
    from sql.read import bench_queries
    from sql.store import authority as store

    settings = runtime.settings()
    with store.connect(embedded.start((home / "pg").resolve())) as conn:
        texts = bench_queries.encoded_texts(conn)
    ref = resolve_model(settings.embedding_model, execution, settings.model_cache)
    seconds = {kind: _encode_seconds(found, ref, threads, batch_size) if found else 0.0
               for kind, found in texts.items()}
    return {"alone_seconds": sum(seconds.values()), "alone_by_kind": seconds,
            "alone_texts": {kind: len(found) for kind, found in texts.items()}}


def _last_run(home: Path) -> dict[str, Any]:
    """The last import's run report, with `landings`: the seconds from its start at which each
    version landed (`bench_queries.last_import_landings`)."""
    from sql.read import bench_queries
    from sql.store import authority as store
    from sql.store import embedded

    dsn = embedded.start((home / "pg").resolve())
    with store.connect(dsn) as conn:
        return bench_queries.last_import_report(conn) | {"landings": bench_queries.last_import_landings(conn)}


# The pipeline's start-up and first batches are left out of the steady state.
WARM_UP_SECONDS = 60.0


def steady_state(landings: list[float], warm_up: float = WARM_UP_SECONDS) -> float | None:
    """Documents per second landed after the first `warm_up` seconds: what a run of any length
    keeps up, the figure that predicts a cluster run. None when too few landed after it (fewer
    than 2 distinct landing times) to time a rate."""
    after = [t for t in landings if t > warm_up]
    if len(set(after)) < 2:
        return None
    return len(after) / (after[-1] - warm_up)


def _encode_seconds(texts: list[str], model_ref, threads: int, batch_size: int) -> float:
    from actors.embedder import load_model

    model = load_model(model_ref, "auto", threads)   # a GPU machine's floor is its GPU
    model.encode(texts[:batch_size], batch_size=batch_size)  # warm-up, as the actor's first batch
    started = time.perf_counter()
    model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - started


def _gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _floors(corpus: Path, threads: int, batch_size: int) -> dict[str, Any]:
    """The floor: the pieces encoded by the fastest execution this machine offers (on a GPU, torch),
    as timed on a sample of the same pieces, and by the import's own execution where that is
    another; the faster of the two is the floor, so an import is never compared with a slower
    execution than its own, whatever CORPUSMEM_EMBEDDING_EXECUTION says."""
    from actors import calibration
    from actors.embedder import resolve_model

    settings = runtime.settings()
    pieces = corpus_pieces(corpus)
    gpu = _gpu()
    used = runtime.embedding_model(settings, None, gpu=gpu)

    def encode(texts: list[str], execution: str) -> float:
        return _encode_seconds(texts, resolve_model(settings.embedding_model, execution, settings.model_cache),
                               threads, batch_size)

    offered = ["torch"] if gpu else calibration.candidates(used.path)
    sample = pieces[::max(1, len(pieces) // FLOOR_SAMPLE)][:FLOOR_SAMPLE]
    on_sample = {execution: encode(sample, execution) for execution in offered} if len(offered) > 1 else {}
    fastest = min(on_sample, key=on_sample.__getitem__) if on_sample else offered[0]
    timed = {fastest: encode(pieces, fastest)}
    if used.execution not in timed:
        timed[used.execution] = encode(pieces, used.execution)
    floor = min(timed, key=timed.__getitem__)
    return {"pieces": len(pieces), "characters": sum(map(len, pieces)), "execution": used.execution,
            "floor_execution": floor, "floor_seconds": timed[floor], "floor_timings": timed,
            "floor_sample_seconds": on_sample}


def _run_figures(corpus: Path, home: Path, args: argparse.Namespace, dated_by: str) -> dict[str, Any]:
    print(f"importing {corpus.name} into an empty memory", file=sys.stderr, flush=True)
    child = _import_child(corpus, home, args, dated_by)
    report = _last_run(home)
    counts, facts = report["counts"], report.get("facts") or {}
    vectors = facts.get("vectors", {})
    return {"documents": counts["documents_seen"], "chunks": counts["chunks"], "claims": counts["claims"],
            "import_seconds": round(child["seconds"], 2), "exit_seconds": round(child["exit_seconds"], 2),
            "startup_seconds": round(child["seconds"] - report["pipeline_seconds"], 2),
            "pipeline_seconds": report["pipeline_seconds"],
            "driver_peak_rss_mib": round(child["driver_peak_rss_mib"], 1),
            "steady_docs_per_second": steady_state(report["landings"]),
            "cpu_seconds": round(child["cpu_seconds"], 1),
            "cpu_components": cpu_components(child["cpu_by_process"], report.get("stage_cpu_seconds", {}),
                                             facts.get("cpu_seconds", {})),
            "stage_seconds": report["stage_seconds"], "facts_seconds": facts.get("seconds", {}),
            "texts_embedded": {"chunks": counts.get("chunk_vectors_computed", 0),
                               "claims": counts.get("claim_vectors_computed", 0),
                               "labels": vectors.get("fact_vectors", 0), "profiles": vectors.get("profiles", 0)},
            "vectors_not_embedded": {"chunks_of_earlier_versions": counts.get("vectors_reused", 0),
                                     "same_text_in_this_run": counts.get("vectors_cached", 0),
                                     "labels_from_their_claim": vectors.get("fact_vectors_from_claims", 0)}}


AROUND_THE_STAGES = "Ray workers, around the stages (Ray Data's own work on each task, start-up, imports)"


def cpu_components(by_process: dict[str, float], stage_cpu: dict[str, float],
                   facts_cpu: dict[str, float]) -> dict[str, float]:
    """The import's CPU seconds by component, summing to its total: processes by what they are
    (`cpu_use.TreeCpu.by_component`), with Ray's workers split into the stages and facts steps
    they ran (each measured in its worker: `records.share_seconds`, the shards' `cpu_seconds`) and
    the rest of their time. That rest is what the workers' sampled CPU leaves, so it can come out
    a little below zero when a worker's last half second went unsampled."""
    out = {name: seconds for name, seconds in by_process.items() if name != cpu_use.RAY_WORKERS}
    inside = {f"stage {k}": v for k, v in stage_cpu.items() if v} | {f"facts {k}": v for k, v in facts_cpu.items() if v}
    out |= inside
    out[AROUND_THE_STAGES] = by_process.get(cpu_use.RAY_WORKERS, 0.0) - sum(inside.values())
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _locomo_folders(locomo_dir: Path, work: Path) -> list[Path]:
    """Half of each conversation's sessions (the first ones), then all of them."""
    sessions, _ = locomo.read_folder(locomo_dir)
    by_conversation: dict[str, list] = {}
    for s in sessions:
        by_conversation.setdefault(s.conversation, []).append(s)
    half = [s for group in by_conversation.values() for s in group[:len(group) // 2]]
    folders = []
    for name, chosen in (("locomo-half", half), ("locomo", sessions)):
        folder = work / name
        if not folder.exists():
            bench_recall.write_documents(chosen, folder)
        folders.append(folder)
    return folders


def bench_import(args: argparse.Namespace) -> dict[str, Any]:
    gpu = read_gpu_figures(args.gpu_figures) if args.gpu_figures is not None else None   # before the long part
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    settings = runtime.settings()
    threads = max(1, (os.cpu_count() or 1) // max(args.workers, 1))
    plans: list[tuple[str, list[Path], str]] = []
    notes = []
    for size in [args.docs] if args.no_double else [args.docs, 2 * args.docs]:
        folder = work / f"notes-{size}"
        if not folder.exists():
            print(f"generating {size} documents in {folder}", file=sys.stderr)
            write_corpus(folder, size)
        notes.append(folder)
    plans.append(("notes", notes, "path"))
    if args.locomo is not None:
        folders = _locomo_folders(args.locomo, work)
        plans.append(("locomo", folders[1:] if args.no_double else folders, "mtime"))
    results: dict[str, Any] = {"workers": args.workers, "threads": threads,
                               "embed_batch_size": settings.embed_batch(_gpu()), "corpora": {}}
    for name, folders, dated_by in plans:
        runs = []
        for folder in folders:
            run = _run_figures(folder, work / f"home-{folder.name}", args, dated_by)
            print(f"encoding {folder.name}'s text in {PIECE_CHARS}-character pieces ({threads} threads)",
                  file=sys.stderr, flush=True)
            run.update(_floors(folder, threads, settings.embed_batch(_gpu())))
            print(f"encoding the import's own chunks and claims alone ({run['execution']})", file=sys.stderr, flush=True)
            run.update(_encoding_alone(work / f"home-{folder.name}", run["execution"], threads,
                                       settings.embed_batch(_gpu())))
            run["ratio"] = run["floor_seconds"] / run["import_seconds"]
            run["ratio_bound"] = ratio_bound(run)
            # what a user waits for: the process's start to its exit, Ray's start and stop included
            run["exit_ratio"] = run["floor_seconds"] / run["exit_seconds"]
            # outside the embedder: what more embedders (or a GPU) would not take away; its CPU
            # measured in its worker (busy seconds × threads would count its waits for a core)
            embed_cpu = run["cpu_components"].get("stage embed", 0.0)
            run["cpu_seconds_per_doc"] = run["cpu_seconds"] / max(run["documents"], 1)
            run["cpu_seconds_per_doc_outside_embedder"] = max(run["cpu_seconds"] - embed_cpu, 0.0) / max(
                run["documents"], 1)
            runs.append(run)
        corpus = {"runs": runs}
        if len(runs) == 2:
            small, large = runs
            corpus["time_ratio_2x"] = large["import_seconds"] / small["import_seconds"]
            corpus["floor_ratio_2x"] = large["floor_seconds"] / small["floor_seconds"]
            corpus["driver_rss_ratio_2x"] = large["driver_peak_rss_mib"] / small["driver_peak_rss_mib"]
        results["corpora"][name] = corpus
    if gpu is not None:
        results["gpu"] = gpu
    return results


def ratio_bound(run: dict[str, Any]) -> float:
    """The most floor/import a run could reach on this machine with nothing but its start-up and
    its encoding alone: the pipeline starts once Ray, the memory's server and the run are up, and
    it must encode every chunk and claim, which alone takes `alone_seconds` with the whole machine.
    Everything else the import does (conversion, extraction, writes, the facts phase, Ray's own
    work) only lowers it."""
    return run["floor_seconds"] / (run["startup_seconds"] + run["alone_seconds"])


# The archive a projection is given for: the size of import the project is built for.
PROJECTED_DOCUMENTS = 1_000_000


def read_gpu_figures(path: Path) -> dict[str, Any]:
    """`gpu_projection` of the figures in `path`; what is wrong with them ends the command, named."""
    try:
        return gpu_projection(json.loads(path.read_text()))
    except (OSError, ValueError, AttributeError, TypeError) as err:
        raise SystemExit(f"corpusmem bench import: --gpu-figures {path}: {err}") from err


def gpu_projection(gpu_results: dict[str, Any]) -> dict[str, Any]:
    """One GPU node's steady state on the generated notes, from a GPU run's figures: its largest
    run that reached one. Raises ValueError naming what the figures lack."""
    runs = [r for r in gpu_results.get("corpora", {}).get("notes", {}).get("runs", [])
            if r.get("steady_docs_per_second")]
    if not runs:
        raise ValueError("--gpu-figures: no run of generated notes there reached a steady state "
                         "(run scripts/gpu_bench_import.sh with --docs 10000)")
    run = max(runs, key=lambda r: r["documents"])
    return {"documents": run["documents"], "steady_docs_per_second": run["steady_docs_per_second"],
            "floor_execution": run.get("floor_execution")}


def _hours(docs_per_second: float) -> str:
    return f"{PROJECTED_DOCUMENTS / docs_per_second / 3600:.1f} h"


def render(results: dict[str, Any]) -> str:
    lines = [f"import end to end against the embedding floor ({results['threads']} threads, "
             f"batches of {results['embed_batch_size']}; floor: the corpus in {PIECE_CHARS}-character pieces, "
             "encoded once by the fastest execution)"]
    for name, corpus in results["corpora"].items():
        for run in corpus["runs"]:
            lines.append(f"{name}: {run['documents']} documents, {run['pieces']} pieces, {run['chunks']} chunks, "
                         f"{run['claims']} claims")
            others = "".join(f"; through {execution}: {seconds:.1f} s" for execution, seconds in
                             run["floor_timings"].items() if execution != run["floor_execution"])
            lines.append(f"  import {run['import_seconds']:.1f} s to the facts served ({run['exit_seconds']:.1f} s to "
                         f"exit) with {run['execution']}, floor {run['floor_seconds']:.1f} s through "
                         f"{run['floor_execution']}{others} → floor/import = {run['ratio']:.2f} "
                         f"to the report, {run['exit_ratio']:.2f} to exit")
            if "alone_seconds" in run:
                texts = run["alone_texts"]
                lines.append(f"  encoding alone: the import's {texts['chunks']} chunks and {texts['claims']} claims through "
                             f"{run['execution']} in one process, {run['alone_seconds']:.1f} s ("
                             + ", ".join(f"{k} {v:.1f}" for k, v in run["alone_by_kind"].items())
                             + f") → alone/import = {run['alone_seconds'] / run['import_seconds']:.2f}")
                lines.append(f"  the most floor/import this machine allows with this start-up: floor / (start-up "
                             f"{run['startup_seconds']:.1f} s + encoding alone) = {run['ratio_bound']:.2f}")
            lines.append(f"  start-up {run['startup_seconds']:.1f} s; busy seconds per stage: " + ", ".join(
                f"{stage} {secs:.1f}" for stage, secs in run["stage_seconds"].items() if secs >= 0.05))
            lines.append("  facts steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in run["facts_seconds"].items()))
            lines.append("  texts embedded: " + ", ".join(f"{k} {v}" for k, v in run["texts_embedded"].items())
                         + "; vectors not embedded: " + ", ".join(
                             f"{k.replace('_', ' ')} {v}" for k, v in run["vectors_not_embedded"].items()))
            steady = run["steady_docs_per_second"]
            lines.append("  steady state (after the first minute): " + (
                f"{steady:.1f} documents/s" if steady is not None else "not reached (the pipeline ended within it)")
                + f"; CPU {run['cpu_seconds_per_doc'] * 1000:.0f} ms a document, "
                f"{run['cpu_seconds_per_doc_outside_embedder'] * 1000:.0f} ms outside the embedder")
            lines.append(f"  driver peak RSS {run['driver_peak_rss_mib']:.0f} MiB")
            if run.get("cpu_components"):
                lines.append(f"  CPU a document by component (ms; {run['cpu_seconds']:.1f} CPU-s in all):")
                lines += [f"    {1000 * seconds / max(run['documents'], 1):7.1f}  {name}"
                          for name, seconds in run["cpu_components"].items() if abs(seconds) >= 0.05]
        steady = [r["steady_docs_per_second"] for r in corpus["runs"] if r["steady_docs_per_second"]]
        if name == "notes" and steady:
            gpu = results.get("gpu")
            lines.append(f"  {PROJECTED_DOCUMENTS:,} documents at this steady state: {_hours(steady[-1])} on this "
                         "machine; one GPU node: " + (
                             f"{gpu['steady_docs_per_second']:.1f} documents/s measured at {gpu['documents']} "
                             f"documents, {_hours(gpu['steady_docs_per_second'])}" if gpu else
                             "not projected (no GPU run's figures given: --gpu-figures)"))
        if "time_ratio_2x" in corpus:
            lines.append(f"  2x the corpus: {corpus['time_ratio_2x']:.2f}x the import time (floor "
                         f"{corpus['floor_ratio_2x']:.2f}x), driver peak RSS {corpus['driver_rss_ratio_2x']:.2f}x")
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
        report = _last_run(home)
        facts = report["facts"]
        adjudicate = facts["seconds"]["adjudicate"]
        results["runs"].append({
            "documents": report["counts"]["documents_seen"], "claims": report["counts"]["claims"],
            "assertions": facts["assertions"], "entities": facts["anchors"], "decisions": facts["decisions"],
            "import_seconds": child["seconds"], "pipeline_seconds": report["pipeline_seconds"],
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
    elif args.what == "docs":
        from jobs.bench import docs as bench_docs

        results = bench_docs.bench(args)
        print(bench_docs.render(results))
    elif args.what == "import-vectors":
        from jobs.bench import import_vectors as bench_vectors

        results = bench_vectors.bench(args)
        print(bench_vectors.render(results))
    elif args.what == "facts":
        results = bench_facts(args)
        print(render_facts(results))
    elif args.table_mb:
        from jobs.bench import table as bench_table

        results = bench_table.bench(args)
        print(bench_table.render(results))
    elif args.ocr_pages:
        from jobs.bench import ocr as bench_ocr

        results = bench_ocr.bench(args)
        print(bench_ocr.render(results))
    else:
        results = bench_import(args)
        print(render(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float))
    return 0
