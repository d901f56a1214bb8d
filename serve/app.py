"""The read API: a FastAPI app over the PostgreSQL authority, served by Ray Serve.

`build_app(pools, deployment)` returns the FastAPI application (tests drive it in process);
`Api` is the Ray Serve ingress deployment around it. Handlers are plain functions run in
FastAPI's thread pool, each taking a connection from the pool of its kind: `general`,
`retrieval` or `graph`, whose sizes are the concurrency limits.

Error bodies are exactly `{"detail": ...}`, as the seed and the `remember` client expect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import psycopg
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from serve import models as m
from serve import operations, reads
from sql import facts_read, reconcile

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
                              kwargs={"autocommit": True})
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


def build_app(pools: Pools, deployment: DeploymentInfo) -> FastAPI:
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
                result = reads.facts_context(c, args["query"], time=TimeArg(**args.get("time", {})).query(),
                                             k=args.get("k", 15), evidence_per_fact=args.get("evidence_per_fact", 3),
                                             entity_ids=args.get("entity_ids"))
            else:
                raise HTTPException(501, f"operation {name!r} is not served yet")
        return result.model_dump(mode="json", by_alias=True)

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
