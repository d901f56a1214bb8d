"""The service's own state: `GET /healthz`, `GET /deployment` (build and tool versions),
`POST /readiness` (how far given versions are through the pipeline) and the operator's
`GET /ops/cost-export/v1` (the cost ledger, at most one request per second per process).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from serve import cost_export, operations, reads
from serve import models as m
from serve.replica import DeploymentInfo, Pools
from sql import admission
from sql.store import authority as store


def status_router(pools: Pools, deployment: DeploymentInfo) -> APIRouter:
    router = APIRouter()

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        async with pools.snapshot() as c:
            await c.execute("SELECT 1")
        return {"status": "ok"}

    @router.get("/deployment", response_model=m.DeploymentBuildInfo)
    async def deployment_info() -> m.DeploymentBuildInfo:
        return m.DeploymentBuildInfo(build_revision=deployment.build_revision,
                                     model_bindings={"embedding": deployment.embedding_model},
                                     tools=operations.TOOL_VERSIONS)

    @router.post("/readiness", response_model=m.PipelineReadinessReport)
    async def readiness(request: m.ReadinessRequest) -> m.PipelineReadinessReport:
        async with pools.snapshot() as c:
            return await reads.readiness(c, request, deployment, deployment.build_revision,
                                         [index for _, _, index in store.VECTOR_COLUMNS])

    cost_rate = admission.Admission(cost_export.ONE_PER_SECOND)

    @router.get("/ops/cost-export/v1")
    async def export_costs(cursor: Annotated[str | None, Query(max_length=200)] = None,
                           limit: Annotated[int, Query(ge=1, le=500)] = 100) -> dict[str, Any]:
        cost_export.admit(cost_rate)
        async with pools.snapshot() as c:
            return await cost_export.page(c, deployment.deployment_id, cursor, limit)

    return router
