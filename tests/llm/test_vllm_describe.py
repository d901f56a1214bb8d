"""The visual description (CORPUSMEM_DESCRIBE_MODEL) as vLLM reads its model, and the engines'
sequence length fitted to the model.

vLLM's CPU build runs no vision model here: every vision model of vLLM 0.29 imports torchvision
(`vllm/model_executor/models/vision.py` imports its Pixtral module, which imports transformers'
Pixtral image processor), and the package index's torchvision is built against CUDA's torch (its
`_C.so` needs `libtorch_cuda.so`), so it fails to import beside the CPU torch. What runs here is
what a run decides before its engines start, read by vLLM itself from a real model folder."""

from __future__ import annotations

import pytest

from actors.vllm_describer import VLLMDescriberConfig
from actors.vllm_extractor import VLLMExtractorConfig, model_config
from jobs import describe
from jobs.settings import SettingsError
from tests.support.memory import rows


@pytest.mark.integration
def test_a_describe_model_that_takes_no_image_is_refused_before_anything_is_written(memory, ray_local, tmp_path,
                                                                                       tiny_model):
    """Ray's multimodal stage would fail the whole run on its first batch ("is not a multimodal
    model"), after the run had begun."""
    from jobs.import_corpus import import_options, run_import
    from tests.support.ocr_pages import encode, render

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "board.png").write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    settings = memory.model_copy(update={"describe_model": str(tiny_model), "llm_device": "cpu"})
    with pytest.raises(SettingsError, match=r"^CORPUSMEM_DESCRIBE_MODEL=.*tiny-llama: LlamaForCausalLM takes no "
                                            r"image; give a vision-language model folder$"):
        run_import(import_options(settings, (str(folder),), progress=False), settings)
    assert rows(memory, "SELECT (SELECT count(*) FROM import_runs), (SELECT count(*) FROM documents)") == [(0, 0)]


def test_an_engine_is_never_asked_for_more_positions_than_its_model_has(tiny_model):
    """The tiny model has 8,192 positions; the describer's default is 16,384. vLLM refuses that
    as the engine starts, and Ray Data then starts the engine's actor again without end."""
    model = model_config(str(tiny_model))
    assert model.max_model_len == 8192 and not model.is_multimodal_model
    described = VLLMDescriberConfig(model_path=str(tiny_model), device="cpu")
    assert described.max_model_len == 16384 and described.fitted(model).max_model_len == 8192
    assert described.fitted(model).resolved_engine_kwargs()["max_model_len"] == 8192
    extracting = VLLMExtractorConfig(model_path=str(tiny_model), device="cpu", max_model_len=4096)
    assert extracting.fitted(model) is extracting
    assert VLLMExtractorConfig(model_path=str(tiny_model), max_model_len=32768).fitted().max_model_len == 8192
