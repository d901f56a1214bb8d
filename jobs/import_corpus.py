"""`corpusmem import`: a Ray Data pipeline from files, folders and archives into the authority.

    source ─► ingest ─► convert ─► structure ─► chunk ─► extract ─► embed ─► write
           ─► [the LLM extraction] ─► [the LLM pass] ─► the facts phase

A source (`jobs/sources.py`: folders and archives, queued versions, a vector store) yields the
documents as a Ray Dataset; the stages (`jobs/stages.py`) are declared once, each with the
arguments Ray runs it with. `read`, `convert`, `structure` and `chunk` are Ray tasks over pure
functions (`pipeline/`); `ingest`, `extract`, `embed` and `write` hold a connection, an extractor
or a model (`actors/`) and run as resident tasks, which keep them in Ray's warm worker processes
between batches and runs (`actors/resident.py`; on a GPU the embedder is an actor pool, one actor
per device). The driver only lists or claims what the run reads and folds
the small per-document report rows into counts, so its memory does not grow with the corpus.
Also runnable as a Ray job: `ray job submit --working-dir . -- python -m jobs.import_corpus PATH...`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from actors import engine_watch
from actors.embedder import model_dimension
from actors.extractor import BACKENDS, ExtractorConfig
from actors.retries import RetryPolicy
from jobs import describe as describing
from jobs import extract_llm, facts, runtime, shutdown
from jobs.progress import Progress
from jobs.run_report import RunReport
from jobs.settings import Settings
from jobs.sources import Folders, Source
from jobs.stages import DocumentStages, Embedding, OcrPool, Run, pure_tasks
from pipeline.documents.walk import SourceOptions
from sql.store import authority as store
from sql.store import runs


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
    keep_ray: bool = False   # a Ray the run starts stays up for the next command to join
    # False (the processor): when other pipelines are in flight, leave the facts phase to them
    wait_for_facts: bool = True
    # what the run reads in place of the files, folders and archives of `paths`: queued versions
    # (`POST /ingest`, `retry`) or the documents of a vector store (`jobs.import_vectors`)
    reads: Source | None = None

    @property
    def documents(self) -> Source:
        """Where the run's documents come from."""
        return self.reads or Folders(self.paths, self.source)


def run_import(options: ImportOptions, settings: Settings, llm: extract_llm.LlmPass | None = None,
               describe: describing.Describe | None = None) -> RunReport:
    """Import what `options` names into the memory named by `settings`; return the run report.

    `llm` replaces the `vllm` pass's processors, `describe` the visual description's (tests drive
    both with a stand-in engine)."""
    started, started_at = time.perf_counter(), time.time()
    ahead = runtime.CalibrationAhead.start(settings)
    resources = runtime.init_ray(quiet=options.quiet, job_name=job_name(options), keep=options.keep_ray,
                                 dashboard=settings.ray_dashboard)
    runtime.check_shared(settings)
    model = runtime.embedding_model(settings, store.resolve_dsn(settings), gpu=resources.get("GPU", 0) >= 1,
                                    ahead=ahead)
    llm = llm or extract_llm.for_extractor(options.extractor, resources)
    embedding = Embedding.for_cluster(model, resources, options.workers, device=settings.embedding_device,
                                      batch_size=settings.embed_batch)
    describe = describe or describing.for_settings(settings, resources, options.batch_size)
    pipeline = _document_stages(options, settings, resources, embedding, llm, describe)
    authority = store.open_store(settings, embedding_model=model.pin, embedding_dim=model_dimension(model),
                                 build_revision=runtime.build_revision())
    run = _start_run(authority.dsn, options, settings, pure_tasks(resources))
    report, owner, progress = RunReport(run.run_id, embedding=model.summary()), _owner(authority.dsn, run.run_id), None
    pipeline_started, finished = time.perf_counter(), threading.Event()
    runtime.watch_ray(finished, gcs=True)
    engines = contextlib.ExitStack()
    try:
        if llm is not None or describe is not None:   # vLLM's engines: the LLM pass, the describer, the normalizer
            report.engines_ended = engines.enter_context(engine_watch.watching())
        runs.hold_run(owner, run.run_id)
        reading = options.documents.take(run, owner)
        progress = Progress(report, reading.total, enabled=options.progress)
        if reading.total != 0:
            progress.follow(pipeline(run, reading.dataset(), ingested=reading.ingested, names=reading.names))
        if llm is not None:   # what its stages left, or the whole extraction where they are not in the pipeline
            report.add_llm_pass(extract_llm.run(run, llm, embedding, streamed=pipeline.extraction is not None))
        progress.close()
        runs.end_pipeline(owner, run.run_id)
        if _wait_for_pipelines(owner, run.run_id, report, wait=options.wait_for_facts):
            _facts_phase(owner, run, options, embedding, report)
        report.status = "succeeded"
    except (shutdown.Interrupted, KeyboardInterrupt):
        report.status = "interrupted"   # stopped by a signal, not by a fault: a re-run resumes it
        if runtime.server_stopping():
            print("corpusmem: the `corpusmem serve` whose Ray this import joined is stopping: the run is recorded "
                  "interrupted, and running the import again resumes it", file=sys.stderr, flush=True)
        raise
    finally:
        engines.close()
        finished.set()
        _finish(owner, report, progress, started=started, started_at=started_at, pipeline_started=pipeline_started)
    return report


