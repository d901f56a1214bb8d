"""The `vllm` extraction end to end, with a stand-in engine in place of vLLM: as stages of the
import, and as the pass after the pipeline (which also retries what the stages left).

The stand-in runs the real pre- and post-processing of `actors/vllm_extractor.py`; where vLLM
would generate, it answers in the schema's format with what the `rules` backend decides. So the
whole pass (contexts from the authority, prompts, parsing, the gate, claim vectors, the ledger,
the cost ledger, stage statuses) runs here; only the model is not real.
"""

from __future__ import annotations

import functools
import json
import sys

import pytest
import ray.cloudpickle

from actors import vllm_extractor as vx
from actors import vllm_normalizer as vn
from actors.extractor import ExtractorConfig, RulesExtractor
from jobs.extract_llm import LlmPass
from jobs.import_corpus import ImportOptions, import_options, run_import
from pipeline.claims import llm_io
from pipeline.facts import normalize, normalize_llm
from tests.support.memory import rows

pytestmark = pytest.mark.integration

_RULES = RulesExtractor()
# Ray workers cannot import this test module: ship the stand-in engine by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _selection_answer(ctx) -> str:
    [sel], _ = _RULES.select([ctx])
    return json.dumps({"statements": [{"label": s.label, "outcome": s.outcome,
                                       "reason": s.reason if s.outcome != "keep" else None}
                                      for s in sel.statements],
                       "introduced": [{"name": n, "label": l} for n, l in sel.introduced]})


def _day(value) -> str | None:
    return value.date().isoformat() if value else None


def _claimify_answer(ctx, selection) -> str:
    [result], _ = _RULES.claimify([ctx], [selection])
    return json.dumps({
        "drafts": [{"cited": list(d.cited), "claim_text": d.claim_text, "is_attributed": d.is_attributed,
                    "valid_from": _day(d.valid_from), "valid_until": _day(d.valid_until),
                    "precision": d.precision, "kind": d.kind, "resolved_dates": list(d.resolved_dates),
                    "added_context": [{"text": a.text, "origin": a.origin, "label": a.label}
                                      for a in d.added_context],
                    "entailment_self_verdict": "supported"} for d in result.drafts],
        "omitted": [{"label": o.label, "cause": o.cause} for o in result.omitted]})


def _engine(batch, *, step: str, answer_broken: bool = False):
    """One processor as Ray runs it: the real preprocess, an answer, the real postprocess. A row
    that failed before (`__inference_error__`) passes by the engine and the postprocess, as in
    Ray's engine stage; a carrier's one-token answer is not read."""
    preprocess, postprocess = ((vx.selection_preprocess, vx.selection_postprocess) if step == "selection"
                               else (vx.claimify_preprocess, vx.claimify_postprocess))
    out = []
    for row in batch.to_pylist():
        request = preprocess(row, max_tokens=512, temperature=0)
        if vx.inference_error(row):
            out.append(row)
            continue
        if vx.is_carrier(row):
            assert request["sampling_params"]["max_tokens"] == 1
            text = "."
        else:
            assert request["sampling_params"]["structured_outputs"]["json"]  # the schema rides on every request
            ctx = llm_io.ctx_from_json(row["ctx_json"])
            if step == "selection":
                text = _selection_answer(ctx)
            else:
                text = ('{"drafts": [{"cited": ["P1"], "claim' if answer_broken
                        else _claimify_answer(ctx, llm_io.selection_from_json(row["selection_json"])))
        tokens = (300, 40) if step == "selection" else (500, 90)
        out.append(postprocess({**row, **request, "generated_text": text, "num_input_tokens": tokens[0],
                                "num_generated_tokens": tokens[1]}))
    return _table(out)


def _table(rows: list[dict]):
    """Rows of different columns (answered, failed) as one table, the missing ones null."""
    import pyarrow as pa

    names = list(dict.fromkeys(k for row in rows for k in row))
    return pa.Table.from_pylist([{k: row.get(k) for k in names} for row in rows])


def _pass(gpus: int = 0, **kw) -> LlmPass:
    """The stand-in extraction; it holds no GPU, so it runs as stages of the import, unless
    `gpus` asks for more than the cluster has (then as a pass after the pipeline)."""
    return LlmPass(extractor="vllm-1:stand-in:test", model_label="stand-in",
                   select=lambda ds: ds.map_batches(functools.partial(_engine, step="selection"),
                                                    batch_format="pyarrow"),
                   claimify=lambda ds: ds.map_batches(functools.partial(_engine, step="claimify", **kw),
                                                      batch_format="pyarrow"),
                   gpus=gpus)


