"""The read API: a FastAPI app over the PostgreSQL authority, served by Ray Serve.

`build_app(pools, deployment)` returns the FastAPI application (tests drive it in process);
`Api` is the Ray Serve ingress deployment around it. Handlers are plain functions run in
FastAPI's thread pool, each taking a connection from the pool of its kind: `general`,
`retrieval` or `graph`, whose sizes are the concurrency limits.

Error bodies are exactly `{"detail": ...}`, as the seed and the `remember` client expect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import psycopg
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from serve import models as m
from serve import operations, reads
from sql import facts_read, reconcile

Channel = Literal["semantic", "bm25"]
OPERATION_NAMES = ("resolve_entity", "claims_and_sources_context", "facts_context", "combined_context")


@dataclass
class Pools:
    general: ConnectionPool
    retrieval: ConnectionPool
    graph: ConnectionPool

    def close(self) -> None:
        for pool in (self.general, self.retrieval, self.graph):
            pool.close()


def open_pools(dsn: str, *, general: int = 4, retrieval: int = 4, graph: int = 2) -> Pools:
    def pool(size: int, name: str) -> ConnectionPool:
        return ConnectionPool(dsn, min_size=1, max_size=size, name=name, open=True,
                              kwargs={"autocommit": True}, configure=register_vector)
    return Pools(pool(general, "general"), pool(retrieval, "retrieval"), pool(graph, "graph"))


@dataclass(frozen=True)
class DeploymentInfo:
    deployment_id: str
    build_revision: str
    embedding_model: str


class TimeArg(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mode: Literal["current", "at", "overlap", "history"] = "current"
    at: datetime | None = None
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None

    def query(self) -> facts_read.TimeQuery:
        try:
            return facts_read.TimeQuery(self.mode, at=self.at, start=self.from_, end=self.to)
        except facts_read.BadTimeQuery as err:
            raise HTTPException(422, {"code": "invalid_parameter", "message": str(err)}) from err


def build_app(pools: Pools, deployment: DeploymentInfo, embed: Callable[[str], Any]) -> FastAPI:
    """`embed(text)` gives a query vector (the query-embedder deployment, or a local model)."""
    app = FastAPI(title="corpusmem", version=deployment.build_revision,
                  description="The memory's read API: assured operations, lookups and documents.")

    @contextmanager
    def conn(kind: str = "general") -> Iterator[psycopg.Connection]:
        with getattr(pools, kind).connection() as c:
            yield c

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": [
            {k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in error.errors()]})

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        with conn() as c:
            c.execute("SELECT 1")
        return {"status": "ok"}

    @app.get("/deployment", response_model=m.DeploymentBuildInfo)
    def deployment_info() -> m.DeploymentBuildInfo:
        return m.DeploymentBuildInfo(build_revision=deployment.build_revision,
                                     model_bindings={"embedding": deployment.embedding_model},
                                     tools=operations.TOOL_VERSIONS)

    @app.get("/operations", response_model=list[m.ToolDescriptor])
    def list_operations() -> list[m.ToolDescriptor]:
        return operations.descriptors()

    @app.post("/operations/{name}")
    def run_operation(name: str, arguments: Annotated[dict[str, Any], Body()] = None) -> dict[str, Any]:
        if name not in OPERATION_NAMES:
            raise HTTPException(404, f"unknown operation {name!r}")
        args = operations.validate(name, arguments or {})
        with conn("retrieval") as c:
            if name == "resolve_entity":
                result = reads.resolve_entity(c, args["name"])
            elif name == "facts_context":
                result = facts(c, args)
            elif name == "claims_and_sources_context":
                result = reads.claims_and_sources_context(c, args["query"], k=args["k"], candidate_k=args["candidate_k"],
                                                          vector=vector(args["query"]))
            else:
                result = m.ContextBundle(
                    claims_and_sources=reads.claims_and_sources_context(c, args["query"], vector=vector(args["query"])),
                    facts=facts(c, {**args, "k": 15, "evidence_per_fact": 3}))
        return result.model_dump(mode="json", by_alias=True)

    def facts(c: psycopg.Connection, args: dict[str, Any]) -> m.Envelope:
        return reads.facts_context(c, args["query"], time=TimeArg(**args.get("time", {})).query(), k=args["k"],
                                   evidence_per_fact=args["evidence_per_fact"], entity_ids=args.get("entity_ids"))

    def vector(text: str) -> Any:
        try:
            return embed(text)
        except Exception as err:  # the embedder is a separate deployment; its failure is the seed's 503
            raise HTTPException(503, "model provider unavailable") from err

    def envelope(result: m.Envelope) -> dict[str, Any]:
        return result.model_dump(mode="json", by_alias=True)

    @app.get("/lookup/relations")
    def lookup_relations(subject_entity_id: UUID | None = None, predicate: str | None = None,
                         object_entity_id: UUID | None = None, valid_at: datetime | None = None,
                         k: Annotated[int, Query(ge=1, le=400)] = 50) -> dict[str, Any]:
        if valid_at is not None and (valid_at.utcoffset() is None or valid_at.utcoffset().total_seconds() != 0):
            raise HTTPException(422, "valid_at must be UTC (Z or +00:00)")
        with conn("retrieval") as c:
            return envelope(reads.lookup_relations(
                c, subject=str(subject_entity_id) if subject_entity_id else None, predicate=predicate,
                obj=str(object_entity_id) if object_entity_id else None, valid_at=valid_at, k=k))

    @app.get("/lookup/observations")
    def lookup_observations(entity_id: UUID, property_query: str | None = None,
                            k: Annotated[int, Query(ge=1, le=400)] = 10) -> dict[str, Any]:
        with conn("retrieval") as c:
            return envelope(reads.lookup_observations(c, str(entity_id), k,
                                                      vector(property_query) if property_query else None))

    @app.get("/hydrate/relation/{relation_id}")
    def hydrate_relation(relation_id: UUID) -> dict[str, Any]:
        with conn() as c:
            return envelope(reads.hydrate_relation(c, str(relation_id)))

    @app.get("/transcript/relation/{relation_id}")
    def transcript_relation(relation_id: UUID) -> dict[str, Any]:
        with conn() as c:
            return envelope(reads.transcript_relation(c, str(relation_id)))

    @app.get("/search/claims")
    def search_claims(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                      channel: Channel = "semantic") -> dict[str, Any]:
        with conn("retrieval") as c:
            return envelope(reads.search(c, "claims", query, k, channel, vector(query) if channel == "semantic" else None))

    @app.get("/search/chunks")
    def search_chunks(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                      channel: Channel = "semantic") -> dict[str, Any]:
        with conn("retrieval") as c:
            return envelope(reads.search(c, "chunks", query, k, channel, vector(query) if channel == "semantic" else None))

    @app.get("/chunks/{chunk_id}/adjacent")
    def adjacent_chunks(chunk_id: UUID, window: Annotated[int, Query(ge=1, le=2)] = 1) -> dict[str, Any]:
        with conn("retrieval") as c:
            return envelope(reads.adjacent(c, str(chunk_id), window))

    @app.get("/documents", response_model=m.DocumentPage)
    def list_documents(limit: Annotated[int, Query(ge=1, le=200)] = 50, cursor: UUID | None = None,
                       status: Literal["ingesting", "converting", "structuring", "ready", "failed"] | None = None
                       ) -> m.DocumentPage:
        with conn() as c:
            return reads.list_documents(c, limit, str(cursor) if cursor else None, status)

    @app.get("/resolve")
    def resolve(name: Annotated[str, Query(min_length=1)],
                context_entity_ids: Annotated[list[UUID], Query(max_length=8)] = ()) -> dict[str, Any]:
        with conn("retrieval") as c:
            result = reads.resolve_entity(c, name, [str(u) for u in context_entity_ids])
        return result.model_dump(mode="json", by_alias=True)

    @app.delete("/documents/{doc_id}", response_model=m.DocumentDeletion)
    def delete_document(doc_id: UUID) -> m.DocumentDeletion:
        with conn() as c:
            started = c.execute("SELECT now()").fetchone()[0]
            try:
                retired = reconcile.delete_document(c, str(doc_id))
            except reconcile.UnknownDocument as err:
                raise HTTPException(404, "document_not_found") from err
            reconcile.reconcile_facts(c, started, None)
            closed = dict(c.execute(
                "SELECT f.kind, count(*) FROM facts f JOIN fact_decisions d USING (fact_id)"
                " WHERE d.outcome = 'retracted_source_removal' AND d.decided_at >= %s GROUP BY 1", (started,)).fetchall())
            deleted_at = c.execute("SELECT deleted_at FROM documents WHERE doc_id = %s", (doc_id,)).fetchone()[0]
        return m.DocumentDeletion(doc_id=doc_id, deleted_at=deleted_at, claims_retired=retired,
                                  relations_closed=closed.get("relation", 0),
                                  observations_closed=closed.get("observation", 0))

    return app
