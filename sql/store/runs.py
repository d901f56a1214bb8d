"""Import runs, their ownership locks, and what `corpusmem status` prints.

A run's driver holds two session-level advisory locks on its own connection (`hold_run`): `run`
for the whole run (its claims on versions are alive while it is held; see
`0009_work_queue.sql`) and `pipeline` until its document pipeline has landed. The facts phase
of a run waits for the pipelines in flight elsewhere and runs under the one `facts` lock, so
concurrent imports end with the facts one import of everything would have decided. Entities and
mention keys are locked per transaction by the shard that decides them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


def start_run(conn: psycopg.Connection, sources: list[str], options: dict[str, Any]) -> str:
    run_id = str(uuid.uuid4())
    conn.execute("INSERT INTO import_runs (run_id, sources, options, status) VALUES (%s, %s, %s, 'running')",
                 (run_id, Jsonb(sources), Jsonb(options)))
    conn.commit()
    return run_id


def finish_run(conn: psycopg.Connection, run_id: str, *, status: str, counts: dict[str, Any],
               stage_seconds: dict[str, float], report: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE import_runs SET status = %s, counts = %s, stage_seconds = %s, report = %s,"
        " finished_at = now() WHERE run_id = %s",
        (status, Jsonb(counts), Jsonb(stage_seconds), Jsonb(report), run_id))
    conn.commit()


def hold_run(conn: psycopg.Connection, run_id: str) -> None:
    """Take the run's `run` and `pipeline` locks on `conn`, the driver's own connection, which
    must stay open for the run: its claims are alive exactly as long."""
    conn.execute("SELECT pg_advisory_lock(work_lock_class('run'), hashtext(%(r)s)),"
                 " pg_advisory_lock(work_lock_class('pipeline'), hashtext(%(r)s))", {"r": run_id})


def end_pipeline(conn: psycopg.Connection, run_id: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(work_lock_class('pipeline'), hashtext(%s))", (run_id,))


def pipelines_in_flight(conn: psycopg.Connection, run_id: str) -> list[str]:
    """Other live runs whose document pipeline has not ended yet."""
    return [str(r[0]) for r in conn.execute(
        "SELECT run_id FROM import_runs WHERE status = 'running' AND run_id <> %s"
        " AND work_lock_held('pipeline', run_id::text) ORDER BY started_at", (run_id,)).fetchall()]


def wait_for_pipeline(conn: psycopg.Connection, run_id: str) -> None:
    """Block until run `run_id` ends its pipeline (or its driver dies): a shared lock is granted
    only once the owner's exclusive one is gone."""
    conn.execute("SELECT pg_advisory_lock_shared(work_lock_class('pipeline'), hashtext(%s))", (run_id,))
    conn.execute("SELECT pg_advisory_unlock_shared(work_lock_class('pipeline'), hashtext(%s))", (run_id,))


@contextmanager
def facts_phase(conn: psycopg.Connection) -> Iterator[None]:
    """One facts phase at a time on an authority: each reads every pending claim, mention and
    assertion, so a second one at once would only race the first for the same work."""
    conn.execute("SELECT pg_advisory_lock(work_lock_class('facts'), 0)")
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(work_lock_class('facts'), 0)")


def lock_entity(conn: psycopg.Connection, entity_id: str) -> None:
    """Own `entity_id` until the current transaction ends (inside `conn.transaction()`)."""
    conn.execute("SELECT pg_advisory_xact_lock(work_lock_class('entity'), hashtext(%s))", (entity_id,))


def lock_mention_key(conn: psycopg.Connection, key: str) -> None:
    """Own mention key `key` until the current transaction ends."""
    conn.execute("SELECT pg_advisory_xact_lock(work_lock_class('mention_key'), hashtext(%s))", (key,))


def unbound_mentions(conn: psycopg.Connection, key: str) -> set[tuple[str, str]]:
    """(doc_id, surface) of the key's mentions no resolver has bound yet."""
    return {(str(d), s) for d, s in conn.execute(
        "SELECT doc_id, surface FROM mentions WHERE mention_key = %s AND entity_id IS NULL", (key,)).fetchall()}


