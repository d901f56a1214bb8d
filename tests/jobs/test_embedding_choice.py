"""Where the entry points take the embedding execution from: a new memory, and a `reembed` without
`--execution`, run as this machine's calibration chooses; an execution set by hand is not
calibrated."""

from __future__ import annotations

import os

from actors import calibration
from actors.calibration import Calibration
from actors.embedder import DEFAULT_MODEL
from jobs import reembed, runtime
from jobs.settings import load_settings

BF16_FASTEST = Calibration({"threads": 2}, {"torch": {"chunks": 4.0, "claims": 4.0}, "onnx": {"chunks": 3.0, "claims": 3.0},
                                            "torch-bf16": {"chunks": 1.0, "claims": 1.0},
                                            "onnx-int8": {"chunks": 0.9, "claims": 0.9}},
                           {"chunks": 8, "claims": 24}, "2026-01-01T00:00:00+00:00")


def test_a_new_memory_and_a_reembed_run_as_the_calibration_chooses(monkeypatch, tmp_path):
    asked = []

    def calibrate(model, **sizes):
        asked.append((model.name, model.cache, sizes))
        return BF16_FASTEST

    monkeypatch.setattr(calibration, "calibrate", calibrate)
    settings = load_settings({}, model_cache=str(tmp_path), chunk_target_chars=600)
    made = runtime.embedding_model(settings, None)
    assert made.execution == "torch-bf16" and made.pin == f"{DEFAULT_MODEL}@torch-bf16"
    assert made.calibration is BF16_FASTEST and made.summary()["calibration"]["seconds_per_chunk"]
    # one embedder of all the CPUs, the settings' CPU batch and chunk length
    assert asked == [(DEFAULT_MODEL, str(tmp_path), {"threads": os.cpu_count(), "batch_size": 32,
                                                      "chunk_chars": 600})]
    moved = reembed.target_model(settings, f"{DEFAULT_MODEL}@onnx-int8",
                                 reembed.ReembedOptions(model=DEFAULT_MODEL), gpu=False)
    assert moved.execution == "torch-bf16" and len(asked) == 2

    by_hand = runtime.embedding_model(settings.model_copy(update={"embedding_execution": "onnx"}), None)
    assert by_hand.execution == "onnx" and by_hand.calibration is None and len(asked) == 2
    assert runtime.embedding_model(settings, None, gpu=True).execution == "torch" and len(asked) == 2
