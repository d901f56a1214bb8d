"""`corpusmem reembed` in SQL: which rows still need a vector of the target model, the side table
`reembed_vectors` those vectors land in, the switch of the pin, and dropping the previous vectors.

Every row holding a vector is computed again, served or not: a later version reuses its
predecessor's chunk vectors and a fact label takes its claim's vector, so no vector of the old
space may stay behind. A row is done for a model when the side table holds its vector made from
its current text (md5 of the text), so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from pgvector import Vector
from psycopg import sql

from sql.store import authority as store


@dataclass(frozen=True)
class Source:
    name: str      # reembed_vectors.source: the table
    id_column: str
    text: str      # the SQL of the text the vector is made from
    vector: str    # the vector column


# The text each vector column is made from; every column of `authority.VECTOR_COLUMNS` needs one.
_TEXTS = {("chunks", "embedding"): ("chunk_id", "text"),
          ("claims", "embedding"): ("claim_id", "claim_text"),
          ("facts", "embedding"): ("fact_id", "label"),
          ("entities", "profile_embedding"): ("entity_id", "coalesce(profile, '')")}


def sources() -> tuple[Source, ...]:
    missing = [f"{t}.{c}" for t, c, _ in store.VECTOR_COLUMNS if (t, c) not in _TEXTS]
    if missing:
        raise store.StoreError(f"reembed does not know the text of the vector column(s) {', '.join(missing)}")
    return tuple(Source(t, _TEXTS[t, c][0], _TEXTS[t, c][1], c) for t, c, _ in store.VECTOR_COLUMNS)


def _todo(source: Source) -> sql.Composable:
    """The WHERE clause of `source`'s rows without a vector of %(model)s from their current text."""
    return sql.SQL(
        "t.{vec} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM reembed_vectors r WHERE r.model = %(model)s"
        " AND r.source = {name} AND r.row_id = t.{id} AND r.text_hash = md5({text}))").format(
        vec=sql.Identifier(source.vector), name=sql.Literal(source.name), id=sql.Identifier(source.id_column),
        text=sql.SQL(source.text))


def todo_counts(conn: psycopg.Connection, model: str) -> dict[str, int]:
    return {s.name: conn.execute(sql.SQL("SELECT count(*) FROM {} t WHERE {}").format(
        sql.Identifier(s.name), _todo(s)), {"model": model}).fetchone()[0] for s in sources()}


def done_counts(conn: psycopg.Connection, model: str) -> dict[str, int]:
    """Vectors of `model` already in the side table, by source."""
    found = dict(conn.execute("SELECT source, count(*) FROM reembed_vectors WHERE model = %s GROUP BY source",
                              (model,)).fetchall())
    return {s.name: found.get(s.name, 0) for s in sources()}


def pages(conn: psycopg.Connection, model: str, rows: int) -> list[dict[str, str | None]]:
    """The rows still to compute as pages of about `rows` rows: (source, first id, next page's
    first id), so the driver holds one id per page, never the rows."""
    out: list[dict[str, str | None]] = []
    for s in sources():
        starts = [r[0] for r in conn.execute(sql.SQL(
            "SELECT i::text FROM (SELECT t.{id} AS i, row_number() OVER (ORDER BY t.{id}) AS n FROM {table} t"
            " WHERE {todo}) q WHERE n %% %(rows)s = 1 ORDER BY i").format(
            id=sql.Identifier(s.id_column), table=sql.Identifier(s.name), todo=_todo(s)),
            {"model": model, "rows": rows}).fetchall()]
        out += [{"source": s.name, "start": a, "stop": b} for a, b in zip(starts, [*starts[1:], None])]
    return out


def page_texts(conn: psycopg.Connection, model: str, source: str, start: str,
               stop: str | None) -> list[tuple[str, str, str]]:
    """(row id, md5 of the text, text) of a page's rows still to compute."""
    s = next(x for x in sources() if x.name == source)
    return conn.execute(sql.SQL(
        "SELECT t.{id}::text, md5({text}), {text} FROM {table} t WHERE {todo} AND t.{id} >= %(start)s::uuid"
        " AND (%(stop)s::uuid IS NULL OR t.{id} < %(stop)s::uuid) ORDER BY t.{id}").format(
        id=sql.Identifier(s.id_column), text=sql.SQL(s.text), table=sql.Identifier(s.name), todo=_todo(s)),
        {"model": model, "start": start, "stop": stop}).fetchall()


def save(conn: psycopg.Connection, model: str, rows: Sequence[tuple[str, str, str, bytes]]) -> int:
    """Land (source, row id, text hash, float32 vector bytes) of `model`; a row landed twice
    keeps the last vector."""
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO reembed_vectors (model, source, row_id, text_hash, embedding) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (model, source, row_id) DO UPDATE SET text_hash = EXCLUDED.text_hash,"
            " embedding = EXCLUDED.embedding, created_at = now()",
            [(model, s, i, h, Vector(np.frombuffer(v, dtype=np.float32))) for s, i, h, v in rows])
    return len(rows)


@dataclass(frozen=True)
class Switched:
    previous: str
    previous_dim: int
    model: str
    dim: int
    computed_in_switch: int   # rows written while the switch waited (by imports during the compute)


