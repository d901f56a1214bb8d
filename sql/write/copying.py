"""Rows into PostgreSQL by binary COPY, the way every bulk write of the import goes in."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import psycopg


def as_uuid(value: str) -> uuid.UUID:
    """Binary COPY takes `uuid.UUID` objects, not their text."""
    return uuid.UUID(value)


def copy_rows(cur: psycopg.Cursor, table: str, columns: tuple[str, ...], types: tuple[str, ...],
          rows: Iterable[tuple[Any, ...]]) -> None:
    stmt = psycopg.sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(
        psycopg.sql.Identifier(table), psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, columns)))
    with cur.copy(stmt) as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)


def copy_deduplicated(cur: psycopg.Cursor, table: str, columns: tuple[str, ...], types: tuple[str, ...],
                       rows: Iterable[tuple[Any, ...]]) -> str:
    """COPY through a temporary table, then keep only rows whose key is new: claims are keyed by
    content, so the same claim may already be there from an earlier version. Returns the temporary
    table's name: it holds the rows until the transaction ends."""
    staging = f"{table}_in"
    cur.execute(psycopg.sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS").format(
        psycopg.sql.Identifier(staging), psycopg.sql.Identifier(table)))
    copy_rows(cur, staging, columns, types, rows)
    cols = psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, columns))
    cur.execute(psycopg.sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT DO NOTHING").format(
        psycopg.sql.Identifier(table), cols, cols, psycopg.sql.Identifier(staging)))
    return staging
