"""The assured operations: `GET /operations` lists them, `POST /operations/{name}` runs one
(`resolve_entity`, `claims_and_sources_context`, `facts_context`, `combined_context`).

Arguments and the time mode are checked before anything is embedded; the answer is read in one
snapshot of the `retrieval` pool, on generic plans (`serve.replica.GENERIC_PLANS`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import psycopg
from fastapi import APIRouter, Body, HTTPException, Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from serve import models as m
from serve import operations, reads
from serve.questions import Questions
from serve.replica import Pools
from serve.retrieval import facts as facts_retrieval


class TimeArg(BaseModel):
    """A time question's instants, parsed; which modes there are and what each needs is
    `facts_retrieval.MODE_INSTANTS`, checked by `TimeQuery`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    mode: str = "current"
    at: datetime | None = None
    from_: datetime | None = Field(default=None, alias="from")
    to: datetime | None = None

    def query(self) -> facts_retrieval.TimeQuery:
        try:
            return facts_retrieval.TimeQuery(self.mode, at=self.at, start=self.from_, end=self.to)
        except facts_retrieval.BadTimeQuery as err:
            raise HTTPException(422, {"code": "invalid_parameter", "message": str(err)}) from err


# An instant argument (`asked_at`) is parsed as `TimeArg` parses its instants: every RFC 3339
# form the schema admits, "2026-03-17t09:00:00z" included, which `datetime.fromisoformat` refuses.
_INSTANT = TypeAdapter(datetime)


async def _facts(c: psycopg.AsyncConnection, args: dict[str, Any], time: facts_retrieval.TimeQuery, question: Any,
                 at: datetime | None = None) -> m.Envelope:
    return await reads.facts_context(c, args["query"], time=time, k=args["k"],
                                     evidence_per_fact=args["evidence_per_fact"], entity_ids=args.get("entity_ids"),
                                     hops=args["hops"], predicate=args.get("predicate"),
                                     vector=None if args.get("entity_ids") else question, at=at)


def operation_router(pools: Pools, questions: Questions) -> APIRouter:
    router = APIRouter()

    @router.get("/operations", response_model=list[m.ToolDescriptor])
    async def list_operations() -> list[m.ToolDescriptor]:
        return operations.descriptors()

    @router.post("/operations/{name}", response_model=dict[str, Any])
    async def run_operation(name: str, arguments: Annotated[dict[str, Any], Body()] = None,
                            prefer: m.Prefer = None) -> Response:
        if name not in operations.NAMES:
            raise HTTPException(404, f"unknown operation {name!r}")
        args = operations.validate(name, arguments or {})
        if name == "resolve_entity":
            async with pools.snapshot("retrieval") as c:
                return m.envelope(await reads.resolve_entity(c, args["name"]))
        time = TimeArg(**args.get("time", {})).query()   # checked before anything is embedded
        skip_model = name == "facts_context" and args.get("entity_ids")   # anchored: nothing to embed
        pin = questions.pin
        question = None if skip_model else await questions.vector(args["query"], pin)
        async with pools.snapshot("retrieval", generic_plans=True) as c:
            if question is not None:
                question = await questions.in_space(c, args["query"], question, pin)
            if name == "facts_context":
                result = await _facts(c, args, time, question)
            elif name == "claims_and_sources_context":
                result = await reads.claims_and_sources_context(
                    c, args["query"], k=args["k"], candidate_k=args["candidate_k"], vector=question,
                    entity_ids=args.get("entity_ids"),
                    at=_INSTANT.validate_python(args["asked_at"]) if "asked_at" in args else None)
            else:  # both children answer at one evaluation instant
                at = reads.now()
                result = m.ContextBundle(
                    claims_and_sources=await reads.claims_and_sources_context(
                        c, args["query"], vector=question, entity_ids=args.get("entity_ids"), at=at),
                    facts=await _facts(c, {**args, "k": 15, "evidence_per_fact": 3}, time, question, at=at))
        return m.envelope(result, prefer)

    return router
