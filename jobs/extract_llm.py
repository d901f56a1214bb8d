"""The `vllm` extraction pass: versions the import left with `extract_claims` pending, through the
Selection and Claimify processors on GPU replicas, into claims.

    pending versions ─► LoadContexts ─► Selection ─► Claimify ─► LandClaims

It runs after the import's main pipeline (so the GPUs serve one processor at a time on a small
cluster) and again on its own to finish an interrupted pass: a chunk already landed is not read
again. Each chunk's Claimify sees the names its own Selection noted; unlike the `rules` and
`openai` backends it does not see those of earlier chunks, since the chunks of one document are
read in parallel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from actors.embedder import ModelRef
from actors.llm_stage import LandClaims, LoadContexts
from sql.read import claims_queries
from sql.store import authority as store

Step = Callable[["object"], "object"]  # a Ray Dataset in, a Ray Dataset out


@dataclass(frozen=True)
class LlmPass:
    extractor: str          # the extractor version recorded on every claim
    model_label: str        # the model's name in the cost ledger
    select: Step
    claimify: Step


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


def run(dsn: str, object_store: str, llm: LlmPass, embedder: ModelRef, *, device: str,
        embed_batch_size: int, batch_size: int = 16) -> dict[str, int]:
    import ray

    with store.connect(dsn) as conn:
        pending = claims_queries.pending_extraction(conn)
    if not pending:
        return {"versions": 0, "chunks": 0, "claims": 0, "ledger_rows": 0}
    ds = ray.data.from_items([{"version_id": v} for v in pending])
    ds = ds.map_batches(LoadContexts, fn_constructor_kwargs={"dsn": dsn, "object_store": object_store,
                                                             "extractor": llm.extractor},
                        compute=ray.data.ActorPoolStrategy(size=1), batch_size=batch_size,
                        batch_format="pyarrow", num_cpus=0.1)
    ds = llm.claimify(llm.select(ds))
    ds = ds.map_batches(LandClaims, fn_constructor_kwargs={
                            "dsn": dsn, "extractor": llm.extractor, "model_label": llm.model_label,
                            "embed_model": embedder, "embed_device": device, "embed_batch_size": embed_batch_size},
                        compute=ray.data.ActorPoolStrategy(size=1), batch_size=batch_size * 4,
                        batch_format="pyarrow", num_cpus=0.5)
    totals = {"versions": len(pending), "chunks": 0, "claims": 0, "ledger_rows": 0}
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        totals["chunks"] += batch.num_rows
        totals["claims"] += sum(batch.column("claims").to_pylist())
        totals["ledger_rows"] += sum(batch.column("ledger_rows").to_pylist())
    return totals
