"""`GET /ops/cost-export/v1`: the cost ledger in pages of receipts, in the seed's form.

An operator's route (the `write` scope, as every route that is not a read: `serve/auth.py`),
answering at most one request per second per process. A page holds only receipts older than its
`horizon`, a minute before the authority's clock, so a receipt still being written never appears
on one page and changes on the next; `next_cursor`, kept and sent back later, reads only newer
receipts. The fields the seed names are all there; `run_id`, `backend`, `calls` and
`device_seconds` are ours (local models bill no dollars and report seconds, not latency).
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, timedelta
from typing import Any

import psycopg
from fastapi import HTTPException

from sql import admission
from sql.read import cost_queries

CONTRACT = "rememberstack.cost_export.v1"
HORIZON = timedelta(seconds=60)
MIN_INTERVAL_S = 1.0
# The seed's rate limit: one request per second per process (a bucket of one token, one a second).
ONE_PER_SECOND = admission.Policy(deployment_per_minute=round(60 / MIN_INTERVAL_S), burst=1)


def encode_cursor(after: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    """The ledger row a cursor continues after (0: from the start); 422 `malformed cursor`."""
    if cursor is None:
        return 0
    try:
        after = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["after"]
    except (ValueError, binascii.Error, KeyError, TypeError):
        raise HTTPException(422, "malformed cursor") from None
    if not isinstance(after, int) or isinstance(after, bool) or not 0 <= after < 2**63:
        raise HTTPException(422, "malformed cursor")
    return after


def admit(rate: admission.Admission) -> None:
    """Counted against `rate` (an `Admission` under `ONE_PER_SECOND`), or 429 `rate limited`."""
    try:
        rate.leave(rate.enter(None))   # a rate only: nothing stays in flight
    except admission.NotAdmitted as refused:
        raise HTTPException(429, "rate limited", headers={"Retry-After": str(refused.retry_after)}) from None


async def page(conn: psycopg.AsyncConnection, deployment_id: str, cursor: str | None, limit: int) -> dict[str, Any]:
    after = decode_cursor(cursor)
    server_time = (await cost_queries.clock(conn)).astimezone(UTC)
    horizon = server_time - HORIZON
    rows = [dict(zip(cost_queries.RECEIPT_COLUMNS, r)) for r in await cost_queries.receipts_page(
        conn, after, limit, horizon)]
    return {
        "contract": CONTRACT, "deployment_id": deployment_id, "server_time": server_time.isoformat(),
        "horizon": horizon.isoformat(), "cursor": encode_cursor(after),
        "next_cursor": encode_cursor(rows[-1]["cost_id"] if rows else after),
        # every receipt is written in the transaction that lands its work: none can go unrecorded
        "persist_failures": 0, "scope_missing": 0,
        "receipts": [_receipt(deployment_id, r) for r in rows]}


def _receipt(deployment_id: str, r: dict[str, Any]) -> dict[str, Any]:
    return {
        "cost_id": r["receipt_id"], "deployment_id": deployment_id, "source": "worker", "work_id": r["version_id"],
        "stage": r["stage"], "lane": None, "attempt": None, "surface": None,
        "call_key": f"cost_ledger/{r['cost_id']}", "outcome": "recorded", "model_name": r["model"],
        "tokens_in": r["tokens_in"], "tokens_out": r["tokens_out"], "cost_usd": None, "latency_ms": None,
        "occurred_at": r["occurred_at"].astimezone(UTC).isoformat(),
        "run_id": r["run_id"], "backend": r["backend"], "calls": r["calls"], "device_seconds": r["device_seconds"]}
