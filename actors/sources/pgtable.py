"""A PostgreSQL table of chunks (pgvector, LangChain's `langchain_pg_embedding`, or any table with
a text column) read with psycopg: DSN + table name; fields are columns, or keys inside a JSON
column (`cmetadata.source`).

The table is the user's, not the memory's, so its name is taken from the command line and
composed with `psycopg.sql` (never formatted into the text). Vector columns are not read. Reads
are planned by a hash of the source expression: part i of n holds every record of its sources,
in source order, so a task can rebuild each source as soon as its last record has passed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from actors.sources.stores import (
    ID_FIELDS,
    PAGE,
    Payload,
    StoreOptions,
    StoreUnavailable,
)

_JSON_TYPES = ("json", "jsonb")


class TableReader:
    def __init__(self, options: StoreOptions):
        import psycopg
        from psycopg import sql

        self._sql = sql
        try:
            self._conn = psycopg.connect(options.location, autocommit=True)
        except Exception as err:
            raise StoreUnavailable(f"cannot connect to PostgreSQL for the table import: {err}") from None
        parts = options.collection.split(".")
        self._table = sql.Identifier(*parts)
        found = self._conn.execute(
            "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
            " WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (sql.Identifier(*parts).as_string(self._conn),)).fetchall()
        if not found:
            self.close()
            raise StoreUnavailable(f"no table {options.collection!r} in that database")
        self._types = {name: typ for name, typ in found if typ not in ("vector", "halfvec", "sparsevec")}
        self._id = next((c for c in ID_FIELDS if c in self._types), None)
        self._where = [self._predicate(name, values) for name, values in options.filter]

    def _expr(self, name: str):
        """A field as SQL text: a column, or a path inside a JSON column."""
        sql = self._sql
        if name in self._types:
            return sql.SQL("{}::text").format(sql.Identifier(name))
        head, _, rest = name.partition(".")
        if rest and self._types.get(head) in _JSON_TYPES:
            return sql.SQL("({} #>> {})").format(sql.Identifier(head), sql.Literal(rest.split(".")))
        raise StoreUnavailable(f"the table has no column {name!r} (columns: {', '.join(self._types)})")

    def _predicate(self, name: str, values: Sequence[object]):
        return self._sql.SQL("{} = ANY({})").format(self._expr(name), self._sql.Literal([str(v) for v in values]))

    def _select(self, extra=(), order=None, limit=None):
        sql = self._sql
        where = [*self._where, *extra]
        query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(map(sql.Identifier, self._types)),
                                                    self._table)
        if where:
            query += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
        if order is not None:
            query += sql.SQL(" ORDER BY ") + order
        if limit is not None:
            query += sql.SQL(" LIMIT {}").format(limit)
        return query

    def _pages(self, query) -> Iterator[list[Payload]]:
        from psycopg.rows import dict_row

        n = 0
        # a named (server-side) cursor streams the table a page at a time
        with self._conn.transaction(), self._conn.cursor(name="corpusmem_read", row_factory=dict_row) as cur:
            cur.execute(query)
            while rows := cur.fetchmany(PAGE):
                yield [(str(r[self._id]) if self._id else f"row {n + i}", r) for i, r in enumerate(rows)]
                n += len(rows)

    def count(self) -> int:
        sql = self._sql
        query = sql.SQL("SELECT count(*) FROM {}").format(self._table)
        if self._where:
            query += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(self._where)
        return self._conn.execute(query).fetchone()[0]

    def sample(self, n: int) -> list[Payload]:
        return next(self._pages(self._select(limit=n)), [])

    def distinct(self, name: str) -> list[str]:
        sql = self._sql
        query = sql.SQL("SELECT DISTINCT {} FROM {}").format(self._expr(name), self._table)
        if self._where:
            query += sql.SQL(" WHERE ") + sql.SQL(" AND ").join(self._where)
        return sorted(r[0] for r in self._conn.execute(query) if r[0] is not None)

    def scan(self, name: str | None = None, values: Sequence[str] = ()) -> Iterator[list[Payload]]:
        yield from self._pages(self._select([self._predicate(name, values)] if name else []))

    def partition(self, name: str, part: int, parts: int) -> Iterator[list[Payload]]:
        """Part `part` of `parts` by a hash of the source, ordered by source."""
        sql = self._sql
        expr = self._expr(name)
        same = sql.SQL("(hashtext(coalesce({}, '')) & 2147483647) % {} = {}").format(
            expr, sql.Literal(parts), sql.Literal(part))
        order = sql.SQL("{}, {}").format(expr, sql.Identifier(self._id) if self._id else sql.SQL("ctid"))
        yield from self._pages(self._select([same], order=order))

    def close(self) -> None:
        self._conn.close()
