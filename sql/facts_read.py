"""Reading facts: "facts about entity X / matching text T, in time mode current | at | overlap |
history", with `temporal_match`, contradiction co-members and honest negatives.

Reads current belief only (`invalidated_at` empty). A fact in a live contradiction group is
never returned without its other sides. The HTTP API's `facts_context` is built on this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import psycopg

from pipeline import fusion, names, windows
from pipeline.windows import Window
from sql import read_queries

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


def find_entities(conn: psycopg.Connection, name: str) -> list[tuple[str, str, str]]:
    """(entity_id, canonical_name, tier) for a name: exact alias (T0), else similar spelling (T1),
    else similar sound (T2). Never picks among several: every candidate comes back."""
    key = names.key(name)
    rows = conn.execute("SELECT DISTINCT e.entity_id::text, e.canonical_name FROM entity_aliases a"
                        " JOIN entities e USING (entity_id) WHERE a.alias_key = %s ORDER BY 2, 1", (key,)).fetchall()
    if rows:
        return [(r[0], r[1], "T0") for r in rows]
    rows = conn.execute("SELECT e.entity_id::text, e.canonical_name, max(similarity(a.alias_key, %(k)s)) s"
                        " FROM entity_aliases a JOIN entities e USING (entity_id) WHERE a.alias_key %% %(k)s"
                        " GROUP BY 1, 2 ORDER BY s DESC, 2, 1 LIMIT 10", {"k": key}).fetchall()
    if rows:
        return [(r[0], r[1], "T1") for r in rows]
    rows = conn.execute("SELECT DISTINCT e.entity_id::text, e.canonical_name FROM entity_aliases a"
                        " JOIN entities e USING (entity_id) WHERE a.dm_codes && daitch_mokotoff(%s)"
                        " ORDER BY 2, 1 LIMIT 10", (key,)).fetchall()
    return [(r[0], r[1], "T2") for r in rows]


def facts(conn: psycopg.Connection, *, entity_ids: list[str] | None = None, text: str | None = None,
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
        known = read_queries.entity_names(conn, entity_ids)
        missing = [e for e in entity_ids if e not in known]
        if missing:
            return FactsAnswer([], scope, {"kind": "unknown_entity",
                                           "explanation": f"no entity {', '.join(missing)}"}, entity_ids=entity_ids)
        if time.mode in ("current", "at"):
            nodes = expand(conn, entity_ids, hops, valid_at=time.at or now, predicate=predicate)
        ranked = _nominate_entities(conn, entity_ids + [e for e, _ in nodes], predicate)
    else:
        channels = [_nominate_words(conn, text or "", predicate)]
        if vector is not None:
            channels += [_nominate_meaning(conn, vector, predicate), _nominate_profiles(conn, vector, predicate)]
        ranked = fusion.fuse(channels)[:CANDIDATES]
    rows = _confirm(conn, ranked)
    dropped = len(ranked) - len(rows)
    found = [f for f in (result_from_row(row, time, now) for row in rows) if f is not None]
    truncated = len(found) > k
    found = found[:k]
    attach_co_members(conn, found)
    negative = None
    if not found:
        negative = {"kind": "known_empty", "explanation": "no current fact matches" +
                    (" these entities" if entity_ids else "") + (f" {text!r}" if text and not entity_ids else "") +
                    f" in time mode {time.mode}"}
    return FactsAnswer(found, scope, negative, truncated, entity_ids or [], nodes, dropped)


GRAPH_ENTITIES = 20   # the seed's cap on the expanded entity set, anchors included
EXPANSION_EDGES = 2000   # relations one expansion hop may read


def expand(conn: psycopg.Connection, anchors: list[str], hops: int, *, valid_at: datetime,
           predicate: str | None) -> list[tuple[str, int]]:
    """(entity_id, hops) of the neighbours within `hops` on the live graph at `valid_at` (the
    graph routes' edges: believed now, not withdrawn), nearest first and, within a hop, along the
    best-evidenced relations first, filling at most 20 entities with the anchors."""
    seen, added, frontier = set(anchors), [], list(anchors)
    for hop in range(1, hops + 1):
        if not frontier or len(seen) >= GRAPH_ENTITIES:
            break
        edges = read_queries.graph_edges(conn, frontier, valid_at=valid_at, believed_at=None,
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


def _nominate_entities(conn: psycopg.Connection, ids: list[str], predicate: str | None) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT f.fact_id::text FROM facts f WHERE (f.subject_id = ANY(%(ids)s::uuid[])"
        " OR f.object_id = ANY(%(ids)s::uuid[]))" + _PREDICATE +
        " ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST, f.label, f.fact_id LIMIT %(n)s",
        {"ids": ids, "p": predicate, "n": CANDIDATES}).fetchall()]


def _nominate_words(conn: psycopg.Connection, text: str, predicate: str | None) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT f.fact_id::text FROM facts f WHERE (f.tsv @@ websearch_to_tsquery('english', %(t)s)"
        " OR f.label ILIKE %(like)s)" + _PREDICATE +
        " ORDER BY f.evidence_count DESC, f.valid_from DESC NULLS LAST, f.label, f.fact_id LIMIT %(n)s",
        {"t": text, "like": f"%{text}%", "p": predicate, "n": CANDIDATES}).fetchall()]


def _nominate_meaning(conn: psycopg.Connection, vector: Any, predicate: str | None) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT f.fact_id::text FROM facts f WHERE f.embedding IS NOT NULL" + _PREDICATE +
        " ORDER BY f.embedding <=> %(v)s, f.fact_id LIMIT %(n)s",
        {"v": vector, "p": predicate, "n": CANDIDATES}).fetchall()]


def _nominate_profiles(conn: psycopg.Connection, vector: Any, predicate: str | None) -> list[str]:
    """Facts of the 20 entities whose profiles match best (helps list-shaped questions)."""
    best = [r[0] for r in conn.execute(
        "SELECT entity_id::text FROM entities WHERE profile_embedding IS NOT NULL"
        " ORDER BY profile_embedding <=> %s, entity_id LIMIT %s", (vector, GRAPH_ENTITIES)).fetchall()]
    return _nominate_entities(conn, best, predicate) if best else []


def _confirm(conn: psycopg.Connection, ids: list[str]) -> list[tuple]:
    """The nominated facts still believed (not invalidated), in nomination order."""
    return conn.execute(f"SELECT {_COLUMNS} FROM facts f WHERE f.fact_id = ANY(%(ids)s::uuid[])"
                        " AND f.invalidated_at IS NULL ORDER BY array_position(%(ids)s::uuid[], f.fact_id)",
                        {"ids": ids}).fetchall()


def attach_co_members(conn: psycopg.Connection, found: list[FactResult]) -> None:
    """Every fact in a live contradiction group carries the other sides, up to 25 inline."""
    for fact in found:
        if fact.contradiction_group is None:
            continue
        others = conn.execute(
            f"SELECT {_COLUMNS} FROM facts f WHERE f.contradiction_group = %s AND f.fact_id <> %s"
            " AND f.invalidated_at IS NULL ORDER BY f.evidence_count DESC, f.label, f.fact_id",
            (fact.contradiction_group, fact.fact_id)).fetchall()
        if not others:
            continue  # every other side was retracted: the group is no longer live
        inline = others[:CO_MEMBERS_INLINE]
        fact.contradiction = {
            "group_id": fact.contradiction_group,
            "co_members": [{"fact_id": r[0], "label": r[2], "evidence_count": r[3], "validity": _validity(r)}
                           for r in inline],
            "returned": len(inline), "total": len(others), "continuation": None}
