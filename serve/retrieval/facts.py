"""Retrieving facts: "facts about entity X / matching text T, in time mode current | at | overlap |
history", with `temporal_match`, contradiction co-members and honest negatives.

Candidates are nominated, fused, confirmed and (for anchored questions) expanded on the graph
here; the SQL of each step is in `sql/read/facts_queries.py`. Reads current belief only (`invalidated_at` empty). A fact in a live contradiction group is
never returned without its other sides. The HTTP API's `facts_context` is built on this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from serve.retrieval import confirmation, fusion
from sql.read import facts_queries, read_queries
from sql.read.read_queries import Conn

# The time modes and the instants each is asked with, as the API names them: the one statement of
# the modes, from which the operations' JSON Schema (`serve/operations.py::TIME`) is built and by
# which `TimeQuery` checks a question however it arrived.
MODE_INSTANTS: dict[str, tuple[str, ...]] = {"current": (), "at": ("at",), "overlap": ("from", "to"), "history": ()}
MODES = tuple(MODE_INSTANTS)
_FIELDS = {"at": "at", "from": "start", "to": "end"}   # the API's names → TimeQuery's
CO_MEMBERS_INLINE = 25


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
        for name in MODE_INSTANTS[self.mode]:
            if getattr(self, _FIELDS[name]) is None:
                raise BadTimeQuery(f"time mode {self.mode!r} needs {name!r}")
        for name in ("at", "start", "end"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                raise BadTimeQuery(f"{name} must carry a time zone: {value.isoformat()}")
        if self.mode == "overlap" and self.start > self.end:
            raise BadTimeQuery("overlap needs start <= end")

    def span(self, now: datetime) -> dict[str, datetime | None]:
        """The question as the span a fact's window must meet (`read_queries.MATCHED_FACT_COLUMNS`):
        begun by `begun_by` and not ended at `ends_after`. current and at: true at an instant;
        overlap: shares an instant with [start, end], both inclusive; history: began by now."""
        begun_by, ends_after = {"current": (now, now), "at": (self.at, self.at), "overlap": (self.end, self.start),
                                "history": (now, None)}[self.mode]
        return {"begun_by": begun_by, "ends_after": ends_after}


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


def result_from_row(row: tuple, *, keep_any: bool = False) -> FactResult | None:
    """A fact row (`read_queries.MATCHED_FACT_COLUMNS`) as a result, or None when its window rules
    it out of the time question it was read for (`keep_any`: never)."""
    holds, complete = row[12], row[13]
    if not holds and not keep_any:
        return None
    return FactResult(fact_id=row[0], kind=row[1], label=row[2], evidence_count=row[3], validity=_validity(row),
                      temporal_match="confirmed" if complete else "possible", support=row[10],
                      contradiction_group=row[9])


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
        ranked = await facts_queries.nominate_entities(conn, entity_ids + [e for e, _ in nodes], predicate)
    else:
        # by words; with a vector also by meaning, and the facts of the entities whose profiles
        # match best, which help list-shaped questions
        channels = await facts_queries.nominate_question(conn, text or "", vector, predicate)
        ranked = fusion.fuse(channels)[:facts_queries.CANDIDATES]
    found, read, confirmed = await confirm_best(conn, ranked, time, now, k)
    dropped = read - confirmed
    truncated = len(found) > k
    found = found[:k]
    await attach_co_members(conn, found)
    negative = None
    if not found:
        negative = {"kind": "known_empty", "explanation": "no current fact matches" +
                    (" these entities" if entity_ids else "") + (f" {text!r}" if text and not entity_ids else "") +
                    f" in time mode {time.mode}"}
    return FactsAnswer(found, scope, negative, truncated, entity_ids or [], nodes, dropped)


async def confirm_best(conn: Conn, ranked: list[str], time: TimeQuery, now: datetime,
                       k: int) -> tuple[list[FactResult], int, int]:
    """The results among the best-ranked candidates that the memory holds now and `time` keeps,
    confirmed a page at a time until there are more than `k` (`confirmation.best_pages`); with
    how many candidates were read and how many of them were confirmed. Confirming all 200
    nominees cost 7.5 ms of a request that serves 15; pages of 50, 1.55 ms."""
    span = time.span(now)

    async def confirm(page: list[str]) -> list[tuple[tuple, FactResult | None]]:
        return [(row, result_from_row(row)) for row in await facts_queries.confirm(conn, page, span)]

    confirmed, read = await confirmation.best_pages(
        confirm, ranked, page=confirmation.page(k), enough=lambda got: sum(r is not None for _, r in got) > k)
    return [r for _, r in confirmed if r is not None], read, len(confirmed)


GRAPH_ENTITIES = 20   # the seed's cap on the expanded entity set, anchors included
EXPANSION_EDGES = 2000   # relations one expansion hop may read


async def expand(conn: Conn, anchors: list[str], hops: int, *, valid_at: datetime,
                 predicate: str | None) -> list[tuple[str, int]]:
    """(entity_id, hops) of the neighbours within `hops` on the live graph at `valid_at` (the
    graph routes' edges: believed now, confirmed at `valid_at`, not withdrawn), nearest first and,
    within a hop, along the best-evidenced relations first, filling at most 20 entities with the
    anchors."""
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


async def attach_co_members(conn: Conn, found: list[FactResult]) -> None:
    """Every fact in a live contradiction group carries the other sides, up to 25 inline."""
    groups = sorted({f.contradiction_group for f in found if f.contradiction_group is not None})
    if not groups:
        return
    members: dict[str, list[tuple]] = {}
    for row in await facts_queries.group_members(conn, groups):
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
