"""The import benchmark's pure parts: the floor's pieces, the LoCoMo corpora it scales over, its table."""

from __future__ import annotations

import json
from pathlib import Path

from actors import calibration
from actors.embedder import DEFAULT_MODEL, resolve_model
from jobs.bench import imports
from tests.support.locomo import CONVERSATION


def test_the_floor_cuts_each_document_into_pieces_of_its_own(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("a" * 2500)
    (tmp_path / "sub" / "b.txt").write_text("b" * 300)
    pieces = imports.corpus_pieces(tmp_path)
    assert [len(p) for p in pieces] == [1000, 1000, 500, 300]
    assert pieces[2] == "a" * 500 and pieces[3] == "b" * 300


def test_locomo_scales_from_half_of_each_conversations_sessions_to_all(tmp_path: Path):
    source = tmp_path / "locomo"
    source.mkdir()
    conversation = dict(CONVERSATION, session_3_date_time="10:00 am on 3 June, 2023",
                        session_3=[{"speaker": "John", "dia_id": "D3:1", "text": "Biscuit chewed my running shoes."}],
                        session_4_date_time="11:00 am on 4 June, 2023",
                        session_4=[{"speaker": "Maria", "dia_id": "D4:1", "text": "Sorry about the shoes!"}])
    (source / "41.json").write_text(json.dumps(conversation))
    (source / "42.json").write_text(json.dumps(CONVERSATION))
    half, whole = imports._locomo_folders(source, tmp_path / "work")
    assert sorted(p.name for p in half.iterdir()) == ["locomo-41-session-01.md", "locomo-41-session-02.md",
                                                      "locomo-42-session-01.md"]
    assert len(list(whole.iterdir())) == 6


def test_the_table_gives_the_ratio_each_stage_and_the_scaling():
    run = {"documents": 90, "pieces": 405, "chunks": 555, "claims": 2852, "import_seconds": 30.0,
           "exit_seconds": 33.0, "floor_seconds": 15.0, "floor_execution": "torch-bf16",
           "floor_timings": {"torch-bf16": 15.0, "onnx-int8": 17.0}, "execution": "onnx-int8", "ratio": 0.5, "exit_ratio": 15.0 / 33.0, "startup_seconds": 4.0, "pipeline_seconds": 26.0,
           "driver_peak_rss_mib": 250.0, "stage_seconds": {"embed": 11.5, "extract": 2.3, "read": 0.01},
           "facts_seconds": {"normalize": 1.1, "adjudicate": 1.9},
           "texts_embedded": {"chunks": 555, "claims": 2474, "labels": 0, "profiles": 9},
           "vectors_not_embedded": {"same_text_in_this_run": 378, "labels_from_their_claim": 2505}}
    table = imports.render({"threads": 2, "embed_batch_size": 32, "corpora": {"locomo": {
        "runs": [run, run], "time_ratio_2x": 1.5, "floor_ratio_2x": 2.0, "driver_rss_ratio_2x": 1.01}}})
    assert "floor/import = 0.50 to the report, 0.45 to exit" in table
    assert "with onnx-int8, floor 15.0 s through torch-bf16; through onnx-int8: 17.0 s →" in table
    assert "embed 11.5" in table and "read" not in table.split("busy seconds per stage:")[1].split("\n")[0]
    assert "adjudicate 1.9 s" in table and "same text in this run 378" in table
    assert "2x the corpus: 1.50x the import time (floor 2.00x), driver peak RSS 1.01x" in table


def _floors(tmp_path: Path, monkeypatch, used, seconds: dict[str, float], *, gpu: bool = False) -> tuple[dict, list]:
    """`_floors` over one document on a machine that offers OFFERED (or a GPU), with the import's
    model `used` and each execution's seconds per piece given (no model is loaded); and the
    (execution, pieces) it encoded."""
    (tmp_path / "a.md").write_text("a" * 2500)
    monkeypatch.setattr(imports.runtime, "embedding_model", lambda settings, dsn, gpu=False: used)
    monkeypatch.setattr(imports, "_gpu", lambda: gpu)
    monkeypatch.setattr(calibration, "candidates", lambda path: list(OFFERED))
    monkeypatch.setattr(imports, "FLOOR_SAMPLE", 2)
    encoded = []

    def encode_seconds(pieces, ref, threads, batch_size):
        encoded.append((ref.execution, len(pieces)))
        return seconds[ref.execution] * len(pieces)

    monkeypatch.setattr(imports, "_encode_seconds", encode_seconds)
    return imports._floors(tmp_path, 2, 32), encoded


OFFERED = ("torch", "onnx", "torch-bf16", "onnx-int8")


def test_the_floor_is_the_fastest_execution_on_the_same_pieces_or_the_imports_own_where_faster(
        tmp_path, monkeypatch):
    used = resolve_model(DEFAULT_MODEL, "onnx-int8")
    seconds = {"torch": 3.0, "onnx": 2.0, "torch-bf16": 1.0, "onnx-int8": 1.5}
    floors, encoded = _floors(tmp_path, monkeypatch, used, seconds)
    # every execution on a sample of 2 pieces, then the fastest and the import's own on all 3
    assert encoded == [(e, 2) for e in OFFERED] + [("torch-bf16", 3), ("onnx-int8", 3)]
    assert floors["floor_execution"] == "torch-bf16" and floors["floor_seconds"] == 3.0
    assert floors["execution"] == "onnx-int8" and floors["floor_timings"] == {"torch-bf16": 3.0, "onnx-int8": 4.5}
    assert floors["floor_sample_seconds"] == {e: 2 * s for e, s in seconds.items()}


def test_the_imports_own_execution_is_the_floor_where_it_is_the_fastest(tmp_path, monkeypatch):
    used = resolve_model(DEFAULT_MODEL, "torch-bf16")   # set by hand: the floor still tries every execution
    floors, encoded = _floors(tmp_path, monkeypatch, used, {"torch": 3.0, "onnx": 2.0, "torch-bf16": 0.5,
                                                            "onnx-int8": 1.0})
    assert encoded[-1] == ("torch-bf16", 3) and len(encoded) == 5
    assert floors["floor_execution"] == "torch-bf16" and floors["floor_timings"] == {"torch-bf16": 1.5}


def test_on_a_gpu_the_floor_is_torch(tmp_path, monkeypatch):
    floors, encoded = _floors(tmp_path, monkeypatch, resolve_model(DEFAULT_MODEL, "torch"), {"torch": 3.0},
                              gpu=True)
    assert encoded == [("torch", 3)] and floors["floor_timings"] == {"torch": 9.0}
