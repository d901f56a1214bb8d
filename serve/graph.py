"""Graph routes over the live fact tables: neighbourhood, path, citation path.

Breadth-first over relations, one SQL round per hop, bounded by `limit` edges. The edges are
memory_v1's (`memory_v1_private.walkable_edges`, migration 0016): a relation believed at
`believed_at` and confirmed at `valid_at` (a complete window), so a withdrawn edge, or one whose
window is unknown or partial, never appears and no path runs through one.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any

from serve import models as m
from serve.reads import freshness, now
from sql.read import read_queries
from sql.read.read_queries import Conn


def _scope(valid_at: datetime | None, believed_at: datetime | None, at: datetime) -> m.TemporalScope:
    if valid_at is None:
        return m.ScopeCurrent(evaluated_at=at, believed_at=at)
    return m.ScopeAsOf(valid_at=valid_at, evaluated_at=at, believed_at=believed_at)


def _edge(r: tuple) -> m.GraphEdge:
    return m.GraphEdge(relation_id=r[0], subject_id=r[1], object_id=r[2], predicate=r[3], fact=r[4],
                       evidence_count=r[5], valid_from=r[6], valid_until=r[7], valid_precision=r[8],
                       ingested_at=r[9], invalidated_at=r[10], support=r[11])


async def _walk(conn: Conn, start: str, hops: int, *, valid_at: datetime, believed_at: datetime | None,
                predicates: list[str], limit: int) -> tuple[dict[str, int], dict[str, tuple[str, tuple]], list[tuple], bool]:
    """(hops by entity, parent edge by entity, edges seen, truncated)."""
    depth, parent, edges, seen = {start: 0}, {}, [], set()
    frontier, truncated = [start], False
    for hop in range(1, hops + 1):
        if not frontier:
            break
        rows = await read_queries.graph_edges(conn, frontier, valid_at=valid_at, believed_at=believed_at,
                                        predicates=predicates, limit=limit - len(edges) + 1)
        if len(edges) + len(rows) > limit:
            rows, truncated = rows[:limit - len(edges)], True
        nxt = []
        for r in rows:
            if r[0] in seen:
                continue
            seen.add(r[0])
            edges.append(r)
            for here, there in ((str(r[1]), str(r[2])), (str(r[2]), str(r[1]))):
                if here in depth and there not in depth:
                    depth[there], parent[there] = hop, (here, r)
                    nxt.append(there)
        frontier = nxt
        if truncated:
            break
    return depth, parent, edges, truncated


def _path(parent: dict, names: dict[str, str], depth: dict[str, int], end: str) -> m.GraphPath:
    nodes, edges, here = [end], [], end
    while here in parent:
        here, row = parent[here]
        nodes.append(here)
        edges.append(row)
    nodes.reverse()
    edges.reverse()
    return m.GraphPath(length=len(edges), nodes=tuple(m.GraphNode(entity_id=n, name=names.get(n, ""), hops=depth[n])
                                                       for n in nodes), edges=tuple(_edge(e) for e in edges))


EDGE_BUDGET = 5000   # relations one neighbourhood walk may examine


def _cursor_key(entity_id: str, hops: int, predicates: list[str], valid_at: datetime | None,
                believed_at: datetime | None) -> str:
    """What a continuation is bound to: the same question, asked again for its next page."""
    asked = json.dumps([entity_id, hops, sorted(predicates), str(valid_at), str(believed_at)])
    return hashlib.sha256(asked.encode()).hexdigest()[:16]


def _continuation(key: str, offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"k": key, "o": offset}).encode()).decode()


def _offset(continuation: str | None, key: str) -> int | None:
    """The page a continuation points at; None when this route did not issue it for this question."""
    if continuation is None:
        return 0
    try:
        cursor = json.loads(base64.urlsafe_b64decode(continuation.encode()))
        ok = isinstance(cursor, dict) and cursor.get("k") == key and isinstance(cursor.get("o"), int)
        return cursor["o"] if ok and cursor["o"] > 0 else None
    except (ValueError, TypeError):
        return None


async def neighborhood(conn: Conn, *, entity_id: str, hops: int, predicates: list[str],
                       valid_at: datetime | None, believed_at: datetime | None, limit: int, include_paths: bool,
                       continuation: str | None = None) -> m.Envelope:
    """Entities within `hops`, nearest first, `limit` a page; the next page by `continuation`."""
    at = now()
    names = await read_queries.entity_names(conn, [entity_id])
    common: dict[str, Any] = {"grain": "fact", "temporal_scope": _scope(valid_at, believed_at, at),
                              "freshness": freshness(at)}
    if entity_id not in names:
        return m.Envelope(**common, negative=m.Negative(kind="unknown_entity", explanation=f"no entity {entity_id}"))
    key = _cursor_key(entity_id, hops, predicates, valid_at, believed_at)
    offset = _offset(continuation, key)
    if offset is None:
        return m.Envelope(**common, negative=m.Negative(
            kind="boundary", explanation="this continuation was not issued for this neighbourhood question",
            workaround="ask again without a continuation"))
    depth, parent, _, budget_hit = await _walk(conn, entity_id, hops, valid_at=valid_at or at, believed_at=believed_at,
                                         predicates=predicates, limit=EDGE_BUDGET)
    names = await read_queries.entity_names(conn, list(depth))
    reached = sorted((e for e in depth if e != entity_id), key=lambda e: (depth[e], names.get(e, ""), e))
    page = reached[offset:offset + limit]
    more = len(reached) > offset + limit
    paths = tuple(_path(parent, names, depth, e) for e in page) if include_paths else ()
    edges = {str(e.relation_id): e for p in paths for e in p.edges}
    return m.Envelope(
        **common, nodes=tuple(m.GraphNode(entity_id=e, name=names.get(e, ""), hops=depth[e]) for e in page),
        edges=tuple(edges.values()), paths=paths,
        truncation=m.Truncation(truncated=more or budget_hit, returned=len(page), estimated_total=len(reached),
                                total_is_exact=not budget_hit,
                                continuation=_continuation(key, offset + limit) if more else None,
                                reason="expansion_budget" if budget_hit else ("result_budget" if more else None)),
        negative=None if reached else m.Negative(kind="known_empty", explanation="no live relation at this entity"))


async def path(conn: Conn, *, start: str, end: str, max_hops: int, predicates: list[str],
               valid_at: datetime | None, believed_at: datetime | None, limit: int = 5000) -> m.Envelope:
    at = now()
    names = await read_queries.entity_names(conn, [start, end])
    common: dict[str, Any] = {"grain": "fact", "temporal_scope": _scope(valid_at, believed_at, at),
                              "freshness": freshness(at)}
    missing = [e for e in (start, end) if e not in names]
    if missing:
        return m.Envelope(**common, negative=m.Negative(kind="unknown_entity", explanation=f"no entity {missing[0]}"))
    depth, parent, _, truncated = await _walk(conn, start, max_hops, valid_at=valid_at or at, believed_at=believed_at,
                                        predicates=predicates, limit=limit)
    if end not in depth or start == end:
        kind = "boundary" if truncated else "known_empty"
        return m.Envelope(**common, negative=m.Negative(kind=kind, explanation=f"no path within {max_hops} hops"))
    names = await read_queries.entity_names(conn, list(depth))
    found = _path(parent, names, depth, end)
    return m.Envelope(**common, paths=(found,), nodes=found.nodes, edges=found.edges)


async def citation_path(conn: Conn, *, start: str, end: str, max_hops: int) -> m.Envelope:
    """Documents citing documents: corpusmem records no citation edges yet, so two live documents
    are an honest `known_empty`, never a fabricated chain."""
    at = now()
    live = await read_queries.live_documents(conn, [start, end])
    common: dict[str, Any] = {"grain": "fact", "temporal_scope": m.ScopeCurrent(evaluated_at=at, believed_at=at),
                              "freshness": freshness(at)}
    missing = [d for d in (start, end) if d not in live]
    if missing:
        return m.Envelope(**common, negative=m.Negative(kind="unknown_entity", explanation=f"no live document {missing[0]}"))
    return m.Envelope(**common, negative=m.Negative(
        kind="known_empty", explanation=f"no citation chain within {max_hops} hops (citations are not extracted yet)"))
