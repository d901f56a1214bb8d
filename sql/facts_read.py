"""Reading facts: "facts about entity X / matching text T, in time mode current | at | overlap |
history", with `temporal_match`, contradiction co-members and honest negatives.

Reads current belief only (`invalidated_at` empty). A fact in a live contradiction group is
never returned without its other sides. The HTTP API's `facts_context` is built on this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector_async

from pipeline import fusion, names, windows
from pipeline.windows import Window
from sql import read_queries
from sql.read_queries import Conn, fetch

T = TypeVar("T")

MODES = ("current", "at", "overlap", "history")
CANDIDATES = 200
CO_MEMBERS_INLINE = 25

_COLUMNS = ("f.fact_id::text, f.kind, f.label, f.evidence_count, f.valid_from, f.valid_until, f.valid_precision,"
            " f.ingested_at, f.invalidated_at, f.contradiction_group::text, f.support, f.window_source")


class BadTimeQuery(ValueError):
    """A time question that cannot be asked (naive instant, missing bound, unknown mode)."""


@dataclass(frozen=True)
class TimeQuery:
    mode: str = "current"
    at: datetime | None = None
    start: datetime | None = None   # overlap: inclusive range
    end: datetime | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BadTimeQuery(f"time mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        needed = {"at": ("at",), "overlap": ("start", "end")}.get(self.mode, ())
        for name in needed:
            if getattr(self, name) is None:
                raise BadTimeQuery(f"time mode {self.mode!r} needs {name!r}")
        for name in ("at", "start", "end"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise BadTimeQuery(f"{name} must carry a time zone: {value.isoformat()}")
        if self.mode == "overlap" and self.start > self.end:
            raise BadTimeQuery("overlap needs start <= end")


@dataclass
class FactResult:
    fact_id: str
    kind: str
    label: str
    evidence_count: int
    validity: dict[str, Any]
    temporal_match: str
    support: str
    contradiction_group: str | None = None
    contradiction: dict[str, Any] | None = None


@dataclass
class FactsAnswer:
    facts: list[FactResult]
    temporal_scope: dict[str, Any]
    negative: dict[str, str] | None = None
    truncated: bool = False
    entity_ids: list[str] = field(default_factory=list)
    nodes: list[tuple[str, int]] = field(default_factory=list)   # (entity_id, hops) the expansion added
    dropped: int = 0   # nominated candidates that failed confirmation


def _validity(row: tuple) -> dict[str, Any]:
    return {"valid_from": row[4], "valid_until": row[5], "valid_precision": row[6], "ingested_at": row[7],
            "invalidated_at": row[8]}


def result_from_row(row: tuple, time: TimeQuery | None, now: datetime) -> FactResult | None:
    """A fact row (`_COLUMNS`) as a result, or None when its window rules it out of `time`
    (`time` None: every fact, matched as `history` would)."""
    window = Window(row[4], row[5], row[6], row[11])
    t = time or TimeQuery("history")
    match = windows.temporal_match(window, t.mode, now=now, at=t.at, start=t.start, end=t.end)
    if match is None:
        if time is not None:
            return None
        match = "confirmed" if window.complete else "possible"
    return FactResult(fact_id=row[0], kind=row[1], label=row[2], evidence_count=row[3], validity=_validity(row),
                      temporal_match=match, support=row[10], contradiction_group=row[9])


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
    else similar sound (T2). Never picks among several: every candidate comes back."""
    key = names.key(name)
    rows = await fetch(conn, "SELECT DISTINCT e.entity_id::text, e.canonical_name FROM entity_aliases a"
                             " JOIN entities e USING (entity_id) WHERE a.alias_key = %s ORDER BY 2, 1", (key,))
    if rows:
        return [(r[0], r[1], "T0") for r in rows]
    rows = await fetch(conn, "SELECT e.entity_id::text, e.canonical_name, max(similarity(a.alias_key, %(k)s)) s"
                             " FROM entity_aliases a JOIN entities e USING (entity_id) WHERE a.alias_key %% %(k)s"
                             " GROUP BY 1, 2 ORDER BY s DESC, 2, 1 LIMIT 10", {"k": key})
    if rows:
        return [(r[0], r[1], "T1") for r in rows]
    rows = await fetch(conn, "SELECT DISTINCT e.entity_id::text, e.canonical_name FROM entity_aliases a"
                             " JOIN entities e USING (entity_id) WHERE a.dm_codes && daitch_mokotoff(%s)"
                             " ORDER BY 2, 1 LIMIT 10", (key,))
    return [(r[0], r[1], "T2") for r in rows]