def _normalize_answer(row) -> str:
    """The normalizer's answer in the schema's format: the relations the rules read in each claim."""
    claims = normalize_llm.claims_from_json(row["claims_json"])
    entries = []
    for i, claim in enumerate(claims):
        relations = [a for a in normalize.normalize_claim(claim, row.get("topic")) if a.kind == "relation"]
        entries += [{"claim": normalize_llm.label(i), "kind": "relation", "subject": a.subject,
                     "predicate": a.predicate, "object": a.object, "negated": a.negated, "change": a.change,
                     "ends": a.ends} for a in relations] or [{"claim": normalize_llm.label(i), "kind": "none"}]
    return json.dumps({"assertions": entries})


def _normalize_engine(batch, *, fail: bool):
    out = []
    for row in batch.to_pylist():
        request = vn.normalize_preprocess(row, max_tokens=512, temperature=0)
        assert request["sampling_params"]["structured_outputs"]["json"]
        if fail:    # as Ray's engine stage leaves a row it failed on: no postprocess, the error set
            out.append({**row, "__inference_error__": "RuntimeError: engine died\n  (worker 3)"})
        else:
            out.append(vn.normalize_postprocess({**row, **request, "generated_text": _normalize_answer(row),
                                                 "num_input_tokens": 200, "num_generated_tokens": 30}))
    import pyarrow as pa

    return pa.Table.from_pylist(out)


