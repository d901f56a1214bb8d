"""How the embedding model runs: torch, ONNX Runtime in fp32 (the same vectors), torch in bfloat16
or ONNX Runtime with int8 weights (other vectors, pinned apart), the calibration that chooses among
them, and the embedder's rule that no text is encoded twice."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from actors import bf16_embedder, calibration, onnx_embedder
from actors.embedder import (
    DEFAULT_MODEL,
    Embed,
    ModelRef,
    VectorCache,
    choose_execution,
    load_model,
    model_dimension,
    resolve_model,
)
from pipeline import records

TEXTS = [
    "Dana Kim leads the billing migration since March.",
    "Joanna said that thanks, Nate!",
    "x",
    # longer than the model's 256-token window: both executions must cut it at the same place
    " ".join(f"word{i} of a very long paragraph about the quarterly billing review" for i in range(120)),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("model-cache"))


@pytest.fixture(scope="module")
def torch_vectors():
    return load_model(resolve_model(DEFAULT_MODEL), "cpu", threads=1).encode(TEXTS, normalize_embeddings=True)


def test_onnx_gives_torchs_vectors(cache, torch_vectors):
    model = load_model(resolve_model(DEFAULT_MODEL, "onnx", cache), "cpu", threads=1)
    got = model.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    assert got.shape == torch_vectors.shape and got.dtype == np.float32
    assert np.min(np.sum(got * torch_vectors, axis=1)) > 0.9999
    single = model.encode(TEXTS[0], normalize_embeddings=True)
    assert single.shape == (384,) and float(single @ torch_vectors[0]) > 0.9999


def test_int8_is_close_to_torch_but_pinned_apart(cache, torch_vectors):
    ref = resolve_model(DEFAULT_MODEL, "onnx-int8", cache)
    got = load_model(ref, "cpu", threads=1).encode(TEXTS, normalize_embeddings=True)
    cosines = np.sum(got * torch_vectors, axis=1)
    assert np.min(cosines) > 0.95 and np.max(cosines) < 0.99999
    assert ref.pin == "all-MiniLM-L6-v2@onnx-int8"
    assert resolve_model(DEFAULT_MODEL, "onnx", cache).pin == resolve_model(DEFAULT_MODEL).pin == DEFAULT_MODEL
    assert model_dimension(ref) == 384


def test_the_export_is_made_once_however_many_ask(tmp_path):
    path = resolve_model(DEFAULT_MODEL).path
    folders, errors = [], []

    def ask():
        try:
            folders.append(onnx_embedder.prepare(path, "onnx", str(tmp_path)))
        except Exception as err:  # reported by the assertion below
            errors.append(err)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(folders)) == 1
    graph = folders[0] / "model.onnx"
    made = graph.stat().st_mtime_ns
    assert onnx_embedder.prepare(path, "onnx", str(tmp_path)) == folders[0]
    assert graph.stat().st_mtime_ns == made
    assert not list(tmp_path.glob("*.staging"))


def _model_folder(tmp_path, modules, pooling):
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


def test_a_model_the_onnx_execution_cannot_follow_is_refused_by_name(tmp_path):
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]
    folder = _model_folder(tmp_path, modules, {"pooling_mode_mean_tokens": True})
    assert not onnx_embedder.supports(folder)
    with pytest.raises(onnx_embedder.UnsupportedModel, match="CORPUSMEM_EMBEDDING_EXECUTION=torch"):
        onnx_embedder.prepare(str(folder), "onnx", str(tmp_path / "cache"))
    assert choose_execution("auto", pinned=None, gpu=False, model_path=str(folder)) == "torch"


def test_a_pin_that_names_its_execution_is_followed_whatever_the_setting_auto_would_choose():
    path = resolve_model(DEFAULT_MODEL).path
    assert choose_execution("auto", pinned=f"{DEFAULT_MODEL}@onnx-int8", gpu=True, model_path=path) == "onnx-int8"
    assert choose_execution("torch", pinned=f"{DEFAULT_MODEL}@onnx-int8", gpu=False, model_path=path) == "torch"


class _CountingModel:
    def __init__(self):
        self.asked: list[str] = []

    def encode(self, texts, **_):
        self.asked += texts
        return np.stack([np.full(4, len(t), dtype=np.float32) for t in texts])


def _row(doc: str, chunk_text: str, claims: list[str]) -> dict:
    row = {name: None for name in records.COLUMNS}
    row.update(item=doc, outcome=records.PROCESS, prior_vectors=[],
               chunks=[{"ord": 0, "section_ord": 0, "char_start": 0, "char_end": len(chunk_text),
                        "text": chunk_text, "text_hash": doc, "embedding": None, "reused": None}],
               claims=[{"claim_id": f"{doc}-{i}", "claim_text": text, "reused": False} for i, text in enumerate(claims)])
    return row


def test_no_text_is_encoded_twice_in_a_run():
    embed = Embed.__new__(Embed)
    embed._model, embed._batch_size, embed._cache = _CountingModel(), 8, VectorCache(100)
    embed._ref = ModelRef("counting", "", "torch")
    first = pa.concat_tables(embed(records.to_table([_row("a", "Chunk A.", ["Joanna said that thanks, Nate!", "Chunk A."]),
                                                     _row("b", "Chunk B.", ["Joanna said that thanks, Nate!"])])))
    second = pa.concat_tables(embed(records.to_table([_row("c", "Chunk C.", ["Joanna said that thanks, Nate!"])])))
    assert sorted(embed._model.asked) == ["Chunk A.", "Chunk B.", "Chunk C.", "Joanna said that thanks, Nate!"]
    rows = records.to_rows(first) + records.to_rows(second)
    assert [(r["chunk_vectors_computed"], r["claim_vectors_computed"]) for r in rows] == [(1, 1), (1, 0), (1, 0)]
    said = {np.frombuffer(c["embedding"], "<f4").tobytes() for r in rows for c in r["claims"]
            if c["claim_text"].startswith("Joanna")}
    assert len(said) == 1 and all(c["embedding"] for r in rows for c in r["claims"] + r["chunks"])


def test_the_vector_cache_forgets_the_least_recently_used():
    cache = VectorCache(2)
    a, b, c = (VectorCache.key(t) for t in "abc")
    cache.put(a, b"1")
    cache.put(b, b"2")
    assert cache.get(a) == b"1"   # a is now the most recent
    cache.put(c, b"3")
    assert cache.get(b) is None and cache.get(a) == b"1" and cache.get(c) == b"3"



def test_a_texts_vector_never_depends_on_the_texts_encoded_beside_it(cache):
    """int8 activations are scaled per forward pass: in a batch, a vector moved with its batch-mates
    (so a decision near a threshold flipped with the cluster's shape). Each text is encoded alone."""
    for execution in ("onnx-int8", "onnx"):
        model = load_model(resolve_model(DEFAULT_MODEL, execution, cache), "cpu", threads=1)
        assert model.batch_invariant
        alone = np.stack([model.encode(t, normalize_embeddings=True) for t in TEXTS])
        for size in (1, 2, len(TEXTS)):
            assert np.array_equal(model.encode(TEXTS, batch_size=size, normalize_embeddings=True), alone)
        assert np.array_equal(model.encode(TEXTS[::-1], normalize_embeddings=True)[::-1], alone)
        # passes side by side, one thread each, and one pass on ONNX Runtime's own pool: the same bytes
        for threads in (2, 3, None):
            side_by_side = load_model(resolve_model(DEFAULT_MODEL, execution, cache), "cpu", threads=threads)
            assert np.array_equal(side_by_side.encode(TEXTS * 3, normalize_embeddings=True), np.vstack([alone] * 3))


def test_bfloat16_vectors_never_depend_on_the_texts_encoded_beside_them():
    """A bfloat16 batch rounds with its batch-mates (even texts of one token count, where the CPU
    computes bfloat16 natively); encoded alone, a text's vector is the same bytes whatever the
    batch size, the batch-mates and their order."""
    model = load_model(resolve_model(DEFAULT_MODEL, "torch-bf16"), "cpu", threads=1)
    assert model.batch_invariant
    # texts of one token count, so that some batches really hold several texts
    same = ["Dana Kim leads the billing migration.", "Owen Lee leads the search migration.",
            "Maya Ray leads the pricing migration."]
    texts = [*TEXTS, *same, "Nate asked about the cutover on Friday."]
    counts = model._model.preprocess(texts)["attention_mask"].sum(dim=1).tolist()
    assert len({counts[i] for i in range(len(TEXTS), len(TEXTS) + len(same))}) == 1
    alone = np.stack([model.encode(t, normalize_embeddings=True) for t in texts])
    for size in (1, 2, 3, len(texts)):
        assert np.array_equal(model.encode(texts, batch_size=size, normalize_embeddings=True), alone)
    assert np.array_equal(model.encode(texts[::-1], normalize_embeddings=True)[::-1], alone)
    assert np.array_equal(model.encode(same[1:] + TEXTS[:1], normalize_embeddings=True)[:2], alone[len(TEXTS) + 1:-1])


def test_bfloat16_is_close_to_torch_but_pinned_apart(torch_vectors):
    ref = resolve_model(DEFAULT_MODEL, "torch-bf16")
    got = load_model(ref, "cpu", threads=1).encode(TEXTS, normalize_embeddings=True)
    assert got.shape == torch_vectors.shape and got.dtype == np.float32
    cosines = np.sum(got * torch_vectors, axis=1)
    assert np.min(cosines) > 0.999 and not np.array_equal(got, torch_vectors)
    assert ref.pin == f"{DEFAULT_MODEL}@torch-bf16" and model_dimension(ref) == 384


def test_bfloat16_is_offered_only_where_the_cpu_has_it(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert not bf16_embedder.native()
    assert calibration.candidates(resolve_model(DEFAULT_MODEL).path) == ["torch", "onnx", "onnx-int8"]
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    assert bf16_embedder.native()
    assert calibration.candidates(resolve_model(DEFAULT_MODEL).path) == ["torch", "onnx", "torch-bf16", "onnx-int8"]


def test_a_calibration_times_every_execution_this_machine_offers_in_a_child_process(cache):
    ref = resolve_model(DEFAULT_MODEL, cache=cache)
    timed = calibration.calibrate(ref, threads=1, batch_size=32, chunk_chars=800)
    assert not timed.cached and set(timed.seconds) == set(calibration.candidates(ref.path))
    assert all(0 < s[kind] < 60 for s in timed.seconds.values() for kind in ("chunks", "claims"))
    assert timed.load is None or (timed.load[0] >= 0 and timed.load[1] == os.cpu_count())
    assert calibration.calibrate(ref, threads=1, batch_size=32, chunk_chars=800).seconds == timed.seconds
    assert choose_execution("auto", pinned=None, gpu=False, model_path=ref.path,
                            calibrate=lambda: timed) == calibration.choose(timed.per_chunk())


def test_the_dimension_is_read_from_the_model_folder_without_loading_the_model(tmp_path, torch_vectors):
    import torch
    from sentence_transformers import SentenceTransformer, models

    from actors.embedder import configured_dimension

    shipped = resolve_model(DEFAULT_MODEL)
    assert configured_dimension(Path(shipped.path)) == 384 == torch_vectors.shape[1]
    base = SentenceTransformer(shipped.path, device="cpu", local_files_only=True)
    dense = models.Dense(384, 128, activation_function=torch.nn.Identity())
    folder = tmp_path / "minilm-dense-128"
    SentenceTransformer(modules=[base[0], base[1], dense, models.Normalize()], device="cpu").save(str(folder))
    assert configured_dimension(folder) == 128 == model_dimension(resolve_model(str(folder), "torch-bf16"))
    # a module whose width the folder does not state: the model is loaded to ask it
    modules = json.loads((folder / "modules.json").read_text())
    modules[-2]["type"] = "sentence_transformers.models.SomethingElse"
    (folder / "modules.json").write_text(json.dumps(modules))
    assert configured_dimension(folder) is None


def test_a_batch_is_handed_on_in_groups_of_texts_and_no_document_is_split(monkeypatch):
    from actors import embedder

    monkeypatch.setattr(embedder, "GROUP_TEXTS", 5)
    embed = Embed.__new__(Embed)
    embed._model, embed._batch_size, embed._cache = _CountingModel(), 8, VectorCache(100)
    embed._ref = ModelRef("counting", "", "torch")
    # 3, 3, 6 and 1 texts: the third alone exceeds a group and is still one group
    docs = [_row("a", "A.", ["a1", "a2"]), _row("b", "B.", ["b1", "b2"]), _row("c", "C.", [f"c{i}" for i in range(5)]),
            _row("d", "D.", [])]
    groups = [records.to_rows(t) for t in embed(records.to_table(docs))]
    assert [[r["item"] for r in g] for g in groups] == [["a"], ["b"], ["c"], ["d"]]
    assert all(c["embedding"] for g in groups for r in g for c in r["chunks"] + r["claims"])
    assert len(embed._model.asked) == 3 + 3 + 6 + 1
    monkeypatch.setattr(embedder, "GROUP_TEXTS", 7)
    assert [[r["item"] for r in records.to_rows(t)] for t in embed(records.to_table(docs[:2]))] == [["a", "b"]]
