"""Answers vLLM's real engine cuts short (its CPU build, the tiny model): with `max_tokens` too
small for any whole answer, every answer is read as far as it goes, what it left out is recorded
with the cause, and the import lands every chunk, each paid once.

(An engine process killed while its actor holds a batch is not tested here: vLLM 0.29's client
then marks the engine dead and stops, but the requests already sent get no error, and the actor,
still alive, keeps waiting on them. See docs/claims.md.)"""

from __future__ import annotations

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
