"""The cost ledger as `corpusmem costs` and `GET /ops/cost-export/v1` read it.

One receipt per `cost_ledger` row: a batch of model calls, or an embedder's share of an encoding,
with its tokens and device seconds. The ledger holds no text. Its rows are kept by version, not
by run, so the run of a receipt is decided here, once, for both readers (`_RECEIPTS`).

Spend is not forgotten: a deleted document's receipts stay, as its calls were made and paid for;
they carry only the version's id, never its text or source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

# The run of a receipt: the import run whose span holds the row's instant (the run whose worker
# wrote it: a `retry` or `process` run for a version queued earlier), preferring the run that
# ingested the version where concurrent runs overlap; else that ingesting run.
_RECEIPTS = """
    SELECT c.cost_id, memory_v1_private.uuid_of('cost', c.cost_id::text) AS receipt_id, c.version_id,
           coalesce(r.run_id, v.import_run_id) AS run_id, c.stage, c.backend, c.model, c.calls, c.tokens_in,
           c.tokens_out, c.device_seconds, c.occurred_at
    FROM cost_ledger c
    LEFT JOIN versions v ON v.version_id = c.version_id
    LEFT JOIN LATERAL (SELECT i.run_id FROM import_runs i
                       WHERE c.occurred_at >= i.started_at AND (i.finished_at IS NULL OR c.occurred_at <= i.finished_at)
                       ORDER BY (i.run_id = v.import_run_id) IS TRUE DESC, i.started_at DESC LIMIT 1) r ON true"""

SUMMARY_COLUMNS = ("run_id", "run_started_at", "stage", "backend", "model", "receipts", "calls", "tokens_in",
                   "tokens_out", "device_seconds", "first_at", "last_at")


def summary(conn: psycopg.Connection, since: datetime | None) -> list[tuple[Any, ...]]:
    """Tokens and device seconds per run, stage, backend and model (rows of SUMMARY_COLUMNS),
    over receipts at or after `since`; runs in the order they started."""
    return conn.execute(f"""
        WITH receipts AS ({_RECEIPTS})
        SELECT x.run_id::text, i.started_at, x.stage, x.backend, x.model, count(*), sum(x.calls)::bigint,
               sum(x.tokens_in)::bigint, sum(x.tokens_out)::bigint, sum(x.device_seconds), min(x.occurred_at),
               max(x.occurred_at)
        FROM receipts x LEFT JOIN import_runs i ON i.run_id = x.run_id
        WHERE %(since)s::timestamptz IS NULL OR x.occurred_at >= %(since)s
        GROUP BY x.run_id, i.started_at, x.stage, x.backend, x.model
        ORDER BY i.started_at NULLS LAST, x.run_id, x.stage, x.backend, x.model""", {"since": since}).fetchall()


RECEIPT_COLUMNS = ("cost_id", "receipt_id", "version_id", "run_id", "stage", "backend", "model", "calls", "tokens_in",
                   "tokens_out", "device_seconds", "occurred_at")


async def receipts_page(conn: psycopg.AsyncConnection, after: int, limit: int, horizon: datetime
                        ) -> list[tuple[Any, ...]]:
    """Up to `limit` receipts after ledger row `after`, in ledger order (rows of RECEIPT_COLUMNS),
    stopping before the first row that is not older than `horizon`: a row is numbered when it is
    inserted and seen when its transaction commits, so a page never runs ahead of a younger row
    that a later page would then have to go back for."""
    cur = await conn.execute(f"""
        WITH receipts AS ({_RECEIPTS})
        SELECT x.cost_id, x.receipt_id::text, x.version_id::text, x.run_id::text, x.stage, x.backend, x.model,
               x.calls, x.tokens_in, x.tokens_out, x.device_seconds, x.occurred_at
        FROM receipts x
        WHERE x.cost_id > %(after)s
          AND x.cost_id < coalesce((SELECT min(y.cost_id) FROM cost_ledger y
                                    WHERE y.cost_id > %(after)s AND y.occurred_at >= %(horizon)s),
                                   9223372036854775807)
        ORDER BY x.cost_id LIMIT %(limit)s""", {"after": after, "limit": limit, "horizon": horizon})
    return await cur.fetchall()


async def clock(conn: psycopg.AsyncConnection) -> datetime:
    """The authority's instant, the clock the ledger's `occurred_at` is written with."""
    cur = await conn.execute("SELECT now()")
    return (await cur.fetchone())[0]
