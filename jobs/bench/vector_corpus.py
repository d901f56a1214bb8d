"""Vector stores filled the way chunkers fill them: each document cut into overlapping windows
(as LangChain's and LlamaIndex's splitters leave them), the records shuffled, each written with a
few-dimensional vector (an import never reads vectors). Used by `bench import-vectors` and the
import-vectors tests.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

Record = tuple[str, dict[str, Any]]   # (id, LangChain-style payload)
DIM = 4


def windows(text: str, size: int, overlap: int) -> list[str]:
    step = size - overlap
    return [text[i:i + size] for i in range(0, max(len(text) - overlap, 1), step)]


def chunk_records(docs: Iterable[tuple[str, str, str]], *, size: int = 300, overlap: int = 60,
                  seed: int = 7) -> list[Record]:
    """(source, text, ISO date) per document → shuffled chunk records with LangChain payloads."""
    out = []
    n = 0
    for source, text, date in docs:
        for i, piece in enumerate(windows(text, size, overlap)):
            out.append((str(n), {"page_content": piece,
                                 "metadata": {"source": source, "chunk_index": i, "modified_at": date}}))
            n += 1
    random.Random(seed).shuffle(out)
    return out


def vector(i: int) -> list[float]:
    return [((i * 7 + k) % 11) / 11.0 + 0.01 for k in range(DIM)]


def fill_qdrant(path: str | Path, collection: str, recs: Sequence[Record]) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection(collection, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    for start in range(0, len(recs), 1000):
        client.upsert(collection, points=[models.PointStruct(id=int(i), vector=vector(int(i)), payload=p)
                                          for i, p in recs[start:start + 1000]])
    client.close()
