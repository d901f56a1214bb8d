"""Vector stores as Ray Data datasources whose read tasks yield whole documents.

A store is read in one of three plans, chosen by what it lets a reader ask for:

- `sources`: the distinct sources are listed first (a light pass that reads only the source
  field), cut into groups, and each read task asks the store for its groups' records (Qdrant,
  Chroma, LanceDB filters). Every record of a source lands in one task, which rebuilds it.
- `hash`: read task i of n asks for the records whose source hashes to i, in source order
  (a PostgreSQL table), and rebuilds each source once its last record has passed.
- `groupby`: the store cannot be asked by source (Parquet and JSONL files, or a source field
  that lives only inside LlamaIndex's `_node_content`): records are read as they lie and Ray
  Data's groupby brings each source's records together.

Read tasks build their client from `StoreOptions` and add what they counted to a
`RebuildCounter` actor, which the driver reads once the pipeline has drained.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import pyarrow as pa
from ray.data import Datasource
from ray.data.block import BlockMetadata
from ray.data.datasource import ReadTask

from actors.sources.stores import PAGE, Payload, StoreOptions, is_url, open_reader
from pipeline import records
from pipeline.documents.rebuild import RebuildTally, rebuild
from pipeline.documents.vector_fields import FieldMap, flatten_node, lookup

# Records per rebuild call in the `sources` plan: a group of sources is asked for at once, so
# a store is asked about (records / this) times, and a task holds about this many payloads.
_GROUP_RECORDS = 4 * PAGE
# Stores whose local mode allows one open client at a time (Qdrant locks its folder).
_SINGLE_CLIENT = ("qdrant", "chroma")
# Records read as they lie, for Ray Data's groupby: the payload travels as JSON text, because
# payloads of one store differ record to record and Arrow would need one schema for them all.
KEYED = pa.schema([("record_id", pa.string()), ("source", pa.string()), ("payload", pa.string())])


@dataclass(frozen=True)
class Rebuild:
    """How records become document rows (the same in every read task)."""

    fields: FieldMap
    source_kind: str
    versioning_mode: str
    assume_utc: bool

    def __call__(self, payloads: Sequence[Payload]) -> tuple[pa.Table, RebuildTally]:
        return rebuild(payloads, self.fields, source_kind=self.source_kind,
                       versioning_mode=self.versioning_mode, assume_utc=self.assume_utc)


@dataclass(frozen=True)
class Plan:
    kind: str                                   # "sources" | "hash" | "groupby"
    groups: tuple[tuple[str, ...], ...] = ()    # `sources`: the groups, in source order
    parts: int = 1                              # `hash`: how many parts
    sources: int | None = None                  # how many sources, when known before reading

    def describe(self) -> str:
        if self.kind == "sources":
            return (f"by source: {self.sources} sources listed first, read in {len(self.groups)} groups "
                    "by the store's own filter")
        if self.kind == "hash":
            return f"by source: {self.parts} read tasks, each a hash range of the source, in source order"
        return "as stored, then a Ray Data groupby on the source (the store cannot be asked by source cheaply)"


class RebuildCounter:
    """The run's reassembly counts, added by every read task (a Ray actor)."""

    def __init__(self):
        self._tally = RebuildTally()

    def add(self, tally: RebuildTally) -> None:
        self._tally.merge(tally)

    def result(self) -> RebuildTally:
        return self._tally


def plan_reads(options: StoreOptions, reader, source_field: str, *, pushdown: bool, parallelism: int) -> Plan:
    """The plan for a store whose reader is open in the driver."""
    if not pushdown:
        return Plan("groupby")
    if hasattr(reader, "partition"):
        return Plan("hash", parts=max(1, parallelism), sources=len(reader.distinct(source_field)))
    sources = reader.distinct(source_field)
    total = reader.count()
    per_source = (total / len(sources)) if sources and total else 1.0
    size = max(1, int(_GROUP_RECORDS / max(per_source, 1.0)))
    groups = tuple(tuple(sources[i:i + size]) for i in range(0, len(sources), size))
    return Plan("sources", groups=groups, sources=len(sources))


def _local_single_client(options: StoreOptions) -> bool:
    return options.store in _SINGLE_CLIENT and not is_url(options.location)


