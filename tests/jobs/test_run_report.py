"""The run report names the execution the embedding model ran with and, where `auto` calibrated
it, the timings it was chosen by."""

from __future__ import annotations

from dataclasses import replace

from actors.calibration import CLAIMS_PER_CHUNK, Calibration
from actors.embedder import DEFAULT_MODEL, resolve_model
from jobs.run_report import RunReport


def test_the_report_shows_the_execution_and_the_calibration_it_was_chosen_by():
    timed = Calibration({"threads": 2}, {"torch": {"chunks": 0.4, "claims": 0.3},
                                         "torch-bf16": {"chunks": 0.16, "claims": 0.24}},
                        {"chunks": 8, "claims": 24}, "2026-01-01T00:00:00+00:00", cached=True, load=[1.5, 2])
    model = replace(resolve_model(DEFAULT_MODEL, "torch-bf16"), calibration=timed)
    report = RunReport("r1", embedding=model.summary())
    shown = report.render()
    assert f"embedding        torch-bf16 (vectors pinned as {DEFAULT_MODEL}@torch-bf16)" in shown
    per_chunk = {e: 1000 * (s["chunks"] / 8 + CLAIMS_PER_CHUNK * s["claims"] / 24) for e, s in timed.seconds.items()}
    assert (f"ms per chunk and its {CLAIMS_PER_CHUNK} claims on 2 threads: torch {per_chunk['torch']:.1f}, "
            f"torch-bf16 {per_chunk['torch-bf16']:.1f} (kept from 2026-01-01T00:00:00+00:00, load average 1.5 on 2 "
            "CPUs)") in shown
    assert report.as_dict()["embedding"]["calibration"]["seconds_per_chunk"]["torch-bf16"] == \
        round(per_chunk["torch-bf16"] / 1000, 5)


def test_an_execution_set_by_hand_or_by_the_pin_is_shown_without_timings():
    report = RunReport("r1", embedding=resolve_model(DEFAULT_MODEL, "onnx").summary())
    shown = report.render()
    assert f"embedding        onnx (vectors pinned as {DEFAULT_MODEL})" in shown
    assert "calibration" not in shown and report.as_dict()["embedding"]["calibration"] is None
