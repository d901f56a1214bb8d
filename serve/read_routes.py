"""The read API's lookups and searches: relations and observations, hydration and transcripts,
claim and chunk search (by URL or by body), adjacent chunks and name resolution.

Each route reads one snapshot of the `retrieval` pool (hydration and transcripts: `general`;
hydration on generic plans, `serve.replica.GENERIC_PLANS`); a question is embedded before its
connection is taken.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query, Response

from serve import models as m
from serve import reads
from serve.questions import Questions
from serve.replica import Pools

Channel = Literal["semantic", "bm25"]


def read_router(pools: Pools, questions: Questions) -> APIRouter:
    router = APIRouter()

    @router.get("/lookup/relations", response_model=dict[str, Any])
    async def lookup_relations(subject_entity_id: UUID | None = None, predicate: str | None = None,
                               object_entity_id: UUID | None = None, valid_at: m.UtcInstant | None = None,
                               k: Annotated[int, Query(ge=1, le=400)] = 50) -> Response:
        async with pools.snapshot("retrieval") as c:
            return m.envelope(await reads.lookup_relations(
                c, subject=str(subject_entity_id) if subject_entity_id else None, predicate=predicate,
                obj=str(object_entity_id) if object_entity_id else None, valid_at=valid_at, k=k))

    @router.get("/lookup/observations", response_model=dict[str, Any])
    async def lookup_observations(entity_id: UUID, property_query: str | None = None,
                                  k: Annotated[int, Query(ge=1, le=400)] = 10) -> Response:
        pin = questions.pin
        question = await questions.vector(property_query, pin) if property_query else None
        async with pools.snapshot("retrieval") as c:
            if question is not None:
                question = await questions.in_space(c, property_query, question, pin)
            return m.envelope(await reads.lookup_observations(c, str(entity_id), k, question))

    @router.get("/hydrate/relation/{relation_id}", response_model=dict[str, Any])
    async def hydrate_relation(relation_id: UUID, prefer: m.Prefer = None) -> Response:
        async with pools.snapshot(generic_plans=True) as c:
            return m.envelope(await reads.hydrate_relation(c, str(relation_id)), prefer)

    @router.get("/transcript/relation/{relation_id}", response_model=dict[str, Any])
    async def transcript_relation(relation_id: UUID) -> Response:
        async with pools.snapshot() as c:
            return m.envelope(await reads.transcript_relation(c, str(relation_id)))

    async def search(what: str, query: str, k: int, channel: Channel, prefer: list[str] | None = None
                     ) -> Response:
        """Both forms of `/search/claims` and `/search/chunks`: the URL's (GET) and the body's (POST)."""
        if "\x00" in query:   # PostgreSQL text cannot hold one
            raise HTTPException(422, "query must not contain NUL characters")
        pin = questions.pin
        question = await questions.vector(query, pin) if channel == "semantic" else None
        async with pools.snapshot("retrieval") as c:
            if question is not None:
                question = await questions.in_space(c, query, question, pin)
            return m.envelope(await reads.search(c, what, query, k, channel, question), prefer)

    @router.get("/search/claims", response_model=dict[str, Any])
    async def search_claims(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                            channel: Channel = "semantic", prefer: m.Prefer = None) -> Response:
        return await search("claims", query, k, channel, prefer)

    @router.get("/search/chunks", response_model=dict[str, Any])
    async def search_chunks(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                            channel: Channel = "semantic") -> Response:
        return await search("chunks", query, k, channel)

    # The same searches with the question in the body: a person's words stay out of URLs, access
    # logs and proxies. The GET forms stay for the `remember` client, which only has them.
    @router.post("/search/claims", response_model=dict[str, Any])
    async def search_claims_body(body: m.SearchRequest, prefer: m.Prefer = None) -> Response:
        return await search("claims", body.query, body.k, body.channel, prefer)

    @router.post("/search/chunks", response_model=dict[str, Any])
    async def search_chunks_body(body: m.SearchRequest) -> Response:
        return await search("chunks", body.query, body.k, body.channel)

    @router.get("/chunks/{chunk_id}/adjacent", response_model=dict[str, Any])
    async def adjacent_chunks(chunk_id: UUID, window: Annotated[int, Query(ge=1, le=2)] = 1) -> Response:
        async with pools.snapshot("retrieval") as c:
            return m.envelope(await reads.adjacent(c, str(chunk_id), window))

    @router.get("/resolve", response_model=dict[str, Any])
    async def resolve(name: Annotated[str, Query(min_length=1)],
                      context_entity_ids: Annotated[list[UUID], Query(max_length=8)] = ()) -> Response:
        async with pools.snapshot("retrieval") as c:
            return m.envelope(await reads.resolve_entity(c, name, [str(u) for u in context_entity_ids]))

    return router
