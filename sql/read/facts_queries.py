"""SQL of fact retrieval: names to entities, the nomination channels, confirmation, co-members.

Nominations read the indexes of the base tables; what they nominate is only served once
`confirm` (or a lookup) has checked it against the servable views. Retrieval itself (which channels, how they are fused, what a time question keeps) is decided in
`serve/retrieval/facts.py`; these functions only read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector_async

from pipeline.facts import names
from sql.read.read_queries import FACT_COLUMNS, MATCHED_FACT_COLUMNS, Conn, fetch, fetch_one, servable

T = TypeVar("T")

CANDIDATES = 200
PROFILE_ENTITIES = 20   # entities whose profiles nominate their facts


def read(dsn: str, question: Callable[[Conn], Awaitable[T]]) -> T:
    """One read on a connection of its own, for callers outside an event loop (the CLI, the demo,
    tests); the API's handlers await the reads on their pools instead."""
    async def ask() -> T:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await register_vector_async(conn)
            return await question(conn)
    return asyncio.run(ask())


async def find_entities(conn: Conn, name: str) -> list[tuple[str, str, str]]:
    """(entity_id, canonical_name, tier) for a name: exact alias (T0), else similar spelling (T1),
    else similar sound (T2). Never picks among several: every candidate comes back. A spelling of
    a merged-away entity names its survivor (`entity_spellings`, migration 0015)."""
    key = names.key(name)
    live = servable("entity", "e")
    rows = await named_entities(conn, [name])
    if rows:
        return [(r[0], r[1], "T0") for r in rows]
    rows = await fetch(conn, "SELECT e.entity_id::text, e.canonical_name, max(similarity(a.alias_key, %(k)s)) s"
                             " FROM memory_v1_private.entity_spellings a JOIN entities e USING (entity_id)"
                             " WHERE a.alias_key %% %(k)s"
                             f" AND {live} GROUP BY 1, 2 ORDER BY s DESC, 2, 1 LIMIT 10", {"k": key})
    if rows:
        return [(r[0], r[1], "T1") for r in rows]
    rows = await fetch(conn, "SELECT DISTINCT e.entity_id::text, e.canonical_name"
                             " FROM memory_v1_private.entity_spellings a"
                             f" JOIN entities e USING (entity_id) WHERE a.dm_codes && daitch_mokotoff(%s) AND {live}"
                             " ORDER BY 2, 1 LIMIT 10", (key,))
    return [(r[0], r[1], "T2") for r in rows]


async def named_entities(conn: Conn, spellings: list[str]) -> list[tuple[str, str]]:
    """(entity_id, canonical_name) of the live entities any of `spellings` names exactly (T0 of
    `find_entities`), by name. One statement a name, not one for all: with `= ANY(array)`
    PostgreSQL planned the servability view anew at every call (2.3 ms), where a single key keeps
    its prepared plan (0.6 ms for the whole lookup)."""
    found: dict[str, str] = {}
    for spelling in spellings:
        found.update(await fetch(conn, "SELECT DISTINCT e.entity_id::text, e.canonical_name"
                                       " FROM memory_v1_private.entity_spellings a JOIN entities e USING (entity_id)"
                                       f" WHERE a.alias_key = %s AND {servable('entity', 'e')}",
                                 (names.key(spelling),)))
    return sorted(found.items(), key=lambda row: (row[1], row[0]))


_PREDICATE = " AND (%(p)s::text IS NULL OR f.predicate = %(p)s)"
# How a channel that does not rank by meaning orders its nominees: best evidenced first.
_RANK = " ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST, f.label, f.fact_id"
_RANKED = _RANK + " LIMIT %(n)s"


def _of_entities(ids: str) -> str:
    """The facts of the entities `ids` (an SQL uuid[]) names, best evidenced first."""
    # Each side on its own, never an OR: a UNION lets each read its index alone (0020), where the
    # OR read every fact's row. Both sides together, then deduplicated: a fact is on a side at
    # most once (it has one subject and one object), so the best 2n rows of the two hold the best
    # n facts, and only those are grouped. A UNION grouped every row of both sides first: 2,687
    # for the 20 entities whose profiles best match a question, half the channel's cost.
    side = ("SELECT f.fact_id, f.evidence_count, f.valid_from, f.label FROM facts f"
            f" WHERE f.{{}} = ANY({ids})" + _PREDICATE)
    best = (f"SELECT * FROM ({side.format('subject_id')} UNION ALL {side.format('object_id')}) f"
            + _RANK + " LIMIT 2 * %(n)s")
    return (f"SELECT f.fact_id::text FROM ({best}) f GROUP BY f.fact_id, f.evidence_count, f.valid_from, f.label"
            + _RANKED)


