"""The rows the `vllm` processors take and give when the extraction runs as stages of the import:
carriers of report rows, and rows the engine failed on. Unit tests: no Ray, no vLLM."""

from __future__ import annotations

import json

from actors import vllm_extractor as vx

_REPORTS = json.dumps([{"item": "a.md", "outcome": "process"}])


def test_a_carrier_asks_for_one_token_and_keeps_its_report_rows_through_both_processors():
    carrier = {"ctx_json": None, "reports_json": _REPORTS}
    for preprocess in (vx.selection_preprocess, vx.claimify_preprocess):
        request = preprocess(carrier, max_tokens=2048, temperature=0.0)
        assert request["sampling_params"] == {"temperature": 0.0, "max_tokens": 1}
        assert "structured_outputs" not in request["sampling_params"]
    answered = {**carrier, "generated_text": "The", "num_input_tokens": 8, "num_generated_tokens": 1}
    selected = vx.selection_postprocess(answered)
    assert selected["reports_json"] == _REPORTS and selected["selection_json"] is None
    claimified = vx.claimify_postprocess({**selected, "generated_text": "The"})
    assert claimified["reports_json"] == _REPORTS and claimified["claimify_json"] is None
    assert vx.is_carrier(claimified) and vx.inference_error(claimified) is None


def test_a_row_selection_failed_on_reaches_claimify_untouched_with_its_error():
    failed = {"ctx_json": '{"version_id": "v"}', "reports_json": None,
              "__inference_error__": "RuntimeError: engine died\n  (worker 3)"}
    assert vx.claimify_preprocess(failed, max_tokens=2048, temperature=0.0) == {}
    assert vx.inference_error(failed) == "inference error: RuntimeError: engine died (worker 3)"
    assert vx.inference_error({**failed, "__inference_error__": ""}) is None
