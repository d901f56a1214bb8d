"""`CORPUSMEM_EMBEDDING_EXECUTION=auto` on a CPU: the rule that chooses from a calibration's timings
(int8 and bfloat16 only by their margins, a memory's pin first), and the calibration kept per
machine, measured again when what it depends on changes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from actors import calibration
from actors.calibration import BF16_MARGIN, INT8_MARGIN, Calibration, choose
from actors.embedder import DEFAULT_MODEL, ModelRef, choose_execution, resolve_model


def test_the_fastest_fp32_execution_is_chosen_when_nothing_else_wins_by_its_margin():
    assert choose({"torch": 10.0, "onnx": 8.0}) == "onnx"
    assert choose({"torch": 7.0, "onnx": 8.0, "torch-bf16": 7.0 / BF16_MARGIN * 1.01}) == "torch"
    assert choose({"torch": 7.0, "onnx": 8.0, "torch-bf16": 7.0 / BF16_MARGIN * 0.99}) == "torch-bf16"


def test_int8_is_chosen_only_where_it_beats_every_other_execution_by_its_margin():
    assert choose({"torch": 10.0, "onnx": 9.0, "onnx-int8": 9.0 / INT8_MARGIN * 1.01}) == "onnx"
    assert choose({"torch": 10.0, "onnx": 9.0, "onnx-int8": 9.0 / INT8_MARGIN * 0.99}) == "onnx-int8"
    # measured against bfloat16 too, even where bfloat16 itself missed its margin over fp32
    near = {"torch": 10.0, "onnx": 12.0, "torch-bf16": 9.5, "onnx-int8": 9.5 / INT8_MARGIN * 1.01}
    assert choose(near) == "torch"
    assert choose({**near, "onnx-int8": 9.5 / INT8_MARGIN * 0.99}) == "onnx-int8"


def test_a_memory_of_torchs_vectors_gets_the_faster_of_the_two_that_make_them():
    seconds = {"torch": 10.0, "onnx": 12.0, "torch-bf16": 3.0, "onnx-int8": 1.0}
    assert choose(seconds, same_vectors_as_torch=True) == "torch"
    assert choose({"torch": 10.0}, same_vectors_as_torch=True) == "torch"


def _timed(seconds: dict[str, float]) -> Calibration:
    return Calibration({"threads": 2}, {e: {"chunks": s, "claims": 0.0} for e, s in seconds.items()},
                       {"chunks": 1, "claims": 1}, "2026-01-01T00:00:00+00:00")


def test_auto_follows_the_pin_then_the_calibration():
    path = resolve_model(DEFAULT_MODEL).path
    fast_int8 = _timed({"torch": 10.0, "onnx": 9.0, "torch-bf16": 5.0, "onnx-int8": 1.0})
    asked = []

    def calibrate():
        asked.append(1)
        return fast_int8

    assert choose_execution("auto", pinned=None, gpu=False, model_path=path, calibrate=calibrate) == "onnx-int8"
    assert choose_execution("auto", pinned=DEFAULT_MODEL, gpu=False, model_path=path, calibrate=calibrate) == "onnx"
    assert len(asked) == 2
    # a pin that names its execution, a GPU, or an execution set by hand: no calibration asked
    for pinned in (f"{DEFAULT_MODEL}@torch-bf16", f"{DEFAULT_MODEL}@onnx-int8"):
        assert choose_execution("auto", pinned=pinned, gpu=False, model_path=path,
                                calibrate=calibrate) == pinned.split("@")[1]
        assert choose_execution("auto", pinned=pinned, gpu=True, model_path=path, calibrate=calibrate) == \
            pinned.split("@")[1]
    assert choose_execution("auto", pinned=None, gpu=True, model_path=path, calibrate=calibrate) == "torch"
    assert choose_execution("torch", pinned=None, gpu=False, model_path=path, calibrate=calibrate) == "torch"
    assert len(asked) == 2
    # a reader embedding a question without a calibration: torch's vectors, by ONNX Runtime
    assert choose_execution("auto", pinned=DEFAULT_MODEL, gpu=False, model_path=path) == "onnx"


def test_the_pin_names_an_execution_that_changes_the_vectors():
    assert resolve_model(DEFAULT_MODEL, "torch-bf16").pin == f"{DEFAULT_MODEL}@torch-bf16"
    assert resolve_model(DEFAULT_MODEL, "onnx").pin == DEFAULT_MODEL


def test_the_seconds_per_chunk_weigh_claims_as_an_import_does():
    timed = Calibration({"threads": 2}, {"torch": {"chunks": 0.8, "claims": 1.2}}, {"chunks": 8, "claims": 24},
                        "2026-01-01T00:00:00+00:00")
    assert timed.per_chunk() == {"torch": pytest.approx(0.1 + calibration.CLAIMS_PER_CHUNK * 0.05)}


@pytest.fixture
def counted(monkeypatch) -> list[dict]:
    """The calibration's child replaced by one that writes made-up timings; the requests it got."""
    requests = []

    def measure(model: ModelRef, key: dict, path: Path) -> None:
        requests.append(key)
        path.write_text(json.dumps({"key": key, "seconds": {"torch": {"chunks": 1.0, "claims": 1.0}},
                                    "texts": {"chunks": 8, "claims": 24}, "measured_at": "now"}))

    monkeypatch.setattr(calibration, "_measure_in_child", measure)
    return requests


