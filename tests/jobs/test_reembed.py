"""`corpusmem reembed`: every vector moved to another execution or model beside the served ones, the
pin switched in one transaction, reads served throughout in one space, an interrupted run resumed
without recomputing, and the previous vectors kept until `--drop-previous`."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from actors.embedder import DEFAULT_MODEL, load_model, model_for_pin, resolve_model
from jobs import reembed
from jobs.settings import Settings
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools
from sql.store import authority as store
from tests.support.memory import do_import, rows
from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.integration

INT8 = f"{DEFAULT_MODEL}@onnx-int8"
QUESTIONS = ("who leads the billing migration", "when is the cutover", "what did the team decide about pricing")


def _vectors(settings: Settings) -> dict[str, dict[str, np.ndarray]]:
    """Every stored vector by table and by the text it was made from."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for table, text, column in (("chunks", "text", "embedding"), ("claims", "claim_text", "embedding"),
                                ("facts", "label", "embedding"), ("entities", "profile", "profile_embedding")):
        out[table] = {t: np.array(v, dtype=np.float32) for t, v in rows(
            settings, f"SELECT {text}, {column}::real[] FROM {table} WHERE {column} IS NOT NULL")}
    return out


def _nominated(settings: Settings, model, question: str) -> list[str]:
    """The chunk texts a semantic nomination puts first, exactly (no index)."""
    vector = model.encode([question], normalize_embeddings=True)[0]
    return [r[0] for r in rows(settings, "SELECT text FROM chunks WHERE embedding IS NOT NULL"
                                         " ORDER BY embedding <=> %s::real[]::vector, chunk_id LIMIT 5",
                               vector.tolist())]


@contextmanager
def _read_api(settings: Settings, asked: list[str]) -> Iterator[TestClient]:
    """The read API over the memory as `corpusmem serve` starts it, its questions embedded with the
    model of the pin they are asked for (as the query-embedder deployment does); `asked` records
    the pins."""
    pin = store.pinned_model(settings.dsn)
    models: dict[str, object] = {}

    async def embed(text: str, for_pin: str | None = None) -> np.ndarray:
        use = for_pin or pin
        asked.append(use)
        if use not in models:
            models[use] = load_model(model_for_pin(use, cache=settings.model_cache), "cpu", threads=1)
        return models[use].encode([text], normalize_embeddings=True)[0]

    deployment = store.open_store(settings, embedding_model=pin, embedding_dim=rows(
        settings, "SELECT embedding_dim FROM deployment")[0][0], build_revision="test").deployment
    info = DeploymentInfo(deployment.deployment_id, "test", pin, settings.object_store_uri)
    with TestClient(build_app(open_pools(settings.dsn, general=1, retrieval=1, graph=1), info, embed)) as client:
        yield client


def _search(api: TestClient, question: str) -> list[str]:
    got = api.get("/search/chunks", params={"query": question, "k": 5, "channel": "semantic"})
    assert got.status_code == 200, got.text
    return [c["chunk_text"] for c in got.json()["chunks"]]


def _counts(settings: Settings) -> dict[str, int]:
    return {t: rows(settings, f"SELECT count(*) FROM {t} WHERE {c} IS NOT NULL")[0][0]
            for t, c in (("chunks", "embedding"), ("claims", "embedding"), ("facts", "embedding"),
                         ("entities", "profile_embedding"))}


def _options(**kw) -> reembed.ReembedOptions:
    return reembed.ReembedOptions(progress=False, **kw)


