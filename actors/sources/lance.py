"""LanceDB (Lance) tables through the `lancedb` client: a local folder or an object-store URI.

Only the payload columns are read (vector columns are left in the files), and the filter and
the source groups are Lance SQL predicates, applied by Lance.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from actors.sources.stores import (
    ID_FIELDS,
    PAGE,
    Payload,
    StoreOptions,
    StoreUnavailable,
    is_vector,
)


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def column(name: str) -> str:
    """A field as Lance SQL names it: struct members by dots, each part quoted."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))


class LanceReader:
    def __init__(self, options: StoreOptions):
        import lancedb

        try:
            db = lancedb.connect(options.location)
            self._table = db.open_table(options.collection)
            schema = self._table.schema
        except Exception as err:
            raise StoreUnavailable(f"cannot open LanceDB table {options.collection!r} at {options.location}: "
                                   f"{type(err).__name__}: {err}") from None
        self._columns = [f.name for f in schema if not is_vector(f.type)]
        self._id = next((c for c in ID_FIELDS if c in self._columns), None)
        self._where = [self._predicate(name, values) for name, values in options.filter]

    @staticmethod
    def _predicate(name: str, values: Sequence[object]) -> str:
        return f"{column(name)} IN ({', '.join(literal(v) for v in values)})"

    def _query(self, extra=(), columns=None):
        wanted = list(dict.fromkeys([*columns, *([self._id] if self._id else [])])) if columns else self._columns
        q = self._table.search().select(wanted).limit(None)
        where = " AND ".join(f"({p})" for p in [*self._where, *extra])
        return q.where(where) if where else q

    def _pages(self, query) -> Iterator[list[Payload]]:
        start = 0
        for batch in query.to_batches(PAGE):
            rows = batch.to_pylist()
            yield [(str(r[self._id]) if self._id else f"row {start + i}", r) for i, r in enumerate(rows)]
            start += len(rows)

    def count(self) -> int:
        return self._table.count_rows(" AND ".join(f"({p})" for p in self._where) or None)

    def sample(self, n: int) -> list[Payload]:
        return next(self._pages(self._query().limit(n)), [])

    def distinct(self, name: str) -> list[str]:
        from pipeline.documents.vector_fields import lookup

        top = name.split(".")[0]
        found: set[str] = set()
        for page in self._pages(self._query(columns=[top])):
            found.update(str(v) for _, p in page if (v := lookup(p, name)) is not None)
        return sorted(found)

    def scan(self, name: str | None = None, values: Sequence[str] = ()) -> Iterator[list[Payload]]:
        extra = [self._predicate(name, list(values))] if name else []
        yield from self._pages(self._query(extra))

    def close(self) -> None:
        pass
