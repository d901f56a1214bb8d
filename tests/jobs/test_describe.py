"""Visual description in an import: off unless CORPUSMEM_DESCRIBE_MODEL names a model; refused,
before anything is written, where it cannot run; and end to end with a stand-in engine in place of
vLLM, which runs the real pre- and post-processing and answers as a model would, so the
description lands in `document.md` after the page's text, claims come from it, and its cost is in
the cost ledger."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import ray.cloudpickle

from actors import vllm_describer as vd
from actors.embedder import ModelNotFound
from actors.object_store import ObjectStore
from jobs import describe
from jobs.describe import Describe
from jobs.settings import SettingsError, load_settings
from tests.support.memory import do_import, rows
from tests.support.ocr_pages import encode, render

# Ray workers cannot import this test module: ship the stand-in engine by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

DESCRIPTION = "A whiteboard photo. Dana Whitfield leads the search team since March 2024."


@pytest.fixture
def model(tmp_path) -> Path:
    """A local model folder as far as the settings can tell (a config.json)."""
    (tmp_path / "vlm").mkdir()
    (tmp_path / "vlm" / "config.json").write_text("{}")
    return tmp_path / "vlm"


# --- when it runs ---------------------------------------------------------------------------------


def test_it_is_off_unless_the_setting_names_a_model():
    assert describe.for_settings(load_settings({}), {"CPU": 4.0, "GPU": 1.0}, 16) is None


def test_a_model_that_is_not_a_local_folder_is_refused(tmp_path):
    with pytest.raises(ModelNotFound, match=f"^CORPUSMEM_DESCRIBE_MODEL={tmp_path}: no model there"):
        describe.for_settings(load_settings({"CORPUSMEM_DESCRIBE_MODEL": str(tmp_path)}), {"GPU": 1.0}, 16)


def test_it_is_refused_with_ocr_off_without_a_gpu_and_without_vllm(model, monkeypatch):
    on = {"CORPUSMEM_DESCRIBE_MODEL": str(model)}
    with pytest.raises(SettingsError, match=r"and OCR is off \(CORPUSMEM_OCR_WORKERS=0\)"):
        describe.for_settings(load_settings({**on, "CORPUSMEM_OCR_WORKERS": "0"}), {"GPU": 1.0}, 16)
    with pytest.raises(SettingsError, match="^CORPUSMEM_DESCRIBE_MODEL needs a GPU in the Ray cluster"):
        describe.for_settings(load_settings(on), {"CPU": 16.0}, 16)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "vllm" else real_find_spec(name))
    with pytest.raises(SettingsError, match="runs its vision model in vLLM, which is not installed"):
        describe.for_settings(load_settings(on), {"CPU": 16.0, "GPU": 1.0}, 16)


@pytest.mark.integration
def test_an_import_that_cannot_describe_writes_nothing(memory, ray_local, model, tmp_path):
    image = tmp_path / "board.png"
    image.write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    with pytest.raises(SettingsError, match="needs a GPU in the Ray cluster"):
        do_import(memory.model_copy(update={"describe_model": str(model)}), image)
    assert rows(memory, "SELECT count(*) FROM import_runs") == [(0,)]
    assert rows(memory, "SELECT count(*) FROM documents") == [(0,)]


@pytest.mark.integration
def test_the_processor_ray_builds_decodes_the_images_before_the_engine(ray_local, model):
    processor = vd.build_describe_processor(vd.VLLMDescriberConfig(model_path=str(model), max_pages=3),
                                            object_store="/nowhere", max_pixels=10**7)
    assert processor.list_stage_names() == ["PrepareMultimodalStage", "ChatTemplateStage", "TokenizeStage",
                                            "vLLMEngineStage", "DetokenizeStage"]
    engine = processor.get_stage_by_name("vLLMEngineStage").fn_constructor_kwargs
    assert engine["engine_kwargs"]["limit_mm_per_prompt"] == {"image": 3} and engine["should_continue_on_error"]


# --- end to end, with a stand-in engine -------------------------------------------------------------


def _engine(batch, *, object_store: str, max_pixels: int):
    """Where vLLM would answer: the real preprocess and postprocess around a model-like answer."""
    import pyarrow as pa

    out = []
    for row in batch.to_pylist():
        request = vd.describe_preprocess(row, object_store=object_store, max_pixels=max_pixels, max_pages=4,
                                         max_tokens=1024, temperature=0.0)
        answer = {"pages": [{"page": n, "kind": "whiteboard", "description": DESCRIPTION} for n in request["pages"]]}
        out.append(vd.describe_postprocess({**row, **request, "generated_text": json.dumps(answer),
                                            "num_input_tokens": 1200, "num_generated_tokens": 40,
                                            "time_taken_llm": 1.5, "__inference_error__": ""}))
    return pa.Table.from_pylist(out)


@pytest.mark.integration
def test_an_imported_image_gets_its_description_claims_from_it_and_its_cost(memory, ray_local, tmp_path):
    from jobs.import_corpus import import_options, run_import

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "board.png").write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    (folder / "note.txt").write_text("Priya Raman approved the invoice rewrite in June 2025.\n")
    stand_in = functools.partial(_engine, object_store=memory.object_store_uri, max_pixels=memory.ocr_max_pixels)
    step = Describe(lambda ds: ds.map_batches(stand_in, batch_format="pyarrow"), "stand-in", 4)
    report = run_import(import_options(memory, (str(folder),), batch_size=4, workers=1, progress=False), memory,
                        describe=step)
    assert report.status == "succeeded" and report.counts["new_versions"] == 2, report.render()

    [(key, converter_version)] = rows(
        memory, "SELECT r.object_key, r.converter_version FROM representations r JOIN versions v USING (version_id)"
                " JOIN documents d USING (doc_id) WHERE d.filename = 'board.png'")
    markdown = ObjectStore(memory.object_store_uri).get(key).decode()
    assert converter_version.endswith(" + stand-in")
    text, description = markdown.split("\n### Description (whiteboard, by a vision model)\n\n")
    assert "cutover plan" in text and description == DESCRIPTION + "\n"
    # the side tables index the text as stored: the line is where it says, the page holds the description
    [(start, end)] = rows(memory, "SELECT l.char_start, l.char_end FROM ocr_lines l")
    assert "cutover plan" in markdown[start:end]
    assert rows(memory, "SELECT char_end FROM ocr_pages") == [(len(markdown),)]
    # a claim comes from the description as from any text
    spans = [span for (span,) in rows(memory, "SELECT c.source_span FROM claims c JOIN documents d USING (doc_id)"
                                              " WHERE d.filename = 'board.png'")]
    assert any("Dana Whitfield" in span for span in spans), spans
    # one described document, one call in the cost ledger; the note cost no description
    described = rows(memory, "SELECT d.filename, c.model, c.calls, c.tokens_in, c.tokens_out, c.device_seconds"
                             " FROM cost_ledger c JOIN versions v USING (version_id) JOIN documents d USING (doc_id)"
                             " WHERE c.stage = 'describe'")
    assert described == [("board.png", "stand-in", 1, 1200, 40, 1.5)]
    note = rows(memory, "SELECT r.converter_version FROM representations r JOIN versions v USING (version_id)"
                        " JOIN documents d USING (doc_id) WHERE d.filename = 'note.txt'")
    assert "stand-in" not in note[0][0]