def _report(counter, tally: RebuildTally) -> None:
    import ray

    ray.get(counter.add.remote(tally))


def _rebuilt(options: StoreOptions, batches: Callable[[Any], Iterator[list[Payload]]], make: Rebuild,
             counter) -> Iterator[pa.Table]:
    """The document rows of each batch of records `batches(reader)` yields (every batch holds all
    the records of its sources); what was counted goes to `counter` when the task ends."""
    reader = open_reader(options)
    tally = RebuildTally()
    try:
        for payloads in batches(reader):
            table, got = make(payloads)
            tally.merge(got)
            if table.num_rows:
                yield table
    finally:
        reader.close()
        _report(counter, tally)


def _group_batches(reader, source_field: str, groups: Sequence[Sequence[str]]) -> Iterator[list[Payload]]:
    for group in groups:
        yield [p for page in reader.scan(source_field, group) for p in page]


def _part_batches(reader, source_field: str, part: int, parts: int) -> Iterator[list[Payload]]:
    pending: list[Payload] = []
    for page in reader.partition(source_field, part, parts):
        for record in page:
            # records arrive in source order: a full batch ends where a new source starts
            if len(pending) >= _GROUP_RECORDS and _source(pending[-1], source_field) != _source(record, source_field):
                yield pending
                pending = []
            pending.append(record)
    if pending:
        yield pending


def _source(record: Payload, source_field: str) -> Any:
    return lookup(flatten_node(record[1]), source_field)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return None   # binary payload values (a stray vector, an image) carry no text
    return str(value)


def keyed(payloads: Sequence[Payload], source_field: str) -> pa.Table:
    """Records as they lie, keyed by their source for the groupby (no source: the empty key,
    which `reassemble` counts under `no_source`)."""
    sources = [_source(p, source_field) for p in payloads]
    return pa.table({"record_id": [str(i) for i, _ in payloads],
                     "source": ["" if s is None else str(s) for s in sources],
                     "payload": [json.dumps(dict(p), default=_jsonable) for _, p in payloads]}, schema=KEYED)


def _read_all(options: StoreOptions, source_field: str) -> Iterator[pa.Table]:
    reader = open_reader(options)
    try:
        for page in reader.scan():
            yield keyed(page, source_field)
    finally:
        reader.close()


def rebuild_group(group: pa.Table, make: Rebuild, counter) -> pa.Table:
    """One source's records (a Ray Data group) → its document row."""
    payloads = [(r, json.loads(p)) for r, p in zip(group.column("record_id").to_pylist(),
                                                   group.column("payload").to_pylist())]
    table, tally = make(payloads)
    _report(counter, tally)
    return table


class VectorStoreDatasource(Datasource):
    """A Ray Data datasource over a store, read by `plan` (see the module docstring)."""

    def __init__(self, options: StoreOptions, source_field: str, plan: Plan, make: Rebuild, counter):
        super().__init__()
        self._options, self._field, self._plan, self._make, self._counter = options, source_field, plan, make, counter

    def estimate_inmemory_data_size(self) -> int | None:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context=None) -> list[ReadTask]:
        o, f, plan, make, counter = self._options, self._field, self._plan, self._make, self._counter
        schema = KEYED if plan.kind == "groupby" else records.DOC_SCHEMA

        def task(read_fn, rows: int | None) -> ReadTask:
            return ReadTask(read_fn, BlockMetadata(num_rows=rows, size_bytes=None, exec_stats=None,
                                                   input_files=None), schema=schema)

        if plan.kind == "groupby":
            return [task(lambda: _read_all(o, f), None)]
        if plan.kind == "hash":
            return [task(lambda i=i: _rebuilt(o, lambda r: _part_batches(r, f, i, plan.parts), make, counter), None)
                    for i in range(plan.parts)]
        n = 1 if _local_single_client(o) else max(1, min(parallelism, len(plan.groups)))
        shares = [plan.groups[i::n] for i in range(n)]
        return [task(lambda g=g: _rebuilt(o, lambda r: _group_batches(r, f, g), make, counter), sum(map(len, g)))
                for g in shares if g]


def parallelism_for(cpus: float) -> int:
    """Read tasks for a cluster of `cpus` CPUs: reading waits on the store more than it computes."""
    return max(1, min(16, math.ceil(cpus)))

