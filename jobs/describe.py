"""Visual description in an import (CORPUSMEM_DESCRIBE_MODEL; off when unset): after the OCR
stage, each document OCR converted shows the pages OCR read to a vision-language model in vLLM
on the cluster's GPUs, and each page's description becomes a section of its `document.md`
before `structure` reads it, so claims come from it as from any text. A picture where OCR found no
text comes here instead of failing, and is its description, or fails
`nothing_recognised_or_described` when it gets none.

    convert ─► ocr ─► describe (pack ─► processor ─► finish ─► unpack) ─► structure ─► ...

`for_settings` refuses, before anything is written, a run that could not describe: no model
folder, OCR off, no GPU in the cluster (unless CORPUSMEM_LLM_DEVICE=cpu puts its engine on CPUs,
with vLLM's CPU build), no vLLM installed, or a model that takes no image.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.vllm_describer import MODEL_SETTING, VLLMDescriberConfig, build_describe_processor, finish, pack, unpack
from actors.vllm_extractor import model_config
from jobs.settings import Settings, SettingsError
from jobs.stages import TASK_CPUS, Stage

Processor = Callable[[Any], Any]   # a Ray Dataset in, a Ray Dataset out


@dataclass(frozen=True)
class Describe:
    """The describe step of a run: `processor` between packing the rows and reading its answers
    back into them."""

    processor: Processor
    model_label: str    # the model's name in the cost ledger and the converter version
    batch_size: int

    def __call__(self, ds):
        ds = Stage(pack, self.batch_size, num_cpus=TASK_CPUS)(ds)
        ds = self.processor(ds)
        ds = ds.map(functools.partial(finish, model=self.model_label), num_cpus=TASK_CPUS)
        return Stage(unpack, self.batch_size, num_cpus=TASK_CPUS)(ds)


def for_settings(settings: Settings, resources: dict[str, float], batch_size: int) -> Describe | None:
    """The describe step CORPUSMEM_DESCRIBE_MODEL asks for on the cluster of `resources`, None
    when it is unset."""
    if not settings.describe_model:
        return None
    config = VLLMDescriberConfig(model_path=settings.describe_model, device=settings.llm_device)
    if settings.ocr_workers == 0:
        raise SettingsError(f"{MODEL_SETTING} describes the pages OCR reads, and OCR is off "
                            "(CORPUSMEM_OCR_WORKERS=0): turn OCR on, or unset it")
    if config.device == "gpu" and resources.get("GPU", 0) < 1:
        raise SettingsError(f"{MODEL_SETTING} needs a GPU in the Ray cluster for its vision model and found "
                            "none; unset it to import with OCR alone, or set CORPUSMEM_LLM_DEVICE=cpu with "
                            "vLLM's CPU build and a small model")
    if importlib.util.find_spec("vllm") is None:
        raise SettingsError(f"{MODEL_SETTING} runs its vision model in vLLM, which is not installed: install "
                            "the `gpu` extra, or unset it to import with OCR alone")
    model = model_config(config.model_path)
    if model is not None and not model.is_multimodal_model:
        raise SettingsError(f"{MODEL_SETTING}={settings.describe_model}: {', '.join(model.architectures)} takes no "
                            "image; give a vision-language model folder")
    processor = build_describe_processor(config.fitted(model), object_store=settings.object_store_uri,
                                         max_pixels=settings.ocr_max_pixels)
    return Describe(processor, config.model_name, batch_size)