def test_a_calibration_is_kept_and_read_again_until_what_it_depends_on_changes(tmp_path, counted, monkeypatch):
    model = resolve_model(DEFAULT_MODEL, cache=str(tmp_path))
    first = calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800)
    again = calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800)
    assert not first.cached and again.cached and len(counted) == 1
    assert again.seconds == first.seconds and again.key == first.key
    assert len(list(tmp_path.glob("calibration-*.json"))) == 1

    calibration.calibrate(model, threads=1, batch_size=32, chunk_chars=800)   # other threads
    assert len(counted) == 2 and counted[-1]["threads"] == 1
    calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=400)   # other chunks
    assert len(counted) == 3
    real = calibration._version
    monkeypatch.setattr(calibration, "_version", lambda name: "9.9" if name == "onnxruntime" else real(name))
    calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800)   # another ONNX Runtime
    assert len(counted) == 4 and counted[-1]["libraries"]["onnxruntime"] == "9.9"
    monkeypatch.setattr(calibration, "_cpu_name", lambda: "another CPU")
    calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800)
    assert len(counted) == 5


def test_a_damaged_calibration_file_is_measured_again(tmp_path, counted):
    model = resolve_model(DEFAULT_MODEL, cache=str(tmp_path))
    calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800)
    [kept] = tmp_path.glob("calibration-*.json")
    kept.write_text('{"key": ')   # a write cut short
    assert not calibration.calibrate(model, threads=2, batch_size=32, chunk_chars=800).cached
    assert len(counted) == 2 and json.loads(kept.read_text())["seconds"]


def test_a_calibration_that_fails_names_the_setting_that_skips_it(tmp_path):
    folder = tmp_path / "broken-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")   # a model folder whose weights cannot be loaded
    model = resolve_model(str(folder), cache=str(tmp_path / "cache"))
    with pytest.raises(calibration.CalibrationFailed, match="CORPUSMEM_EMBEDDING_EXECUTION"):
        calibration.calibrate(model, threads=1, batch_size=32, chunk_chars=800)
    assert not list((tmp_path / "cache").glob("calibration-*.json"))


