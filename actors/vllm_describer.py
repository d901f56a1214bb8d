"""The visual description of OCR'd pages (CORPUSMEM_DESCRIBE_MODEL) as a Ray Data LLM processor
on GPU replicas.

`build_describe_processor(config, ...)` returns a `ray.data.llm` processor: `build_processor`
over a `vLLMEngineProcessorConfig` whose `prepare_multimodal_stage` is on, so each page's `data:`
URL is decoded into the model's vision input on CPU workers ahead of the engine (Ray 2.60 has no
per-row `image` field any more; the images travel in the chat messages). The request and the
parsing are `pipeline/documents/ocr_describe.py`'s.

The import's rows travel through it packed: `pack` turns each DOC_SCHEMA row into one Arrow IPC
blob (`doc_row`), since the processor's stages carry every input column as Python values and
infer its type row by row, which the document's nested columns would not survive; `finish` reads
the answer into the row, and `unpack` makes DOC_SCHEMA rows again.

    pack ─► preprocess ─► PrepareMultimodal ─► ChatTemplate ─► Tokenize ─► vLLM engine
         ─► Detokenize ─► postprocess ─► finish ─► unpack

Every row of the run passes: a map cannot drop a row, and splitting the dataset in two would run
every stage before this one twice. A row with no page to show (any document OCR did not convert,
or one whose original cannot be read again) makes a one-token text request, whose answer is not
read and whose cost is not recorded. A row the engine fails on (`__inference_error__`, with
`should_continue_on_error`) skips the postprocess and comes out with every column it went in
with. Each page meant to be shown and not described (the engine failed, the answer could not be
used, the original could not be read) is logged with its cause and recorded with its reason in the
row's `descriptions`, which the run report counts; the document keeps its OCR text, and fails
only when it has none and no page was described (`ocr_describe.add_descriptions`).

Each described document gets one cost row (stage `describe`: the call, its tokens and the
engine's seconds), which `write` lands in the cost ledger beside the extractor's.

`ray.data.llm` is imported only inside the build function: it needs vLLM, which only the `gpu`
extra installs, and this module must import without it.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any, ClassVar

import pyarrow as pa
from pydantic import Field

from actors.object_store import ObjectStore, content_key
from actors.vllm_extractor import EngineConfig
from pipeline import records
from pipeline.documents.ocr_describe import (
    ENGINE_FAILED,
    PAGE_UNREADABLE,
    STAGE,
    DescriptionFailed,
    add_descriptions,
    describe_messages,
    pages_to_describe,
    pages_wanted,
    parse_descriptions,
    schema,
)

BACKEND = "vllm"
MODEL_SETTING = "CORPUSMEM_DESCRIBE_MODEL"
# What the postprocess keeps of a row: what `finish` reads, as the engine names it.
_KEPT = ("doc_row", "pages", "describe_error", "generated_text", "num_input_tokens", "num_generated_tokens",
         "time_taken_llm")

_log = logging.getLogger(__name__)


class VLLMDescriberConfig(EngineConfig):
    OWNED: ClassVar[tuple[str, ...]] = (*EngineConfig.OWNED, "limit_mm_per_prompt")
    SETTING: ClassVar[str] = MODEL_SETTING
    WHO: ClassVar[str] = "the visual description"

    model_path: str = Field(description=f"{MODEL_SETTING}: a local vision-language model folder (config.json, "
                                        "weights, tokenizer and processor) on every GPU node; nothing is downloaded.")
    batch_size: int = Field(default=8, ge=1, le=1024,
                            description="Documents per batch sent to an engine. Each carries up to max_pages "
                                        "images, so batches are smaller than the extractor's.")
    max_pages: int = Field(default=4, ge=1, le=32,
                           description="Recognised pages of one document shown to the model; the later pages of "
                                       "a longer scan keep their OCR text alone. Each page is about 1,000 prompt "
                                       "tokens at 1024 px, and the engine reserves room for this many images.")
    max_model_len: int = Field(default=16384, ge=1024,
                               description="Prompt (images included) plus answer tokens per request; must hold "
                                           "max_pages images.")
    max_tokens: int = Field(default=1024, ge=16,
                            description="Answer cap per request: about 200 tokens per page described. Too low "
                                        "truncates the answer, and no page of it is used.")
    temperature: float = Field(default=0.0, ge=0, le=2,
                               description="0 keeps the same page giving the same description (determinism).")
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Further vLLM engine arguments (e.g. mm_processor_kwargs, "
        "max_num_seqs); not the ones named above.")

    def resolved_engine_kwargs(self) -> dict[str, Any]:
        return {**super().resolved_engine_kwargs(), "limit_mm_per_prompt": {"image": self.max_pages}}


def build_describe_processor(config: VLLMDescriberConfig, *, object_store: str, max_pixels: int):
    """A processor from packed rows (`pack`) to rows for `finish`. `object_store` holds the
    originals the pages are read again from; `max_pixels` is the OCR stage's page limit."""
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    engine = vLLMEngineProcessorConfig(model_source=config.model_path, **config.processor_kwargs(),
                                       engine_kwargs=config.resolved_engine_kwargs(),
                                       should_continue_on_error=True, prepare_multimodal_stage={
                                           "enabled": True, **config.light_stage()})
    return build_processor(engine, preprocess=functools.partial(
        describe_preprocess, object_store=object_store, max_pixels=max_pixels, max_pages=config.max_pages,
        max_tokens=config.max_tokens, temperature=config.temperature), postprocess=describe_postprocess,
        **config.map_kwargs())


