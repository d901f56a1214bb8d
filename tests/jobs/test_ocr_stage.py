"""The OCR stage as a run declares it: after `convert`, sized by CORPUSMEM_OCR_*, refused when on
without its package, and images routable only when it is there. Unit tests: no Ray, no database."""

from __future__ import annotations

import importlib.util

import pytest

from actors.embedder import ModelRef
from actors.retries import RetryPolicy
from jobs.settings import SettingsError, load_settings
from jobs.stages import DocumentStages, Embedding, OcrPool, Run
from pipeline.documents.convert import OcrOptions

_RUN = Run("run-1", "postgresql:///memory", "/objects", 16, RetryPolicy(attempts=3))
# a GPU embedder: its resources are not read from a running cluster
_EMBEDDING = Embedding(ModelRef("m", "/models/m"), gpu=True, device="cuda", batch_size=256, threads=2)


def test_the_ocr_pool_follows_its_settings_and_is_absent_when_off():
    settings = load_settings({"CORPUSMEM_OCR_WORKERS": "2", "CORPUSMEM_OCR_BATCH": "3",
                              "CORPUSMEM_OCR_MAX_PIXELS": "1000000", "CORPUSMEM_OCR_MIN_PDF_PAGE_CHARS": "5"})
    assert OcrPool.of(settings, {"CPU": 8.0}, embedder_gpus=0) == OcrPool(2, 3, 1_000_000, 5, gpu=False, threads=4)
    assert OcrPool.of(settings, {"CPU": 1.0}, embedder_gpus=0).threads == 1
    assert OcrPool.of(load_settings({"CORPUSMEM_OCR_WORKERS": "0"}), {"CPU": 2.0}, embedder_gpus=0) is None


def test_ocr_on_without_its_package_refuses_and_names_the_setting(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "rapidocr_onnxruntime" else real(name, *a))
    with pytest.raises(SettingsError, match="CORPUSMEM_OCR_WORKERS=2 but rapidocr-onnxruntime is not installed"):
        OcrPool.of(load_settings({}), {"CPU": 2.0}, embedder_gpus=0)
    assert OcrPool.of(load_settings({"CORPUSMEM_OCR_WORKERS": "0"}), {"CPU": 2.0}, embedder_gpus=0) is None


def test_ocr_runs_after_convert_resident_on_cpus_and_as_actors_on_a_gpu():
    ocr = OcrPool(2, 3, 1_000_000, 5, gpu=False, threads=4)
    stages = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800, ocr=ocr).stages(_RUN, ingested=False)
    assert [s.fn.__name__ for s in stages] == ["Ingest", "convert", "Ocr", "structure", "chunk", "Embed", "Write"]
    convert, pool = (s.map_batches_kwargs() for s in stages[1:3])
    assert stages[0].fn_constructor_kwargs["routes"].route("image/png") == "ocr"
    assert convert["fn_kwargs"]["ocr"] == OcrOptions(min_pdf_page_chars=5)
    assert (pool["batch_size"], type(pool["compute"]).__name__, pool["compute"].size, pool["num_cpus"]) == (
        3, "TaskPoolStrategy", 2, 0)
    assert stages[2].fn_constructor_kwargs == {"max_pixels": 1_000_000, "gpu": False, "threads": 4,
                                               "describe_next": False}
    gpu = OcrPool(2, 3, 1_000_000, 5, gpu=True, threads=4).stage().map_batches_kwargs()
    assert (gpu["compute"].min_size, gpu["compute"].max_size, gpu["num_gpus"]) == (2, 2, 0.5)
    assert gpu["fn_constructor_kwargs"] == {"max_pixels": 1_000_000, "gpu": True, "threads": 4,
                                            "describe_next": False}


def test_with_a_describe_step_the_ocr_stage_leaves_a_document_without_text_to_it():
    def describe(ds):
        return ds

    ocr = OcrPool(2, 3, 1_000_000, 5, gpu=False, threads=4)
    stages = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800, ocr=ocr,
                               describe=describe).stages(_RUN, ingested=False)
    assert stages[2].fn.__name__ == "Ocr" and stages[3] is describe
    assert stages[2].fn_constructor_kwargs["describe_next"] is True


def test_a_source_with_nothing_to_recognise_runs_without_the_ocr_stage_and_still_routes_images():
    ocr = OcrPool(2, 3, 1_000_000, 5, gpu=False, threads=4)
    pipeline = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800, ocr=ocr)

    def names(files: list[str]) -> list[str]:
        return [s.fn.__name__ for s in pipeline.stages(_RUN, ingested=False, names=files)]

    assert names(["a.md", "b.txt", "c.docx"]) == ["Ingest", "convert", "structure", "chunk", "Embed", "Write"]
    stages = pipeline.stages(_RUN, ingested=False, names=["a.md"])
    assert stages[0].fn_constructor_kwargs["routes"].route("image/png", "x.png") == "ocr"
    # what may hold a page to recognise: an image, a PDF, a container whose members are unknown
    for file in ("scan.PNG", "paper.pdf", "notes.zip", "inbox.mbox", "note.eml"):
        assert "Ocr" in names(["a.md", file]), file
    assert "Ocr" in [s.fn.__name__ for s in pipeline.stages(_RUN, ingested=False)]   # names unknown


def test_without_ocr_images_have_no_route():
    stages = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800).stages(_RUN, ingested=False)
    assert "Ocr" not in [s.fn.__name__ for s in stages]
    assert stages[0].fn_constructor_kwargs["routes"].route("image/png") is None
    assert "ocr" not in stages[1].map_batches_kwargs()["fn_kwargs"]
