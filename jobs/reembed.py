"""`corpusmem reembed`: move every vector of the memory to another embedding model or execution,
serving throughout.

    pages ─► load texts ─► embed (actor pool) ─► land in reembed_vectors      (compute, resumable)
    ─► switch: the rows landed meanwhile, the old vectors kept, the new ones in, the pin moved
       (one transaction) ─► HNSW indexes built again
    `--drop-previous`: delete the vectors the switch kept

Reads use the old vectors and the old pin until the switch commits, the new ones after; the read
API embeds each question with the model of the pin its snapshot reads (`serve/app.py`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from tqdm import tqdm

from actors.db_writer import Link
from actors.embedder import (
    EmbedTexts,
    ModelNotFound,
    ModelRef,
    choose_execution,
    load_model,
    model_dimension,
    resolve_model,
)
from actors.executions import EXECUTIONS, pinned_model_name
from actors.onnx_embedder import UnsupportedModel
from jobs import runtime, shutdown
from jobs.stages import embedder_cpus
from jobs.settings import Settings
from sql.store import authority as store
from sql.write import reembed as reembed_sql

_DB_ACTOR_CPUS = 0.1
# pgvector's HNSW and the deployment row both stop at 2,000 dimensions.
_MAX_DIM = 2000


class ReembedError(ValueError):
    """What was asked cannot be done; the message says why."""


@dataclass(frozen=True)
class ReembedOptions:
    model: str | None = None       # a model folder (or the shipped model's name); None: the pinned one
    execution: str | None = None   # one of EXECUTIONS; None: as a new memory of that model would run it
    workers: int = 1
    page_rows: int = 512           # rows a page loads and an embedder call encodes
    progress: bool = True
    quiet: bool = True


@dataclass
class ReembedReport:
    previous: str
    model: str
    dim: int = 0
    pending_before: dict[str, int] = field(default_factory=dict)   # rows to compute when the run began
    done_before: dict[str, int] = field(default_factory=dict)      # rows an earlier run had computed
    computed: Counter = field(default_factory=Counter)              # rows this run computed, by source
    computed_in_switch: int = 0
    compute_seconds: float = 0.0
    switch_seconds: float = 0.0
    index_seconds: float = 0.0
    status: str = "running"

    def render(self) -> str:
        total = sum(self.computed.values())
        lines = [f"reembed {self.previous} -> {self.model} ({self.dim} dimensions): {self.status}",
                 f"  computed         {total} vectors in {self.compute_seconds:.1f} s ("
                 + ", ".join(f"{n} {s}" for s, n in sorted(self.computed.items())) + ")",
                 f"  kept from before {sum(self.done_before.values())} vectors an earlier run computed"]
        if self.status == "switched":
            lines += [f"  switch           {self.switch_seconds:.2f} s ({self.computed_in_switch} rows written "
                      "meanwhile computed in it)",
                      f"  indexes          rebuilt in {self.index_seconds:.1f} s",
                      f"  previous vectors kept under {self.previous!r}: `corpusmem reembed --drop-previous` "
                      "deletes them"]
        return "\n".join(lines)


def target_model(settings: Settings, pinned: str, options: ReembedOptions, *, gpu: bool) -> ModelRef:
    """The model and execution to move to: `--model` (else the pinned one), `--execution` (else
    what `CORPUSMEM_EMBEDDING_EXECUTION` would pick for a new memory of that model)."""
    name = options.model or pinned_model_name(pinned)
    base = resolve_model(name, cache=settings.model_cache)
    execution = options.execution or choose_execution(
        settings.embedding_execution, pinned=None, gpu=gpu, model_path=base.path,
        calibrate=lambda: runtime.embedding_calibration(settings, base))
    return resolve_model(name, execution, settings.model_cache)


class LoadPages:
    """Ray Data callable class: the texts of a page's rows still without a vector of the target."""

    def __init__(self, dsn: str, model: str) -> None:
        self._link = Link(dsn, "corpusmem reembed")
        self._model = model

    def __call__(self, batch: pa.Table) -> pa.Table:
        out: dict[str, list] = {"source": [], "row_id": [], "text_hash": [], "text": []}
        for page in batch.to_pylist():
            for row_id, text_hash, text in reembed_sql.page_texts(self._link.conn, self._model, page["source"],
                                                                  page["start"], page["stop"]):
                out["source"].append(page["source"])
                out["row_id"].append(row_id)
                out["text_hash"].append(text_hash)
                out["text"].append(text)
        return pa.table(out, schema=pa.schema([("source", pa.string()), ("row_id", pa.string()),
                                               ("text_hash", pa.string()), ("text", pa.string())]))


