"""Qdrant through `qdrant-client`: a server URL, or a local-mode storage folder.

Records are scrolled with their payloads and never their vectors. The filter and the source
groups are Qdrant filters, applied by Qdrant; except in local mode, which tests every point in
Python for each filter (asking once per group of sources would be quadratic: 1.55x the folder
import at 52,000 records, 2.43x at 104,000), so there the sources' point ids are listed once and
each group is fetched by id, a lookup.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from actors.sources.stores import PAGE, Payload, StoreOptions, StoreUnavailable, is_url


class QdrantReader:
    def __init__(self, options: StoreOptions):
        from qdrant_client import QdrantClient, models

        self._models = models
        location = options.location
        if location == ":memory:":
            raise StoreUnavailable("':memory:' is a Qdrant store inside one process; corpusmem reads it from "
                                   "other processes: give a local storage folder or a server URL")
        try:
            if not is_url(location):
                if not os.path.isdir(location):
                    raise StoreUnavailable(f"no Qdrant local storage folder at {location}")
                self._client = QdrantClient(path=location)
                self._by_id: dict[str, dict[str, list]] | None = {}
            else:
                self._client = QdrantClient(url=location, api_key=os.environ.get("QDRANT_API_KEY"))
                self._by_id = None
            self._name = options.collection
            if not self._client.collection_exists(self._name):
                names = sorted(c.name for c in self._client.get_collections().collections)
                self.close()
                raise StoreUnavailable(f"Qdrant at {location} has no collection {self._name!r} "
                                       f"(it has: {', '.join(names) or 'none'})")
        except StoreUnavailable:
            raise
        except Exception as err:   # the client's errors differ by transport; all mean "cannot open"
            raise StoreUnavailable(f"cannot open Qdrant at {location}: {type(err).__name__}: {err}") from None
        self._must = [self._condition(name, values) for name, values in options.filter]

    def _condition(self, name: str, values: Sequence[object]):
        m = self._models
        match = m.MatchValue(value=values[0]) if len(values) == 1 else m.MatchAny(any=list(values))
        return m.FieldCondition(key=name, match=match)

    def _filter(self, extra=()):
        must = [*self._must, *extra]
        return self._models.Filter(must=must) if must else None

    def count(self) -> int:
        return self._client.count(self._name, count_filter=self._filter(), exact=True).count

    def _points(self, scroll_filter, payload) -> Iterator[list]:
        offset = None
        while True:
            points, offset = self._client.scroll(self._name, scroll_filter=scroll_filter, limit=PAGE, offset=offset,
                                                 with_payload=payload, with_vectors=False)
            if points:
                yield points
            if offset is None:
                return

    def _scroll(self, scroll_filter, payload) -> Iterator[list[Payload]]:
        for points in self._points(scroll_filter, payload):
            yield [(str(p.id), p.payload or {}) for p in points]

    def sample(self, n: int) -> list[Payload]:
        points, _ = self._client.scroll(self._name, scroll_filter=self._filter(), limit=n, with_payload=True,
                                        with_vectors=False)
        return [(str(p.id), p.payload or {}) for p in points]

    def _ids(self, name: str) -> dict[str, list]:
        """Each source's point ids, as the client knows them (one light pass over the source field)."""
        from pipeline.documents.vector_fields import lookup

        ids: dict[str, list] = {}
        for points in self._points(self._filter(), self._models.PayloadSelectorInclude(include=[name])):
            for p in points:
                if (v := lookup(p.payload or {}, name)) is not None:
                    ids.setdefault(str(v), []).append(p.id)
        return ids

    def _indexed(self, name: str) -> dict[str, list]:
        assert self._by_id is not None
        if name not in self._by_id:
            self._by_id[name] = self._ids(name)
        return self._by_id[name]

    def distinct(self, name: str) -> list[str]:
        if self._by_id is not None:
            return sorted(self._indexed(name))
        from pipeline.documents.vector_fields import lookup

        found: set[str] = set()
        for page in self._scroll(self._filter(), self._models.PayloadSelectorInclude(include=[name])):
            found.update(str(v) for _, p in page if (v := lookup(p, name)) is not None)
        return sorted(found)

    def scan(self, name: str | None = None, values: Sequence[str] = ()) -> Iterator[list[Payload]]:
        if name and self._by_id is not None:
            ids = [i for v in values for i in self._indexed(name).get(v, ())]
            for start in range(0, len(ids), PAGE):
                points = self._client.retrieve(self._name, ids=ids[start:start + PAGE], with_payload=True,
                                               with_vectors=False)
                yield [(str(p.id), p.payload or {}) for p in points]
            return
        extra = [self._condition(name, list(values))] if name else []
        yield from self._scroll(self._filter(extra), True)

    def close(self) -> None:
        self._client.close()
