"""What every vector-store reader offers, the options that name a store, and how one is opened.

A reader is built inside the Ray task that uses it, from `StoreOptions` (plain, picklable
values), never shipped as a live client: a client holds sockets, file locks and threads. Each
store's module holds only its own client calls; what the records mean is decided once, in
`pipeline/documents` (`vector_fields`, `reassembly`, `rebuild`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

Payload = tuple[str, Mapping[str, Any]]   # (record id, payload)

# The names a record's own id goes by, first present wins (LangChain's PGVector: `custom_id`); the id
# only labels the records a report shows.
ID_FIELDS = ("id", "_id", "uuid", "record_id", "custom_id")

STORES = ("qdrant", "chroma", "lancedb", "pgvector", "parquet", "jsonl")
# Records per request to a store: big enough that the round trips do not dominate, small
# enough that a page of payloads stays a few megabytes.
PAGE = 1000


class StoreUnavailable(RuntimeError):
    """The store cannot be opened or read as named (wrong path, URL, collection, table, field)."""


@dataclass(frozen=True)
class StoreOptions:
    store: str
    location: str
    collection: str | None = None             # Qdrant or Chroma collection, LanceDB or PostgreSQL table
    # (field, accepted values) pairs, all of which a record must match (`--filter`)
    filter: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.store not in STORES:
            raise StoreUnavailable(f"unknown store {self.store!r}; one of {', '.join(STORES)}")
        if self.store in ("qdrant", "chroma", "lancedb", "pgvector") and not self.collection:
            what = "--table" if self.store in ("lancedb", "pgvector") else "--collection"
            raise StoreUnavailable(f"a {self.store} import needs {what} NAME")

    @property
    def default_source_kind(self) -> str:
        return f"{self.store}:{self.collection}" if self.collection else self.store


def parse_filter(text: str | None) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """`{"field": value, "other": [a, b]}`: every field must equal its value (or one of them)."""
    if not text:
        return ()
    try:
        given = json.loads(text)
    except json.JSONDecodeError as err:
        raise StoreUnavailable(f"--filter is not JSON: {err.msg} at column {err.colno}") from None
    if not isinstance(given, dict) or not given:
        raise StoreUnavailable('--filter must be a JSON object of field → value or [values], e.g. {"team": "ops"}')
    out = []
    for name, value in given.items():
        values = tuple(value) if isinstance(value, list) else (value,)
        if not values or any(isinstance(v, (dict, list)) or v is None for v in values):
            raise StoreUnavailable(f"--filter {name!r}: give a string, number or boolean, or a list of them")
        out.append((name, values))
    return tuple(out)


def is_url(location: str) -> bool:
    """A server (`http(s)://…`), as opposed to a local folder or file."""
    return location.startswith(("http://", "https://"))


def is_vector(t: pa.DataType) -> bool:
    """A column of embeddings (a list of floats): never read, the memory computes its own."""
    return (pa.types.is_fixed_size_list(t) or pa.types.is_list(t)) and pa.types.is_floating(t.value_type)


class StoreReader(Protocol):
    def count(self) -> int | None: ...

    def sample(self, n: int) -> list[Payload]: ...

    def distinct(self, name: str) -> list[str]:
        """The values of field `name` among the records the filter keeps (a light pass)."""

    def scan(self, name: str | None = None, values: Sequence[str] = ()) -> Iterator[list[Payload]]:
        """Pages of the records the filter keeps; with `name`, only those whose field is in `values`."""

    def close(self) -> None: ...


def open_reader(options: StoreOptions) -> StoreReader:
    if options.store == "qdrant":
        from actors.sources.qdrant import QdrantReader as reader
    elif options.store == "chroma":
        from actors.sources.chroma import ChromaReader as reader
    elif options.store == "lancedb":
        from actors.sources.lance import LanceReader as reader
    elif options.store == "pgvector":
        from actors.sources.pgtable import TableReader as reader
    else:
        raise StoreUnavailable(f"{options.store} exports are read by Ray Data's own readers, not a client")
    try:
        return reader(options)
    except ImportError as err:
        raise StoreUnavailable(f"reading {options.store} needs the `vectordb` extra "
                               f"(pip install 'corpusmem[vectordb]'): {err}") from None


def matches(payload: Mapping[str, Any], wanted: tuple[tuple[str, tuple[Any, ...]], ...]) -> bool:
    """The filter applied to a payload, for readers whose store cannot apply it itself."""
    from pipeline.documents.vector_fields import lookup

    return all(lookup(payload, name) in values for name, values in wanted)