async def nominate_entities(conn: Conn, ids: list[str], predicate: str | None) -> list[str]:
    return [r[0] for r in await fetch(conn, _of_entities("%(ids)s::uuid[]"),
                                      {"ids": ids, "p": predicate, "n": CANDIDATES})]


# A text of at most this many words is also looked for inside labels, so that part of a name
# ("Rey") finds the facts of "Marco Reyes". A longer text is matched by its words alone: a label
# that holds it verbatim holds its words too, and the trigram scan of a question-long pattern
# cost 20-30 ms at 60,000 facts while almost never finding anything the words did not.
SUBSTRING_WORDS = 3


def _like_pattern(text: str) -> str | None:
    """The ILIKE pattern that finds `text` inside a label, its wildcards taken literally; None
    for a text too long to be part of a name."""
    if not text.strip() or len(text.split()) > SUBSTRING_WORDS:
        return None
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# Nomination by meaning is memory_v1's (`memory_v1_private.semantic_nominate`, as for claims and
# chunks); vectors travel in binary (`%(v)b`), as in `read_queries.nominate`.
_PROFILES = ("SELECT id{} FROM memory_v1_private.semantic_nominate('entities', %(v)b, %(profiles)s)"
             " ORDER BY ord")


async def nominate_question(conn: Conn, text: str, vector: Any, predicate: str | None) -> list[list[str]]:
    """A question's channels, best first, in one statement: its facts by words and, when `vector`
    is given, by meaning and the facts of the entities whose profiles match best
    (`PROFILE_ENTITIES`). One statement where there were four: on `bench serve`'s memory a
    facts_context spent 0.6–0.7 ms less of the client's CPU and 0.4 ms less of PostgreSQL's, the
    answers the same bytes."""
    like = _like_pattern(text)
    words = ("SELECT f.fact_id::text FROM facts f WHERE (f.tsv @@ websearch_to_tsquery('english', %(t)s)"
             + (" OR f.label ILIKE %(like)s)" if like else ")") + _PREDICATE + _RANKED)
    channels = [f"ARRAY({words})"]
    if vector is not None:
        # Without a predicate, NULL is written into the statement rather than sent: the inlined
        # function's predicate test then folds away before its index scan is planned.
        wanted = "%(p)s" if predicate is not None else "NULL"
        channels += [f"ARRAY(SELECT id::text FROM memory_v1_private.semantic_nominate('facts', %(v)b, %(n)s,"
                     f" predicate => {wanted}) ORDER BY ord)",
                     f"ARRAY({_of_entities('(SELECT ids FROM profiles)::uuid[]')})"]
    # The profiles are matched once for both sides of `_of_entities`: written in place, each side
    # scanned every profile again (this channel cost PostgreSQL 2.76 ms a question, 2.19 once).
    profiles = (f"WITH profiles AS MATERIALIZED (SELECT ARRAY({_PROFILES.format('')}) AS ids) "
                if vector is not None else "")
    row = await fetch_one(conn, f"{profiles}SELECT {', '.join(channels)}",
                          {"t": text, "like": like, "p": predicate, "n": CANDIDATES, "v": vector,
                           "profiles": PROFILE_ENTITIES})
    return [list(found) for found in row]


async def best_profiles(conn: Conn, vector: Any) -> list[str]:
    """The entities whose profile vectors are nearest the question."""
    return [r[0] for r in await fetch(conn, _PROFILES.format("::text"), {"v": vector, "profiles": PROFILE_ENTITIES})]


async def confirm(conn: Conn, ids: list[str], span: dict[str, Any]) -> list[tuple]:
    """The nominated facts the memory holds now, in nomination order, matched to `span`."""
    return await fetch(conn, f"SELECT {MATCHED_FACT_COLUMNS} FROM facts f WHERE f.fact_id = ANY(%(ids)s::uuid[])"
                             f" AND {servable('fact', 'f')} ORDER BY array_position(%(ids)s::uuid[], f.fact_id)",
                       {"ids": ids, **span})


async def group_members(conn: Conn, groups: list[str]) -> list[tuple]:
    """The members of the contradiction groups the memory holds now, strongest first."""
    return await fetch(conn, f"SELECT {FACT_COLUMNS} FROM facts f WHERE f.contradiction_group = ANY(%s::uuid[])"
                             f" AND {servable('fact', 'f')} ORDER BY f.evidence_count DESC, f.label, f.fact_id",
                       (groups,))
