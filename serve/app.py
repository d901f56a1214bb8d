"""The read API: a FastAPI app over the PostgreSQL authority, served by Ray Serve.

`build_app(pools, deployment, embed)` returns the FastAPI application (tests drive it in
process); `Api` is the Ray Serve ingress deployment around it. Read handlers are coroutines, each
awaiting a connection from the async psycopg pool of its kind, `general`, `retrieval` or `graph`,
whose sizes are the concurrency limits; a question is embedded before its connection is taken,
so no connection waits on the model. Ingest, document deletion and the SQL query space share
their code with the import pipeline and the CLI, which are synchronous: they run in FastAPI's
thread pool on the `sync` pool.

Error bodies are exactly `{"detail": ...}`, as the seed and the `remember` client expect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import psycopg
from fastapi import Body, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool, ConnectionPool
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from actors.object_store import ObjectStore
from serve import admission, auth, graph, metrics, operations, reads
from serve import ingest as ingest_route
from serve import models as m
from serve.ingest import ingest as ingest_version
from serve.query_routes import query_router
from serve.retrieval import facts as facts_retrieval
from sql.read import document_queries
from sql.store import authority as store
from sql.write import reconcile

Channel = Literal["semantic", "bm25"]
OPERATION_NAMES = ("resolve_entity", "claims_and_sources_context", "facts_context", "combined_context")


@dataclass
class Pools:
    general: AsyncConnectionPool
    retrieval: AsyncConnectionPool
    graph: AsyncConnectionPool
    # ingest, deletion and the saved-query registry: code shared with the pipeline and the CLI;
    # open from the start, as the query routes seed the registry when the app is built
    sync: ConnectionPool

    async def open(self) -> None:
        for pool in (self.general, self.retrieval, self.graph):
            await pool.open(wait=True, timeout=30)

    async def close(self) -> None:
        for pool in (self.general, self.retrieval, self.graph):
            await pool.close()
        self.sync.close()


async def _configure(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)
    # every transaction of a read pool reads one snapshot and writes nothing
    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    await conn.set_read_only(True)
    await conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(store.HNSW_EF_SEARCH),))


@asynccontextmanager
async def read_snapshot(pool: AsyncConnectionPool) -> AsyncIterator[psycopg.AsyncConnection]:
    """A connection of a read pool inside one REPEATABLE READ READ ONLY transaction: everything a
    route reads (totals, evidence, co-members) comes from one snapshot of the authority."""
    async with pool.connection() as c, c.transaction():
        yield c


def open_pools(dsn: str, *, general: int = 4, retrieval: int = 4, graph: int = 2, sync: int = 2) -> Pools:
    """The pools of one replica; the async ones are opened by the app's lifespan, inside its loop."""
    def pool(size: int, name: str) -> AsyncConnectionPool:
        return AsyncConnectionPool(dsn, min_size=1, max_size=size, name=name, open=False,
                                   kwargs={"autocommit": True}, configure=_configure)
    return Pools(pool(general, "general"), pool(retrieval, "retrieval"), pool(graph, "graph"),
                 ConnectionPool(dsn, min_size=1, max_size=sync, name="sync", open=True, kwargs={"autocommit": True}))


@dataclass(frozen=True)
class DeploymentInfo:
    deployment_id: str
    build_revision: str
    embedding_model: str
    object_store: str = ""
    max_ingest_bytes: int = 64 * 1024 * 1024
    credentials: tuple[tuple[str, str], ...] = ()   # (sha256 of a secret, scope); empty: auth off
    limits: admission.Limits = admission.Limits()   # admission limits; all off by default
    signed_tokens: auth.SignedTokens = auth.SignedTokens()   # JWT keys; none: shared secrets only
    cors_origins: tuple[str, ...] = ()   # browser origins that may call the API; empty: none
    trusted_principal_source: bool = False   # believe X-Ingest-Principal-* (a gateway sets them)


