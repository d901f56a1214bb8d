"""A question's channels, read in one statement, are each the channel read alone."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import psycopg
import pytest

pytestmark = pytest.mark.integration


def _asked(dsn: str, count: int, compare: Callable[[psycopg.AsyncConnection, list[tuple]], Awaitable[int]]) -> int:
    """`compare(conn, questions)` on a connection configured as the API's read pools are, the
    questions `count` of the memory's distinct claims (text, vector)."""
    from serve.replica import _configure

    async def run() -> int:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await _configure(conn)
            questions = await (await conn.execute(
                "SELECT DISTINCT ON (claim_text) claim_text, embedding FROM claims WHERE embedding IS NOT NULL"
                " ORDER BY claim_text LIMIT %s", (count,))).fetchall()
            return await compare(conn, questions)
    return asyncio.run(run())


def test_one_statement_nominates_what_each_channel_nominates_alone(example_memory):
    from sql.read import facts_queries
    from sql.read.read_queries import fetch

    async def compare(conn: psycopg.AsyncConnection, questions: list[tuple]) -> int:
        predicate = (await (await conn.execute(
            "SELECT predicate FROM facts WHERE predicate IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC"
            " LIMIT 1")).fetchone())[0]
        nominated = 0
        for n, (text, vector) in enumerate(questions):
            chosen = predicate if n % 2 else None
            words, meaning, profiles = await facts_queries.nominate_question(conn, text, vector, chosen)
            assert [words] == await facts_queries.nominate_question(conn, text, None, chosen)
            assert meaning == [r[0] for r in await fetch(
                conn, "SELECT id::text FROM memory_v1_private.semantic_nominate('facts', %b, %s, predicate => %s)"
                      " ORDER BY ord", (vector, facts_queries.CANDIDATES, chosen))]
            best = await facts_queries.best_profiles(conn, vector)
            assert profiles == (await facts_queries.nominate_entities(conn, best, chosen) if best else [])
            nominated += len(words) + len(meaning) + len(profiles)
            # a short text is also looked for inside labels
            short = next((w for w in text.split() if w.isalpha()), "the")
            alone = await fetch(
                conn, "SELECT f.fact_id::text FROM facts f WHERE (f.tsv @@ websearch_to_tsquery('english', %s)"
                      " OR f.label ILIKE %s) ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST,"
                      " f.label, f.fact_id LIMIT %s", (short, f"%{short}%", facts_queries.CANDIDATES))
            assert await facts_queries.nominate_question(conn, short, None, None) == [[r[0] for r in alone]]
        return nominated

    assert _asked(example_memory.dsn, 8, compare) > 100


def test_one_statement_nominates_claims_and_chunks_as_each_channel_alone(example_memory):
    from datetime import date

    from sql.read import read_queries
    from sql.read.read_queries import Nomination

    async def compare(conn: psycopg.AsyncConnection, questions: list[tuple]) -> int:
        entities = [r[0] for r in await (await conn.execute(
            "SELECT entity_id::text FROM entities ORDER BY canonical_name LIMIT 3")).fetchall()]
        days = (await (await conn.execute("SELECT min(claim_valid_from)::date FROM claims")).fetchone())[0] \
            or date(2026, 1, 1)
        nominated = 0
        for n, (text, vector) in enumerate(questions):
            about = [entities[n % len(entities)]] if n % 2 else None
            channels = {f"{t}_{c}": Nomination(t, c, about) for t in ("claims", "chunks") for c in ("semantic", "bm25")}
            channels |= {"claims_named": Nomination("claims", "semantic", entities),
                         "claims_dated": Nomination("claims", "semantic", about, dated=True),
                         "claims_then": Nomination("claims", "days", days=(days, days))}
            together = await read_queries.nominate_all(conn, channels, text, vector, 20)
            assert list(together) == list(channels)
            for name, one in channels.items():
                sql, own = one.statement(20)
                alone = [r[0] for r in await read_queries.fetch(conn, sql, {"q": text, "v": vector, "k": 20, **own})]
                assert together[name] == alone, name
                if one.channel != "days":   # as the searches read it
                    assert alone == await read_queries.nominate(conn, one.table, one.channel, text, vector, 20,
                                                                one.about, one.dated)
                nominated += len(alone)
        return nominated

    assert _asked(example_memory.dsn, 6, compare) > 100
