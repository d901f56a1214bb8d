"""Vector stores filled the way chunkers fill them, for the import-vectors tests and benchmark.

Each document is cut into overlapping windows (as LangChain's and LlamaIndex's splitters leave
them), the records are shuffled and written, with a few-dimensional vector each (the import
never reads vectors), into a real store in its embedded or local mode.
"""

from __future__ import annotations

import json
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


def _vector(i: int) -> list[float]:
    return [((i * 7 + k) % 11) / 11.0 + 0.01 for k in range(DIM)]


def fill_qdrant(path: str | Path, collection: str, recs: Sequence[Record]) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.create_collection(collection, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
    for start in range(0, len(recs), 1000):
        client.upsert(collection, points=[models.PointStruct(id=int(i), vector=_vector(int(i)), payload=p)
                                          for i, p in recs[start:start + 1000]])
    client.close()


def _flat(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Chroma's shape: the text is the record's document, metadata is flat."""
    return payload["page_content"], dict(payload["metadata"])


def fill_chroma(path: str | Path, collection: str, recs: Sequence[Record]) -> None:
    import chromadb

    col = chromadb.PersistentClient(path=str(path)).get_or_create_collection(collection)
    for start in range(0, len(recs), 1000):
        part = recs[start:start + 1000]
        docs, metas = zip(*(_flat(p) for _, p in part))
        col.add(ids=[i for i, _ in part], documents=list(docs), metadatas=list(metas),
                embeddings=[_vector(int(i)) for i, _ in part])


def _rows(recs: Sequence[Record]) -> list[dict[str, Any]]:
    return [{"id": i, "vector": _vector(int(i)), "text": p["page_content"], "source": p["metadata"]["source"],
             "chunk_index": p["metadata"]["chunk_index"], "modified_at": p["metadata"]["modified_at"]}
            for i, p in recs]


def fill_lance(uri: str | Path, table: str, recs: Sequence[Record]) -> None:
    import lancedb

    lancedb.connect(str(uri)).create_table(table, data=_rows(recs))


def write_parquet(path: str | Path, recs: Sequence[Record]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(_rows(recs)), str(path))


def write_jsonl(path: str | Path, recs: Sequence[Record]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i, p in recs:
            f.write(json.dumps({"id": i, **p}) + "\n")


def fill_pgvector(dsn: str, table: str, recs: Sequence[Record]) -> None:
    """LangChain's PGVector layout: `document` text, `cmetadata` jsonb, an `embedding` vector."""
    import psycopg
    from psycopg.types.json import Jsonb

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, document text, cmetadata jsonb,"
                     f" embedding vector({DIM}))")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s::vector)",
                            [(i, p["page_content"], Jsonb(p["metadata"]), str(_vector(int(i)))) for i, p in recs])
