"""The declared import: which stages a run is built from, with which `map_batches` arguments,
what each source yields, and the facts phase's step timing. Unit tests: no Ray started, no database."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from unittest import mock

import pytest

from actors.embedder import ModelRef
from actors.extractor import ExtractorConfig, ExtractorUnavailable
from actors.retries import RetryPolicy
from jobs import facts, sources
from jobs.import_corpus import import_options, job_name
from jobs.settings import load_settings
from jobs.stages import DB_STAGE_CPUS, TASK_CPUS, DocumentStages, Embedding, Run, Stage, pure_tasks

_RUN = Run("run-1", "postgresql:///memory", "/objects", 16, RetryPolicy(attempts=3))
# a GPU embedder: its resources are not read from a running cluster
_EMBEDDING = Embedding(ModelRef("m", "/models/m"), gpu=True, device="cuda", batch_size=256, threads=2)


def _names(stages: list[Stage]) -> list[str]:
    """What the dashboard calls each stage: `MapBatches(<the UDF's name>)`."""
    return [stage.udf().__name__ for stage in stages]


def test_a_run_from_source_rows_has_every_stage_in_order() -> None:
    pipeline = DocumentStages.of(ExtractorConfig(), _EMBEDDING, workers=3, target_chars=800)
    stages = pipeline.stages(_RUN, ingested=False)
    assert _names(stages) == ["Ingest", "convert", "structure", "chunk", "Extract", "Embed", "Write"]
    assert pipeline.extractor_version == "rules-1"
    assert stages[-1].fn_constructor_kwargs["extractor"] == "rules-1"


def test_queued_versions_skip_ingest_and_the_llm_pass_takes_extract_out() -> None:
    pipeline = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800)
    stages = pipeline.stages(_RUN, ingested=True)
    assert _names(stages) == ["convert", "structure", "chunk", "Embed", "Write"]
    assert stages[-1].fn_constructor_kwargs["extractor"] is None


def test_the_llm_extraction_where_it_streams_follows_write_in_the_same_list() -> None:
    from jobs.extract_llm import LlmPass

    def processor(ds):
        return ds

    llm = LlmPass(extractor="vllm-1:m:p", model_label="m", select=processor, claimify=processor, gpus=2)
    pipeline = DocumentStages.of(None, _EMBEDDING, workers=1, target_chars=800,
                                 extraction=functools.partial(llm.stages, embedding=_EMBEDDING))
    stages = pipeline.stages(_RUN, ingested=False)
    assert _names(stages[:6]) == ["Ingest", "convert", "structure", "chunk", "Embed", "Write"]
    load, select, claimify, land = stages[6:]
    assert (_names([load]), select, claimify, _names([land])) == (["LoadContexts"], processor, processor, ["LandClaims"])
    assert load.fn_constructor_kwargs["extractor"] == land.fn_constructor_kwargs["extractor"] == "vllm-1:m:p"


def test_an_extractor_that_cannot_run_refuses_when_the_stages_are_chosen() -> None:
    with pytest.raises(ExtractorUnavailable, match="CORPUSMEM_LLM_BASE_URL"):
        DocumentStages.of(ExtractorConfig(backend="openai"), _EMBEDDING, workers=1, target_chars=800)


def test_each_stage_declares_its_map_batches_arguments_once() -> None:
    stages = DocumentStages.of(ExtractorConfig(), _EMBEDDING, workers=3, target_chars=800).stages(_RUN, ingested=False)
    by_name = {stage.fn.__name__: stage.map_batches_kwargs() for stage in stages}
    assert by_name["structure"] == {"batch_size": 16, "batch_format": "pyarrow", "fn_kwargs": {"target_chars": 800},
                                    "num_cpus": TASK_CPUS}
    embed = by_name["Embed"]
    assert (embed["batch_size"], embed["num_gpus"], embed["compute"].min_size, embed["compute"].max_size) == (
        128, 1, 3, 3)
    assert "num_cpus" not in embed and embed["fn_constructor_kwargs"]["device"] == "cuda"
    for name in ("Ingest", "Write"):
        # resident tasks, one at a time: the class is built in the worker (`actors/resident.py`)
        kwargs, stage = by_name[name], next(s for s in stages if s.fn.__name__ == name)
        assert (kwargs["compute"].size, kwargs["num_cpus"], stage.fn_constructor_kwargs["retry"]) == (
            1, DB_STAGE_CPUS, _RUN.retry)
        assert "fn_constructor_kwargs" not in kwargs


def test_the_pure_stages_and_the_rules_run_as_many_tasks_as_the_cluster_has_cpus_so_that_ray_fuses_them() -> None:
    run = dataclasses.replace(_RUN, tasks=2)
    stages = DocumentStages.of(ExtractorConfig(), _EMBEDDING, workers=1, target_chars=800).stages(run, ingested=False)
    by_name = {stage.fn.__name__: stage.map_batches_kwargs() for stage in stages}
    for name in ("convert", "structure", "chunk", "Extract"):
        assert (type(by_name[name]["compute"]).__name__, by_name[name]["compute"].size, by_name[name]["num_cpus"]) == (
            "TaskPoolStrategy", 2, TASK_CPUS), name
    assert by_name["Ingest"]["compute"].size == by_name["Write"]["compute"].size == 1
    # an endpoint's client waits on the network: one batch at a time, a tenth of a CPU
    openai = ExtractorConfig(backend="openai", llm_model="m", llm_base_url="http://127.0.0.1:9/v1")
    [extract] = [s for s in DocumentStages.of(openai, _EMBEDDING, workers=1, target_chars=800).stages(
        run, ingested=False) if s.fn.__name__ == "Extract"]
    assert (extract.map_batches_kwargs()["compute"].size, extract.num_cpus) == (1, DB_STAGE_CPUS)
    assert pure_tasks({"CPU": 2.0}) == 2 and pure_tasks({}) == 1


def test_on_cpus_the_embedder_is_resident_and_on_a_gpu_an_actor_per_device(monkeypatch) -> None:
    from jobs import stages as stages_mod

    monkeypatch.setattr(stages_mod, "embedder_cpus", lambda workers: 0.5)
    cpu = Embedding(ModelRef("m", "/models/m", execution="onnx-int8"), gpu=False, device="cpu", batch_size=32,
                    threads=1)
    [embed] = [s for s in DocumentStages.of(ExtractorConfig(), cpu, workers=2, target_chars=800).stages(
        _RUN, ingested=False) if s.fn.__name__ == "Embed"]
    kwargs = embed.map_batches_kwargs()
    assert (type(kwargs["compute"]).__name__, kwargs["compute"].size, kwargs["num_cpus"]) == ("TaskPoolStrategy", 2, 0.5)
    # each run's instance is its own (its cache of texts encoded), the model stays loaded in the process,
    # and its tasks ask for a runtime environment of their own: one worker process holds the model
    assert embed.fn_constructor_kwargs["run_id"] == _RUN.run_id and embed.udf().__name__ == "Embed"
    assert kwargs["runtime_env"] == {"env_vars": {"CORPUSMEM_STAGE": "Embed"}}


def test_an_onnx_execution_embeds_on_cpu_even_beside_a_gpu() -> None:
    onnx = ModelRef("m", "/models/m", execution="onnx")
    embedding = Embedding.for_cluster(onnx, {"CPU": 8, "GPU": 1}, 2, device="auto",
                                      batch_size=lambda gpu: 99 if gpu else 7)
    assert (embedding.gpu, embedding.device, embedding.batch_size, embedding.threads) == (False, "auto", 7, 4)


def test_folders_list_their_items_when_taken(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "b.md").write_text("# B\n")
    source = sources.Folders((str(tmp_path),), load_settings({}).source_options())
    reading = source.take(_RUN, owner=None)
    assert (reading.total, reading.ingested, source.record()) == (2, False, None)


def test_a_folder_lists_its_file_names_for_the_stages(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "sub" / "scan.png").write_bytes(b"")
    reading = sources.Folders((str(tmp_path),), load_settings({}).source_options()).take(_RUN, owner=None)
    assert sorted(reading.names) == ["a.md", "scan.png"]


def test_queued_versions_are_those_the_run_claims() -> None:
    with mock.patch.object(sources.ingest_sql, "claim_versions", return_value=["v2"]) as claim:
        reading = sources.QueuedVersions(("v1", "v2")).take(_RUN, owner="owner")
    claim.assert_called_once_with("owner", "run-1", ["v1", "v2"])
    assert (reading.total, reading.ingested) == (1, True)


def test_the_dashboard_names_the_job_after_what_it_reads() -> None:
    settings = load_settings({})
    assert job_name(import_options(settings, ("notes", "mail.zip"))) == "corpusmem import notes mail.zip"
    queued = import_options(settings, ("retry",), reads=sources.QueuedVersions(("v1",)))
    assert job_name(queued) == "corpusmem import queued versions"


def test_the_facts_phase_times_a_step_only_when_it_finishes() -> None:
    seconds: dict[str, float] = {}
    facts._timed(seconds, "resolve", lambda: None)

    def fails() -> None:
        raise RuntimeError("the database went away")

    with pytest.raises(RuntimeError):
        facts._timed(seconds, "adjudicate", fails)
    assert list(seconds) == ["resolve"] and seconds["resolve"] >= 0