class SaveVectors:
    """Ray Data callable class: land a batch's vectors; what it returns is the count per source."""

    def __init__(self, dsn: str, model: str) -> None:
        self._link = Link(dsn, "corpusmem reembed")
        self._model = model

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = list(zip(*(batch.column(c).to_pylist() for c in ("source", "row_id", "text_hash", "embedding"))))
        reembed_sql.save(self._link.conn, self._model, rows)
        counts = Counter(source for source, *_ in rows)
        return pa.table({"source": list(counts), "rows": list(counts.values())},
                        schema=pa.schema([("source", pa.string()), ("rows", pa.int64())]))


def run_reembed(settings: Settings, options: ReembedOptions,
                landed: Callable[[ReembedReport], None] | None = None,
                before_switch: Callable[[ReembedReport], None] | None = None) -> ReembedReport:
    """Compute the vectors of the target model for every row holding one, then switch the pin.

    `landed` is called after each landed batch and `before_switch` between the two phases (tests
    stop a run there, and read the memory between the phases)."""
    import ray

    dsn = store.resolve_dsn(settings)
    with store.connect(dsn) as conn:
        store.migrate(conn)
    pinned = store.pinned_model(dsn)
    if pinned is None:
        raise ReembedError("this memory has no vectors yet: import something first")
    resources = runtime.init_ray(quiet=options.quiet, job_name="corpusmem reembed", dashboard=settings.ray_dashboard)
    runtime.check_shared(settings)
    gpu = resources.get("GPU", 0) >= 1
    target = target_model(settings, pinned, options, gpu=gpu)
    if target.pin == pinned:
        raise ReembedError(f"the memory is already pinned to {pinned!r}: nothing to reembed")
    report = ReembedReport(pinned, target.pin, model_dimension(target))
    if report.dim > _MAX_DIM:
        raise ReembedError(f"{target.name} makes {report.dim}-dimensional vectors; pgvector's HNSW index "
                           f"takes at most {_MAX_DIM}")
    use_gpu = gpu and target.execution == "torch"
    device = "cuda" if use_gpu else settings.embedding_device
    threads = max(1, int(resources.get("CPU", 1)) // options.workers)
    with store.connect(dsn, autocommit=True) as conn:
        report.pending_before = reembed_sql.todo_counts(conn, target.pin)
        report.done_before = reembed_sql.done_counts(conn, target.pin)
        pages = reembed_sql.pages(conn, target.pin, options.page_rows)
    started = time.perf_counter()
    bar = tqdm(total=sum(report.pending_before.values()), unit="vector", desc="reembed", file=sys.stderr,
               disable=not options.progress, dynamic_ncols=True)
    try:
        if pages:
            ds = ray.data.from_items(pages).map_batches(
                LoadPages, fn_constructor_kwargs={"dsn": dsn, "model": target.pin},
                compute=ray.data.ActorPoolStrategy(size=1), batch_size=1, batch_format="pyarrow",
                num_cpus=_DB_ACTOR_CPUS)
            ds = ds.map_batches(EmbedTexts, fn_constructor_kwargs={
                                    "model": target, "device": device, "batch_size": settings.embed_batch(use_gpu),
                                    "threads": threads},
                                compute=ray.data.ActorPoolStrategy(size=options.workers),
                                batch_size=options.page_rows, batch_format="pyarrow",
                                **({"num_gpus": 1} if use_gpu else {"num_cpus": embedder_cpus(options.workers)}))
            ds = ds.map_batches(SaveVectors, fn_constructor_kwargs={"dsn": dsn, "model": target.pin},
                                compute=ray.data.ActorPoolStrategy(size=1), batch_size=options.page_rows,
                                batch_format="pyarrow", num_cpus=_DB_ACTOR_CPUS)
            for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
                for row in batch.to_pylist():
                    report.computed[row["source"]] += row["rows"]
                    bar.update(row["rows"])
                if landed is not None:
                    landed(report)
    finally:
        bar.close()
        report.compute_seconds = time.perf_counter() - started
    if before_switch is not None:
        before_switch(report)
    started = time.perf_counter()
    driver_model: list[Any] = []

    def encode(texts: list[str]):
        # rows an import wrote during the compute phase: few, so the driver encodes them itself
        if not driver_model:
            driver_model.append(load_model(target, device, threads))
        return driver_model[0].encode(texts, batch_size=settings.embed_batch(use_gpu), convert_to_numpy=True,
                                      normalize_embeddings=True, show_progress_bar=False)

    with store.connect(dsn, autocommit=True) as conn:
        switched = reembed_sql.switch(conn, previous=pinned, model=target.pin, dim=report.dim, encode=encode)
        report.computed_in_switch = switched.computed_in_switch
        report.switch_seconds = time.perf_counter() - started
        started = time.perf_counter()
        store.ensure_vector_indexes(conn)
        report.index_seconds = time.perf_counter() - started
    report.status = "switched"
    return report


def drop_previous(settings: Settings) -> str:
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn, autocommit=True) as conn:
        store.migrate(conn)
        if store.pinned_model(dsn) is None:
            raise ReembedError("this memory has no vectors yet: nothing to drop")
        dropped = reembed_sql.drop_previous(conn)
    if dropped is None:
        raise ReembedError("no reembed has switched this memory's model yet: the previous vectors are only "
                           "dropped after a switch (the vectors of a reembed in progress are kept)")
    return (f"dropped {sum(dropped.values())} previous vectors ("
            + ", ".join(f"{n} {s}" for s, n in dropped.items()) + ")")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="PATH", default=None,
                        help="move to this local sentence-transformers model folder (or all-MiniLM-L6-v2, the "
                             "shipped one)")
    parser.add_argument("--execution", choices=EXECUTIONS, default=None,
                        help="run the model (with --model, the new one; else the pinned one) this way: torch, "
                             "onnx (the same vectors as torch), torch-bf16 or onnx-int8 (default with --model: "
                             "as CORPUSMEM_EMBEDDING_EXECUTION picks for a new memory)")
    parser.add_argument("--drop-previous", action="store_true",
                        help="delete the vectors a switch kept of the previous model")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="embedder actors")
    parser.add_argument("--page-rows", type=int, default=512, metavar="N", help="rows per page and embedder call")
    parser.add_argument("--verbose", action="store_true", help="Ray's own logs and per-operator progress")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(settings: Settings, args: argparse.Namespace) -> int:
    try:
        if args.drop_previous:
            if args.model or args.execution:
                raise ReembedError("--drop-previous goes alone, without --model or --execution")
            print(drop_previous(settings))
            return 0
        if not (args.model or args.execution):
            raise ReembedError("say where to move: --model PATH and/or --execution E (or --drop-previous)")
        if args.workers < 1 or args.page_rows < 1:
            raise ReembedError("--workers and --page-rows must be at least 1")
        shutdown.install(interrupt=True)
        options = ReembedOptions(model=args.model, execution=args.execution, workers=args.workers,
                                 page_rows=args.page_rows, progress=not args.no_progress, quiet=not args.verbose)
        print(run_reembed(settings, options).render())
        return 0
    except (ReembedError, ModelNotFound, UnsupportedModel, store.StoreError) as err:
        print(f"corpusmem reembed: {err}", file=sys.stderr)
        return 2
