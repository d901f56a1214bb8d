"""The `vllm` extraction: chunks through the Selection and Claimify processors on GPU replicas,
into claims.

    written documents ─► LoadContexts ─► Selection ─► Claimify ─► LandClaims

Where the cluster has a GPU for each processor's replicas beside the embedders, these are stages
of the import (`stages`, after `write`): chunks are read by the model while later documents are
still being embedded, and the report rows ride along to the driver. On a smaller cluster they run
as a pass after the import's main pipeline (`run`), so the GPUs serve one processor at a time.

The pass after the pipeline also finishes what the stages left: a chunk the engine failed on
(Ray's `__inference_error__`), or the versions an interrupted run left; a chunk already landed is
not read again. There a failed chunk goes through the processor again under the import's
`RetryPolicy`, the rule every call out of the process follows (`actors/retries.py`); a version
with a chunk that fails every attempt is `dead_letter` at `extract_claims` with the reason, and its
other chunks stay landed for `corpusmem retry`. Each processor's answers are gathered before the
next one reads them, a group of versions at a time, so that a failed row is never handed to the
next step.

Each chunk's Claimify sees the names its own Selection noted; unlike the `rules` and `openai`
backends it does not see those of earlier chunks, since the chunks of one document are read in
parallel.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.embedder import ModelNotFound
from actors.extractor import ExtractorConfig, ExtractorUnavailable
from actors.llm_stage import CONTEXT_SCHEMA
from actors.retries import GaveUp, RetryPolicy
from actors.vllm_extractor import inference_error
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
    gpus: int = 0           # GPUs both processors' replicas hold at once
    device: str = "gpu"     # where their engines run (CORPUSMEM_LLM_DEVICE)

    def streams(self, resources: dict[str, float], embedding: Embedding, workers: int) -> bool:
        """Whether the extraction runs as stages of the import on the cluster of `resources`: only
        where its replicas and the embedders all hold a GPU at once (otherwise the stages would
        wait for each other's GPUs for ever). Engines on CPUs (no GPUs) never do: their replicas
        would wait for the cores the pipeline's stages hold."""
        return self.device == "gpu" and resources.get("GPU", 0) >= self.gpus + (workers if embedding.gpu else 0)

    def stages(self, run: Run, embedding: Embedding) -> list:
        """The extraction as stages after `write`: the writer's report rows in, report rows out."""
        return [stages.load_contexts(run, self.extractor), self.select, self.claimify,
                stages.land_claims(run, extractor=self.extractor, model_label=self.model_label, embedding=embedding)]


def for_extractor(extractor: ExtractorConfig, resources: dict[str, float]) -> LlmPass | None:
    """The pass the `vllm` extractor runs on the cluster of `resources` (None for the other
    backends, whose claims come from the pipeline's `extract` stage). It refuses clearly before
    anything is written."""
    if extractor.backend != "vllm":
        return None
    if not extractor.llm_model:
        raise ModelNotFound("the vllm extractor needs CORPUSMEM_LLM_MODEL: a local model folder")
    if extractor.llm_device == "gpu" and resources.get("GPU", 0) < 1:
        raise ExtractorUnavailable("the vllm extractor needs a GPU in the Ray cluster and found none; "
                                   "use --extractor rules, openai against a `vllm serve` endpoint, or "
                                   "CORPUSMEM_LLM_DEVICE=cpu with vLLM's CPU build")
    return vllm_pass(extractor.llm_model, extractor.llm_device)


def vllm_pass(model_path: str, device: str = "gpu", **config: Any) -> LlmPass:
    """The pass with the model at `model_path` on `device`; `config`: further `VLLMExtractorConfig`
    fields (`max_tokens`, `engine_kwargs`)."""
    from actors.vllm_extractor import (
        VLLMExtractorConfig,
        build_claimify_processor,
        build_selection_processor,
        extractor_version,
    )

    config = VLLMExtractorConfig(model_path=model_path, device=device, **config).fitted()
    replicas = config.concurrency if isinstance(config.concurrency, int) else config.concurrency[1]
    return LlmPass(extractor_version(config), config.model_name, build_selection_processor(config),
                   build_claimify_processor(config), gpus=2 * replicas if device == "gpu" else 0, device=device)


def run(run: Run, llm: LlmPass, embedding: Embedding, *, streamed: bool = False) -> dict[str, Any]:
    """Counts of what landed, and `dead_letter`: (version, why) for each version given up on.
    `streamed`: the extraction ran as stages of this run, which were a chunk's first attempt, so a
    chunk left pending gets one attempt fewer here (at least one)."""
    import ray

    with store.connect(run.dsn) as conn:
        pending = claims_queries.pending_extraction(conn)
    retry = dataclasses.replace(run.retry, attempts=max(1, run.retry.attempts - 1)) if streamed else run.retry
    attempts = retry.attempts + streamed
    load = stages.load_contexts(run, llm.extractor)
    land = stages.land_claims(run, extractor=llm.extractor, model_label=llm.model_label, embedding=embedding)
    totals: dict[str, Any] = {"versions": len(pending), "chunks": 0, "claims": 0, "ledger_rows": 0, "dead_letter": []}
    for start in range(0, len(pending), VERSIONS_PER_GROUP):
        group = pending[start:start + VERSIONS_PER_GROUP]
        contexts = load(ray.data.from_items([{"version_id": v} for v in group]))
        selected, failed = through(llm.select, contexts, CONTEXT_SCHEMA.names, retry)
        claimified, failed_too = (through(llm.claimify, ray.data.from_items(selected), list(selected[0]), retry)
                                  if selected else ([], {}))
        if claimified:
            for batch in land(ray.data.from_items(claimified)).iter_batches(batch_size=None, batch_format="pyarrow"):
                for name in ("chunks", "claims", "ledger_rows"):
                    totals[name] += sum(batch.column(name).to_pylist())
        failures = sorted((v, str(GaveUp(attempts, why))) for v, why in {**failed, **failed_too}.items())
        if failures:
            with store.connect(run.dsn) as conn:
                for version_id, reason in failures:
                    runs.dead_letter_stage(conn, "extract_claims", [version_id], attempts, reason)
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
                error = inference_error(row)
                if not error:
                    answered.append({k: v for k, v in row.items() if not k.startswith("__")})
                    continue
                again.append({k: row[k] for k in inputs})
                errors[llm_io.ctx_from_json(row["ctx_json"]).version_id] = error
        if not again:
            return answered, {}
        if attempt == retry.attempts:
            return answered, errors
        time.sleep(retry.delay(attempt))
        ds = ray.data.from_items(again)
    return answered, {}
