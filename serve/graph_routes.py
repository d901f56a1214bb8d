"""The graph routes: an entity's neighbourhood, a path between two entities, and a citation
path between two documents, each walked in one snapshot of the `graph` pool (the entities' walks
on generic plans, `serve.replica.GENERIC_PLANS`).

A walk reads edges at one world instant and one belief instant, given together or not at all.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Response
from pydantic import BaseModel, ConfigDict, Field

from serve import graph
from serve import models as m
from serve.replica import Pools

Predicates = list[Annotated[str, Field(min_length=1, max_length=200)]]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NeighborhoodRequest(_Body):
    entity_id: UUID
    hops: int = Field(default=2, ge=1, le=4)
    predicates: Predicates | None = Field(default=None, max_length=100)
    valid_at: m.UtcInstant | None = None
    believed_at: m.UtcInstant | None = None
    limit: int = Field(default=500, ge=1, le=500)
    continuation: str | None = Field(default=None, max_length=200)
    include_paths: bool = False


class PathRequest(_Body):
    from_entity_id: UUID
    to_entity_id: UUID
    max_hops: int = Field(default=4, ge=1, le=6)
    predicates: Predicates | None = Field(default=None, max_length=100)
    valid_at: m.UtcInstant | None = None
    believed_at: m.UtcInstant | None = None


class CitationPathRequest(_Body):
    from_doc_id: UUID
    to_doc_id: UUID
    max_hops: int = Field(default=6, ge=1, le=6)


def _both_clocks(body: NeighborhoodRequest | PathRequest) -> None:
    if (body.valid_at is None) != (body.believed_at is None):
        raise HTTPException(422, "valid_at and believed_at must be given together or not at all")


def graph_router(pools: Pools) -> APIRouter:
    router = APIRouter()

    @router.post("/graph/neighborhood", response_model=dict[str, Any])
    async def graph_neighborhood(body: NeighborhoodRequest) -> Response:
        _both_clocks(body)
        async with pools.snapshot("graph", generic_plans=True) as c:
            return m.envelope(await graph.neighborhood(c, entity_id=str(body.entity_id), hops=body.hops,
                                                       predicates=body.predicates or [], valid_at=body.valid_at,
                                                       believed_at=body.believed_at, limit=body.limit,
                                                       include_paths=body.include_paths,
                                                       continuation=body.continuation))

    @router.post("/graph/path", response_model=dict[str, Any])
    async def graph_path(body: PathRequest) -> Response:
        _both_clocks(body)
        async with pools.snapshot("graph", generic_plans=True) as c:
            return m.envelope(await graph.path(c, start=str(body.from_entity_id), end=str(body.to_entity_id),
                                               max_hops=body.max_hops, predicates=body.predicates or [],
                                               valid_at=body.valid_at, believed_at=body.believed_at))

    @router.post("/graph/citation-path", response_model=dict[str, Any])
    async def graph_citation_path(body: CitationPathRequest) -> Response:
        async with pools.snapshot("graph") as c:
            return m.envelope(await graph.citation_path(c, start=str(body.from_doc_id), end=str(body.to_doc_id),
                                                        max_hops=body.max_hops))

    return router
