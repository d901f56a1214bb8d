"""`corpusmem import`: a Ray Data pipeline from files, folders and archives into the authority.

    read ─► ingest ─► convert ─► structure ─► chunk ─► embed ─► write

`read`, `convert`, `structure` and `chunk` are Ray tasks over pure functions (`pipeline/`);
`ingest`, `embed` and `write` are actor pools that own a connection or a model (`actors/`).
The driver only lists the sources and folds the small per-document report rows into counts, so
its memory does not grow with the corpus. Also runnable as a Ray job:
`ray job submit --working-dir . -- python -m jobs.import_corpus PATH...`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from tqdm import tqdm

from actors import metrics
from actors.db_writer import Ingest, LoadQueued, Write
from actors.embedder import Embed, ModelNotFound, model_dimension
from actors.extractor import (
    BACKENDS,
    Extract,
    ExtractorConfig,
    ExtractorUnavailable,
    build_extractor,
)
from actors.retries import RetryPolicy
from jobs import facts, runtime, shutdown
from jobs.settings import Settings
from pipeline import records
from pipeline.documents import stages
from pipeline.documents.convert import ROUTES
from pipeline.documents.walk import SourceOptions, list_sources
from sql.store import authority as store
from sql.store import runs
from sql.write import ingest as ingest_sql

if TYPE_CHECKING:
    from jobs import extract_llm

# The columns of `pipeline.documents.walk.SourceItem`.
_ITEM_SCHEMA = pa.schema([("item", pa.string()), ("path", pa.string()), ("source_ref", pa.string()),
                          ("size", pa.int64()), ("mtime", records.UTC_TS), ("error", pa.string())])

# Fractions of a CPU for the actors that mostly wait on PostgreSQL, so that on a small machine
# they leave the cores to the embedder and the conversion tasks.
_DB_ACTOR_CPUS = 0.1
TASK_CPUS = 0.25
# Documents per embedder call. `encode` sorts its texts by length, so a bigger call pads less:
# on 2 CPU threads, 16-document calls ran at about half the speed of one call over everything.
_EMBED_BATCH_DOCS = 128


def _embedder_cpus(workers: int) -> float:
    """One CPU per embedder actor, unless more embedders were asked for than the cluster has
    free CPUs (after what the stages around them hold, and what a running read API holds):
    then a fair share, so every actor starts. Never more than the smallest node holds beside the
    three database actors and one task: when a node is lost mid-import, the embedder that takes
    its place must fit on a node that is left (on one-CPU nodes a whole-CPU embedder never fits
    beside the writer, and the import would wait for ever)."""
    import ray

    nodes = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0)]
    beside = min(nodes, default=1.0) - 3 * _DB_ACTOR_CPUS - TASK_CPUS
    fair = (ray.available_resources().get("CPU", 1) - 0.75) / max(workers, 1)
    return max(0.1, min(1.0, beside, fair))


@dataclass(frozen=True)
class ImportOptions:
    """How one run goes. Entry points build it with `import_options`, which reads the settings."""

    paths: tuple[str, ...]
    source: SourceOptions
    # the claim extractor, and so the normalizer of the facts phase; no default, so that no entry
    # point falls back to `rules` whatever CORPUSMEM_EXTRACTOR says
    extractor: ExtractorConfig
    batch_size: int = 16
    workers: int = 1
    quiet: bool = True   # Ray's own logs to its files only (`--verbose` shows them)
    progress: bool = True
    # versions taken from the queue (`POST /ingest`, `retry`), processed in place of reading and
    # ingesting `paths`: the run claims those still waiting for an owner
    queued: tuple[str, ...] | None = None
    # False (the processor): when other pipelines are in flight, leave the facts phase to them
    wait_for_facts: bool = True
    # whole documents from elsewhere (a vector store rebuilt by `jobs.import_vectors`), read in
    # place of `paths`: an object with `dataset()` (DOC_SCHEMA rows), `total` (or None) and `record()`
    documents: Any = None


@dataclass
class RunReport:
    run_id: str
    seen: int = 0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    parked: list[str] = field(default_factory=list)
    chunks: int = 0
    claims: int = 0
    claims_reused: int = 0
    ledger_rows: int = 0
    chunk_vectors_computed: int = 0
    claim_vectors_computed: int = 0
    vectors_cached: int = 0
    vectors_reused: int = 0
    stage_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    wall_seconds: float = 0.0
    pipeline_seconds: float = 0.0   # from the first source item to the last report row
    status: str = "running"
    facts: "facts.FactsReport | None" = None
    facts_left_to: list[str] = field(default_factory=list)   # runs whose facts phase covers this one's
    ray_job: dict[str, str | None] = field(default_factory=dict)   # `runtime.job_info`
    nodes: dict[str, dict[str, int]] = field(default_factory=dict)  # `runtime.placements`

    def add(self, row: dict[str, Any]) -> None:
        self.seen += 1
        outcome = row["outcome"]
        self.outcomes[outcome] += 1
        self.outcomes["new"] += bool(row["created"])
        if outcome == records.FAILED:
            self.failures.append({"item": row["item"], "stage": row["error_stage"], "error": row["error"]})
        elif outcome == records.PARKED:
            self.parked.append(row["item"])
        self.chunks += row["chunks"]
        self.claims += row["claims"]
        self.claims_reused += row["claims_reused"]
        self.ledger_rows += row["ledger_rows"]
        self.chunk_vectors_computed += row["chunk_vectors_computed"]
        self.claim_vectors_computed += row["claim_vectors_computed"]
        self.vectors_cached += row["vectors_cached"]
        self.vectors_reused += row["vectors_reused"]
        for stage in records.STAGES:
            self.stage_seconds[stage] += row[f"s_{stage}"] or 0.0

    @property
    def counts(self) -> dict[str, int]:
        return {"documents_seen": self.seen, "new_versions": self.outcomes["new"],
                "unchanged": self.outcomes[records.UNCHANGED], "resumed": self.outcomes[records.RESUME],
                "parked": self.outcomes[records.PARKED], "failed": self.outcomes[records.FAILED],
                "chunks": self.chunks, "claims": self.claims, "claims_reused": self.claims_reused,
                "ledger_rows": self.ledger_rows,
                "vectors_computed": self.chunk_vectors_computed + self.claim_vectors_computed,
                "chunk_vectors_computed": self.chunk_vectors_computed,
                "claim_vectors_computed": self.claim_vectors_computed,
                "vectors_cached": self.vectors_cached, "vectors_reused": self.vectors_reused}

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status, "counts": self.counts,
                "facts": self.facts.as_dict() if self.facts else None, "facts_left_to": self.facts_left_to,
                "failures": self.failures, "parked": self.parked,
                "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
                "wall_seconds": round(self.wall_seconds, 3),
                "pipeline_seconds": round(self.pipeline_seconds, 3), "ray_job": self.ray_job, "nodes": self.nodes}

    def render(self) -> str:
        c = self.counts
        lines = [
            f"import run {self.run_id}: {self.status} in {self.wall_seconds:.1f} s "
            f"({self.pipeline_seconds:.1f} s in the pipeline)",
            f"  documents seen   {c['documents_seen']}",
            f"  new versions     {c['new_versions']}",
            f"  unchanged        {c['unchanged']}",
            f"  resumed          {c['resumed']}",
            f"  parked           {c['parked']}" + (" (no converter route: " + ", ".join(self.parked[:5])
                                                   + (", ..." if len(self.parked) > 5 else "") + ")"
                                                   if self.parked else ""),
            f"  failed           {c['failed']}",
        ]
        lines += [f"    {f['item']}: {f['stage']}: {f['error']}" for f in self.failures]
        lines += [
            f"  chunks           {c['chunks']}",
            f"  claims           {c['claims']} ({c['claims_reused']} kept from unchanged passages), "
            f"{c['ledger_rows']} ledger rows",
            f"  vectors          {c['vectors_computed']} computed ({c['chunk_vectors_computed']} chunks, "
            f"{c['claim_vectors_computed']} claims), {c['vectors_reused']} reused from earlier versions, "
            f"{c['vectors_cached']} taken from a text already encoded in this run",
            "  busy seconds per stage (summed over workers):",
            "    " + "  ".join(f"{s} {self.stage_seconds.get(s, 0.0):.2f}" for s in records.STAGES),
        ]
        if self.facts is not None:
            lines.append(self.facts.render())
        if self.facts_left_to:
            lines.append("  facts            left to run(s) " + ", ".join(self.facts_left_to)
                         + ", whose pipeline was still running")
        lines += self._render_ray()
        return "\n".join(lines)

    def _render_ray(self) -> list[str]:
        j = self.ray_job
        if not j.get("job_id"):
            return []
        line = f"  ray job          {j['job_id']}"
        named = [f"submission {j['submission_id']}"] if j.get("submission_id") else []
        named += [repr(j["job_name"])] if j.get("job_name") else []
        if named:
            line += f" ({', '.join(named)})"
        if j.get("dashboard"):
            line += f", dashboard {j['dashboard']}"
        lines = [line]
        for node, ran in sorted(self.nodes.items()):
            lines.append(f"    node {node}: " + ", ".join(f"{name} x{n}" for name, n in sorted(ran.items())))
        return lines


def _source_items(options: ImportOptions) -> list[dict[str, Any]]:
    return list(list_sources(options.paths, options.source))


def _items_dataset(items: list[dict[str, Any]]):
    """Source items as Arrow blocks (not `from_items`, which goes through numpy and loses the
    time zone of `mtime`), a few items per block so reading spreads over tasks."""
    import ray

    if not items:
        return ray.data.from_arrow(pa.Table.from_pylist([], schema=_ITEM_SCHEMA))
    per_block = max(1, len(items) // 256 + 1)
    return ray.data.from_arrow([pa.Table.from_pylist(items[i:i + per_block], schema=_ITEM_SCHEMA)
                                for i in range(0, len(items), per_block)])


def run_import(options: ImportOptions, settings: Settings, llm: "extract_llm.LlmPass | None" = None) -> RunReport:
    """Import `options.paths` into the memory named by `settings`; return the run report.

    `llm` replaces the `vllm` pass's processors (tests drive the pass with a stand-in engine)."""
    started, started_at = time.perf_counter(), time.time()
    resources = runtime.init_ray(quiet=options.quiet, job_name=job_name(options))
    runtime.check_shared(settings)
    model = runtime.embedding_model(settings, store.resolve_dsn(settings), gpu=resources.get("GPU", 0) >= 1)
    if llm is None and options.extractor.backend == "vllm":
        from jobs import extract_llm

        if not options.extractor.llm_model:
            raise ModelNotFound("the vllm extractor needs CORPUSMEM_LLM_MODEL: a local model folder")
        if resources.get("GPU", 0) < 1:
            raise ExtractorUnavailable("the vllm extractor needs a GPU in the Ray cluster and found none; "
                                       "use --extractor rules, or openai against a `vllm serve` endpoint")
        llm = extract_llm.vllm_pass(options.extractor.llm_model)
    # With an LLM pass, claims come from that pass after the main pipeline.
    extractor_version = None if llm is not None else build_extractor(options.extractor).version
    authority = store.open_store(settings, embedding_model=model.pin, embedding_dim=model_dimension(model),
                                 build_revision=runtime.build_revision())
    with store.connect(authority.dsn) as conn:
        store.drop_vector_indexes_if_empty(conn)
        run_id = runs.start_run(conn, list(options.paths), _options_record(options))
    report = RunReport(run_id)
    # The run's claims are alive exactly as long as this connection holds the run's lock
    # (`runs.hold_run`); keepalives make a vanished driver's lock end even across a network.
    owner = store.connect(authority.dsn, autocommit=True, application_name=f"corpusmem run {run_id}",
                          keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
    pipeline_started = time.perf_counter()
    bar = None
    try:
        runs.hold_run(owner, run_id)
        if options.queued is not None:
            items = [{"version_id": v} for v in ingest_sql.claim_versions(owner, run_id, list(options.queued))]
        elif options.documents is not None:
            items = None
        else:
            items = _source_items(options)
        # the ONNX executions run on CPU: only torch asks for a GPU
        use_gpu = resources.get("GPU", 0) >= 1 and model.execution == "torch"
        threads = max(1, int(resources.get("CPU", 1)) // max(options.workers, 1))
        device = "cuda" if use_gpu else settings.embedding_device
        retry = retry_policy(settings)
        bar = tqdm(total=options.documents.total if items is None else len(items), unit="doc", desc="import",
                   disable=not options.progress, file=sys.stderr, dynamic_ncols=True)
        if items is None or items:
            ds = _pipeline(options, settings, authority.dsn, run_id, items, model, extractor_version, llm,
                           use_gpu, threads, retry)
            for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
                for row in batch.to_pylist():
                    report.add(row)
                bar.update(batch.num_rows)
                bar.set_postfix(chunks=report.chunks, failed=report.outcomes[records.FAILED], refresh=False)
                metrics.set_gauge("corpusmem_items_in_flight", max(0, (bar.total or 0) - bar.n), run_id=run_id)
            metrics.set_gauge("corpusmem_items_in_flight", 0, run_id=run_id)
        if llm is not None:
            from jobs import extract_llm

            landed = extract_llm.run(authority.dsn, settings.object_store_uri, llm, model, device=device,
                                     embed_batch_size=settings.embed_batch(use_gpu), batch_size=options.batch_size,
                                     retry=retry)
            report.claims += landed["claims"]
            report.ledger_rows += landed["ledger_rows"]
            report.failures += [{"item": version_id, "stage": "extract_claims", "error": why}
                                for version_id, why in landed["dead_letter"]]
        bar.close()
        runs.end_pipeline(owner, run_id)
        if _wait_for_pipelines(owner, run_id, report, wait=options.wait_for_facts):
            with runs.facts_phase(owner):
                report.facts = facts.run_facts(
                    authority.dsn, run_id=run_id, workers=options.workers, model=model, device=device,
                    embed_batch_size=settings.embed_batch(use_gpu), threads=threads, extractor=options.extractor,
                    retry=retry)
                store.ensure_vector_indexes(owner)
        report.status = "succeeded"
    except (shutdown.Interrupted, KeyboardInterrupt):
        # stopped by a signal, not by a fault: a re-run resumes it
        report.status = "interrupted"
        raise
    finally:
        report.ray_job = runtime.job_info()
        report.nodes = runtime.placements(since=started_at)
        if bar is not None:
            bar.close()
        report.pipeline_seconds = time.perf_counter() - pipeline_started
        report.wall_seconds = time.perf_counter() - started
        if report.status not in ("succeeded", "interrupted"):
            report.status = "failed"
        try:
            runs.release_claims(owner, run_id)
            runs.finish_run(owner, run_id, status=report.status, counts=report.counts,
                            stage_seconds=dict(report.stage_seconds), report=report.as_dict())
        finally:
            owner.close()
    return report


def job_name(options: ImportOptions) -> str:
    """The job's name in the dashboard: what was imported."""
    what = " ".join(options.paths) if options.queued is None else "queued versions"
    return f"corpusmem import {what}"[:200]


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(attempts=settings.retry_attempts, backoff_s=settings.retry_backoff_s,
                       backoff_max_s=settings.retry_backoff_max_s)


def _wait_for_pipelines(owner, run_id: str, report: RunReport, *, wait: bool) -> bool:
    """Whether this run goes on to the facts phase. The facts phase reads everything pending on
    the authority, so the run waits for the document pipelines in flight elsewhere (another
    import, a processor) to land first: concurrent imports then end with the facts one import
    of all their documents decides, not with two halves decided apart. A run that does not
    wait (the processor) leaves its facts to those runs, which will read its claims too: each
    run releases its own pipeline lock before it looks at the others', so the last one to
    finish always sees the rest finished."""
    others = runs.pipelines_in_flight(owner, run_id)
    if others and not wait:
        report.facts_left_to = others
        return False
    for other in others:
        runs.wait_for_pipeline(owner, other)
    return True


def _pipeline(options: ImportOptions, settings: Settings, dsn: str, run_id: str, items: list[dict[str, Any]],
              model, extractor_version: str | None, llm, use_gpu: bool, threads: int, retry: RetryPolicy):
    """The Ray Data pipeline of the run: source items (or claimed versions) to report rows."""
    import ray

    pool = ray.data.ActorPoolStrategy(size=options.workers)
    b = options.batch_size
    target = settings.chunk_target_chars
    store_uri = settings.object_store_uri

    if options.queued is not None:
        ds = ray.data.from_arrow(pa.table({"version_id": [i["version_id"] for i in items]}))
        ds = ds.map_batches(LoadQueued, fn_constructor_kwargs={"dsn": dsn, "object_store": store_uri,
                                                                "run_id": run_id, "retry": retry},
                            compute=ray.data.ActorPoolStrategy(size=1), batch_size=b,
                            batch_format="pyarrow", num_cpus=_DB_ACTOR_CPUS)
    else:
        if options.documents is not None:
            ds = options.documents.dataset()
        else:
            ds = _items_dataset(items).map_batches(stages.read, fn_kwargs={"options": options.source},
                                                   batch_size=b, batch_format="pyarrow", num_cpus=TASK_CPUS)
        ds = ds.map_batches(Ingest, fn_constructor_kwargs={"dsn": dsn, "object_store": store_uri,
                                                            "run_id": run_id, "routable": tuple(ROUTES),
                                                            "retry": retry},
                            compute=ray.data.ActorPoolStrategy(size=1), batch_size=b,
                            batch_format="pyarrow", num_cpus=_DB_ACTOR_CPUS)
    ds = ds.map_batches(stages.convert, batch_size=b, batch_format="pyarrow", num_cpus=TASK_CPUS)
    ds = ds.map_batches(stages.structure, fn_kwargs={"target_chars": target}, batch_size=b,
                        batch_format="pyarrow", num_cpus=TASK_CPUS)
    ds = ds.map_batches(stages.chunk, fn_kwargs={"target_chars": target}, batch_size=b,
                        batch_format="pyarrow", num_cpus=TASK_CPUS)
    if llm is None:
        ds = ds.map_batches(Extract, fn_constructor_kwargs={"config": options.extractor, "retry": retry},
                            compute=ray.data.ActorPoolStrategy(size=1), batch_size=b,
                            batch_format="pyarrow", num_cpus=_DB_ACTOR_CPUS)
    ds = ds.map_batches(Embed, fn_constructor_kwargs={
                            "model": model, "device": "cuda" if use_gpu else settings.embedding_device,
                            "batch_size": settings.embed_batch(use_gpu), "threads": threads},
                        compute=pool, batch_size=max(b, _EMBED_BATCH_DOCS), batch_format="pyarrow",
                        **({"num_gpus": 1} if use_gpu else {"num_cpus": _embedder_cpus(options.workers)}))
    return ds.map_batches(Write, fn_constructor_kwargs={"dsn": dsn, "object_store": store_uri, "run_id": run_id,
                                                         "extractor": extractor_version, "retry": retry},
                          compute=ray.data.ActorPoolStrategy(size=1), batch_size=b,
                          batch_format="pyarrow", num_cpus=_DB_ACTOR_CPUS)


def _options_record(options: ImportOptions) -> dict[str, Any]:
    s = options.source
    return {"source_kind": s.source_kind, "living": s.living, "include": list(s.include),
            "exclude": list(s.exclude), "modified_at_from": s.modified_at_from,
            "batch_size": options.batch_size, "workers": options.workers,
            "extractor": options.extractor.backend,
            **({"documents": options.documents.record()} if options.documents is not None else {})}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, folders or archives (zip, tar, tar.gz)")
    parser.add_argument("--source-kind", default="file", help="source_kind of every document (default: file)")
    parser.add_argument("--living", action="store_true",
                        help="living mode: the latest version is the standing statement")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="import only matching paths (repeatable)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip matching paths (repeatable; wins over --include)")
    parser.add_argument("--modified-at-from", choices=("mtime", "path", "sidecar"), default="mtime",
                        help="source_modified_at from the file's mtime, a YYYY-MM-DD date in its path, or a "
                             "<file>.meta.json sidecar (corpusmem's keys, a Google Drive files resource or an "
                             "rclone lsjson entry, whose file id becomes the source_ref; the mtime where it says "
                             "nothing) (default: mtime)")
    add_run_arguments(parser)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """How a run goes, whatever it reads (`corpusmem import`, `corpusmem import-vectors`)."""
    parser.add_argument("--batch-size", type=int, default=16, metavar="N", help="documents per batch")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="embedder actors")
    parser.add_argument("--extractor", choices=BACKENDS, default=None,
                        help="claim extractor (default: CORPUSMEM_EXTRACTOR, else rules)")
    parser.add_argument("--verbose", action="store_true", help="Ray's own logs and per-operator progress")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_options(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The `import_options` arguments `add_run_arguments` gives."""
    if args.batch_size < 1 or args.workers < 1:
        raise SystemExit(f"corpusmem {command}: --batch-size and --workers must be at least 1")
    return {"batch_size": args.batch_size, "workers": args.workers, "extractor": args.extractor,
            "quiet": not args.verbose, "progress": not args.no_progress}


def import_options(settings: Settings, paths: tuple[str, ...], *, extractor: str | None = None,
                   source: dict[str, Any] | None = None, **run: Any) -> ImportOptions:
    """The options of a run, whoever starts it (`corpusmem import`, `import-vectors`, `retry`, the
    processor of `POST /ingest`, the demo): every setting an `ImportOptions` carries is read here
    and only here, so no entry point can honour one that another ignores. `extractor` is the
    `--extractor` flag, which wins over CORPUSMEM_EXTRACTOR; the facts phase normalizes with the
    same backend. `source` and `run` are the entry point's own `SourceOptions` and
    `ImportOptions` fields."""
    return ImportOptions(
        paths=tuple(paths), source=settings.source_options(**(source or {})),
        extractor=ExtractorConfig(backend=extractor or settings.extractor, llm_model=settings.llm_model,
                                  llm_base_url=settings.llm_base_url),
        **run)


def options_from_args(args: argparse.Namespace, settings: Settings) -> ImportOptions:
    """The options of an import started from the command line (`corpusmem import`, `main`)."""
    return import_options(settings, tuple(args.paths), source={
        "source_kind": args.source_kind, "living": args.living, "include": tuple(args.include),
        "exclude": tuple(args.exclude), "modified_at_from": args.modified_at_from}, **run_options(args, "import"))


def own_signals() -> None:
    """An import started from the command line owns its process, so from here on SIGINT and
    SIGTERM stop it: the run unwinds with `shutdown.Interrupted` (its run is recorded as
    interrupted; a re-run resumes it), Ray and the embedded PostgreSQL are let go, and the process
    exits with 128 + the signal."""
    shutdown.install(interrupt=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.import_corpus", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    settings = runtime.settings()
    options = options_from_args(args, settings)
    own_signals()
    report = run_import(options, settings)
    print(report.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
