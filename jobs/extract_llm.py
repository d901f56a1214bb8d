"""The `vllm` extraction pass: versions the import left with `extract_claims` pending, through the
Selection and Claimify processors on GPU replicas, into claims.

    pending versions ─► LoadContexts ─► Selection ─► Claimify ─► LandClaims

It runs after the import's main pipeline (so the GPUs serve one processor at a time on a small
cluster) and again on its own to finish an interrupted pass: a chunk already landed is not read
again. A chunk the engine fails on (Ray's `__inference_error__`) goes through the processor again
under the import's `RetryPolicy`, the rule every call out of the process follows
(`actors/retries.py`); a version with a chunk that fails every attempt is `dead_letter` at
`extract_claims` with the reason, and its other chunks stay landed for `corpusmem retry`. Each
processor's answers are gathered before the next one reads them, a group of versions at a time,
so that a failed row is never handed to the next step.

Each chunk's Claimify sees the names its own Selection noted; unlike the `rules` and `openai`
backends it does not see those of earlier chunks, since the chunks of one document are read in
parallel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.embedder import ModelNotFound
from actors.extractor import ExtractorConfig, ExtractorUnavailable
from actors.llm_stage import CONTEXT_SCHEMA
from actors.retries import GaveUp, RetryPolicy
from jobs import stages
from jobs.stages import Embedding, Run
from pipeline.claims import llm_io
from sql.read import claims_queries
from sql.store import authority as store
from sql.store import runs

# Versions whose chunks go through both processors before the next group: bounds what the driver
# holds between the steps.
VERSIONS_PER_GROUP = 256

Step = Callable[["object"], "object"]  # a Ray Dataset in, a Ray Dataset out


@dataclass(frozen=True)
class LlmPass:
    extractor: str          # the extractor version recorded on every claim
    model_label: str        # the model's name in the cost ledger
    select: Step
    claimify: Step


def for_extractor(extractor: ExtractorConfig, resources: dict[str, float]) -> LlmPass | None:
    """The pass the `vllm` extractor runs on the cluster of `resources` (None for the other
    backends, whose claims come from the pipeline's `extract` stage). It refuses clearly before
    anything is written."""
    if extractor.backend != "vllm":
        return None
    if not extractor.llm_model:
        raise ModelNotFound("the vllm extractor needs CORPUSMEM_LLM_MODEL: a local model folder")
    if resources.get("GPU", 0) < 1:
        raise ExtractorUnavailable("the vllm extractor needs a GPU in the Ray cluster and found none; "
                                   "use --extractor rules, or openai against a `vllm serve` endpoint")
    return vllm_pass(extractor.llm_model)


def vllm_pass(model_path: str) -> LlmPass:
    from actors.vllm_extractor import (
        VLLMExtractorConfig,
        build_claimify_processor,
        build_selection_processor,
        extractor_version,
    )

    config = VLLMExtractorConfig(model_path=model_path)
    return LlmPass(extractor_version(config), config.model_name, build_selection_processor(config),
                   build_claimify_processor(config))


def run(run: Run, llm: LlmPass, embedding: Embedding) -> dict[str, Any]:
    """Counts of what landed, and `dead_letter`: (version, why) for each version given up on."""
    import ray

    with store.connect(run.dsn) as conn:
        pending = claims_queries.pending_extraction(conn)
    load = stages.load_contexts(run, llm.extractor)
    land = stages.land_claims(run, extractor=llm.extractor, model_label=llm.model_label, embedding=embedding)
    totals: dict[str, Any] = {"versions": len(pending), "chunks": 0, "claims": 0, "ledger_rows": 0, "dead_letter": []}
    for start in range(0, len(pending), VERSIONS_PER_GROUP):
        group = pending[start:start + VERSIONS_PER_GROUP]
        contexts = load(ray.data.from_items([{"version_id": v} for v in group]))
        selected, failed = through(llm.select, contexts, CONTEXT_SCHEMA.names, run.retry)
        claimified, failed_too = (through(llm.claimify, ray.data.from_items(selected), list(selected[0]), run.retry)
                                  if selected else ([], {}))
        if claimified:
            for batch in land(ray.data.from_items(claimified)).iter_batches(batch_size=None, batch_format="pyarrow"):
                totals["chunks"] += batch.num_rows
                totals["claims"] += sum(batch.column("claims").to_pylist())
                totals["ledger_rows"] += sum(batch.column("ledger_rows").to_pylist())
        failures = sorted((v, str(GaveUp(run.retry.attempts, why))) for v, why in {**failed, **failed_too}.items())
        if failures:
            with store.connect(run.dsn) as conn:
                for version_id, reason in failures:
                    runs.dead_letter_stage(conn, "extract_claims", [version_id], run.retry.attempts, reason)
            totals["dead_letter"] += failures
    return totals


def through(step: Step, ds, inputs: list[str], retry: RetryPolicy) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows of `ds` through a processor: (answered rows, {version: why} for the versions with
    a row that failed every attempt). A failed row goes through the processor again with its
    `inputs` columns, alone with the other failed rows, after the policy's wait. (The columns are
    given, not read from `ds.schema()`, which would run the first block of a lazy dataset twice.)"""
    import ray

    answered: list[dict[str, Any]] = []
    for attempt in range(1, retry.attempts + 1):
        again, errors = [], {}
        for batch in step(ds).iter_batches(batch_size=None, batch_format="pyarrow"):
            for row in batch.to_pylist():
                error = row.get("__inference_error__")
                if not error:
                    answered.append({k: v for k, v in row.items() if not k.startswith("__")})
                    continue
                again.append({k: row[k] for k in inputs})
                errors[llm_io.ctx_from_json(row["ctx_json"]).version_id] = (
                    f"inference error: {' '.join(str(error).split())[:300]}")
        if not again:
            return answered, {}
        if attempt == retry.attempts:
            return answered, errors
        time.sleep(retry.delay(attempt))
        ds = ray.data.from_items(again)
    return answered, {}
