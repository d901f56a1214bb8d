"""Import runs and per-stage status counts: what `corpusmem import` records and `status` prints."""

from __future__ import annotations

import uuid
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


def stage_counts(conn: psycopg.Connection) -> list[tuple[str, str, str | None, int]]:
    """(stage, status, defer_reason, versions) over every version that is not deleted."""
    from sql.write.writes import FACT_STAGES, WORK_STAGES

    return conn.execute(
        "SELECT w.stage, w.status, w.defer_reason, count(*) FROM stage_work w"
        " JOIN versions v USING (version_id) WHERE v.status <> 'deleted'"
        " GROUP BY 1, 2, 3 ORDER BY array_position(%s::text[], w.stage), w.stage, 2, 3",
        (list(WORK_STAGES + FACT_STAGES),)).fetchall()


def version_counts(conn: psycopg.Connection) -> list[tuple[str, int]]:
    return conn.execute("SELECT status, count(*) FROM versions GROUP BY 1 ORDER BY 1").fetchall()


def totals(conn: psycopg.Connection) -> dict[str, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM documents WHERE deleted_at IS NULL),"
        " (SELECT count(*) FROM versions), (SELECT count(*) FROM content_objects),"
        " (SELECT count(*) FROM sections), (SELECT count(*) FROM chunks),"
        " (SELECT count(*) FROM chunks WHERE embedding IS NOT NULL),"
        " (SELECT count(*) FROM claims WHERE is_current_testimony), (SELECT count(*) FROM entities),"
        " (SELECT count(*) FROM facts WHERE invalidated_at IS NULL)").fetchone()
    return dict(zip(("documents", "versions", "content_objects", "sections", "chunks", "vectors", "claims",
                     "entities", "facts"), row))


def recent_runs(conn: psycopg.Connection, limit: int = 5) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT run_id, status, started_at, finished_at, counts FROM import_runs"
        " ORDER BY started_at DESC LIMIT %s", (limit,)).fetchall()