async def facts(conn: Conn, *, entity_ids: list[str] | None = None, text: str | None = None,
                time: TimeQuery = TimeQuery(), k: int = 20, now: datetime | None = None, vector: Any = None,
                hops: int = 1, predicate: str | None = None) -> FactsAnswer:
    """Facts about `entity_ids` (as subject or object), else facts matching `text`.

    Candidates are nominated (by the entity set; or by words, by meaning when `vector` is given,
    and by the 20 entities whose profiles match best), fused by reciprocal rank, then confirmed
    against the facts table: a candidate no longer believed is counted in `dropped`, never
    served. With `entity_ids` in mode current or at, the anchors are first expanded `hops` out on
    the live graph (at most 20 entities, anchors included); the neighbours added are `nodes`."""
    now = now or datetime.now(timezone.utc)
    scope = {"mode": time.mode, "evaluated_at": now, "at": time.at, "from": time.start, "to": time.end}
    nodes: list[tuple[str, int]] = []
    if entity_ids:
        known = await read_queries.entity_names(conn, entity_ids)
        missing = [e for e in entity_ids if e not in known]
        if missing:
            return FactsAnswer([], scope, {"kind": "unknown_entity",
                                           "explanation": f"no entity {', '.join(missing)}"}, entity_ids=entity_ids)
        if time.mode in ("current", "at"):
            nodes = await expand(conn, entity_ids, hops, valid_at=time.at or now, predicate=predicate)
        ranked = await _nominate_entities(conn, entity_ids + [e for e, _ in nodes], predicate)
    else:
        channels = [await _nominate_words(conn, text or "", predicate)]
        if vector is not None:
            channels += [await _nominate_meaning(conn, vector, predicate),
                         await _nominate_profiles(conn, vector, predicate)]
        ranked = fusion.fuse(channels)[:CANDIDATES]
    rows = await _confirm(conn, ranked)
    dropped = len(ranked) - len(rows)
    found = [f for f in (result_from_row(row, time, now) for row in rows) if f is not None]
    truncated = len(found) > k
    found = found[:k]
    await attach_co_members(conn, found)
    negative = None
    if not found:
        negative = {"kind": "known_empty", "explanation": "no current fact matches" +
                    (" these entities" if entity_ids else "") + (f" {text!r}" if text and not entity_ids else "") +
                    f" in time mode {time.mode}"}
    return FactsAnswer(found, scope, negative, truncated, entity_ids or [], nodes, dropped)


GRAPH_ENTITIES = 20   # the seed's cap on the expanded entity set, anchors included
EXPANSION_EDGES = 2000   # relations one expansion hop may read


async def expand(conn: Conn, anchors: list[str], hops: int, *, valid_at: datetime,
                 predicate: str | None) -> list[tuple[str, int]]:
    """(entity_id, hops) of the neighbours within `hops` on the live graph at `valid_at` (the
    graph routes' edges: believed now, not withdrawn), nearest first and, within a hop, along the
    best-evidenced relations first, filling at most 20 entities with the anchors."""
    seen, added, frontier = set(anchors), [], list(anchors)
    for hop in range(1, hops + 1):
        if not frontier or len(seen) >= GRAPH_ENTITIES:
            break
        edges = await read_queries.graph_edges(conn, frontier, valid_at=valid_at, believed_at=None,
                                         predicates=[predicate] if predicate else [], limit=EXPANSION_EDGES)
        frontier = []
        for entity_id in (str(end) for edge in edges for end in (edge[1], edge[2]) if end is not None):
            if entity_id in seen or len(seen) >= GRAPH_ENTITIES:
                continue
            seen.add(entity_id)
            added.append((entity_id, hop))
            frontier.append(entity_id)
    return added


