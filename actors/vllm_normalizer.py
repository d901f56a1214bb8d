"""The `vllm` normalizer: `normalize_relations` as a Ray Data LLM processor on GPU replicas.

`build_normalize_processor(config)` returns a `ray.data.llm` processor (`build_processor` over a
`vLLMEngineProcessorConfig`), one vLLM engine per GPU, configured exactly as the `vllm` extractor's
(`VLLMExtractorConfig`). Prompt, schema and parsing are `pipeline/facts/normalize_llm.py`'s, shared with
the `openai` normalizer.

Rows in: `claims_json` (`normalize_llm.claims_to_json`, at most `normalize_llm.MAX_CLAIMS_PER_CALL`
claims; `rows_for` cuts them) and `topic` (text or null). Rows out of the postprocess: those two,
`normalize_text` (the model's answer, parsed later so that a parser fix needs no new inference),
`tokens_in`, `tokens_out` and `device_seconds`. With `should_continue_on_error=True` a row the
engine fails on skips the postprocess and comes out with Ray's `__inference_error__` column set;
`assertions_from_row` reads both kinds, the failed one by the rules normalizer.

Structured outputs travel as in `actors/vllm_extractor.py`: `sampling_params["structured_outputs"] =
{"json": <schema as JSON text>}`, which Ray 2.60's vLLM engine stage turns into
`StructuredOutputsParams`. `ray.data.llm` is imported only inside the build function: it needs
vLLM, which only the `gpu` extra installs, and this module must import without it.
"""

from __future__ import annotations

import functools
from typing import Any

from actors.vllm_extractor import (
    BACKEND,
    VLLMExtractorConfig,
    _error,
    _processor_config,
    _usage,
)
from pipeline.claims.extraction import CallCost
from pipeline.facts import normalize_llm
from pipeline.facts.normalize import Assertion


def normalizer_version(config: VLLMExtractorConfig) -> str:
    return normalize_llm.version(config.model_name, BACKEND)


def build_normalize_processor(config: VLLMExtractorConfig):
    """A processor from rows with `claims_json` and `topic` to rows with `normalize_text`."""
    from ray.data.llm import build_processor

    return build_processor(_processor_config(config),
                           preprocess=functools.partial(normalize_preprocess, max_tokens=config.max_tokens,
                                                        temperature=config.temperature),
                           postprocess=normalize_postprocess)


def rows_for(claims: list[dict], topic: str | None) -> list[dict[str, Any]]:
    """Input rows for the processor: the claims of one topic in groups of at most 25."""
    return [{"claims_json": normalize_llm.claims_to_json(group), "topic": topic}
            for group in normalize_llm.batches(claims)]


def normalize_preprocess(row: dict[str, Any], *, max_tokens: int, temperature: float) -> dict[str, Any]:
    claims = normalize_llm.claims_from_json(row["claims_json"])
    return {"messages": normalize_llm.messages(claims, row.get("topic") or None),
            "sampling_params": {"temperature": temperature, "max_tokens": max_tokens,
                                "structured_outputs": {"json": normalize_llm.schema_text()}}}


def normalize_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    return {"claims_json": row["claims_json"], "topic": row.get("topic"),
            "normalize_text": row.get("generated_text") or "", **_usage(row)}


def from_row(row: dict[str, Any]) -> tuple[list[list[Assertion]], list[str]]:
    """A processor's output row as per-claim assertions and problems; a failed row, or a row whose
    answer cannot be read, falls back to the rules normalizer."""
    claims = normalize_llm.claims_from_json(row["claims_json"])
    topic = row.get("topic") or None
    error = _error(row)
    if error:
        return normalize_llm.fallback(claims, topic, error)
    return normalize_llm.parse(claims, topic, row.get("normalize_text") or "")


def assertions_from_row(row: dict[str, Any]) -> list[list[Assertion]]:
    return from_row(row)[0]


def cost_from_row(row: dict[str, Any], model: str) -> CallCost:
    if _error(row):     # the row skipped the postprocess, which writes the usage columns
        return CallCost(backend=BACKEND, model=model, calls=1)
    return CallCost(backend=BACKEND, model=model, calls=1, tokens_in=int(row.get("tokens_in") or 0),
                    tokens_out=int(row.get("tokens_out") or 0),
                    device_seconds=float(row.get("device_seconds") or 0.0))
