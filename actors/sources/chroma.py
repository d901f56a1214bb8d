"""Chroma through `chromadb`: a persistent folder, or a server URL (`http://host:port`).

A record's payload is its metadata with its own document under `document`, so the text is the
record's document unless `--text-field` names a metadata key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from urllib.parse import urlparse

from actors.sources.stores import PAGE, Payload, StoreOptions, StoreUnavailable, is_url

TEXT = "document"


class ChromaReader:
    def __init__(self, options: StoreOptions):
        import chromadb

        location = options.location
        try:
            if is_url(location):
                url = urlparse(location)
                self._client = chromadb.HttpClient(host=url.hostname, port=url.port or 8000,
                                                   ssl=url.scheme == "https")
            else:
                if not os.path.isdir(location):
                    raise StoreUnavailable(f"no Chroma persistent folder at {location}")
                self._client = chromadb.PersistentClient(path=location)
            self._collection = self._client.get_collection(options.collection)
        except StoreUnavailable:
            raise
        except Exception as err:
            raise StoreUnavailable(f"cannot open Chroma collection {options.collection!r} at {location}: "
                                   f"{type(err).__name__}: {err}") from None
        self._where = [self._clause(name, values) for name, values in options.filter]

    @staticmethod
    def _clause(name: str, values: Sequence[object]) -> dict:
        return {name: values[0]} if len(values) == 1 else {name: {"$in": list(values)}}

    def _filter(self, extra=()):
        clauses = [*self._where, *extra]
        return None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def count(self) -> int | None:
        return self._collection.count() if not self._where else None

    def _pages(self, where, include) -> Iterator[list[Payload]]:
        offset = 0
        while True:
            got = self._collection.get(where=where, include=include, limit=PAGE, offset=offset)
            ids = got["ids"]
            if not ids:
                return
            metadatas = got.get("metadatas") or [None] * len(ids)
            documents = got.get("documents") or [None] * len(ids)
            yield [(i, {**(m or {}), TEXT: d}) if "documents" in include else (i, dict(m or {}))
                   for i, m, d in zip(ids, metadatas, documents)]
            offset += len(ids)

    def sample(self, n: int) -> list[Payload]:
        return next(self._pages(self._filter(), ["documents", "metadatas"]), [])[:n]

    def distinct(self, name: str) -> list[str]:
        found: set[str] = set()
        for page in self._pages(self._filter(), ["metadatas"]):
            found.update(str(p[name]) for _, p in page if p.get(name) is not None)
        return sorted(found)

    def scan(self, name: str | None = None, values: Sequence[str] = ()) -> Iterator[list[Payload]]:
        extra = [self._clause(name, list(values))] if name else []
        yield from self._pages(self._filter(extra), ["documents", "metadatas"])

    def close(self) -> None:
        pass   # the client keeps no connection of its own to close
