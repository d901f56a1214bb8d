"""An import whose vLLM engine fails under it (the real engine's CPU build, the tiny model): an
engine process killed while it holds a batch, and answers cut short by `max_tokens`. Nothing is
lost: Ray starts the engine's actor again and sends its batch again, and a cut answer is read as
far as it goes, what it left out recorded with the cause."""

from __future__ import annotations

import os
import signal
import threading
import time

import psutil
import pytest

from jobs.extract_llm import vllm_pass
from jobs.import_corpus import import_options, run_import
from tests.support.memory import rows

pytestmark = pytest.mark.integration

# An engine-core process has a few threads while it starts and loads the model, and over a dozen
# once it runs the model (its torch threads start with its first forward pass).
_RUNNING_THREADS = 12


class EngineKiller:
    """SIGKILLs the first vLLM engine-core process seen running the model; records every
    engine-core process seen."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
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
        while not self._done.wait(0.1):
            for proc in psutil.process_iter(["name", "cmdline", "num_threads"]):
                if "EngineCore" not in (proc.info["name"] or "") + " ".join(proc.info["cmdline"] or ()):
                    continue
                self.seen.add(proc.pid)
                if self.killed is None and (proc.info["num_threads"] or 0) >= _RUNNING_THREADS:
                    os.kill(proc.pid, signal.SIGKILL)
                    self.killed = proc.pid


def test_an_engine_killed_mid_batch_and_answers_cut_short_lose_nothing(memory, ray_local, tmp_path, tiny_model):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for day in range(1, 17):
        (corpus / f"2026-03-{day:02d}-note.md").write_text(
            f"# Stand-up {day}\n\nRavi leads the billing migration.\n\nDana Kim works on invoice batch {day}.\n")
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": str(tiny_model), "llm_device": "cpu",
                                         "retry_attempts": 2, "retry_backoff_s": 0.05})
    options = import_options(settings, (str(corpus),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    # 16 tokens: the least an answer may have, too few for any but the shortest
    llm = vllm_pass(str(tiny_model), "cpu", max_tokens=16)

    with EngineKiller() as engines:
        report = run_import(options, settings, llm=llm)

    # the Selection engine was killed, and a new one (then Claimify's) did the work
    assert engines.killed is not None and len(engines.seen) >= 3, engines.seen
    assert report.status == "succeeded" and report.counts["new_versions"] == 16, report.render()
    assert report.counts["failed"] == 0
    assert rows(memory, "SELECT count(*) FROM stage_work WHERE status <> 'succeeded'") == [(0,)]
    # every chunk was read by the engine and extracted, each answer paid once
    chunks = rows(memory, "SELECT count(*) FROM chunks")[0][0]
    assert chunks == 16 and rows(memory, "SELECT DISTINCT extracted_by FROM chunks") == [(llm.extractor,)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'extract_claims'") == [("succeeded",)]
    assert rows(memory, "SELECT sum(calls) FROM cost_ledger WHERE stage = 'extract_claims'") == [(2 * chunks,)]
    # the answers cut short are recorded with their cause
    reasons = [reason for (reason,) in rows(memory, "SELECT reason FROM extraction_ledger")]
    assert any("truncated output" in (reason or "") for reason in reasons), reasons
    assert rows(memory, "SELECT count(DISTINCT chunk_id) FROM extraction_ledger")[0][0] + rows(
        memory, "SELECT count(DISTINCT chunk_id) FROM claims")[0][0] >= chunks
