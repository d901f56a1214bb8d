"""The document routes: `POST /ingest`, the document list, a document's versions, and
`DELETE /documents/{doc_id}`.

Ingest and deletion share their code with the import pipeline and the CLI, which are
synchronous: they run in FastAPI's thread pool on the `sync` pool. The list and the versions
read one snapshot of the `general` pool.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query, Request
from starlette.concurrency import run_in_threadpool

from actors.object_store import ObjectStore
from serve import ingest as ingest_route
from serve import models as m
from serve import reads
from serve.replica import DeploymentInfo, Pools
from sql.read import document_queries
from sql.write import reconcile


def document_router(pools: Pools, deployment: DeploymentInfo) -> APIRouter:
    router = APIRouter()

    @router.post("/ingest", response_model=m.IngestedVersion)
    async def ingest(request: Request, filename: Annotated[str, Query(min_length=1)],
                     mime: Annotated[str, Query(min_length=1)],
                     versioning_mode: Literal["snapshot", "living"] = "snapshot", title: str | None = None,
                     source_kind: Annotated[str | None, Query(min_length=1)] = None,
                     source_ref: Annotated[str | None, Query(min_length=1)] = None,
                     source_modified_at: m.UtcInstant | None = None, source_version_ref: str | None = None
                     ) -> m.IngestedVersion:
        if (source_kind is None) != (source_ref is None):
            raise HTTPException(422, "source_kind and source_ref go together")
        if source_kind is None and (versioning_mode == "living" or source_modified_at or source_version_ref):
            raise HTTPException(422, "versioning_mode living, source_modified_at and source_version_ref need "
                                     "source_kind and source_ref")
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
                return ingest_route.ingest(c, objects, deployment.deployment_id, body, filename=filename, mime=mime,
                                           title=title, source_kind=source_kind, source_ref=source_ref,
                                           source_modified_at=source_modified_at, versioning_mode=versioning_mode,
                                           source_version_ref=source_version_ref, ingested_by=ingested_by)
        return await run_in_threadpool(write)

    @router.get("/documents", response_model=m.DocumentPage)
    async def list_documents(limit: Annotated[int, Query(ge=1, le=200)] = 50, cursor: UUID | None = None,
                             status: Literal["ingesting", "converting", "structuring", "ready", "failed",
                                             "parked"] | None = None
                             ) -> m.DocumentPage:
        async with pools.snapshot() as c:
            return await reads.list_documents(c, limit, str(cursor) if cursor else None, status)

    @router.get("/documents/{doc_id}/versions", response_model=m.DocumentVersions)
    async def document_versions(doc_id: UUID) -> m.DocumentVersions:
        async with pools.snapshot() as c:
            doc = await document_queries.document(c, str(doc_id))
            if doc is None:
                raise HTTPException(404, "document_not_found")
            rows = await document_queries.versions(c, str(doc_id))
        return m.DocumentVersions(
            doc_id=doc[0], title=doc[1], source_kind=doc[2], source_uri=doc[3], versions=tuple(
                m.DocumentVersion(version_id=r[0], version_no=r[1], status=r[2], ingested_at=r[3], content_hash=r[4],
                                  mime=r[5], source_modified_at=r[6], source_version_ref=r[7], error=r[8],
                                  ingested_by=m.IngestPrincipal(kind=r[9], ref=r[10]) if r[9] else None,
                                  parked_reason=r[11])
                for r in rows))

    @router.delete("/documents/{doc_id}", response_model=m.DocumentDeletion)
    def delete_document(doc_id: UUID) -> m.DocumentDeletion:
        with pools.sync.connection() as c:
            try:
                deletion = reconcile.delete_document(c, str(doc_id))
            except reconcile.UnknownDocument as err:
                raise HTTPException(404, "document_not_found") from err
        return m.DocumentDeletion(doc_id=doc_id, deleted_at=deletion.deleted_at, claims_retired=deletion.claims_retired,
                                  relations_closed=deletion.reconciled["retracted_relations"],
                                  observations_closed=deletion.reconciled["retracted_observations"])

    return router