class StandInNormalizer:
    """Takes the place of `build_normalize_processor`: each processor it builds is one pass of
    the stand-in engine over its rows, the first `failing` passes failing every row."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.failing = 0
        self.built: list = []     # the configs it was built with
        self.passes = 0

    def build(self, config):
        self.built.append(config)

        def processor(ds):
            self.passes += 1
            return ds.map_batches(functools.partial(_normalize_engine, fail=self.passes <= self.failing),
                                  batch_format="pyarrow")
        return processor


@pytest.fixture
def stand_in_normalizer(monkeypatch, tmp_path) -> StandInNormalizer:
    model = tmp_path / "stand-in-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    stand_in = StandInNormalizer(str(model))
    monkeypatch.setattr(vn, "build_normalize_processor", stand_in.build)
    return stand_in


def _import(memory, path, llm, normalizer: StandInNormalizer):
    settings = memory.model_copy(update={"extractor": "vllm", "llm_model": normalizer.model,
                                         "retry_attempts": 3, "retry_backoff_s": 0.05})
    options = import_options(settings, (str(path),), source={"modified_at_from": "path"}, batch_size=4,
                             progress=False)
    return run_import(options, settings, llm=llm)


@pytest.mark.parametrize("gpus", [0, 1], ids=["as stages of the import", "as a pass after the pipeline"])
def test_the_llm_extraction_lands_the_same_claims_the_rules_would(memory, ray_local, example_corpus, example_memory,
                                                                stand_in_normalizer, gpus):
    report = _import(memory, example_corpus, _pass(gpus=gpus), stand_in_normalizer)

    assert report.counts["failed"] == 0 and report.claims > 50
    # every document's report row reached the driver, through the processors when they are stages
    assert report.counts["documents_seen"] == 11 and report.counts["new_versions"] == 11
    assert (report.stage_seconds["extract"] > 0) == (gpus == 0)
    assert rows(memory, "SELECT claim_text FROM claims WHERE claim_text LIKE '%%agreed on 2026-03-03%%'") == [
        ("Ravi said that Dana and Ravi agreed on 2026-03-03 to move the cutover to June 8.",)]
    assert rows(memory, "SELECT DISTINCT extractor FROM claims") == [("vllm-1:stand-in:test",)]
    # the stand-in answers what the rules decide: the claims are those of the rules' import
    claims = ("SELECT d.source_ref, c.char_start, c.char_end, c.claim_text, c.source_span, c.is_attributed,"
              " c.claim_valid_from, c.claim_valid_precision FROM claims c JOIN documents d USING (doc_id)"
              " ORDER BY 1, 2, 3, 4")
    assert rows(memory, claims) == rows(example_memory, claims)
    assert rows(memory, "SELECT count(*) = count(embedding) FROM claims")[0][0]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage IN"
                        " ('extract_claims', 'ground_claims', 'embed_claim')") == [("succeeded",)]
    assert rows(memory, "SELECT count(*) FROM chunks WHERE extracted_by IS NULL")[0][0] == 0
    # both calls of every chunk reach the cost ledger with their tokens
    calls, tokens_in, tokens_out = rows(memory, "SELECT sum(calls), sum(tokens_in), sum(tokens_out) FROM cost_ledger"
                                                " WHERE stage = 'extract_claims'")[0]
    chunks = rows(memory, "SELECT count(*) FROM chunks")[0][0]
    assert (calls, tokens_in, tokens_out) == (2 * chunks, 800 * chunks, 130 * chunks)


def test_a_broken_answer_is_recorded_and_the_pass_still_finishes(memory, ray_local, tmp_path, stand_in_normalizer):
    corpus = tmp_path / "one"
    corpus.mkdir()
    (corpus / "note.md").write_text("# Note\n\nRavi leads the billing migration.\n")

    _import(memory, corpus, _pass(answer_broken=True), stand_in_normalizer)

    assert rows(memory, "SELECT count(*) FROM claims")[0][0] == 0
    [(decision, reason)] = rows(memory, "SELECT decision, reason FROM extraction_ledger")
    assert decision == "claimify_omitted" and reason
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'extract_claims'") == [("succeeded",)]


def test_the_vllm_extractor_refuses_clearly_before_anything_is_written(memory, ray_local, tmp_path):
    from actors.embedder import ModelNotFound
    from actors.extractor import ExtractorUnavailable

    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nRavi leads billing.\n")
    options = ImportOptions(paths=(str(corpus),), source=memory.source_options(), progress=False,
                            extractor=ExtractorConfig(backend="vllm"))
    with pytest.raises(ModelNotFound, match="CORPUSMEM_LLM_MODEL"):
        run_import(options, memory)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    with_model = ImportOptions(paths=options.paths, source=options.source, progress=False,
                               extractor=ExtractorConfig(backend="vllm", llm_model=str(model)))
    with pytest.raises(ExtractorUnavailable, match="GPU"):
        run_import(with_model, memory)
    assert rows(memory, "SELECT count(*) FROM import_runs")[0][0] == 0


# --- the vllm normalizer in the facts phase ---------------------------------------------------------

_NOTES = {"2026-03-01-billing.md": "# Billing migration notes\n\nRavi leads the billing migration.\n\n"
                                   "Dana Kim works on the invoice system.\n",
          "2026-03-02-search.md": "# Search team notes\n\nPriya leads the search team.\n"}


def _notes(root):
    corpus = root / "notes"
    corpus.mkdir()
    for name, text in _NOTES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


def test_with_extractor_vllm_the_facts_phase_normalizes_with_the_vllm_normalizer(memory, ray_local, tmp_path,
                                                                                 stand_in_normalizer):
    report = _import(memory, _notes(tmp_path), _pass(), stand_in_normalizer)

    [config] = stand_in_normalizer.built
    assert config.model_path == stand_in_normalizer.model and stand_in_normalizer.passes == 1
    version = vn.normalizer_version(config)
    assert version.startswith("vllm-normalize-1:stand-in-model:")
    claims = rows(memory, "SELECT count(*) FROM claims")[0][0]
    assert claims >= 3 and report.facts.claims_normalized == claims
    assert rows(memory, "SELECT DISTINCT normalized_by FROM claim_normalizations") == [(version,)]
    assert rows(memory, "SELECT DISTINCT normalizer FROM assertions") == [(version,)]
    # one call per version (each has fewer than 25 claims), with its tokens in the cost ledger
    assert rows(memory, "SELECT backend, model, sum(calls), sum(tokens_in), sum(tokens_out) FROM cost_ledger"
                        " WHERE stage = 'normalize_relations' GROUP BY 1, 2") == [("vllm", "stand-in-model", 2, 400, 60)]
    assert report.facts.assertions > 0 and rows(memory, "SELECT count(*) > 0 FROM facts") == [(True,)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'normalize_relations'") == [
        ("succeeded",)]


def test_rows_the_engine_fails_on_go_through_it_again_under_the_retry_policy(memory, ray_local, tmp_path,
                                                                               stand_in_normalizer):
    stand_in_normalizer.failing = 2     # every row fails twice, then answers: within 3 attempts
    report = _import(memory, _notes(tmp_path), _pass(), stand_in_normalizer)

    assert stand_in_normalizer.passes == 3 and report.facts.dead_letter == 0
    version = vn.normalizer_version(stand_in_normalizer.built[0])
    assert rows(memory, "SELECT DISTINCT normalized_by FROM claim_normalizations") == [(version,)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'normalize_relations'") == [
        ("succeeded",)]


def test_an_engine_that_fails_every_attempt_dead_letters_the_versions_with_the_reason(memory, ray_local, tmp_path,
                                                                                       stand_in_normalizer):
    stand_in_normalizer.failing = 99
    report = _import(memory, _notes(tmp_path), _pass(), stand_in_normalizer)

    assert stand_in_normalizer.passes == 3 and report.status == "succeeded" and report.facts.dead_letter == 2
    dead = rows(memory, "SELECT status, attempts, last_error FROM stage_work WHERE stage = 'normalize_relations'")
    assert [(s, n) for s, n, _ in dead] == [("dead_letter", 3), ("dead_letter", 3)]
    assert {e for *_, e in dead} == {"inference error: RuntimeError: engine died (worker 3) (gave up after 3 attempts)"}
    # nothing of them is half done: no claim read, no assertion written
    assert rows(memory, "SELECT count(*) FROM claim_normalizations WHERE normalized_by IS NOT NULL") == [(0,)]
    assert rows(memory, "SELECT count(*) FROM assertions") == [(0,)]


def test_the_extraction_is_a_stage_of_the_import_only_where_every_processor_and_embedder_has_a_gpu():
    from jobs.stages import Embedding

    llm = _pass(gpus=2)     # one replica of each processor
    on_gpus = Embedding(model=None, gpu=True, device="cuda", batch_size=256, threads=1)
    on_cpus = Embedding(model=None, gpu=False, device="cpu", batch_size=64, threads=2)
    assert llm.streams({"GPU": 3, "CPU": 16}, on_gpus, workers=1)
    assert not llm.streams({"GPU": 2, "CPU": 16}, on_gpus, workers=1)   # the processors would wait for it
    assert llm.streams({"GPU": 2, "CPU": 16}, on_cpus, workers=4)
    assert not llm.streams({"CPU": 16}, on_cpus, workers=1)


class FailingSteps:
    """A stand-in pass whose `step` fails every row for its first `failing` passes, as Ray's engine
    stage leaves a row it failed on: no postprocess, `__inference_error__` set, the inputs kept."""

    def __init__(self, step: str, failing: int) -> None:
        self.step, self.failing, self.passes = step, failing, 0

    def _fail(self, batch):
        return _table([{**row, "__inference_error__": "RuntimeError: engine died\n  (worker 3)"}
                       for row in batch.to_pylist()])

    def llm(self) -> LlmPass:
        def run(step):
            def processor(ds):
                if step == self.step:
                    self.passes += 1
                    if self.passes <= self.failing:
                        return ds.map_batches(self._fail, batch_format="pyarrow")
                return ds.map_batches(functools.partial(_engine, step=step), batch_format="pyarrow")
            return processor
        return LlmPass(extractor="vllm-1:stand-in:test", model_label="stand-in", select=run("selection"),
                       claimify=run("claimify"))


def test_chunks_the_engine_fails_on_go_through_it_again_under_the_retry_policy(memory, ray_local, tmp_path,
                                                                               stand_in_normalizer):
    failing = FailingSteps("claimify", failing=2)    # within the policy's 3 attempts
    report = _import(memory, _notes(tmp_path), failing.llm(), stand_in_normalizer)

    assert failing.passes == 3 and report.claims > 0 and not report.failures
    assert rows(memory, "SELECT count(*) FROM chunks WHERE extracted_by IS NULL") == [(0,)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage = 'extract_claims'") == [("succeeded",)]


def test_a_chunk_that_fails_every_attempt_dead_letters_its_version_with_the_reason(memory, ray_local, tmp_path,
                                                                                   stand_in_normalizer):
    failing = FailingSteps("selection", failing=99)
    report = _import(memory, _notes(tmp_path), failing.llm(), stand_in_normalizer)

    assert failing.passes == 3 and report.claims == 0
    reason = "inference error: RuntimeError: engine died (worker 3) (gave up after 3 attempts)"
    assert sorted((f["stage"], f["error"]) for f in report.failures) == [("extract_claims", reason)] * 2
    dead = rows(memory, "SELECT status, attempts, last_error FROM stage_work WHERE stage = 'extract_claims'")
    assert dead == [("dead_letter", 3, reason)] * 2
    assert rows(memory, "SELECT count(*) FROM claims") == [(0,)]