def test_the_calibration_times_groups_of_one_token_count_of_the_runs_lengths():
    """An import's embedder call holds many texts of each token count; bfloat16 batches only those,
    so the texts timed come in groups of one count, as long as the run's chunks and claims."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(DEFAULT_MODEL).path)

    def count(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, truncation=True, max_length=256)["input_ids"]]

    chunks, claims = calibration.texts(800, count)
    assert (chunks, claims) == calibration.texts(800, count)
    for texts, group, chars in ((chunks, calibration.CHUNK_GROUP, (480, 800)),
                                (claims, calibration.CLAIM_GROUP, calibration.CLAIM_CHARS)):
        counts = Counter(count(texts))
        assert list(counts.values()) == [group] * calibration.GROUPS
        assert all(chars[0] - 30 <= len(t) <= chars[1] for t in texts)
    shorter, _ = calibration.texts(400, count)
    assert max(map(len, shorter)) <= 400 < min(map(len, chunks))


def test_the_margins_the_docs_state_are_the_codes():
    root = Path(__file__).resolve().parents[2]
    for page in ("docs/performance.md", "docs/settings.md"):
        text = (root / page).read_text()
        assert f"{INT8_MARGIN:g}× faster than every other" in text, page
        assert f"{BF16_MARGIN:g}× faster than fp32" in text, page


def test_a_machines_first_import_calibrates_ahead_while_ray_starts_and_a_kept_one_is_not_started(
        tmp_path, counted, monkeypatch):
    import threading

    from jobs import runtime
    from jobs.settings import load_settings

    settings = load_settings({"CORPUSMEM_EMBEDDING_EXECUTION": "auto", "CORPUSMEM_MODEL_CACHE": str(tmp_path)},
                             home=tmp_path / "home")
    gate = threading.Event()
    measure = calibration._measure_in_child
    monkeypatch.setattr(calibration, "_measure_in_child", lambda *a: (gate.wait(10), measure(*a)))
    ahead = runtime.CalibrationAhead.start(settings)
    assert ahead is not None and counted == []           # measuring, in a thread of its own
    gate.set()
    made = runtime.embedding_model(settings, None, ahead=ahead).calibration
    assert made is ahead.result() and not made.cached and len(counted) == 1
    # kept now: nothing is started again, and an execution set by hand never calibrates
    assert runtime.CalibrationAhead.start(settings) is None
    assert runtime.CalibrationAhead.start(load_settings({"CORPUSMEM_EMBEDDING_EXECUTION": "onnx",
                                                         "CORPUSMEM_MODEL_CACHE": str(tmp_path / "other")},
                                                        home=tmp_path / "home")) is None


def test_a_calibration_ahead_that_fails_fails_where_its_result_is_needed(tmp_path, monkeypatch):
    from jobs import runtime
    from jobs.settings import load_settings

    def fail(*args):
        raise calibration.CalibrationFailed("the child died")

    monkeypatch.setattr(calibration, "_measure_in_child", fail)
    settings = load_settings({"CORPUSMEM_EMBEDDING_EXECUTION": "auto", "CORPUSMEM_MODEL_CACHE": str(tmp_path)},
                             home=tmp_path / "home")
    ahead = runtime.CalibrationAhead.start(settings)
    with pytest.raises(calibration.CalibrationFailed, match="the child died"):
        runtime.embedding_model(settings, None, ahead=ahead)


def test_the_calibration_child_starts_while_another_thread_changes_the_environment(tmp_path):
    """The calibration runs ahead in a thread while `init_ray` sets Ray's variables: each child
    still starts (and fails here on a model that is not there), never an OSError from its exec."""
    import os
    import threading

    model = ModelRef("missing", str(tmp_path / "missing"), cache=str(tmp_path / "cache"))
    done = threading.Event()
    names = [f"CORPUSMEM_TEST_VARIABLE_{i}" for i in range(200)]

    def change_the_environment():
        # Variables set and unset in the process's environment (not in `os.environ`'s mapping, which
        # stays as it was): each new one may move the environment's array, as `init_ray`'s do.
        while not done.is_set():
            for name in names:
                os.putenv(name, "x")
            for name in names:
                os.unsetenv(name)

    changer = threading.Thread(target=change_the_environment)
    changer.start()
    try:
        for _ in range(6):
            with pytest.raises(calibration.CalibrationFailed):
                calibration._measure_in_child(model, {}, tmp_path / "out.json")
    finally:
        done.set()
        changer.join()
