"""The visual description's processor around the engine, without vLLM: its config, the request a
packed row makes (preprocess), and what the answers do to the row (postprocess and `finish`), on
hand-written rows in the shape Ray's vLLM engine stage returns (tests/fixtures/llm/)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from actors.embedder import ModelNotFound
from actors.object_store import ObjectStore
from actors.vllm_describer import (
    VLLMDescriberConfig,
    describe_postprocess,
    describe_preprocess,
    finish,
    pack,
    packed,
    unpack,
    unpacked,
)
from pipeline import records
from pipeline.documents.convert import OCR
from pipeline.documents.ocr_convert import ocr_row
from pipeline.documents.ocr_describe import schema
from pipeline.documents.ocr_text import Box, Line
from tests.support.ocr_pages import encode, render

FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm"
ENGINE = json.loads((FIXTURES / "describe.engine_rows.json").read_text())
MAX_PIXELS = 10**8


def _recognise(image):
    return [Line("Ingest Convert Write", Box(10, 10, 300, 40), 0.99)]


@pytest.fixture
def scanned(tmp_path) -> tuple[dict, str]:
    """(a row as the OCR stage leaves an image, the object store holding its original)."""
    store = ObjectStore(str(tmp_path / "objects"))
    content = encode([render(["Ingest Convert Write"], size=(1200, 500))], "PNG")
    digest, _ = store.put("raw", content)
    row = records.new_row(item="/scans/board.png", filename="board.png", mime="image/png", content=content,
                          content_hash=digest, outcome=records.PROCESS, converter=OCR, version_id="v1",
                          costs=[{"stage": "embed", "backend": "onnx", "model": "m", "calls": 1, "tokens_in": 0,
                                  "tokens_out": 0, "device_seconds": 0.5}])
    ocr_row(row, _recognise, MAX_PIXELS, "rapidocr test")
    return row, store.uri


def _request(row: dict, store: str) -> dict:
    return describe_preprocess({"doc_row": packed(row)}, object_store=store, max_pixels=MAX_PIXELS, max_pages=4,
                               max_tokens=1024, temperature=0.0)


def _through_engine(row: dict, store: str, engine_row: dict) -> dict:
    """A packed row through the preprocess, the engine's answer (`engine_row`) and, unless the
    engine failed, the postprocess, as Ray's processor moves it."""
    carried = {"doc_row": packed(row), **_request(row, store), **engine_row}
    return carried if engine_row["__inference_error__"] else describe_postprocess(carried)


# --- config ---------------------------------------------------------------------------------------


def test_the_model_must_be_a_local_folder_named_by_the_setting(tmp_path):
    with pytest.raises(ModelNotFound, match="^CORPUSMEM_DESCRIBE_MODEL is not set: the visual description needs"):
        VLLMDescriberConfig(model_path="")
    with pytest.raises(ModelNotFound, match=f"^CORPUSMEM_DESCRIBE_MODEL={tmp_path}: no model there"):
        VLLMDescriberConfig(model_path=str(tmp_path))