def _document_stages(options: ImportOptions, settings: Settings, resources: dict[str, float], embedding: Embedding,
                     llm: extract_llm.LlmPass | None, describe: describing.Describe | None) -> DocumentStages:
    """The stages the run's documents go through. With the LLM, the claims come from its stages
    after `write` where the cluster has the GPUs for them, else from its pass after the pipeline."""
    streams = llm is not None and llm.streams(resources, embedding, options.workers)
    return DocumentStages.of(None if llm is not None else options.extractor, embedding,
                             workers=options.workers, target_chars=settings.chunk_target_chars,
                             ocr=OcrPool.of(settings, resources, options.workers if embedding.gpu else 0),
                             describe=describe, convert=settings.convert_options(settings.ocr_workers > 0),
                             extraction=functools.partial(llm.stages, embedding=embedding) if streams else None)


def _start_run(dsn: str, options: ImportOptions, settings: Settings, tasks: int) -> Run:
    with store.connect(dsn) as conn:
        store.drop_vector_indexes_if_empty(conn)
        run_id = runs.start_run(conn, list(options.paths), _options_record(options))
    return Run(run_id, dsn, settings.object_store_uri, options.batch_size, retry_policy(settings), tasks)


def _owner(dsn: str, run_id: str):
    """The connection that holds the run's lock (`runs.hold_run`): the run's claims are alive
    exactly as long as it is; keepalives make a vanished driver's lock end even across a network."""
    return store.connect(dsn, autocommit=True, application_name=f"corpusmem run {run_id}",
                         keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)


def _facts_phase(owner, run: Run, options: ImportOptions, embedding: Embedding, report: RunReport) -> None:
    with runs.facts_phase(owner):
        report.facts = facts.run_facts(
            run.dsn, run_id=run.run_id, workers=options.workers, model=embedding.model, device=embedding.device,
            embed_batch_size=embedding.batch_size, threads=embedding.threads, extractor=options.extractor,
            retry=run.retry)
        store.ensure_vector_indexes(owner)


def _finish(owner, report: RunReport, progress: Progress | None, *, started: float, started_at: float,
            pipeline_started: float) -> None:
    """Record how the run ended (a status that is neither success nor interruption is a failure),
    release its claims and its lock."""
    report.ray_job = runtime.job_info()
    report.nodes = runtime.placements(since=started_at)
    if progress is not None:
        progress.close()
    report.pipeline_seconds = time.perf_counter() - pipeline_started
    report.wall_seconds = time.perf_counter() - started
    if report.status not in ("succeeded", "interrupted"):
        report.status = "failed"
    try:
        runs.release_claims(owner, report.run_id)
        runs.finish_run(owner, report.run_id, status=report.status, counts=report.counts,
                        stage_seconds=dict(report.stage_seconds), report=report.as_dict())
    finally:
        owner.close()


def job_name(options: ImportOptions) -> str:
    """The job's name in the dashboard: what was imported."""
    return f"corpusmem import {options.documents.title}"[:200]


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


def _options_record(options: ImportOptions) -> dict[str, Any]:
    s = options.source
    return {"source_kind": s.source_kind, "living": s.living, "include": list(s.include),
            "exclude": list(s.exclude), "modified_at_from": s.modified_at_from,
            "batch_size": options.batch_size, "workers": options.workers,
            "extractor": options.extractor.backend,
            **({"documents": record} if (record := options.documents.record()) is not None else {})}


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
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="embedders at once (one per GPU on a GPU cluster)")
    parser.add_argument("--extractor", choices=BACKENDS, default=None,
                        help="claim extractor (default: CORPUSMEM_EXTRACTOR, else rules)")
    parser.add_argument("--verbose", action="store_true", help="Ray's own logs and per-operator progress")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--keep-ray", action="store_true",
                        help="leave the Ray this command starts running, for the next command to join "
                             "(`ray stop` ends it); a running Ray of yours is joined anyway")


def run_options(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The `import_options` arguments `add_run_arguments` gives."""
    if args.batch_size < 1 or args.workers < 1:
        raise SystemExit(f"corpusmem {command}: --batch-size and --workers must be at least 1")
    return {"batch_size": args.batch_size, "workers": args.workers, "extractor": args.extractor,
            "quiet": not args.verbose, "progress": not args.no_progress, "keep_ray": args.keep_ray}


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
                                  llm_base_url=settings.llm_base_url, llm_device=settings.llm_device),
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
