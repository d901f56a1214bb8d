"""Visual description in an import: off unless CORPUSMEM_DESCRIBE_MODEL names a model; refused,
before anything is written, where it cannot run; and end to end with a stand-in engine in place of
vLLM, which runs the real pre- and post-processing and answers as a model would, so the
description lands in `document.md` after the page's text, claims come from it, and its cost is in
the cost ledger. A photo without words fails `no_text_recognised` with description off, becomes
its description with it on, and fails `nothing_recognised_or_described` when the engine fails,
which the run report and `corpusmem status` count."""

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
from jobs import describe, status
from jobs.describe import Describe
from jobs.settings import SettingsError, load_settings
from pipeline import records
from tests.support.memory import do_import, rows
from tests.support.ocr_pages import encode, photo, render

# Ray workers cannot import this test module: ship the stand-in engine by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

DESCRIPTION = "A whiteboard photo. Dana Whitfield leads the search team since March 2024."
PHOTO = "A photo of a red house below two grey hills. Priya Raman painted the lighthouse in June 2025."


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


def test_the_run_report_counts_the_pages_described_and_those_not_by_reason():
    from actors.db_writer import report_table
    from jobs.run_report import RunReport

    described = records.new_row(item="hills.tiff", outcome=records.PROCESS, descriptions=[
        {"page": 1, "kind": "photo", "reason": None}, {"page": 2, "kind": None, "reason": "page_left_out"}])
    failed = records.fail(records.new_row(item="dark.jpg", outcome=records.PROCESS, descriptions=[
        {"page": 1, "kind": None, "reason": "engine_failed"}]), "describe", "nothing_recognised_or_described: ...")
    report = RunReport("run-1")
    note = records.new_row(item="note.txt", outcome=records.PROCESS)
    for row in report_table([described, failed, note]).to_pylist():
        report.add(row)
    assert (report.counts["described_pages"], report.counts["descriptions_failed"]) == (1, 2)
    assert report.as_dict()["description_failures"] == {"engine_failed": 1, "page_left_out": 1}
    assert ("\n  described        1 pages by a vision model, 2 not (engine_failed 1, page_left_out 1)\n"
            in report.render())
    assert "described " not in RunReport("run-2").render()


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


def _engine(batch, *, object_store: str, max_pixels: int, fail: bool = False):
    """Where vLLM would answer: the real preprocess and postprocess around a model-like answer (a
    whiteboard's description, or a photo's for a page OCR found no text on); with `fail`, the
    row as the engine leaves one it failed on (no postprocess), with the columns `finish` reads."""
    import pyarrow as pa

    out = []
    for row in batch.to_pylist():
        request = vd.describe_preprocess(row, object_store=object_store, max_pixels=max_pixels, max_pages=4,
                                         max_tokens=1024, temperature=0.0)
        if fail:
            out.append({"doc_row": row["doc_row"], "pages": request["pages"], "describe_error": None,
                        "generated_text": "", "num_input_tokens": 0, "num_generated_tokens": 0, "time_taken_llm": -1.0,
                        "__inference_error__": "RuntimeError: CUDA error: an illegal memory access was encountered"})
            continue
        read = vd.unpacked(row["doc_row"])["ocr_pages"] or []
        unread = {p["page"] for p in read if p["reason"] == "no_text_recognised"}
        answer = {"pages": [{"page": n, "kind": "photo", "description": PHOTO} if n in unread
                            else {"page": n, "kind": "whiteboard", "description": DESCRIPTION}
                            for n in request["pages"]]}
        out.append(vd.describe_postprocess({**row, **request, "generated_text": json.dumps(answer),
                                            "num_input_tokens": 1200, "num_generated_tokens": 40,
                                            "time_taken_llm": 1.5, "__inference_error__": ""}))
    return pa.Table.from_pylist(out)


def _import_described(memory, folder: Path, *, fail: bool = False):
    """`corpusmem import FOLDER` with the stand-in engine as the describe step."""
    from jobs.import_corpus import import_options, run_import

    stand_in = functools.partial(_engine, object_store=memory.object_store_uri, max_pixels=memory.ocr_max_pixels,
                                 fail=fail)
    step = Describe(lambda ds: ds.map_batches(stand_in, batch_format="pyarrow"), "stand-in", 4)
    return run_import(import_options(memory, (str(folder),), batch_size=4, workers=1, progress=False), memory,
                      describe=step)


