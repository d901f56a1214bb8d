"""The `vllm` normalizer: `normalize_relations` as a Ray Data LLM processor on GPU replicas.

`build_normalize_processor(config)` returns a `ray.data.llm` processor (`build_processor` over a
`vLLMEngineProcessorConfig`), one vLLM engine per GPU, configured exactly as the `vllm` extractor's
(`VLLMExtractorConfig`). Prompt, schema and parsing are `pipeline/facts/normalize_llm.py`'s, shared with
the `openai` normalizer. The facts phase runs it when the import's extractor is `vllm`
(`jobs/normalize_llm.py`).

Rows in (`rows_for`): `claims_json` (`normalize_llm.claims_to_json`, at most
`normalize_llm.MAX_CLAIMS_PER_CALL` claims of one version), `topic` (text or null), and the row's
place among its version's rows: `version_id`, `part`, `parts`. Rows out of the postprocess: those,
`normalize_text` (the model's answer, parsed later so that a parser fix needs no new inference),
`tokens_in`, `tokens_out` and `device_seconds`. With `should_continue_on_error=True` a row the
engine fails on skips the postprocess and comes out with Ray's `__inference_error__` column set
(`inference_error` reads it); the pass sends such rows through the processor again under the
import's retry policy, and `from_row` reads only answered rows.

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
    _processor_config,
    inference_error,
    _usage,
)
from pipeline.claims.extraction import CallCost
from pipeline.facts import normalize_llm
from pipeline.facts.normalize import Assertion


def normalizer_version(config: VLLMExtractorConfig) -> str:
    return normalize_llm.version(config.model_name, BACKEND)


def build_normalize_processor(config: VLLMExtractorConfig):
    """A processor from `rows_for` rows to rows with `normalize_text`."""
    from ray.data.llm import build_processor

    return build_processor(_processor_config(config),
                           preprocess=functools.partial(normalize_preprocess, max_tokens=config.max_tokens,
                                                        temperature=config.temperature),
                           postprocess=normalize_postprocess, **config.map_kwargs())


# The columns a row carries into the processor, and through it (the postprocess keeps them).
INPUT_COLUMNS = ("version_id", "part", "parts", "claims_json", "topic")


def rows_for(version_id: str, claims: list[dict], topic: str | None) -> list[dict[str, Any]]:
    """Input rows for the processor: one version's claims in groups of at most 25, each row
    numbered among the version's rows, so its answers can be put together again in order."""
    groups = normalize_llm.batches(claims)
    return [{"version_id": version_id, "part": n, "parts": len(groups),
             "claims_json": normalize_llm.claims_to_json(group), "topic": topic}
            for n, group in enumerate(groups)]


def normalize_preprocess(row: dict[str, Any], *, max_tokens: int, temperature: float) -> dict[str, Any]:
    claims = normalize_llm.claims_from_json(row["claims_json"])
    return {"messages": normalize_llm.messages(claims, row.get("topic") or None),
            "sampling_params": {"temperature": temperature, "max_tokens": max_tokens,
                                "structured_outputs": {"json": normalize_llm.schema_text()}}}


def normalize_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    return {**{k: row.get(k) for k in INPUT_COLUMNS}, "normalize_text": row.get("generated_text") or "",
            **_usage(row)}


def from_row(row: dict[str, Any]) -> tuple[list[list[Assertion]], list[str]]:
    """An answered row as per-claim assertions and problems (an answer that cannot be read, or
    an entry that cannot be used, is read by the rules normalizer, and said so)."""
    claims = normalize_llm.claims_from_json(row["claims_json"])
    return normalize_llm.parse(claims, row.get("topic") or None, row.get("normalize_text") or "")


def assertions_from_row(row: dict[str, Any]) -> list[list[Assertion]]:
    return from_row(row)[0]


def cost_from_row(row: dict[str, Any], model: str) -> CallCost:
    return CallCost(backend=BACKEND, model=model, calls=1, tokens_in=int(row.get("tokens_in") or 0),
                    tokens_out=int(row.get("tokens_out") or 0),
                    device_seconds=float(row.get("device_seconds") or 0.0))