def test_int8_memory_moves_to_fp32_reading_throughout(example_memory_copy, example_report, memory, ray_local,
                                                      capsys):
    settings = example_memory_copy
    assert store.pinned_model(settings.dsn) == INT8
    before_counts = _counts(settings)
    asked: list[str] = []
    during: dict[str, list[str]] = {}

    with _read_api(settings, asked) as api:
        served_before = {q: _search(api, q) for q in QUESTIONS}
        assert all(served_before.values())

        def between_the_phases(report: reembed.ReembedReport) -> None:
            # every new vector is computed, none is served yet: reads stay in the int8 space
            assert store.pinned_model(settings.dsn) == INT8
            assert sum(report.computed.values()) == sum(before_counts.values())
            during.update({q: _search(api, q) for q in QUESTIONS})

        report = reembed.run_reembed(settings, _options(execution="onnx"), before_switch=between_the_phases)
        assert during == served_before and set(asked) == {INT8}
        assert report.status == "switched" and report.model == DEFAULT_MODEL
        assert store.pinned_model(settings.dsn) == DEFAULT_MODEL
        asked.clear()
        served_after = {q: _search(api, q) for q in QUESTIONS}
        assert set(asked) == {INT8, DEFAULT_MODEL}   # the old space once, then the pinned one
        assert asked[-1] == DEFAULT_MODEL and all(served_after.values())

    # every vector moved, none lost; the old ones kept beside them
    assert _counts(settings) == before_counts
    assert rows(settings, "SELECT source, count(*) FROM reembed_vectors WHERE model = %s GROUP BY source"
                          " ORDER BY 1", INT8) == sorted((t, n) for t, n in before_counts.items() if n)
    assert {r[0] for r in rows(settings, "SELECT indexname FROM pg_indexes WHERE right(indexname, 4) = 'hnsw'")} == \
        {index for _, _, index in store.VECTOR_COLUMNS}

    # the same memory imported fresh with fp32 vectors holds the same vectors and nominates alike
    fresh = do_import(memory.model_copy(update={"embedding_execution": "onnx"}),
                      EXAMPLES, modified_at_from="path")
    assert store.pinned_model(memory.dsn) == DEFAULT_MODEL
    moved, made = _vectors(settings), _vectors(memory)
    for table in ("chunks", "claims", "facts"):
        shared = set(moved[table]) & set(made[table])
        assert len(shared) >= 0.9 * len(made[table]) > 0, table
        assert min(float(moved[table][t] @ made[table][t]) for t in shared) > 0.9999, table
    fp32 = load_model(resolve_model(DEFAULT_MODEL, "onnx", settings.model_cache), "cpu", threads=1)
    after = {q: _nominated(settings, fp32, q) for q in QUESTIONS}
    assert after == {q: _nominated(memory, fp32, q) for q in QUESTIONS}

    # the pin now refuses the int8 vectors, with its own error
    with pytest.raises(store.StoreError, match="refusing 'all-MiniLM-L6-v2@onnx-int8'"):
        do_import(settings.model_copy(update={"embedding_execution": "onnx-int8"}),
                  EXAMPLES)

    # --drop-previous removes the kept int8 vectors and nothing served
    assert reembed.main(settings, _args(drop_previous=True)) == 0
    assert "dropped %d previous vectors" % sum(before_counts.values()) in capsys.readouterr().out
    assert rows(settings, "SELECT count(*) FROM reembed_vectors")[0][0] == 0
    assert _counts(settings) == before_counts
    print(f"\nreembed int8 -> fp32: compute {report.compute_seconds:.1f} s, switch {report.switch_seconds:.2f} s, "
          f"indexes {report.index_seconds:.1f} s; import of the same memory {example_report.wall_seconds:.1f} s, "
          f"fresh fp32 import {fresh.wall_seconds:.1f} s")


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"model": None, "execution": None, "drop_previous": False, "workers": 1,
                                 "page_rows": 512, "verbose": False, "no_progress": True, **kw})


class _Stop(Exception):
    pass


def test_an_interrupted_reembed_resumes_without_recomputing(example_memory_copy, ray_local):
    settings = example_memory_copy
    total = sum(_counts(settings).values())

    def stop(report: reembed.ReembedReport) -> None:
        raise _Stop

    with pytest.raises(_Stop):
        reembed.run_reembed(settings, _options(execution="onnx", page_rows=16), landed=stop)
    landed = _settled_count(settings)
    assert 0 < landed < total
    assert store.pinned_model(settings.dsn) == INT8   # nothing switched

    report = reembed.run_reembed(settings, _options(execution="onnx", page_rows=16))
    assert sum(report.done_before.values()) == landed
    assert sum(report.computed.values()) == total - landed
    assert report.status == "switched" and store.pinned_model(settings.dsn) == DEFAULT_MODEL


def _settled_count(settings: Settings) -> int:
    """Rows in the side table once the stopped pipeline's last write has landed."""
    seen, since = -1, time.monotonic()
    while time.monotonic() - since < 3:
        now = rows(settings, "SELECT count(*) FROM reembed_vectors")[0][0]
        if now != seen:
            seen, since = now, time.monotonic()
        time.sleep(0.2)
    return seen


