"""Merge review over HTTP, under the `write` scope: the routes of `corpusmem entities`.

    GET  /entities/proposals[?status=]             proposals with their evidence
    POST /entities/merge     {"keep", "merged", "reason"?}
    POST /entities/unmerge   {"merged", "reason"?}
    POST /entities/proposals/{proposal_id}/accept  {"keep"?}
    POST /entities/proposals/{proposal_id}/reject
    GET  /entities/merges[?all=true]

They change the memory, so no read scope reaches them (`serve.auth.required_scope` gives
`write` to every path outside the read prefixes). The caller the credential check names is
recorded as who decided. The code is the CLI's (`sql.write.identity`), run in FastAPI's thread
pool on the `sync` pool, as ingest and deletion are.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field

from sql.write import identity

# IdentityError.kind → (HTTP status, error code)
_ERRORS = {"unknown": (404, "not_found"), "conflict": (409, "conflict"), "invalid": (422, "invalid_parameter")}


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MergeRequest(_Body):
    keep: str = Field(min_length=1, max_length=500, description="the surviving entity: id or exact name")
    merged: str = Field(min_length=1, max_length=500, description="the entity merged away: id or exact name")
    reason: str = Field(default="merged by review", max_length=2000)


class UnmergeRequest(_Body):
    merged: str = Field(min_length=1, max_length=500, description="the merged-away entity: id or exact name")
    reason: str = Field(default="unmerged by review", max_length=2000)


class AcceptRequest(_Body):
    keep: str | None = Field(default=None, min_length=1, max_length=500)


def _merge_result(done: identity.MergeResult) -> dict[str, Any]:
    return {"redirect_id": done.redirect_id,
            "survivor": {"entity_id": done.survivor.entity_id, "name": done.survivor.name},
            "merged": {"entity_id": done.merged.entity_id, "name": done.merged.name},
            "readjudicated": {"entities": done.anchors, "assertions": done.assertions, "facts": done.facts,
                              "decisions": done.decisions}}


def identity_router(pools: Any) -> APIRouter:
    router = APIRouter(prefix="/entities", tags=["merge review"])

    def run(call):
        with pools.sync.connection() as conn:
            try:
                return call(conn)
            except identity.IdentityError as err:
                status, code = _ERRORS[err.kind]
                raise HTTPException(status, {"code": code, "message": str(err)}) from err

    def who(request: Request) -> str:
        return f"http:{request.state.caller}"

    @router.get("/proposals")
    def list_proposals(status: Literal["proposed", "accepted", "rejected"] | None = None) -> dict[str, Any]:
        return {"proposals": run(lambda c: identity.proposals(c, status))}

    @router.post("/merge")
    def merge(body: MergeRequest, request: Request) -> dict[str, Any]:
        return _merge_result(run(lambda c: identity.merge(c, body.keep, body.merged, who(request), body.reason)))

    @router.post("/unmerge")
    def unmerge(body: UnmergeRequest, request: Request) -> dict[str, Any]:
        done = run(lambda c: identity.unmerge(c, body.merged, who(request), body.reason))
        return {"redirect_id": done.redirect_id, "facts_retired": done.facts_retired,
                "survivor": {"entity_id": done.survivor.entity_id, "name": done.survivor.name},
                "merged": {"entity_id": done.merged.entity_id, "name": done.merged.name}}

    @router.post("/proposals/{proposal_id}/accept")
    def accept(proposal_id: str, request: Request, body: AcceptRequest | None = None) -> dict[str, Any]:
        keep = body.keep if body is not None else None
        return _merge_result(run(lambda c: identity.accept(c, proposal_id, who(request), keep)))

    @router.post("/proposals/{proposal_id}/reject")
    def reject(proposal_id: str, request: Request) -> dict[str, Any]:
        return run(lambda c: identity.reject(c, proposal_id, who(request)))

    @router.get("/merges")
    def merges(all: bool = False) -> dict[str, Any]:
        return {"merges": run(lambda c: identity.redirects(c, all))}

    return router