def _nothing_to_show(pages: list[int], error: str | None) -> dict[str, Any]:
    """The request of a row with no page to show: a map cannot drop a row, so it costs one token.
    `pages` are those meant to be shown, which `error` kept from the model."""
    return {"messages": [{"role": "user", "content": "."}], "sampling_params": {"temperature": 0.0, "max_tokens": 1},
            "pages": pages, "describe_error": error}


def describe_preprocess(row: dict[str, Any], *, object_store: str, max_pixels: int, max_pages: int,
                        max_tokens: int, temperature: float) -> dict[str, Any]:
    """The request of a packed row: its OCR'd pages and what OCR read on them, or the one-token
    request of a row with nothing to show. Never raises: pages that cannot be read again are
    `describe_error`, and `finish` records them as not described."""
    doc = unpacked(row["doc_row"])
    wanted = pages_wanted(doc, max_pages)
    if not wanted:
        return _nothing_to_show([], None)
    try:
        pages = pages_to_describe(doc, lambda: ObjectStore(object_store).get(content_key("raw", doc["content_hash"])),
                                  max_pixels, max_pages)
    except Exception as err:  # a per-row error, never a failed batch
        return _nothing_to_show(wanted, f"{type(err).__name__}: {err}")
    return {"messages": describe_messages(pages, filename=doc["filename"] or doc["item"] or ""),
            "sampling_params": {"temperature": temperature, "max_tokens": max_tokens,
                                # as text: Arrow would turn a nested schema's missing keys into nulls
                                "structured_outputs": {"json": json.dumps(schema())}},
            "pages": [p.number for p in pages], "describe_error": None}


def describe_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """What `finish` reads of an answered row (the images and the prompt are let go)."""
    return {k: row.get(k) for k in _KEPT}


def _cost(row: dict[str, Any], model: str) -> dict[str, Any]:
    return {"stage": STAGE, "backend": BACKEND, "model": model, "calls": 1,
            "tokens_in": int(row.get("num_input_tokens") or 0),
            "tokens_out": int(row.get("num_generated_tokens") or 0),
            # the engine's time for this request; -1 on a failed one
            "device_seconds": max(float(row.get("time_taken_llm") or 0.0), 0.0)}


def finish(row: dict[str, Any], *, model: str) -> dict[str, Any]:
    """A processor's output row (answered, failed by the engine, or with pages it could not show)
    as a packed document row: what became of each page (`ocr_describe.add_descriptions`), and
    the request's cost where one was made."""
    # a list column may reach a row map as a numpy array, whose truth value is ambiguous
    pages = [int(n) for n in (row.get("pages") if row.get("pages") is not None else ())]
    if not pages:   # most rows of a run: passed on without being read
        return {"doc_row": row["doc_row"]}
    doc = unpacked(row["doc_row"])
    if row.get("describe_error"):   # nothing was asked: no cost
        found = dict.fromkeys(pages, DescriptionFailed(PAGE_UNREADABLE, row["describe_error"]))
    else:
        error = row.get("__inference_error__")
        found = (dict.fromkeys(pages, DescriptionFailed(ENGINE_FAILED, " ".join(str(error).split())[:300])) if error
                 else parse_descriptions(row.get("generated_text") or "", pages))
        doc["costs"] = [*(doc["costs"] or []), _cost(row, model)]
    for number, result in found.items():
        if isinstance(result, DescriptionFailed):
            _log.warning("%s: page %d not described: %s: %s", doc["item"], number, result.reason, result.cause)
    add_descriptions(doc, found, model)
    return {"doc_row": packed(doc)}


def packed(row: dict[str, Any]) -> bytes:
    """A DOC_SCHEMA row as one Arrow IPC stream."""
    table = records.to_table([row])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpacked(blob: bytes) -> dict[str, Any]:
    [row] = records.to_rows(pa.ipc.open_stream(blob).read_all())
    return row


def pack(batch: pa.Table) -> pa.Table:
    """DOC_SCHEMA rows → one `doc_row` blob each."""
    return pa.table({"doc_row": pa.array([packed(r) for r in records.to_rows(batch)], pa.binary())})


def unpack(batch: pa.Table) -> pa.Table:
    """`doc_row` blobs → DOC_SCHEMA rows."""
    return records.to_table([unpacked(blob) for blob in batch.column("doc_row").to_pylist()])