def _folder(tmp_path: Path, *, board: bool) -> Path:
    """A photo without words, a note, and (`board`) an image with a line of text."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "hills.jpg").write_bytes(encode([photo()], "JPEG"))
    (folder / "note.txt").write_text("Omar Haddad booked the Lisbon hotel in May 2025.\n")
    if board:
        (folder / "board.png").write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    return folder


def _markdown(memory, filename: str) -> str:
    [(key,)] = rows(memory, "SELECT r.object_key FROM representations r JOIN versions v USING (version_id)"
                            " JOIN documents d USING (doc_id) WHERE d.filename = %s", filename)
    return ObjectStore(memory.object_store_uri).get(key).decode()


@pytest.mark.integration
def test_an_imported_image_gets_its_description_claims_from_it_and_its_cost(memory, ray_local, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "board.png").write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    (folder / "note.txt").write_text("Priya Raman approved the invoice rewrite in June 2025.\n")
    report = _import_described(memory, folder)
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


@pytest.mark.integration
def test_a_photo_without_words_fails_no_text_recognised_with_description_off(memory, ray_local, tmp_path):
    report = do_import(memory, _folder(tmp_path, board=False))
    assert report.status == "succeeded" and report.counts["new_versions"] == 2, report.render()
    assert [(Path(f["item"]).name, f["stage"], f["error"]) for f in report.failures] == [
        ("hills.jpg", "ocr", "no_text_recognised: no text on any of its 1 pages")]
    assert report.counts["described_pages"] == report.counts["descriptions_failed"] == 0
    assert "described " not in report.render()


@pytest.mark.integration
def test_a_photo_without_words_becomes_its_description(memory, ray_local, tmp_path):
    report = _import_described(memory, _folder(tmp_path, board=False))
    assert report.status == "succeeded" and report.counts["failed"] == 0, report.render()
    assert (report.counts["described_pages"], report.counts["descriptions_failed"]) == (1, 0)
    assert "  described        1 pages by a vision model, 0 not\n" in report.render()
    assert rows(memory, "SELECT v.status FROM versions v JOIN documents d USING (doc_id)"
                        " WHERE d.filename = 'hills.jpg'") == [("ready",)]

    markdown = _markdown(memory, "hills.jpg")
    assert markdown == f"## Page 1\n\n### Description (photo, by a vision model)\n\n{PHOTO}\n"
    # the page still says OCR read nothing on it, and its span holds the description
    assert rows(memory, "SELECT p.lines, p.reason, p.char_start, p.char_end FROM ocr_pages p") == [
        (0, "no_text_recognised", 0, len(markdown))]
    assert rows(memory, "SELECT count(*) FROM ocr_lines") == [(0,)]
    # searchable, and a claim comes from it with exact offsets
    assert rows(memory, "SELECT DISTINCT d.filename FROM chunks c JOIN documents d USING (doc_id)"
                        " WHERE c.tsv @@ plainto_tsquery('english', 'lighthouse')") == [("hills.jpg",)]
    claims = rows(memory, "SELECT c.source_span, c.char_start, c.char_end FROM claims c JOIN documents d"
                          " USING (doc_id) WHERE d.filename = 'hills.jpg'")
    assert any("Priya Raman" in span for span, _, _ in claims), claims
    assert all(markdown[start:end] == span for span, start, end in claims), claims


@pytest.mark.integration
def test_a_failed_description_fails_a_photo_without_words_and_is_counted(memory, ray_local, tmp_path):
    report = _import_described(memory, _folder(tmp_path, board=True), fail=True)
    assert report.status == "succeeded" and report.counts["new_versions"] == 3, report.render()
    [failure] = report.failures
    assert (Path(failure["item"]).name, failure["stage"]) == ("hills.jpg", "describe")
    assert failure["error"] == ("nothing_recognised_or_described: no text on any of its 1 pages, and no description "
                                "(engine_failed: RuntimeError: CUDA error: an illegal memory access was encountered)")
    # the board keeps its OCR text; both pages the engine failed on are counted, with their reason
    assert "cutover plan" in _markdown(memory, "board.png")
    assert (report.counts["described_pages"], report.counts["descriptions_failed"]) == (0, 2)
    assert report.as_dict()["description_failures"] == {"engine_failed": 2}
    assert "  described        0 pages by a vision model, 2 not (engine_failed 2)\n" in report.render()
    assert rows(memory, "SELECT v.status, v.error FROM versions v JOIN documents d USING (doc_id)"
                        " WHERE d.filename = 'hills.jpg'") == [("failed", "convert: " + failure["error"])]
    shown = status.render(memory.dsn)
    assert "descriptions_failed 2" in shown and "nothing_recognised_or_described" in shown, shown