def release_claims(conn: psycopg.Connection, run_id: str) -> int:
    """Versions the run claimed and did not land go back to the queue (`pending`)."""
    cur = conn.execute(
        "UPDATE stage_work SET status = 'pending', defer_reason = NULL, owner_run = NULL, updated_at = now()"
        " WHERE owner_run = %s AND status IN ('running', 'failed')", (run_id,))
    return cur.rowcount


def fact_versions_of_anchor(conn: psycopg.Connection, anchor_id: str) -> list[str]:
    """Versions whose pending assertions wait on this entity's adjudication."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT c.version_id FROM assertions a JOIN claims c USING (claim_id)"
        " WHERE a.anchor_id = %s AND a.status = 'pending'", (anchor_id,)).fetchall()]


def fact_versions_of_key(conn: psycopg.Connection, key: str) -> list[str]:
    """Versions whose mentions under this key wait on resolution."""
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT c.version_id FROM mentions m JOIN claims c USING (claim_id)"
        " WHERE m.mention_key = %s AND m.entity_id IS NULL", (key,)).fetchall()]


def dead_letter_stage(conn: psycopg.Connection, stage: str, version_ids: list[str], attempts: int,
                      error: str) -> None:
    """A unit (of the facts phase, of the vllm extraction pass) ran out of attempts: `stage` of
    every version waiting on it."""
    conn.execute(
        "INSERT INTO stage_work (version_id, stage, status, attempts, last_error, started_at, finished_at)"
        " SELECT v, %(s)s, 'dead_letter', %(n)s, %(e)s, now(), now() FROM unnest(%(v)s::uuid[]) v"
        " ON CONFLICT (version_id, stage) DO UPDATE SET status = 'dead_letter', defer_reason = NULL,"
        " attempts = stage_work.attempts + EXCLUDED.attempts, last_error = EXCLUDED.last_error,"
        " finished_at = now(), updated_at = now()",
        {"s": stage, "n": attempts, "e": error, "v": version_ids})


def dead_letter_unfinished_fact_stage(conn: psycopg.Connection, stage: str, attempts: int, error: str) -> int:
    """A step of the facts phase itself ran out of attempts: `stage` of every version the phase
    had yet to finish (claims extracted, fact stages not succeeded); how many versions."""
    unfinished = [str(v) for (v,) in conn.execute(
        "SELECT w.version_id FROM stage_work w JOIN versions v USING (version_id)"
        " WHERE w.stage = 'extract_claims' AND w.status = 'succeeded' AND v.status <> 'deleted'"
        " AND NOT EXISTS (SELECT 1 FROM stage_work d WHERE d.version_id = w.version_id"
        "                 AND d.stage = 'label_relation' AND d.status = 'succeeded')")]
    dead_letter_stage(conn, stage, unfinished, attempts, error)
    return len(unfinished)


def stage_counts(conn: psycopg.Connection) -> list[tuple[str, str, str | None, int]]:
    """(stage, status, defer_reason, versions) over every version that is not deleted."""
    from sql.write.writes import FACT_STAGES, WORK_STAGES

    return conn.execute(
        "SELECT w.stage, w.status, w.defer_reason, count(*) FROM stage_work w"
        " JOIN versions v USING (version_id) WHERE v.status <> 'deleted'"
        " GROUP BY 1, 2, 3 ORDER BY array_position(%s::text[], w.stage), w.stage, 2, 3",
        (list(WORK_STAGES + FACT_STAGES),)).fetchall()


def failures(conn: psycopg.Connection, limit: int = 50) -> tuple[dict[str, int], list[tuple[Any, ...]]]:
    """({status: stage rows} for `failed` and `dead_letter`, and the latest `limit` of them:
    (status, stage, attempts, last_error, version_id, source_ref)) over versions not deleted."""
    where = (" FROM stage_work w JOIN versions v USING (version_id) JOIN documents d USING (doc_id)"
             " WHERE w.status IN ('failed', 'dead_letter') AND v.status <> 'deleted'")
    totals = dict(conn.execute(f"SELECT w.status, count(*){where} GROUP BY 1").fetchall())
    rows = conn.execute(
        f"SELECT w.status, w.stage, w.attempts, w.last_error, w.version_id::text, d.source_ref{where}"
        " ORDER BY w.updated_at DESC, w.version_id, w.stage LIMIT %s", (limit,)).fetchall()
    return totals, rows


def failed_work(conn: psycopg.Connection, stage: str | None, version_id: str | None) -> list[tuple[str, str, str]]:
    """(version_id, stage, status) of every `failed` or `dead_letter` stage row, at `stage` and of
    `version_id` when given, over versions not deleted."""
    return [(str(v), st, status) for v, st, status in conn.execute(
        "SELECT w.version_id, w.stage, w.status FROM stage_work w JOIN versions v USING (version_id)"
        " WHERE w.status IN ('failed', 'dead_letter') AND v.status <> 'deleted'"
        " AND (%(s)s::text IS NULL OR w.stage = %(s)s) AND (%(v)s::uuid IS NULL OR w.version_id = %(v)s)"
        " ORDER BY w.version_id, w.stage", {"s": stage, "v": version_id}).fetchall()]


def reopen_fact_stages(conn: psycopg.Connection, version_ids: list[str], stages: list[str]) -> int:
    """Dead-lettered or failed fact stages back to `pending`: the next facts phase takes up
    whatever is still pending (claims, mentions, assertions) and marks them done."""
    cur = conn.execute(
        "UPDATE stage_work SET status = 'pending', defer_reason = NULL, finished_at = NULL, updated_at = now()"
        " WHERE version_id = ANY(%s::uuid[]) AND stage = ANY(%s) AND status IN ('failed', 'dead_letter')",
        (version_ids, stages))
    return cur.rowcount


def work_statuses(conn: psycopg.Connection, version_ids: list[str]) -> list[tuple[str, str, str, int, str | None, str]]:
    """(version_id, stage, status, attempts, last_error, source_ref) of those versions' stages that
    did not succeed."""
    return [(str(r[0]),) + tuple(r[1:]) for r in conn.execute(
        "SELECT w.version_id, w.stage, w.status, w.attempts, w.last_error, d.source_ref FROM stage_work w"
        " JOIN versions v USING (version_id) JOIN documents d USING (doc_id)"
        " WHERE w.version_id = ANY(%s::uuid[]) AND w.status NOT IN ('succeeded', 'skipped')"
        " ORDER BY d.source_ref, w.version_id, w.stage", (version_ids,)).fetchall()]


def version_counts(conn: psycopg.Connection) -> list[tuple[str, str | None, int]]:
    """(status as the read surfaces list it, the parked reason or None, versions)."""
    return conn.execute(
        "SELECT memory_v1_private.version_status(status, parked_reason),"
        " CASE WHEN status = 'converting' THEN parked_reason END, count(*) FROM versions"
        " GROUP BY 1, 2 ORDER BY 1, 2").fetchall()


def totals(conn: psycopg.Connection) -> dict[str, int]:
    """What the memory serves, counted through the views every read goes through (0004, 0007): a
    deleted document, a superseded version, testimony no longer current, a retracted fact or an
    entity without live provenance is not counted, as no read returns it."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM memory_v1.documents_live),"
        " (SELECT count(*) FROM memory_v1.document_versions_visible),"
        " (SELECT count(*) FROM memory_v1.sections_live), (SELECT count(*) FROM memory_v1.chunks_live),"
        " (SELECT count(*) FROM memory_v1.claims_live), (SELECT count(*) FROM memory_v1.entities_current),"
        " (SELECT count(*) FROM memory_v1_private.believed_facts)").fetchone()
    return dict(zip(("documents", "versions", "sections", "chunks", "claims", "entities", "facts"), row))


def recent_runs(conn: psycopg.Connection, limit: int = 5) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT run_id, status, started_at, finished_at, counts FROM import_runs"
        " ORDER BY started_at DESC LIMIT %s", (limit,)).fetchall()