_PREDICATE = " AND (%(p)s::text IS NULL OR f.predicate = %(p)s)"


async def _nominate_entities(conn: Conn, ids: list[str], predicate: str | None) -> list[str]:
    return [r[0] for r in await fetch(
        conn, "SELECT f.fact_id::text FROM facts f WHERE (f.subject_id = ANY(%(ids)s::uuid[])"
        " OR f.object_id = ANY(%(ids)s::uuid[]))" + _PREDICATE +
        " ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST, f.label, f.fact_id LIMIT %(n)s",
        {"ids": ids, "p": predicate, "n": CANDIDATES})]


async def _nominate_words(conn: Conn, text: str, predicate: str | None) -> list[str]:
    return [r[0] for r in await fetch(
        conn, "SELECT f.fact_id::text FROM facts f WHERE (f.tsv @@ websearch_to_tsquery('english', %(t)s)"
        " OR f.label ILIKE %(like)s)" + _PREDICATE +
        " ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST, f.label, f.fact_id LIMIT %(n)s",
        {"t": text, "like": f"%{text}%", "p": predicate, "n": CANDIDATES})]


# Vectors travel in binary (`%b`), as in `read_queries.nominate`.
async def _nominate_meaning(conn: Conn, vector: Any, predicate: str | None) -> list[str]:
    return [r[0] for r in await fetch(
        conn, "SELECT f.fact_id::text FROM facts f WHERE f.embedding IS NOT NULL" + _PREDICATE +
        " ORDER BY f.embedding <=> %(v)b, f.fact_id LIMIT %(n)s",
        {"v": vector, "p": predicate, "n": CANDIDATES})]


async def _nominate_profiles(conn: Conn, vector: Any, predicate: str | None) -> list[str]:
    """Facts of the 20 entities whose profiles match best (helps list-shaped questions)."""
    best = [r[0] for r in await fetch(
        conn, "SELECT entity_id::text FROM entities WHERE profile_embedding IS NOT NULL"
        " ORDER BY profile_embedding <=> %b, entity_id LIMIT %s", (vector, GRAPH_ENTITIES))]
    return await _nominate_entities(conn, best, predicate) if best else []


async def _confirm(conn: Conn, ids: list[str]) -> list[tuple]:
    """The nominated facts still believed (not invalidated), in nomination order."""
    return await fetch(conn, f"SELECT {_COLUMNS} FROM facts f WHERE f.fact_id = ANY(%(ids)s::uuid[])"
                             " AND f.invalidated_at IS NULL ORDER BY array_position(%(ids)s::uuid[], f.fact_id)",
                       {"ids": ids})


async def attach_co_members(conn: Conn, found: list[FactResult]) -> None:
    """Every fact in a live contradiction group carries the other sides, up to 25 inline."""
    groups = sorted({f.contradiction_group for f in found if f.contradiction_group is not None})
    if not groups:
        return
    members: dict[str, list[tuple]] = {}
    for row in await fetch(conn, f"SELECT {_COLUMNS} FROM facts f WHERE f.contradiction_group = ANY(%s::uuid[])"
                                 " AND f.invalidated_at IS NULL ORDER BY f.evidence_count DESC, f.label, f.fact_id",
                           (groups,)):
        members.setdefault(row[9], []).append(row)
    for fact in found:
        if fact.contradiction_group is None:
            continue
        others = [r for r in members.get(fact.contradiction_group, []) if r[0] != fact.fact_id]
        if not others:
            continue  # every other side was retracted: the group is no longer live
        inline = others[:CO_MEMBERS_INLINE]
        fact.contradiction = {
            "group_id": fact.contradiction_group,
            "co_members": [{"fact_id": r[0], "label": r[2], "evidence_count": r[3], "validity": _validity(r)}
                           for r in inline],
            "returned": len(inline), "total": len(others), "continuation": None}