def test_the_engine_reserves_room_for_the_pages_a_request_shows(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    config = VLLMDescriberConfig(model_path=str(tmp_path), max_pages=6, engine_kwargs={"max_num_seqs": 8})
    assert config.resolved_engine_kwargs() == {"max_num_seqs": 8, "max_model_len": 16384, "gpu_memory_utilization": 0.85,
                                               "limit_mm_per_prompt": {"image": 6}, "tensor_parallel_size": 1,
                                               "pipeline_parallel_size": 1}
    with pytest.raises(ValidationError, match="engine_kwargs may not set limit_mm_per_prompt"):
        VLLMDescriberConfig(model_path=str(tmp_path), engine_kwargs={"limit_mm_per_prompt": {"image": 1}})


# --- the request ----------------------------------------------------------------------------------


def test_an_ocr_row_asks_for_its_pages_with_the_schema_as_text(scanned):
    row, store = scanned
    request = _request(row, store)
    assert request["pages"] == [1] and request["describe_error"] is None
    _, user = request["messages"]
    assert [part["type"] for part in user["content"]] == ["text", "image_url", "text"]
    assert user["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")
    assert request["sampling_params"] == {"temperature": 0.0, "max_tokens": 1024,
                                          "structured_outputs": {"json": json.dumps(schema())}}


def test_a_row_with_nothing_to_show_makes_a_one_token_request(scanned):
    _, store = scanned
    typed = records.new_row(item="notes.md", outcome=records.PROCESS, converter="passthrough", markdown="# Notes\n")
    request = _request(typed, store)
    assert request["pages"] == [] and request["describe_error"] is None
    assert request["sampling_params"] == {"temperature": 0.0, "max_tokens": 1}


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The describer's warnings, whatever level an earlier test of the process (one that started
    Ray, whose logging set-up raises the root logger's) left behind."""
    caplog.set_level(logging.WARNING, logger="actors.vllm_describer")
    return caplog


def test_an_original_that_cannot_be_read_again_is_said_and_never_raises(scanned, tmp_path, caplog):
    row, _ = scanned
    elsewhere = str(tmp_path / "empty-store")
    request = _request(row, elsewhere)
    assert request["pages"] == [1] and request["describe_error"].startswith("FileNotFoundError")
    assert request["sampling_params"]["max_tokens"] == 1
    out = unpacked(finish(_through_engine(row, elsewhere, {**ENGINE["answered"], "generated_text": "."}),
                          model="vlm")["doc_row"])
    # as OCR made it, and no cost: nothing was asked
    assert (out["markdown"], out["costs"]) == (row["markdown"], row["costs"])
    assert out["descriptions"] == [{"page": 1, "kind": None, "reason": "page_unreadable"}]
    assert "/scans/board.png: page 1 not described: page_unreadable: FileNotFoundError" in caplog.text


# --- the answer -----------------------------------------------------------------------------------


def test_an_answer_adds_the_description_after_the_page_text_and_its_cost(scanned):
    row, store = scanned
    out = unpacked(finish(_through_engine(row, store, ENGINE["answered"]), model="Qwen2.5-VL-7B-Instruct")["doc_row"])
    assert out["markdown"] == (
        "## Page 1\n\nIngest Convert Write\n\n### Description (whiteboard, by a vision model)\n\n"
        "A whiteboard photographed at an angle. Three boxes labelled Ingest, Convert and Write are joined by arrows "
        "from left to right, and a fourth box, OCR, hangs under Convert with an arrow back into it.\n")
    [line] = out["ocr_lines"]
    assert out["markdown"][line["char_start"]:line["char_end"]] == "Ingest Convert Write"
    assert out["ocr_pages"][0]["char_end"] == len(out["markdown"])
    assert out["converter_version"] == "rapidocr test + Qwen2.5-VL-7B-Instruct"
    assert out["costs"] == [row["costs"][0], {"stage": "describe", "backend": "vllm", "model": "Qwen2.5-VL-7B-Instruct",
                                              "calls": 1, "tokens_in": 1342, "tokens_out": 58, "device_seconds": 2.73}]


def test_a_failed_request_keeps_the_ocr_text_and_counts_the_call(scanned, caplog):
    row, store = scanned
    out = unpacked(finish(_through_engine(row, store, ENGINE["failed"]), model="vlm")["doc_row"])
    ocr_made = unpacked(packed(row))   # as Arrow holds it (float32 boxes)
    assert (out["markdown"], out["ocr_lines"], out["converter_version"]) == (
        ocr_made["markdown"], ocr_made["ocr_lines"], ocr_made["converter_version"])
    assert out["costs"][-1] == {"stage": "describe", "backend": "vllm", "model": "vlm", "calls": 1, "tokens_in": 0,
                                "tokens_out": 0, "device_seconds": 0.0}
    assert out["descriptions"] == [{"page": 1, "kind": None, "reason": "engine_failed"}]
    assert "/scans/board.png: page 1 not described: engine_failed: ValueError: The decoder prompt" in caplog.text


def test_an_unusable_answer_keeps_the_ocr_text_and_says_why(scanned, caplog):
    row, store = scanned
    truncated = {**ENGINE["answered"], "generated_text": (FIXTURES / "describe.diagram.truncated.txt").read_text()}
    out = unpacked(finish(_through_engine(row, store, truncated), model="vlm")["doc_row"])
    assert out["markdown"] == row["markdown"] and out["costs"][-1]["tokens_out"] == 58
    assert "/scans/board.png: page 1 not described: unparsable_answer: not JSON (Unterminated string" in caplog.text


def test_a_picture_without_words_is_described_or_fails_with_its_own_reason(tmp_path):
    store = ObjectStore(str(tmp_path / "objects"))
    content = encode([render([], size=(1200, 500))], "PNG")
    digest, _ = store.put("raw", content)
    row = records.new_row(item="/photos/hills.png", filename="hills.png", mime="image/png", content=content,
                          content_hash=digest, outcome=records.PROCESS, converter=OCR, version_id="v2")
    ocr_row(row, lambda image: [], MAX_PIXELS, "rapidocr test", describe_next=True)
    assert _request(row, store.uri)["pages"] == [1]

    described = unpacked(finish(_through_engine(row, store.uri, ENGINE["answered"]), model="vlm")["doc_row"])
    assert described["outcome"] == records.PROCESS
    assert described["markdown"].startswith("## Page 1\n\n### Description (whiteboard, by a vision model)\n\nA ")
    assert described["ocr_pages"][0]["reason"] == "no_text_recognised"

    failed = unpacked(finish(_through_engine(row, store.uri, ENGINE["failed"]), model="vlm")["doc_row"])
    assert (failed["outcome"], failed["error_stage"]) == (records.FAILED, "describe")
    assert failed["error"].startswith("nothing_recognised_or_described: no text on any of its 1 pages, and no "
                                      "description (engine_failed: ValueError: The decoder prompt")
    assert failed["descriptions"] == [{"page": 1, "kind": None, "reason": "engine_failed"}]


def test_a_row_that_showed_nothing_is_left_as_it_was(scanned):
    _, store = scanned
    typed = records.new_row(item="notes.md", outcome=records.PROCESS, converter="passthrough", markdown="# Notes\n")
    done = finish(_through_engine(typed, store, {**ENGINE["answered"], "generated_text": "."}), model="vlm")
    assert done == {"doc_row": packed(typed)}


def test_rows_pack_and_unpack_unchanged(scanned):
    row, _ = scanned
    table = records.to_table([row, records.new_row(item="other", outcome=records.FAILED, error="bad")])
    assert pack(table).schema == pa.schema([("doc_row", pa.binary())])
    assert unpack(pack(table)).equals(table)
