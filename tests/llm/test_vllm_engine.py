"""The `vllm` extraction against vLLM's real engine: its CPU build loads a tiny model built here
(`tiny_model.py`: random weights, a tokenizer trained on the example corpus) through
`ray.data.llm`, as stages of an import on this machine's CPUs (CORPUSMEM_LLM_DEVICE=cpu).

Structured output holds every answer to its schema whatever the weights say, so what the project
does with a real engine runs here: the processors' requests, the engine's processes, the answers
parsed, the gate, the writes, the extraction ledger and the cost ledger with the engine's own
token counts. What random weights write is no claim the source supports: the gate records it
omitted, with its cause, and the import still ends.
"""

from __future__ import annotations

import time

import pytest

from jobs.extract_llm import vllm_pass
from jobs.import_corpus import import_options, run_import
from tests.llm.engines import EngineWatch
from tests.support.memory import rows

pytestmark = pytest.mark.integration

_NOTES = {"2026-03-01-billing.md": "# Billing migration notes\n\nRavi leads the billing migration.\n\n"
                                   "Dana Kim works on the invoice system.\n",
          "2026-03-02-search.md": "# Search team notes\n\nPriya leads the search team.\n"}


def test_an_import_extracts_with_the_real_vllm_engine_on_cpus(memory, ray_local, tmp_path, tiny_model):
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for name, text in _NOTES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": str(tiny_model), "llm_device": "cpu",
                                         "retry_attempts": 2, "retry_backoff_s": 0.05})
    options = import_options(settings, (str(corpus),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    llm = vllm_pass(str(tiny_model), "cpu", max_tokens=256)

    started = time.monotonic()
    with EngineWatch() as engines:
        report = run_import(options, settings, llm=llm)
    print(f"import with the CPU engine: {time.monotonic() - started:.1f} s")

    assert engines.seen, "no vLLM engine process ran"
    assert report.status == "succeeded" and report.counts["failed"] == 0
    assert report.counts["new_versions"] == 2
    # every chunk went through both processors and is extracted: its claims landed, or what it
    # said is recorded as omitted with a cause
    chunks = rows(memory, "SELECT count(*) FROM chunks")[0][0]
    assert chunks >= 2 and rows(memory, "SELECT DISTINCT extracted_by FROM chunks") == [(llm.extractor,)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'extract_claims'") == [("succeeded",)]
    landed, recorded = rows(memory, "SELECT (SELECT count(*) FROM claims), (SELECT count(*) FROM extraction_ledger)")[0]
    assert landed + recorded > 0
    print(f"claims landed {landed}, ledger rows {recorded}:",
          rows(memory, "SELECT decision, reason, count(*) FROM extraction_ledger GROUP BY 1, 2 ORDER BY 1, 2"))
    # the engine's own token counts, two calls a chunk
    calls, tokens_in, tokens_out, model = rows(
        memory, "SELECT sum(calls), sum(tokens_in), sum(tokens_out), min(model) FROM cost_ledger"
                " WHERE stage = 'extract_claims' AND backend = 'vllm'")[0]
    assert calls == 2 * chunks and tokens_in > 100 * chunks and 0 < tokens_out <= 2 * 256 * chunks
    assert model == "tiny-llama"
    print(f"tokens: {tokens_in} in, {tokens_out} out, over {calls} calls")


def test_the_facts_phase_normalizes_with_the_real_vllm_engine_on_cpus(memory, ray_local, tmp_path, tiny_model):
    """The `vllm` normalizer (`jobs/normalize_llm.py`) over claims the rules extractor found, on the
    real engine: every claim is read, answered (an answer random weights leave unreadable is read
    by the rules normalizer, as any malformed answer is) and marked normalized by the vllm
    normalizer, and the cost ledger holds the engine's own token counts a call."""
    from actors.retries import RetryPolicy
    from actors.vllm_extractor import VLLMExtractorConfig
    from actors.vllm_normalizer import normalizer_version
    from jobs import normalize_llm
    from sql.write import assertions as assertions_sql
    from sql.store import authority as store

    corpus = tmp_path / "notes"
    corpus.mkdir()
    for name, text in _NOTES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    options = import_options(memory, (str(corpus),), source={"modified_at_from": "path"}, progress=False)
    assert run_import(options, memory).status == "succeeded"
    claims = rows(memory, "SELECT count(*) FROM claims WHERE is_current_testimony")[0][0]
    assert claims > 0
    # the rules extractor's claims, not yet normalized: what an import with the vllm extractor
    # hands the facts phase
    rows(memory, "UPDATE claim_normalizations SET normalized_by = NULL RETURNING 1")
    with store.connect(memory.dsn) as conn:
        versions = assertions_sql.versions_to_normalize(conn)
    assert len(versions) == 2

    started = time.monotonic()
    with EngineWatch() as engines:
        got = normalize_llm.run(memory.dsn, versions, str(tiny_model), RetryPolicy(attempts=2, backoff_s=0.05),
                                device="cpu", max_tokens=256)
    print(f"normalize with the CPU engine: {time.monotonic() - started:.1f} s, {got}")

    assert engines.seen, "no vLLM engine process ran"
    assert got["claims"] == claims and got["dead_letter"] == 0 and got["assertions"] > 0
    version = normalizer_version(VLLMExtractorConfig(model_path=str(tiny_model), device="cpu", max_tokens=256))
    assert rows(memory, "SELECT DISTINCT normalized_by FROM claim_normalizations JOIN claims USING (claim_id)"
                       " WHERE is_current_testimony") == [(version,)]
    calls, tokens_in, tokens_out = rows(
        memory, "SELECT sum(calls), sum(tokens_in), sum(tokens_out) FROM cost_ledger"
                " WHERE stage = 'normalize_relations' AND backend = 'vllm'")[0]
    assert calls == len(versions) and tokens_in > 100 * calls and 0 < tokens_out <= 256 * calls
    print(f"normalize tokens: {tokens_in} in, {tokens_out} out, over {calls} calls")
