"""Faults of vLLM's real engine (its CPU build, the tiny model):
- answers it cuts short: with `max_tokens` too small for any whole answer, every answer is read as
  far as it goes, what it left out is recorded with the cause, and the import lands every chunk,
  each paid once;
- its engine process killed while it generates a batch: the engine's worker either ends with it,
  or (vLLM 0.29's client marks the engine dead but never fails the requests already sent) waits
  on it for ever, until the engine watch (`actors/engine_watch.py`) ends it; either way Ray starts
  the actor again and sends the batch again, and the import lands every chunk;
- its engine process killed while it starts: the actor's start fails ("Engine core
  initialization failed"), and a fresh actor replaces it (`runtime.ACTOR_START_DEATHS`)."""

from __future__ import annotations

import threading
import time

import psutil
import pytest

from jobs.extract_llm import vllm_pass
from jobs.import_corpus import import_options, run_import
from tests.support.memory import rows

pytestmark = pytest.mark.integration


def test_answers_cut_short_by_max_tokens_lose_no_chunk(memory, ray_local, tmp_path, tiny_model):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for day in range(1, 5):
        (corpus / f"2026-03-{day:02d}-note.md").write_text(
            f"# Stand-up {day}\n\nRavi leads the billing migration.\n\nDana Kim works on invoice batch {day}.\n")
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": str(tiny_model), "llm_device": "cpu"})
    options = import_options(settings, (str(corpus),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    # 16 tokens: the least an answer may have, and too few for a whole one of either step
    llm = vllm_pass(str(tiny_model), "cpu", max_tokens=16)

    report = run_import(options, settings, llm=llm)

    assert report.status == "succeeded" and report.counts["new_versions"] == 4, report.render()
    assert report.counts["failed"] == 0
    assert rows(memory, "SELECT count(*) FROM stage_work WHERE status <> 'succeeded'") == [(0,)]
    chunks = rows(memory, "SELECT count(*) FROM chunks")[0][0]
    assert chunks == 4 and rows(memory, "SELECT DISTINCT extracted_by FROM chunks") == [(llm.extractor,)]
    assert rows(memory, "SELECT sum(calls), max(tokens_out) FROM cost_ledger WHERE stage = 'extract_claims'") == [
        (2 * chunks, 16)]
    # every chunk's statements are accounted for: what the cut answers left out is in the ledger
    # with its cause
    reasons = rows(memory, "SELECT DISTINCT chunk_id, reason FROM extraction_ledger")
    assert len({chunk for chunk, _ in reasons}) == chunks, reasons
    assert all("truncated output" in (reason or "") for _, reason in reasons), reasons


class EngineKiller:
    """Kills the first vLLM engine process once it has been busy for `busy_s` on end after it sat
    idle for 2 s. Measured here, an engine's start is one busy second (its imports), about 8 s
    idle (waiting for its client), then under a second of profiling and warm-up; generating a
    batch keeps it busy for seconds. So `busy_s` 0 kills it while it starts, 1.5 while it
    generates."""

    LOOK_S, IDLE_S = 0.3, 2.0

    def __init__(self, busy_s: float) -> None:
        self.busy_s = busy_s
        self.killed: int | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> "EngineKiller":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        engine, last, idle_for, busy_for = None, 0.0, 0.0, 0.0
        while self.killed is None and not self._done.wait(self.LOOK_S):
            try:
                if engine is None:
                    engine = next((p for p in psutil.process_iter(["cmdline"])
                                   if "VLLM::EngineCore" in " ".join(p.info["cmdline"] or ())), None)
                    last, idle_for, busy_for = (sum(engine.cpu_times()[:2]) if engine else 0.0), 0.0, 0.0
                    continue
                used = sum(engine.cpu_times()[:2])
                busy, last = used - last > self.LOOK_S / 2, used   # over half a core since the last look
                if not busy:
                    idle_for, busy_for = idle_for + self.LOOK_S, 0.0
                elif idle_for >= self.IDLE_S:
                    busy_for += self.LOOK_S
                    if busy_for >= self.busy_s:
                        engine.kill()
                        self.killed = engine.pid
            except psutil.Error:
                engine = None   # it ended on its own (a restart): watch the next one


@pytest.mark.parametrize("when,busy_s", [("while it starts", 0.0), ("while it generates", 1.5)])
def test_an_engine_killed_is_started_again_and_its_batch_lands(memory, ray_local, tmp_path, tiny_model, when, busy_s):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for day in range(1, 9):
        (corpus / f"2026-04-{day:02d}-note.md").write_text(
            f"# Review {day}\n\nMarta Silva owns the ledger export {day}.\n\nRavi reviews the invoice batch {day}.\n")
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": str(tiny_model), "llm_device": "cpu"})
    options = import_options(settings, (str(corpus),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    llm = vllm_pass(str(tiny_model), "cpu", max_tokens=512)   # batches long enough to be killed in

    started = time.monotonic()
    with EngineKiller(busy_s) as killer:
        report = run_import(options, settings, llm=llm)
    print(f"import with an engine killed {when}: {time.monotonic() - started:.1f} s; "
          f"ended by the watch: {report.engines_ended}")

    assert killer.killed, f"no engine was seen {when}"
    assert report.status == "succeeded" and report.counts["failed"] == 0, report.render()
    # Either the engine took its worker with it, or the worker waited on it and the watch ended it
    # (once, and said so); both ways Ray started the actor again and sent its batch again.
    assert len(report.engines_ended) <= 1, report.engines_ended
    assert ("1 ended under the run" in report.render()) == bool(report.engines_ended)
    assert rows(memory, "SELECT count(*) FROM stage_work WHERE status <> 'succeeded'") == [(0,)]
    assert rows(memory, "SELECT count(*), count(*) FILTER (WHERE extracted_by = %s) FROM chunks",
                llm.extractor) == [(8, 8)]