@pytest.fixture(scope="module")
def dense_model(tmp_path_factory) -> Path:
    """A second model: the shipped MiniLM with a Dense layer to 128 dimensions, saved locally."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    base = SentenceTransformer(resolve_model(DEFAULT_MODEL).path, device="cpu", local_files_only=True)
    torch.manual_seed(7)
    dense = models.Dense(384, 128, activation_function=torch.nn.Identity())
    folder = tmp_path_factory.mktemp("models") / "minilm-dense-128"
    SentenceTransformer(modules=[base[0], base[1], dense, models.Normalize()], device="cpu").save(str(folder))
    return folder


def test_memory_moves_to_another_model_of_another_dimension(example_memory_copy, memory, ray_local, dense_model):
    settings = example_memory_copy
    before_counts = _counts(settings)
    asked: list[str] = []
    with _read_api(settings, asked) as api:
        # torch named: `auto` would choose by this machine's calibration (bfloat16 where the CPU has it)
        report = reembed.run_reembed(settings, _options(model=str(dense_model), execution="torch", workers=2))
        assert report.dim == 128 and store.pinned_model(settings.dsn) == str(dense_model.resolve())
        found = {q: _search(api, q) for q in QUESTIONS}
        assert all(found.values()) and asked[-1] == str(dense_model.resolve())
    assert _counts(settings) == before_counts
    assert {r[0] for r in rows(settings, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
                                         " WHERE attname IN ('embedding', 'profile_embedding') AND attrelid IN"
                                         " ('chunks'::regclass, 'claims'::regclass, 'facts'::regclass,"
                                         " 'entities'::regclass)")} == {"vector(128)"}

    fresh = memory.model_copy(update={"embedding_model": str(dense_model), "embedding_execution": "torch"})
    do_import(fresh, EXAMPLES, modified_at_from="path")
    moved, made = _vectors(settings), _vectors(memory)
    for table in ("chunks", "claims"):
        shared = set(moved[table]) & set(made[table])
        assert shared == set(made[table]), table
        assert min(float(moved[table][t] @ made[table][t]) for t in shared) > 0.999, table
    model = load_model(resolve_model(str(dense_model)), "cpu")
    assert {q: _nominated(settings, model, q) for q in QUESTIONS} == {q: _nominated(memory, model, q)
                                                                     for q in QUESTIONS}

    # the old model is refused by the pin
    with pytest.raises(store.StoreError, match="refusing 'all-MiniLM-L6-v2'"):
        do_import(settings, EXAMPLES)


def test_bad_requests_are_refused_by_name_and_change_nothing(example_memory_copy, memory, ray_local, capsys,
                                                               tmp_path):
    settings = example_memory_copy
    assert reembed.main(settings, _args(drop_previous=True)) == 2
    assert "corpusmem reembed: no reembed has switched" in capsys.readouterr().err
    assert reembed.main(settings, _args(model=str(tmp_path / "nowhere"))) == 2
    assert "no sentence-transformers model there" in capsys.readouterr().err
    assert reembed.main(settings, _args()) == 2
    assert "--model PATH and/or --execution" in capsys.readouterr().err
    assert reembed.main(settings, _args(execution="onnx-int8")) == 2
    assert "already pinned to 'all-MiniLM-L6-v2@onnx-int8'" in capsys.readouterr().err
    assert reembed.main(memory, _args(execution="onnx")) == 2
    assert "no vectors yet" in capsys.readouterr().err
    assert store.pinned_model(settings.dsn) == INT8
    assert rows(settings, "SELECT count(*) FROM reembed_vectors")[0][0] == 0


def test_a_reader_whose_settings_name_another_model_than_the_pin_is_refused(example_memory):
    """After a move, `corpusmem sql` and the demo embed questions by the settings: a setting that
    names another model than the pin is an error, never a question of another space."""
    from jobs import runtime

    pinned = store.pinned_model(example_memory.dsn)
    other = example_memory.model_copy(update={"embedding_execution": "torch" if "@" in pinned else "onnx-int8"})
    with pytest.raises(store.StoreError, match="refusing"):
        runtime.embedding_model(other, example_memory.dsn)
    assert runtime.embedding_model(example_memory, example_memory.dsn).pin == pinned
