"""The extractor actor: holds a backend (rules, or a client of an OpenAI-compatible endpoint) and
turns the chunks of each batch into claims and ledger rows.

`rules` is deterministic and needs no model. `openai` talks to any OpenAI-compatible server
(`vllm serve`, a hosted provider) with the prompts and schemas in `pipeline/prompts/`. `vllm`
runs the same prompts inside the pipeline as Ray Data LLM processor stages on GPUs
(`actors/vllm_extractor.py`), so it is not an actor of this module.
"""

from __future__ import annotations

import time
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from actors import metrics
from actors.retries import GaveUp, RetryPolicy
from pipeline import records
from pipeline.claims import extract as claims
from pipeline.claims.claimify_rules import claimify_rules
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    SelectionResult,
)
from pipeline.claims.selection_rules import select_rules

BACKENDS = ("rules", "vllm", "openai")


class ExtractorUnavailable(RuntimeError):
    """The chosen extractor cannot run as configured; the message says what is missing."""


class ExtractorConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["rules", "vllm", "openai"] = Field(
        default="rules", description="rules: deterministic, CPU, no model; vllm: GPU actors via Ray "
        "Data LLM processors; openai: any OpenAI-compatible endpoint.")
    llm_model: str | None = Field(default=None, description="CORPUSMEM_LLM_MODEL: a local model folder "
                                  "(vllm) or the served model's name (openai).")
    llm_base_url: str | None = Field(default=None, description="CORPUSMEM_LLM_BASE_URL: the "
                                     "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8001/v1.")
    llm_device: Literal["gpu", "cpu"] = Field(default="gpu", description="CORPUSMEM_LLM_DEVICE: where the "
                                              "vllm engines run (cpu: vLLM's CPU build).")


class RulesExtractor:
    """Cue-based Selection and rule-based Claimify: deterministic, honest about what it cannot do
    (a statement it cannot make stand alone is omitted and recorded, never guessed)."""

    name = "rules"
    version = "rules-1"

    def select(self, chunks: list[ChunkContext]) -> tuple[list[SelectionResult], list[CallCost]]:
        return [select_rules(ctx) for ctx in chunks], []

    def claimify(self, chunks: list[ChunkContext], selections: list[SelectionResult]
                 ) -> tuple[list[ClaimifyResult], list[CallCost]]:
        return [claimify_rules(ctx, sel) for ctx, sel in zip(chunks, selections)], []


def build_extractor(config: ExtractorConfig, retry: RetryPolicy = RetryPolicy()):
    """The backend `config` names; `retry` bounds its model calls (`actors/retries.py`)."""
    if config.backend == "rules":
        return RulesExtractor()
    if config.backend == "openai":
        from actors.openai_extractor import OpenAIExtractor, OpenAIExtractorConfig

        if not config.llm_model or not config.llm_base_url:
            raise ExtractorUnavailable("the openai extractor needs CORPUSMEM_LLM_MODEL and CORPUSMEM_LLM_BASE_URL")
        return OpenAIExtractor(OpenAIExtractorConfig(base_url=config.llm_base_url, model=config.llm_model), retry)
    raise ExtractorUnavailable(f"extractor {config.backend!r} does not run as an actor; "
                               "see actors/vllm_extractor.py")


class Extract:
    """Ray Data callable class: claims and ledger rows for every active row of a batch."""

    def __init__(self, config: ExtractorConfig, retry: RetryPolicy = RetryPolicy()) -> None:
        self._extractor = build_extractor(config, retry)

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = records.clock()
        rows = records.to_rows(batch)
        active = [r for r in rows if records.is_active(r)]
        try:
            costs = claims.extract_batch(active, self._extractor)
        except GaveUp as err:  # the model stayed unreachable: dead letters, which `corpusmem retry` replays
            for row in active:
                records.fail(row, "extract", f"model call: {err}", dead_letter=True)
            costs = []
        except Exception as err:  # a backend bug must not lose the batch's documents
            for row in active:
                records.fail(row, "extract", f"{type(err).__name__}: {err}")
            costs = []
        cost_rows = [claims.cost_row(c) for c in costs]
        if active:
            backend = type(self._extractor).__name__
            metrics.observe("corpusmem_extract_batch_size", len(active), extractor=backend)
            metrics.observe("corpusmem_extract_batch_seconds", time.perf_counter() - started[0], extractor=backend)
        if active and cost_rows:
            # One batch of calls served several versions; the batch's cost rides on its first row,
            # beside what earlier stages charged it (the visual description).
            active[0]["costs"] = [*(active[0]["costs"] or []), *cost_rows]
        records.share_seconds(rows, "extract", started)
        return records.to_table(rows)
