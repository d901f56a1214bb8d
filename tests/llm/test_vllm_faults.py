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

import time

import pytest

from jobs.extract_llm import vllm_pass
from jobs.import_corpus import import_options, run_import
from tests.llm.engines import EngineKiller
from tests.support.memory import rows

pytestmark = pytest.mark.integration


def _import_with_the_engine(memory, folder, tiny_model, notes: dict[str, str], max_tokens: int):
    """(options, settings, pass) of an import of `notes` (name → text, dated by their names) by
    the `vllm` extractor on the tiny model, on CPUs."""
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text)
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": str(tiny_model), "llm_device": "cpu"})
    options = import_options(settings, (str(folder),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    return options, settings, vllm_pass(str(tiny_model), "cpu", max_tokens=max_tokens)


def test_answers_cut_short_by_max_tokens_lose_no_chunk(memory, ray_local, tmp_path, tiny_model):
    notes = {f"2026-03-{day:02d}-note.md": f"# Stand-up {day}\n\nRavi leads the billing migration.\n\n"
                                          f"Dana Kim works on invoice batch {day}.\n" for day in range(1, 5)}
    # 16 tokens: the least an answer may have, and too few for a whole one of either step
    options, settings, llm = _import_with_the_engine(memory, tmp_path / "notes", tiny_model, notes, max_tokens=16)

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


@pytest.mark.parametrize("when,busy_s", [("while it starts", 0.0), ("while it generates", 1.5)])
def test_an_engine_killed_is_started_again_and_its_batch_lands(memory, ray_local, tmp_path, tiny_model, when, busy_s):
    notes = {f"2026-04-{day:02d}-note.md": f"# Review {day}\n\nMarta Silva owns the ledger export {day}.\n\n"
                                          f"Ravi reviews the invoice batch {day}.\n" for day in range(1, 9)}
    # 512 tokens: batches long enough to be killed in
    options, settings, llm = _import_with_the_engine(memory, tmp_path / "notes", tiny_model, notes, max_tokens=512)

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