class TimeArg(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mode: Literal["current", "at", "overlap", "history"] = "current"
    at: datetime | None = None
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None

    def query(self) -> facts_retrieval.TimeQuery:
        try:
            return facts_retrieval.TimeQuery(self.mode, at=self.at, start=self.from_, end=self.to)
        except facts_retrieval.BadTimeQuery as err:
            raise HTTPException(422, {"code": "invalid_parameter", "message": str(err)}) from err


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NeighborhoodRequest(_Body):
    entity_id: UUID
    hops: int = Field(default=2, ge=1, le=4)
    predicates: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(default=None, max_length=100)
    valid_at: datetime | None = None
    believed_at: datetime | None = None
    limit: int = Field(default=500, ge=1, le=500)
    continuation: str | None = Field(default=None, max_length=200)
    include_paths: bool = False


class PathRequest(_Body):
    from_entity_id: UUID
    to_entity_id: UUID
    max_hops: int = Field(default=4, ge=1, le=6)
    predicates: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(default=None, max_length=100)
    valid_at: datetime | None = None
    believed_at: datetime | None = None


class CitationPathRequest(_Body):
    from_doc_id: UUID
    to_doc_id: UUID
    max_hops: int = Field(default=6, ge=1, le=6)


# `embed(text)`: the question's vector for the pin the server started with; `embed(text, pin)`:
# for another pin, once `corpusmem reembed` has switched it.
Embed = Callable[..., Awaitable[Any]]


def build_app(pools: Pools, deployment: DeploymentInfo, embed: Embed) -> FastAPI:
    """`await embed(text)` gives a query vector (the query-embedder deployment, or a local model).
    The app opens `pools` when it starts and closes them when it stops."""
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await pools.open()
        try:
            yield
        finally:
            await pools.close()

    app = FastAPI(title="corpusmem", version=deployment.build_revision, lifespan=lifespan,
                  description="The memory's read API: assured operations, lookups and documents.")

    def conn(kind: str = "general") -> Any:
        return read_snapshot(getattr(pools, kind))

    # Registered first, so it runs inside the credential check: refusals there count against nothing.
    app.middleware("http")(admission.middleware(deployment.limits))
    app.middleware("http")(auth.middleware(dict(deployment.credentials), deployment.signed_tokens))
    # Registered after them, so it runs outside them: refused requests are counted too.
    app.middleware("http")(metrics.middleware(OPERATION_NAMES))
    if deployment.cors_origins:
        # Outermost: a preflight (which carries no credential) is answered before the credential
        # check, and a refusal still carries the headers that let the allowed page read it.
        # Exact origins, no cookies; browsers may not send the trusted X-Ingest-Principal-* headers.
        app.add_middleware(CORSMiddleware, allow_origins=list(deployment.cors_origins),
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"],
                           allow_credentials=False, max_age=600)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": [
            {k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in error.errors()]})

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        async with conn() as c:
            await c.execute("SELECT 1")
        return {"status": "ok"}

    @app.get("/deployment", response_model=m.DeploymentBuildInfo)
    async def deployment_info() -> m.DeploymentBuildInfo:
        return m.DeploymentBuildInfo(build_revision=deployment.build_revision,
                                     model_bindings={"embedding": deployment.embedding_model},
                                     tools=operations.TOOL_VERSIONS)

    @app.get("/operations", response_model=list[m.ToolDescriptor])
    async def list_operations() -> list[m.ToolDescriptor]:
        return operations.descriptors()

    @app.post("/operations/{name}")
    async def run_operation(name: str, arguments: Annotated[dict[str, Any], Body()] = None) -> dict[str, Any]:
        if name not in OPERATION_NAMES:
            raise HTTPException(404, f"unknown operation {name!r}")
        args = operations.validate(name, arguments or {})
        if name == "resolve_entity":
            async with conn("retrieval") as c:
                return envelope(await reads.resolve_entity(c, args["name"]))
        time = TimeArg(**args.get("time", {})).query()   # checked before anything is embedded
        skip_model = name == "facts_context" and args.get("entity_ids")   # anchored: nothing to embed
        pin = space["pin"]
        question = None if skip_model else await vector(args["query"], pin)
        async with conn("retrieval") as c:
            if question is not None:
                question = await in_space(c, args["query"], question, pin)
            if name == "facts_context":
                result = await facts(c, args, time, question)
            elif name == "claims_and_sources_context":
                result = await reads.claims_and_sources_context(
                    c, args["query"], k=args["k"], candidate_k=args["candidate_k"], vector=question,
                    entity_ids=args.get("entity_ids"))
            else:  # both children answer at one evaluation instant
                at = reads.now()
                result = m.ContextBundle(
                    claims_and_sources=await reads.claims_and_sources_context(
                        c, args["query"], vector=question, entity_ids=args.get("entity_ids"), at=at),
                    facts=await facts(c, {**args, "k": 15, "evidence_per_fact": 3}, time, question, at=at))
        return envelope(result)

    async def facts(c: psycopg.AsyncConnection, args: dict[str, Any], time: facts_retrieval.TimeQuery, question: Any,
                    at: datetime | None = None) -> m.Envelope:
        return await reads.facts_context(c, args["query"], time=time, k=args["k"],
                                         evidence_per_fact=args["evidence_per_fact"], entity_ids=args.get("entity_ids"),
                                         hops=args["hops"], predicate=args.get("predicate"),
                                         vector=None if args.get("entity_ids") else question, at=at)

    # The pin the questions are embedded for: the server's at start, the new one once a snapshot
    # shows that `corpusmem reembed` switched it.
    space = {"pin": deployment.embedding_model}

    async def vector(text: str, pin: str) -> Any:
        try:
            return await (embed(text) if pin == deployment.embedding_model else embed(text, pin))
        except Exception as err:  # the embedder is a separate deployment; its failure is the seed's 503
            raise HTTPException(503, "model provider unavailable") from err

    async def in_space(c: psycopg.AsyncConnection, text: str, question: Any, pin: str) -> Any:
        """The question's vector in the space of the pin the snapshot `c` reads: a query never
        compares vectors of two models, even when a switch committed since it was embedded."""
        pinned = (await (await c.execute(store.PINNED_MODEL_SQL)).fetchone())[0]
        if pinned == pin:
            return question
        space["pin"] = pinned
        return await vector(text, pinned)

    def envelope(result: BaseModel) -> dict[str, Any]:
        return result.model_dump(mode="json", by_alias=True)

    @app.get("/lookup/relations")
    async def lookup_relations(subject_entity_id: UUID | None = None, predicate: str | None = None,
                               object_entity_id: UUID | None = None, valid_at: datetime | None = None,
                               k: Annotated[int, Query(ge=1, le=400)] = 50) -> dict[str, Any]:
        if valid_at is not None and (valid_at.utcoffset() is None or valid_at.utcoffset().total_seconds() != 0):
            raise HTTPException(422, "valid_at must be UTC (Z or +00:00)")
        async with conn("retrieval") as c:
            return envelope(await reads.lookup_relations(
                c, subject=str(subject_entity_id) if subject_entity_id else None, predicate=predicate,
                obj=str(object_entity_id) if object_entity_id else None, valid_at=valid_at, k=k))

    @app.get("/lookup/observations")
    async def lookup_observations(entity_id: UUID, property_query: str | None = None,
                                  k: Annotated[int, Query(ge=1, le=400)] = 10) -> dict[str, Any]:
        pin = space["pin"]
        question = await vector(property_query, pin) if property_query else None
        async with conn("retrieval") as c:
            if question is not None:
                question = await in_space(c, property_query, question, pin)
            return envelope(await reads.lookup_observations(c, str(entity_id), k, question))

    @app.get("/hydrate/relation/{relation_id}")
    async def hydrate_relation(relation_id: UUID) -> dict[str, Any]:
        async with conn() as c:
            return envelope(await reads.hydrate_relation(c, str(relation_id)))

    @app.get("/transcript/relation/{relation_id}")
    async def transcript_relation(relation_id: UUID) -> dict[str, Any]:
        async with conn() as c:
            return envelope(await reads.transcript_relation(c, str(relation_id)))

    async def search(what: str, query: str, k: int, channel: Channel) -> dict[str, Any]:
        """Both forms of `/search/claims` and `/search/chunks`: the URL's (GET) and the body's (POST)."""
        if "\x00" in query:   # PostgreSQL text cannot hold one
            raise HTTPException(422, "query must not contain NUL characters")
        pin = space["pin"]
        question = await vector(query, pin) if channel == "semantic" else None
        async with conn("retrieval") as c:
            if question is not None:
                question = await in_space(c, query, question, pin)
            return envelope(await reads.search(c, what, query, k, channel, question))

    @app.get("/search/claims")
    async def search_claims(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                            channel: Channel = "semantic") -> dict[str, Any]:
        return await search("claims", query, k, channel)

    @app.get("/search/chunks")
    async def search_chunks(query: Annotated[str, Query(min_length=1)], k: Annotated[int, Query(ge=1, le=400)] = 10,
                            channel: Channel = "semantic") -> dict[str, Any]:
        return await search("chunks", query, k, channel)

    # The same searches with the question in the body: a person's words stay out of URLs, access
    # logs and proxies. The GET forms stay for the `remember` client, which only has them.
    @app.post("/search/claims")
    async def search_claims_body(body: m.SearchRequest) -> dict[str, Any]:
        return await search("claims", body.query, body.k, body.channel)

    @app.post("/search/chunks")
    async def search_chunks_body(body: m.SearchRequest) -> dict[str, Any]:
        return await search("chunks", body.query, body.k, body.channel)

    @app.get("/chunks/{chunk_id}/adjacent")
    async def adjacent_chunks(chunk_id: UUID, window: Annotated[int, Query(ge=1, le=2)] = 1) -> dict[str, Any]:
        async with conn("retrieval") as c:
            return envelope(await reads.adjacent(c, str(chunk_id), window))

    @app.post("/readiness", response_model=m.PipelineReadinessReport)
    async def readiness(request: m.ReadinessRequest) -> m.PipelineReadinessReport:
        async with conn() as c:
            return await reads.readiness(c, request, deployment, deployment.build_revision,
                                         [index for _, _, index in store.VECTOR_COLUMNS])

    @app.post("/ingest", response_model=m.IngestedVersion)
    async def ingest(request: Request, filename: Annotated[str, Query(min_length=1)],
                     mime: Annotated[str, Query(min_length=1)],
                     versioning_mode: Literal["snapshot", "living"] = "snapshot", title: str | None = None,
                     source_kind: Annotated[str | None, Query(min_length=1)] = None,
                     source_ref: Annotated[str | None, Query(min_length=1)] = None,
                     source_modified_at: datetime | None = None, source_version_ref: str | None = None
                     ) -> m.IngestedVersion:
        if (source_kind is None) != (source_ref is None):
            raise HTTPException(422, "source_kind and source_ref go together")
        if source_kind is None and (versioning_mode == "living" or source_modified_at or source_version_ref):
            raise HTTPException(422, "versioning_mode living, source_modified_at and source_version_ref need "
                                     "source_kind and source_ref")
        if source_modified_at is not None and (source_modified_at.utcoffset() is None
                                               or source_modified_at.utcoffset().total_seconds() != 0):
            raise HTTPException(422, "source_modified_at must be UTC (Z or +00:00)")
        ingested_by = None
        if deployment.trusted_principal_source and request.state.scope == "write":
            # checked before the bytes are read: a refused upload stores nothing
            kinds = request.headers.getlist(ingest_route.PRINCIPAL_KIND)
            refs = request.headers.getlist(ingest_route.PRINCIPAL_REF)
            if len(kinds) > 1 or len(refs) > 1:   # a gateway that appended instead of replacing
                raise HTTPException(422, ingest_route.PRINCIPAL_INVALID)
            ingested_by = ingest_route.principal(next(iter(kinds), None), next(iter(refs), None))
        declared = request.headers.get("content-length")
        if declared is not None and int(declared) > deployment.max_ingest_bytes:
            raise HTTPException(413, "body_too_large")
        body = await request.body()
        if len(body) > deployment.max_ingest_bytes:
            raise HTTPException(413, "body_too_large")
        if not body:
            raise HTTPException(422, "empty_body")
        objects = ObjectStore(deployment.object_store)

        def write() -> m.IngestedVersion:
            with pools.sync.connection() as c:
                return ingest_version(c, objects, deployment.deployment_id, body, filename=filename, mime=mime,
                                      title=title, source_kind=source_kind, source_ref=source_ref,
                                      source_modified_at=source_modified_at, versioning_mode=versioning_mode,
                                      source_version_ref=source_version_ref, ingested_by=ingested_by)
        return await run_in_threadpool(write)

    def both_clocks(valid_at: datetime | None, believed_at: datetime | None) -> None:
        if (valid_at is None) != (believed_at is None):
            raise HTTPException(422, "valid_at and believed_at must be given together or not at all")
        for name, value in (("valid_at", valid_at), ("believed_at", believed_at)):
            if value is not None and (value.utcoffset() is None or value.utcoffset().total_seconds() != 0):
                raise HTTPException(422, f"{name} must be UTC (Z or +00:00)")

    @app.post("/graph/neighborhood")
    async def graph_neighborhood(body: NeighborhoodRequest) -> dict[str, Any]:
        both_clocks(body.valid_at, body.believed_at)
        async with conn("graph") as c:
            return envelope(await graph.neighborhood(c, entity_id=str(body.entity_id), hops=body.hops,
                                                     predicates=body.predicates or [], valid_at=body.valid_at,
                                                     believed_at=body.believed_at, limit=body.limit,
                                                     include_paths=body.include_paths,
                                                     continuation=body.continuation))

    @app.post("/graph/path")
    async def graph_path(body: PathRequest) -> dict[str, Any]:
        both_clocks(body.valid_at, body.believed_at)
        async with conn("graph") as c:
            return envelope(await graph.path(c, start=str(body.from_entity_id), end=str(body.to_entity_id),
                                             max_hops=body.max_hops, predicates=body.predicates or [],
                                             valid_at=body.valid_at, believed_at=body.believed_at))

    @app.post("/graph/citation-path")
    async def graph_citation_path(body: CitationPathRequest) -> dict[str, Any]:
        async with conn("graph") as c:
            return envelope(await graph.citation_path(c, start=str(body.from_doc_id), end=str(body.to_doc_id),
                                                      max_hops=body.max_hops))

    @app.get("/documents", response_model=m.DocumentPage)
    async def list_documents(limit: Annotated[int, Query(ge=1, le=200)] = 50, cursor: UUID | None = None,
                             status: Literal["ingesting", "converting", "structuring", "ready", "failed"] | None = None
                             ) -> m.DocumentPage:
        async with conn() as c:
            return await reads.list_documents(c, limit, str(cursor) if cursor else None, status)

    @app.get("/documents/{doc_id}/versions", response_model=m.DocumentVersions)
    async def document_versions(doc_id: UUID) -> m.DocumentVersions:
        async with conn() as c:
            doc = await document_queries.document(c, str(doc_id))
            if doc is None:
                raise HTTPException(404, "document_not_found")
            rows = await document_queries.versions(c, str(doc_id))
        return m.DocumentVersions(
            doc_id=doc[0], title=doc[1], source_kind=doc[2], source_uri=doc[3], versions=tuple(
                m.DocumentVersion(version_id=r[0], version_no=r[1], status=r[2], ingested_at=r[3], content_hash=r[4],
                                  mime=r[5], source_modified_at=r[6], source_version_ref=r[7], error=r[8],
                                  ingested_by=m.IngestPrincipal(kind=r[9], ref=r[10]) if r[9] else None)
                for r in rows))

    @app.get("/resolve")
    async def resolve(name: Annotated[str, Query(min_length=1)],
                      context_entity_ids: Annotated[list[UUID], Query(max_length=8)] = ()) -> dict[str, Any]:
        async with conn("retrieval") as c:
            return envelope(await reads.resolve_entity(c, name, [str(u) for u in context_entity_ids]))

    @app.delete("/documents/{doc_id}", response_model=m.DocumentDeletion)
    def delete_document(doc_id: UUID) -> m.DocumentDeletion:
        with pools.sync.connection() as c:
            try:
                deletion = reconcile.delete_document(c, str(doc_id))
            except reconcile.UnknownDocument as err:
                raise HTTPException(404, "document_not_found") from err
        return m.DocumentDeletion(doc_id=doc_id, deleted_at=deletion.deleted_at, claims_retired=deletion.claims_retired,
                                  relations_closed=deletion.reconciled["retracted_relations"],
                                  observations_closed=deletion.reconciled["retracted_observations"])

    from serve import cost_export
    cost_rate = cost_export.OnePerSecond()

    @app.get("/ops/cost-export/v1")
    async def export_costs(cursor: Annotated[str | None, Query(max_length=200)] = None,
                           limit: Annotated[int, Query(ge=1, le=500)] = 100) -> dict[str, Any]:
        await cost_rate.admit()
        async with conn() as c:
            return await cost_export.page(c, deployment.deployment_id, cursor, limit)

    async def embed_pinned(text: str) -> Any:
        """For the SQL query space, whose runner opens its snapshot after embedding: the pin is
        read just before (a switch between the two that changed the dimension is refused by
        memory_v1's own check of the query vector)."""
        async with conn() as c:
            space["pin"] = (await (await c.execute(store.PINNED_MODEL_SQL)).fetchone())[0]
        pin = space["pin"]
        return await (embed(text) if pin == deployment.embedding_model else embed(text, pin))

    app.include_router(query_router(pools, deployment, embed_pinned))
    from serve.identity_routes import identity_router   # merge review, under the write scope
    app.include_router(identity_router(pools))
    return app
