"""Every store `import-vectors` reads, filled in its embedded or local mode with the chunk records
of `jobs.bench.vector_corpus` (Qdrant's filler lives there, for the benchmark)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobs.bench.vector_corpus import (  # noqa: F401
    DIM,
    Record,
    chunk_records,
    fill_qdrant,
    vector,
    windows,
)


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
                embeddings=[vector(int(i)) for i, _ in part])


def _rows(recs: Sequence[Record]) -> list[dict[str, Any]]:
    return [{"id": i, "vector": vector(int(i)), "text": p["page_content"], "source": p["metadata"]["source"],
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
                            [(i, p["page_content"], Jsonb(p["metadata"]), str(vector(int(i)))) for i, p in recs])