class ImportsRunning(store.StoreError):
    pass


def switch(conn: psycopg.Connection, *, previous: str, model: str, dim: int,
           encode: Callable[[list[str]], np.ndarray]) -> Switched:
    """Make `model` the pin and its vectors the served ones, in one transaction.

    Writers of the vector tables wait (readers do not) while the rows landed since the compute
    phase are encoded with `encode`, the served vectors are kept in the side table under
    `previous`, the columns take the new vectors and the deployment row the new pin. A reader's
    snapshot sees either the old pin with the old vectors or the new pin with the new ones."""
    with conn.transaction():
        pinned = store.lock_pin(conn)
        if pinned.embedding_model != previous:
            raise store.StoreError(f"the memory's pin changed to {pinned.embedding_model!r} while reembedding "
                                   f"from {previous!r}; run `corpusmem reembed` again")
        running = [str(r[0]) for r in conn.execute(
            "SELECT run_id FROM import_runs WHERE status = 'running' AND work_lock_held('run', run_id::text)")]
        if running:
            raise ImportsRunning(f"import run(s) {', '.join(running)} are running with the old model; the "
                                 "switch waits for none: run `corpusmem reembed` again once they end "
                                 "(what was computed is kept)")
        tables = sql.SQL(", ").join(sql.Identifier(s.name) for s in sources())
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(tables))
        late = 0
        for s in sources():
            rows = conn.execute(sql.SQL("SELECT t.{id}::text, md5({text}), {text} FROM {table} t WHERE {todo}").format(
                id=sql.Identifier(s.id_column), text=sql.SQL(s.text), table=sql.Identifier(s.name), todo=_todo(s)),
                {"model": model}).fetchall()
            if rows:
                vectors = encode([text for _, _, text in rows])
                late += save(conn, model, [(s.name, i, h, v.astype("<f4").tobytes())
                                           for (i, h, _), v in zip(rows, vectors)])
        for s in sources():
            conn.execute(sql.SQL(
                "INSERT INTO reembed_vectors (model, source, row_id, text_hash, embedding)"
                " SELECT %(previous)s, {name}, t.{id}, md5({text}), t.{vec} FROM {table} t WHERE t.{vec} IS NOT NULL"
                " ON CONFLICT (model, source, row_id) DO UPDATE SET text_hash = EXCLUDED.text_hash,"
                " embedding = EXCLUDED.embedding, created_at = now()").format(
                name=sql.Literal(s.name), id=sql.Identifier(s.id_column), text=sql.SQL(s.text),
                vec=sql.Identifier(s.vector), table=sql.Identifier(s.name)), {"previous": previous})
        store.repin(conn, embedding_model=model, embedding_dim=dim)
        for s in sources():
            conn.execute(sql.SQL(
                "UPDATE {table} t SET {vec} = r.embedding FROM reembed_vectors r WHERE r.model = %(model)s"
                " AND r.source = {name} AND r.row_id = t.{id} AND r.text_hash = md5({text})").format(
                table=sql.Identifier(s.name), vec=sql.Identifier(s.vector), name=sql.Literal(s.name),
                id=sql.Identifier(s.id_column), text=sql.SQL(s.text)), {"model": model})
            # a vector of the old space that found no new one (none should) is not served beside them
            conn.execute(sql.SQL(
                "UPDATE {table} t SET {vec} = NULL WHERE t.{vec} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM"
                " reembed_vectors r WHERE r.model = %(model)s AND r.source = {name} AND r.row_id = t.{id})").format(
                table=sql.Identifier(s.name), vec=sql.Identifier(s.vector), name=sql.Literal(s.name),
                id=sql.Identifier(s.id_column)), {"model": model})
        # the served columns hold them now
        conn.execute("DELETE FROM reembed_vectors WHERE model = %s", (model,))
        conn.execute("INSERT INTO reembed_switches (switched_at, previous_model, previous_dim, model, dim)"
                     " VALUES (clock_timestamp(), %s, %s, %s, %s)", (previous, pinned.embedding_dim, model, dim))
    return Switched(previous, pinned.embedding_dim, model, dim, late)


def drop_previous(conn: psycopg.Connection) -> dict[str, int] | None:
    """Delete the vectors a switch left under the previous pin(s); None when no switch happened.
    Vectors of a reembed still computing (a model never pinned) are kept."""
    with conn.transaction():
        pinned = store.lock_pin(conn)
        previous = [r[0] for r in conn.execute(
            "SELECT DISTINCT previous_model FROM reembed_switches WHERE previous_model <> %s",
            (pinned.embedding_model,))]
        if not conn.execute("SELECT EXISTS (SELECT 1 FROM reembed_switches)").fetchone()[0]:
            return None
        dropped = dict(conn.execute(
            "WITH d AS (DELETE FROM reembed_vectors WHERE model = ANY(%s) RETURNING source)"
            " SELECT source, count(*) FROM d GROUP BY source", (previous,)).fetchall())
        conn.execute("UPDATE reembed_switches SET dropped_at = now() WHERE dropped_at IS NULL")
    return {s.name: dropped.get(s.name, 0) for s in sources()}
