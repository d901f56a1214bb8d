"""Parquet and JSONL exports of a vector store, read with Ray Data's own readers.

A file export cannot be asked for one source's records, so its records are keyed by source
(`datasource.keyed`) for Ray Data's groupby. Parquet is read without its vector columns. JSONL
lines are parsed here rather than by `read_json`: the payloads of one export differ from line to
line (metadata keys come and go), and Arrow's JSON reader needs one schema per block.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from actors.sources.datasource import keyed
from actors.sources.stores import (
    ID_FIELDS,
    Payload,
    StoreOptions,
    StoreUnavailable,
    is_vector,
    matches,
)


def record_id(payload: Mapping[str, Any], raw: str) -> str:
    """The record's own id when it has one, else a digest of the record (stable across runs)."""
    found = next((payload[k] for k in ID_FIELDS if payload.get(k) not in (None, "")), None)
    return str(found) if found is not None else "sha1:" + hashlib.sha1(raw.encode("utf-8")).hexdigest()[:12]


def _lines(lines: list[str]) -> list[Payload]:
    out = []
    for line in lines:
        if not line.strip():
            continue
        try:
            payload = json.loads(line)
        except json.JSONDecodeError:
            payload = {}   # no text, no source: counted under `no_text` with its digest as id
        if not isinstance(payload, dict):
            payload = {}
        out.append((record_id(payload, line), payload))
    return out


def _rows(rows: list[dict[str, Any]]) -> list[Payload]:
    return [(record_id(r, json.dumps(r, sort_keys=True, default=str)), r) for r in rows]


def keyed_batch(batch: pa.Table, store: str, source_field: str, wanted) -> pa.Table:
    payloads = _lines(batch.column("text").to_pylist()) if store == "jsonl" else _rows(batch.to_pylist())
    if wanted:
        from pipeline.documents.vector_fields import flatten_node

        payloads = [p for p in payloads if matches(flatten_node(p[1]), wanted)]
    return keyed(payloads, source_field)


def raw_dataset(options: StoreOptions, cpus: float = 1.0):
    """The export as Ray Data reads it: JSONL as lines, Parquet without its vector columns."""
    import ray

    try:
        if options.store == "jsonl":
            return ray.data.read_text(options.location, num_cpus=cpus)
        schema = ray.data.read_parquet(options.location).schema()
        columns = [n for n, t in zip(schema.names, schema.types) if not is_vector(t)]
        return ray.data.read_parquet(options.location, num_cpus=cpus).select_columns(columns)
    except Exception as err:   # Ray's readers raise several kinds for a missing or unreadable file
        raise StoreUnavailable(f"cannot read {options.store} at {options.location}: "
                               f"{type(err).__name__}: {err}") from None


def sample(options: StoreOptions, n: int) -> list[Payload]:
    rows = raw_dataset(options).take(n)
    return _lines([r["text"] for r in rows]) if options.store == "jsonl" else _rows(rows)


def keyed_dataset(options: StoreOptions, source_field: str, cpus: float = 1.0):
    return raw_dataset(options, cpus).map_batches(keyed_batch, fn_kwargs={
        "store": options.store, "source_field": source_field, "wanted": options.filter}, batch_format="pyarrow",
        num_cpus=cpus)
