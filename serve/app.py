"""The read API's FastAPI application: middleware and routers, assembled per replica.

`build_app(pools, deployment, embed)` returns the application (tests drive it in process);
`serve.deployment.Api` is the Ray Serve ingress around it. Each family of routes is an
`APIRouter` of its own module; this module only orders the middleware, shapes validation errors
and includes the routers.

Error bodies are exactly `{"detail": ...}`, as the seed and the `remember` client expect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from serve import admission, auth, metrics, operations
from serve import models as m
from serve.document_routes import document_router
from serve.graph_routes import graph_router
from serve.identity_routes import identity_router
from serve.middleware import Around
from serve.operation_routes import operation_router
from serve.query_routes import query_router
from serve.questions import Questions
from serve.read_routes import read_router
from serve.replica import DeploymentInfo, Embed, Pools
from serve.status_routes import status_router


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

    # Registered first, so it runs inside the credential check: refusals there count against nothing.
    app.add_middleware(Around, around=admission.middleware(deployment.limits))
    app.add_middleware(Around, around=auth.middleware(dict(deployment.credentials), deployment.signed_tokens))
    # Registered after them, so it runs outside them: refused requests are counted too.
    app.add_middleware(Around, around=metrics.middleware(operations.NAMES))
    if deployment.cors_origins:
        # Outermost: a preflight (which carries no credential) is answered before the credential
        # check, and a refusal still carries the headers that let the allowed page read it.
        # Exact origins, no cookies; browsers may not send the trusted X-Ingest-Principal-* headers.
        app.add_middleware(CORSMiddleware, allow_origins=list(deployment.cors_origins),
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"],
                           allow_credentials=False, max_age=600)
    app.exception_handler(RequestValidationError)(_invalid)

    questions = Questions(embed, pools, deployment.embedding_model)
    app.include_router(status_router(pools, deployment))
    app.include_router(operation_router(pools, questions))
    app.include_router(read_router(pools, questions))
    app.include_router(graph_router(pools))
    app.include_router(document_router(pools, deployment))
    app.include_router(query_router(pools, deployment, questions.pinned))
    app.include_router(identity_router(pools))   # merge review, under the write scope
    return app


async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
    """`{"detail": [{loc, msg, type}, ...]}`; an instant that is not UTC, when nothing else is
    wrong, gets the seed's one-line detail naming its parameter."""
    errors = error.errors()
    shown = [e for e in errors if e["type"] != m.NOT_UTC]
    if not shown:
        return JSONResponse(status_code=422, content={"detail": m.utc_required(errors[0]["loc"][-1])})
    return JSONResponse(status_code=422, content={"detail": [
        {k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in shown]})
