"""Each read of the API sees one snapshot of the authority and cannot write."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from serve.replica import open_pools, read_snapshot

pytestmark = pytest.mark.integration


def test_a_read_sees_one_snapshot_and_writes_nothing(memory):
    from sql.store import authority as store

    with store.connect(memory.dsn) as conn:
        store.migrate(conn)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)

    def add_document(conn: psycopg.Connection) -> None:
        conn.execute("INSERT INTO documents (doc_id, source_kind, source_ref, title, filename, versioning_mode)"
                     " VALUES (%s, 'file', %s, 't', 't.md', 'snapshot')", (uuid.uuid4(), f"{uuid.uuid4()}.md"))

    async def read_twice() -> tuple[int, int, str, str]:
        await pools.open()
        try:
            async with read_snapshot(pools.general) as c:
                first = (await (await c.execute("SELECT count(*) FROM documents")).fetchone())[0]
                # another process lands a document while this read is running
                with psycopg.connect(memory.dsn, autocommit=True) as other:
                    add_document(other)
                second = (await (await c.execute("SELECT count(*) FROM documents")).fetchone())[0]
                level = (await (await c.execute("SHOW transaction_isolation")).fetchone())[0]
                read_only = (await (await c.execute("SHOW transaction_read_only")).fetchone())[0]
            async with read_snapshot(pools.general) as c:
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                    await c.execute("DELETE FROM documents")
            return first, second, level, read_only
        finally:
            await pools.close()

    first, second, level, read_only = asyncio.run(read_twice())
    assert (first, second, level, read_only) == (0, 0, "repeatable read", "on")
    with psycopg.connect(memory.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1   # the write landed, unseen


def test_a_snapshot_asked_for_generic_plans_uses_them_for_its_transaction_alone(memory):
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)

    async def modes() -> list[str]:
        await pools.open()
        try:
            seen = []
            for generic in (True, False, True):
                async with pools.snapshot("retrieval", generic_plans=generic) as c:
                    seen.append((await (await c.execute("SHOW plan_cache_mode")).fetchone())[0])
            return seen
        finally:
            await pools.close()

    # one connection in the pool: the second snapshot reuses the first's, which kept nothing of it
    assert asyncio.run(modes()) == ["force_generic_plan", "auto", "force_generic_plan"]


def test_the_reads_on_generic_plans_answer_the_same_bytes(example_memory, monkeypatch):
    """Generic plans change how PostgreSQL runs a statement, never what it answers: every
    operation's envelope, for questions drawn from the memory's own claims and anchored on its
    entities, in every time mode, the entities' graph walks and the relations' hydration, are the
    same JSON on custom and on generic plans. Every statement is prepared at once (`prepare_threshold=0`), since a plan mode
    only applies to prepared ones."""
    from datetime import datetime, timezone

    from pgvector.psycopg import register_vector_async

    from serve import graph, reads
    from serve.replica import GENERIC_PLANS, _configure
    from serve.retrieval.facts import TimeQuery

    at = datetime(2026, 12, 1, tzinfo=timezone.utc)
    monkeypatch.setattr(graph, "now", lambda: at)
    monkeypatch.setattr(reads, "now", lambda: at)
    times = [TimeQuery(), TimeQuery("history"), TimeQuery("at", at=datetime(2024, 3, 1, tzinfo=timezone.utc)),
             TimeQuery("overlap", start=datetime(2023, 1, 1, tzinfo=timezone.utc), end=at)]

    async def answers(generic: bool) -> tuple[list[bytes], int]:
        async with await psycopg.AsyncConnection.connect(example_memory.dsn, autocommit=True,
                                                         prepare_threshold=0) as conn:
            await register_vector_async(conn)
            await _configure(conn)
            questions = await (await conn.execute(
                "SELECT DISTINCT ON (claim_text) claim_text, embedding FROM claims WHERE embedding IS NOT NULL"
                " ORDER BY claim_text LIMIT 12")).fetchall()
            entities = [r[0] for r in await (await conn.execute(
                "SELECT entity_id::text FROM entities ORDER BY canonical_name LIMIT 4")).fetchall()]
            relations = [r[0] for r in await (await conn.execute(
                "SELECT fact_id::text FROM facts WHERE kind = 'relation' ORDER BY label, fact_id LIMIT 12")).fetchall()]
            found = []
            for n, (text, vector) in enumerate(questions):
                anchor = [entities[n % len(entities)]]
                async with conn.transaction():
                    if generic:
                        await conn.execute(GENERIC_PLANS)
                    for result in (
                            await reads.facts_context(conn, text, time=times[n % len(times)], vector=vector, at=at),
                            await reads.facts_context(conn, text, time=TimeQuery(), entity_ids=anchor, at=at),
                            await reads.claims_and_sources_context(conn, "When was it that " + text, vector=vector,
                                                                   at=at),
                            await reads.claims_and_sources_context(conn, text, vector=vector, entity_ids=anchor,
                                                                   at=at),
                            await graph.neighborhood(conn, entity_id=anchor[0], hops=2, predicates=[], valid_at=None,
                                                     believed_at=None, limit=20, include_paths=True),
                            await graph.path(conn, start=anchor[0], end=entities[(n + 1) % len(entities)],
                                             max_hops=3, predicates=[], valid_at=None, believed_at=None),
                            await reads.hydrate_relation(conn, relations[n % len(relations)])):
                        found.append(result.model_dump_json(by_alias=True).encode())
            assert len(questions) == 12 and entities
            plans = await (await conn.execute("SELECT sum(generic_plans) FROM pg_prepared_statements")).fetchone()
            return found, plans[0]

    (custom, _), (generic, generic_plans) = asyncio.run(answers(False)), asyncio.run(answers(True))
    assert generic_plans > 100   # the reads' statements ran on generic plans
    assert len(custom) == 84 and sum(b'"fact_id"' in a for a in custom) >= 12   # answers with facts in them
    assert sum(b'"hops":1' in a for a in custom) >= 6   # walks that found neighbours
    assert generic == custom
