"""The `vllm` extractor: Selection and Claimify as Ray Data LLM processors on GPU replicas.

`build_selection_processor(config)` and `build_claimify_processor(config)` return
`ray.data.llm` processors (`build_processor` over a `vLLMEngineProcessorConfig`), one vLLM engine per
GPU. Prompts, schemas and parsing are `pipeline/claims/llm_io.py`'s, shared with the `openai` backend.

Rows in: `ctx_json` (`llm_io.ctx_to_json`) and `reports_json`, and for Claimify also
`selection_json`. Rows out of the postprocess: those columns, then `selection_json` +
`selection_text` (Selection) or `claimify_json` + `claimify_text` (Claimify), with `tokens_in`,
`tokens_out` and `device_seconds`. The ChunkContext carries `version_id` and `chunk_ord`, the row's
key. With `should_continue_on_error=True` a row the engine fails on skips the postprocess and comes
out with Ray's `__inference_error__` column set; Ray's engine stage passes such a row by, and so
does the Claimify preprocess, so a chunk Selection failed on reaches the end with that error.
`selection_from_row` / `claimify_from_row` turn both kinds of row into results and costs.

A row with no `ctx_json` is a *carrier*: when the extraction runs as stages of the import
(`actors/llm_stage.py`), it carries the report rows of a batch of documents (`reports_json`) past
the processors to the driver. A map cannot drop or hold back a row, so a carrier makes a one-token
request whose answer is not read.

Structured outputs, as Ray 2.60 forwards them: the vLLM engine stage
(`ray/llm/_internal/batch/stages/vllm_engine_stage.py`, `_prepare_llm_request`) pops
`sampling_params["structured_outputs"]`, builds `vllm.sampling_params.StructuredOutputsParams(**it)`
and passes the rest of `sampling_params` to `vllm.SamplingParams`. So each row carries
`sampling_params={"temperature": ..., "max_tokens": ..., "structured_outputs": {"json": <schema>}}`
(vLLM >= 0.12 removed `guided_json` / `guided_decoding`). The schema travels as JSON text, which
`StructuredOutputsParams.json` accepts (`str | dict`): Ray Data moves rows as Arrow, and a schema as
a nested dict would become structs whose missing keys come back as nulls.

`ray.data.llm` is imported only inside the build functions: it needs vLLM, which only the `gpu`
extra installs, and this module must import without it.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from actors.embedder import ModelNotFound
from pipeline.claims import llm_io
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    SelectionResult,
)

BACKEND = "vllm"
MODEL_SETTING = "CORPUSMEM_LLM_MODEL"
# The share of the machine's memory a CPU engine reserves, weights and KV cache: about 1.2 GB of 24 GB.
CPU_KV_CACHE_SHARE = 0.05
CPU_STAGE_SHARE = 0.1

_log = logging.getLogger(__name__)


def model_config(model_path: str):
    """vLLM's reading of the model folder at `model_path` (its architecture, whether it takes
    images, the longest sequence it takes), as its engines will read it; None where vLLM is not
    installed (a driver without the `gpu` extra, whose workers have it)."""
    try:
        from vllm.config import ModelConfig
    except ImportError:
        return None
    # float32: no probe for a GPU on a driver that may have none (Ray's multimodal stage does the same)
    return ModelConfig(model=model_path, dtype="float32")


def local_model_folder(value: object, setting: str, who: str) -> str:
    """`value` (the setting `setting`) as the absolute path of a local model folder, or a
    `ModelNotFound` naming the setting: vLLM is given a folder, never a name to download."""
    if not value:
        raise ModelNotFound(f"{setting} is not set: {who} needs a local model folder; nothing is downloaded")
    path = Path(str(value)).expanduser()
    if not (path / "config.json").is_file():
        raise ModelNotFound(f"{setting}={value}: no model there (no config.json); give a local "
                            "model folder, nothing is downloaded")
    return str(path.resolve())


class EngineConfig(BaseModel):
    """What configures one of the project's vLLM processors (the extractor's and normalizer's, the
    describer's): a local model on one GPU per replica. Subclasses give their defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    # engine arguments the config's own fields decide, which `engine_kwargs` may not set
    OWNED: ClassVar[tuple[str, ...]] = ("model", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
                                        "gpu_memory_utilization")
    SETTING: ClassVar[str] = MODEL_SETTING
    WHO: ClassVar[str] = "the vllm extractor"

    model_path: str = Field(description=f"{MODEL_SETTING}: a local model folder (with config.json and the "
                                        "tokenizer) on every GPU node; nothing is downloaded.")
    batch_size: int = Field(default=16, ge=1, le=4096,
                            description="Rows per batch sent to an engine. Larger batches keep the GPU busier; "
                                        "smaller ones lose less work when a replica dies.")
    concurrency: int | tuple[int, int] = Field(
        default=1, description="Engine replicas, one GPU each: n autoscales 1..n, (m, n) between m and n.")
    max_model_len: int = Field(default=8192, ge=512,
                               description="Prompt plus answer tokens per request. Lower frees KV cache for "
                                           "more parallel requests; too low refuses long chunks.")
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=0.98,
                                          description="Share of GPU memory vLLM takes for weights and KV "
                                                      "cache; lower it when something else shares the GPU.")
    max_tokens: int = Field(default=2048, ge=16,
                            description="Answer cap per request. Too low truncates answers (the cut "
                                        "statements are omitted); too high lets a looping model hold a slot.")
    temperature: float = Field(default=0.0, ge=0, le=2,
                               description="0 keeps the same chunk giving the same claims (determinism).")
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Further vLLM engine arguments (e.g. enable_prefix_caching, "
        "max_num_seqs, structured_outputs_config={'backend': 'xgrammar'}); not the ones named above.")
    device: Literal["gpu", "cpu"] = Field(
        default="gpu", description="CORPUSMEM_LLM_DEVICE: `cpu` runs each replica on one CPU with vLLM's CPU "
                                   "build, its KV cache in `CPU_KV_CACHE_SHARE` of the machine's memory.")

    @field_validator("model_path", mode="before")
    @classmethod
    def _local_model(cls, value: object) -> str:
        return local_model_folder(value, cls.SETTING, cls.WHO)

    @field_validator("engine_kwargs")
    @classmethod
    def _not_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        owned = sorted(set(value) & set(cls.OWNED))
        if owned:
            raise ValueError(f"engine_kwargs may not set {', '.join(owned)}: they are fields of this config "
                             "(one GPU per replica)")
        return value

    @property
    def model_name(self) -> str:
        return Path(self.model_path).name

    def fitted(self, model: Any = None):
        """This config with `max_model_len` no longer than the model takes (`model`: its
        `model_config`, read here when not given). vLLM refuses a longer one as the engine starts,
        and Ray Data then starts the engine's actor again without end, so a run would wait for
        ever on a model with fewer positions than the default."""
        model = model if model is not None else model_config(self.model_path)
        if model is None or self.max_model_len <= model.max_model_len:
            return self
        _log.info("%s: max_model_len %d is more than the model takes; using %d", self.model_name,
                  self.max_model_len, model.max_model_len)
        return self.model_copy(update={"max_model_len": model.max_model_len})

    def resolved_engine_kwargs(self) -> dict[str, Any]:
        if self.device == "cpu":
            # vLLM's CPU build reads the same argument as the share of the machine's memory it reserves
            # (a GPU's 0.85 would refuse to start beside anything else), and compiles nothing up front
            # and answers in JSON without optional whitespace: on a CPU every token counts, and a small
            # model held to a schema can spend its whole answer on blanks between the braces
            cpu = {"gpu_memory_utilization": CPU_KV_CACHE_SHARE, "enforce_eager": True}
            compact = {"structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True}}
            return {**compact, **self.engine_kwargs, "max_model_len": self.max_model_len, **cpu,
                    "tensor_parallel_size": 1, "pipeline_parallel_size": 1}
        return {**self.engine_kwargs, "max_model_len": self.max_model_len,
                "gpu_memory_utilization": self.gpu_memory_utilization,
                "tensor_parallel_size": 1, "pipeline_parallel_size": 1}

    def processor_kwargs(self) -> dict[str, Any]:
        """What `vLLMEngineProcessorConfig` takes besides the model and the engine's arguments: on
        CPUs, a replica's placement is one CPU (Ray Data LLM asks a GPU of each by default)."""
        if self.device != "cpu":
            return {"batch_size": self.batch_size, "concurrency": self.concurrency}
        light = self.light_stage()
        return {"batch_size": self.batch_size, "concurrency": self.concurrency,
                "placement_group_config": {"bundles": [{"CPU": 1}]},
                "chat_template_stage": light, "tokenize_stage": light, "detokenize_stage": light}

    def light_stage(self) -> dict[str, Any]:
        """A stage around the engine (chat template, tokenizer, detokenizer, images): on CPUs a
        tenth of one each, as at a whole CPU apiece they alone take a 2-core machine and the engine
        never starts."""
        return {"num_cpus": CPU_STAGE_SHARE} if self.device == "cpu" else {}

    def map_kwargs(self) -> dict[str, Any]:
        """`build_processor`'s arguments for the project's own pre- and postprocessing maps: on
        CPUs as light as the stages around the engine."""
        light = self.light_stage()
        return {"preprocess_map_kwargs": light, "postprocess_map_kwargs": light} if light else {}


class VLLMExtractorConfig(EngineConfig):
    """The extractor's (and the normalizer's) processors: the base's defaults."""


def extractor_version(config: VLLMExtractorConfig) -> str:
    return f"vllm-1:{config.model_name}:{llm_io.prompt_hash()}"


def build_selection_processor(config: VLLMExtractorConfig):
    """A processor from rows with `ctx_json` to rows with `selection_json`."""
    from ray.data.llm import build_processor

    return build_processor(_processor_config(config),
                           preprocess=functools.partial(selection_preprocess, max_tokens=config.max_tokens,
                                                        temperature=config.temperature),
                           postprocess=selection_postprocess, **config.map_kwargs())


def build_claimify_processor(config: VLLMExtractorConfig):
    """A processor from rows with `ctx_json` and `selection_json` to rows with `claimify_json`."""
    from ray.data.llm import build_processor

    return build_processor(_processor_config(config),
                           preprocess=functools.partial(claimify_preprocess, max_tokens=config.max_tokens,
                                                        temperature=config.temperature),
                           postprocess=claimify_postprocess, **config.map_kwargs())


def _processor_config(config: VLLMExtractorConfig):
    from ray.data.llm import vLLMEngineProcessorConfig

    return vLLMEngineProcessorConfig(model_source=config.model_path, **config.processor_kwargs(),
                                     engine_kwargs=config.resolved_engine_kwargs(),
                                     should_continue_on_error=True)


def _sampling_params(step: str, max_tokens: int, temperature: float) -> dict[str, Any]:
    return {"temperature": temperature, "max_tokens": max_tokens,
            "structured_outputs": {"json": json.dumps(llm_io.load_schema(step))}}


# What a carrier asks: one token, no schema; its answer is not read.
_CARRIER_REQUEST = {"messages": [{"role": "user", "content": "."}],
                    "sampling_params": {"temperature": 0.0, "max_tokens": 1}}


def is_carrier(row: dict[str, Any]) -> bool:
    return not row.get("ctx_json")


def selection_preprocess(row: dict[str, Any], *, max_tokens: int, temperature: float) -> dict[str, Any]:
    if is_carrier(row):
        return dict(_CARRIER_REQUEST)
    ctx = llm_io.ctx_from_json(row["ctx_json"])
    return {"messages": llm_io.selection_messages(ctx),
            "sampling_params": _sampling_params("selection", max_tokens, temperature)}


def claimify_preprocess(row: dict[str, Any], *, max_tokens: int, temperature: float) -> dict[str, Any]:
    if inference_error(row):
        return {}   # Selection failed on it: the engine stage and the postprocess pass it by
    if is_carrier(row):
        return dict(_CARRIER_REQUEST)
    ctx = llm_io.ctx_from_json(row["ctx_json"])
    selection = llm_io.selection_from_json(row["selection_json"])
    # A map cannot drop a row, so a chunk with nothing kept still makes a request; one token keeps it
    # nearly free, and its answer is not read. Filtering such rows out before this processor is better.
    tokens = max_tokens if llm_io.kept_labels(selection) else 1
    return {"messages": llm_io.claimify_messages(ctx, selection),
            "sampling_params": _sampling_params("claimify", tokens, temperature)}


def _usage(row: dict[str, Any]) -> dict[str, Any]:
    return {"tokens_in": int(row.get("num_input_tokens") or 0),
            "tokens_out": int(row.get("num_generated_tokens") or 0),
            # The engine's time for this request; requests in one engine overlap, so a sum over rows
            # counts GPU time more than once.
            "device_seconds": max(float(row.get("time_taken_llm") or 0.0), 0.0)}


def selection_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    text = row.get("generated_text") or ""
    if is_carrier(row):
        selection = None
    else:
        selection = llm_io.selection_to_json(llm_io.parse_selection(llm_io.ctx_from_json(row["ctx_json"]), text))
    return {"ctx_json": row.get("ctx_json"), "reports_json": row.get("reports_json"),
            "selection_json": selection, "selection_text": text, **_usage(row)}


def claimify_postprocess(row: dict[str, Any]) -> dict[str, Any]:
    text = row.get("generated_text") or ""
    if is_carrier(row):
        claimify = None
    else:
        ctx = llm_io.ctx_from_json(row["ctx_json"])
        selection = llm_io.selection_from_json(row["selection_json"])
        claimify = llm_io.claimify_to_json(llm_io.parse_claimify(ctx, selection, text))
    return {"ctx_json": row.get("ctx_json"), "reports_json": row.get("reports_json"),
            "selection_json": row.get("selection_json"), "claimify_json": claimify, "claimify_text": text,
            **_usage(row),
            # the Selection request's usage, carried so both calls reach the cost ledger
            **{f"selection_{k}": row.get(k) or 0 for k in ("tokens_in", "tokens_out", "device_seconds")}}


def inference_error(row: dict[str, Any]) -> str | None:
    """Why the engine gave a row no answer (it then skipped the postprocess); None for an answered row."""
    error = row.get("__inference_error__")
    return f"inference error: {' '.join(str(error).split())[:300]}" if error else None


def _cost(row: dict[str, Any], model: str) -> CallCost:
    if inference_error(row):     # the row skipped the postprocess, which writes the usage columns
        return CallCost(backend=BACKEND, model=model, calls=1)
    return CallCost(backend=BACKEND, model=model, calls=1, tokens_in=int(row["tokens_in"]),
                    tokens_out=int(row["tokens_out"]), device_seconds=float(row["device_seconds"]))


def selection_from_row(row: dict[str, Any], model: str) -> tuple[ChunkContext, SelectionResult, CallCost]:
    """A Selection processor's output row as results; a failed row keeps its targets flagged."""
    ctx = llm_io.ctx_from_json(row["ctx_json"])
    error = inference_error(row)
    selection = (llm_io.selection_fallback(ctx, error) if error
                 else llm_io.selection_from_json(row["selection_json"]))
    return ctx, selection, _cost(row, model)


def claimify_from_row(row: dict[str, Any], model: str
                      ) -> tuple[ChunkContext, SelectionResult, ClaimifyResult, CallCost]:
    """A Claimify processor's output row as results; a failed row omits its kept statements."""
    ctx = llm_io.ctx_from_json(row["ctx_json"])
    selection = llm_io.selection_from_json(row["selection_json"])
    error = inference_error(row)
    result = (llm_io.claimify_fallback(selection, error) if error
              else llm_io.claimify_from_json(row["claimify_json"]))
    return ctx, selection, result, _cost(row, model)
