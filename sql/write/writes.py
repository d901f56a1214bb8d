"""The `write` stage: a batch of finished versions lands in one transaction, by binary COPY.

A version's representation, sections, chunks (with vectors) and stage statuses are written
together with its `ready` status, so a version is either complete or absent: a crashed import,
re-run, resumes exactly the versions that did not land. Binary COPY with declared types is the
fast path into PostgreSQL (pgvector's own loading example); text COPY of 384-d vectors is about
ten times slower.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from psycopg.types.json import Jsonb

from pipeline import records
from sql.ids import child_id
from sql.write import reconcile
from sql.write.copying import as_uuid, copy_deduplicated, copy_rows

# Pipeline stage → the per-version work stage whose status records it.
WORK_STAGE = {
    "read": "ingest", "ingest": "ingest", "convert": "convert", "ocr": "convert", "describe": "convert",
    "structure": "structure", "chunk": "chunk", "extract": "extract_claims", "embed": "embed_chunk",
    "write": "embed_claim",
}
# In pipeline order: a failure at one stage means every stage before it succeeded.
WORK_STAGES = ("ingest", "convert", "structure", "chunk", "extract_claims", "ground_claims", "embed_chunk",
               "embed_claim")

_EXTRACTION_STAGES = ("extract_claims", "ground_claims", "embed_claim")
# Run by the facts phase once the document pipeline has landed a run's versions.
FACT_STAGES = ("normalize_relations", "adjudicate_observations", "adjudicate_supersession", "reconcile",
               "label_relation")

_SECTION_COLUMNS = ("section_id", "version_id", "ord", "heading", "level", "role", "char_start", "char_end")
_SECTION_TYPES = ("uuid", "uuid", "int4", "text", "int4", "text", "int4", "int4")
_CHUNK_COLUMNS = ("chunk_id", "version_id", "doc_id", "section_id", "ord", "char_start", "char_end",
                  "text", "text_hash", "embedding", "embedding_reused", "extracted_by")
_CHUNK_TYPES = ("uuid", "uuid", "uuid", "uuid", "int4", "int4", "int4", "text", "text", "vector", "bool", "text")
_CLAIM_COLUMNS = ("claim_id", "doc_id", "version_id", "chunk_id", "claim_text", "source_span", "char_start",
                  "char_end", "evidence_spans", "is_attributed", "asserted_at", "claim_valid_from",
                  "claim_valid_until", "claim_valid_precision", "claim_valid_kind", "added_context",
                  "entailment_self_verdict", "extractor", "embedding")
_CLAIM_TYPES = ("uuid", "uuid", "uuid", "uuid", "text", "text", "int4", "int4", "jsonb", "bool", "timestamptz",
                "timestamptz", "timestamptz", "text", "text", "jsonb", "text", "text", "vector")
_OCCURRENCE_COLUMNS = ("claim_id", "version_id", "chunk_id", "char_start", "char_end", "evidence_spans")
_OCCURRENCE_TYPES = ("uuid", "uuid", "uuid", "int4", "int4", "jsonb")
_LEDGER_COLUMNS = ("version_id", "chunk_id", "decision", "reason", "detail", "char_start", "char_end", "extractor")
_LEDGER_TYPES = ("uuid", "uuid", "text", "text", "text", "int4", "int4", "text")
_OCR_PAGE_COLUMNS = ("version_id", "page", "source", "width", "height", "char_start", "char_end", "lines", "reason")
_OCR_PAGE_TYPES = ("uuid", "int4", "text", "int4", "int4", "int4", "int4", "int4", "text")
_OCR_LINE_COLUMNS = ("version_id", "page", "line", "block", "char_start", "char_end", "x0", "y0", "x1", "y1",
                     "confidence", "low_confidence")
_OCR_LINE_TYPES = ("uuid", "int4", "int4", "int4", "int4", "int4", "float4", "float4", "float4", "float4", "float4",
                   "bool")


def _set_stages(cur: psycopg.Cursor, version_ids: str | Iterable[str],
                statuses: dict[str, tuple[str, str | None, str | None]]) -> None:
    """Upsert (status, defer_reason, last_error) per stage for one version or several; an outcome
    ends the version's claim (`owner_run`). In one `executemany`: psycopg pipelines it, so a
    batch's versions cost one round trip, not one a stage and version."""
    cur.executemany(
        "INSERT INTO stage_work (version_id, stage, status, defer_reason, attempts, last_error,"
        " started_at, finished_at) VALUES (%(v)s, %(s)s, %(st)s, %(d)s,"
        " CASE WHEN %(st)s IN ('succeeded', 'failed', 'dead_letter') THEN 1 ELSE 0 END, %(e)s, now(),"
        " CASE WHEN %(st)s IN ('succeeded', 'failed', 'dead_letter', 'skipped') THEN now() END)"
        " ON CONFLICT (version_id, stage) DO UPDATE SET status = EXCLUDED.status,"
        " defer_reason = EXCLUDED.defer_reason, last_error = EXCLUDED.last_error,"
        " attempts = stage_work.attempts + EXCLUDED.attempts, finished_at = EXCLUDED.finished_at,"
        " started_at = COALESCE(stage_work.started_at, EXCLUDED.started_at), owner_run = NULL,"
        " updated_at = now()",
        [{"v": version_id, "s": stage, "st": status, "d": defer_reason, "e": error}
         for version_id in ([version_ids] if isinstance(version_ids, str) else version_ids)
         for stage, (status, defer_reason, error) in statuses.items()])


def owned_versions(conn: psycopg.Connection, run_id: str, version_ids: list[str]) -> set[str]:
    """Those of `version_ids` whose claim run `run_id` holds, locked until the transaction ends.
    A version already landed has no owner any more, so landing a batch twice writes it once."""
    return {str(r[0]) for r in conn.execute(
        "SELECT version_id FROM stage_work WHERE stage = 'convert' AND owner_run = %s"
        " AND version_id = ANY(%s::uuid[]) ORDER BY version_id FOR UPDATE", (run_id, version_ids)).fetchall()}


def record_attempt(conn: psycopg.Connection, version_ids: list[str], stage: str, error: str, run_id: str) -> None:
    """An attempt at `stage` failed transiently and another is due: `failed` with
    `retry_backoff` (readiness: a retry is scheduled), one more attempt, its reason; for the
    versions run `run_id` owns."""
    conn.execute(
        "INSERT INTO stage_work (version_id, stage, status, defer_reason, attempts, last_error, started_at)"
        " SELECT o.version_id, %(s)s, 'failed', 'retry_backoff', 1, %(e)s, now() FROM stage_work o"
        " WHERE o.version_id = ANY(%(v)s::uuid[]) AND o.stage = 'convert' AND o.owner_run = %(run)s"
        " ON CONFLICT (version_id, stage) DO UPDATE SET status = 'failed', defer_reason = 'retry_backoff',"
        " attempts = stage_work.attempts + 1, last_error = EXCLUDED.last_error, finished_at = NULL,"
        " updated_at = now()", {"s": stage, "e": error, "v": version_ids, "run": run_id})


def _vector(data: bytes) -> Vector:
    return Vector(np.frombuffer(data, dtype=np.float32))


def write_costs(cur: psycopg.Cursor, rows: list[dict[str, Any]]) -> None:
    """The cost rows of `rows` (model calls of extraction, the embedder's seconds), by version."""
    cur.executemany(
        "INSERT INTO cost_ledger (version_id, stage, backend, model, calls, tokens_in, tokens_out,"
        " device_seconds) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        [(r["version_id"], c["stage"], c["backend"], c["model"], c["calls"], c["tokens_in"], c["tokens_out"],
          c["device_seconds"]) for r in rows for c in r["costs"] or []])


def write_claims(cur: psycopg.Cursor, rows: list[dict[str, Any]], extractor: str) -> None:
    """Claims (new ones; reused ones only as occurrences), ledger and cost rows of `rows`, each with
    `version_id`, `doc_id`, `source_modified_at`, `claims`, `ledger` and `costs`."""
    def chunk_id(r: dict[str, Any], c: dict[str, Any]) -> uuid.UUID:
        return as_uuid(child_id(r["version_id"], "chunk", c["chunk_ord"]))

    staged = copy_deduplicated(cur, "claims", _CLAIM_COLUMNS, _CLAIM_TYPES, (
        (as_uuid(c["claim_id"]), as_uuid(r["doc_id"]), as_uuid(r["version_id"]), chunk_id(r, c), c["claim_text"],
         c["source_span"], c["char_start"], c["char_end"], Jsonb(c["evidence_spans"]), c["is_attributed"],
         r["source_modified_at"], c["valid_from"], c["valid_until"], c["precision"], c["kind"],
         Jsonb(json.loads(c["added_context"] or "[]")), c["entailment_self_verdict"], c["extractor"],
         _vector(c["embedding"]))
        for r in rows for c in r["claims"] if not c["reused"]))
    # each new claim waits for the normalizer (a claim already in the memory keeps its mark)
    cur.execute(psycopg.sql.SQL("INSERT INTO claim_normalizations (claim_id, version_id)"
                                " SELECT claim_id, version_id FROM {} ON CONFLICT DO NOTHING").format(
                                    psycopg.sql.Identifier(staged)))
    copy_deduplicated(cur, "claim_occurrences", _OCCURRENCE_COLUMNS, _OCCURRENCE_TYPES, (
        (as_uuid(c["claim_id"]), as_uuid(r["version_id"]), chunk_id(r, c), c["char_start"], c["char_end"],
         Jsonb(c["evidence_spans"]))
        for r in rows for c in r["claims"]))
    copy_rows(cur, "extraction_ledger", _LEDGER_COLUMNS, _LEDGER_TYPES, (
        (as_uuid(r["version_id"]), chunk_id(r, e), e["decision"], e["reason"], e["detail"], e["char_start"],
         e["char_end"], extractor)
        for r in rows for e in r["ledger"] or []))
    write_costs(cur, rows)
    versions = [as_uuid(r["version_id"]) for r in rows]
    reconcile.hold_for_events(cur)
    # A passage read again by another extractor version: the other version's claims from the
    # same text of the same document stop being current testimony (`reextracted`).
    cur.execute(
        "WITH gone AS (UPDATE claims c SET is_current_testimony = false, currency_reason = 'reextracted'"
        " FROM chunks old, chunks new WHERE c.chunk_id = old.chunk_id AND c.doc_id = new.doc_id"
        " AND old.text_hash = new.text_hash AND new.version_id = ANY(%s) AND c.extractor <> %s"
        " AND c.is_current_testimony RETURNING c.claim_id, new.version_id)"
        " INSERT INTO testimony_currency_events (claim_id, is_current, reason, version_id)"
        " SELECT DISTINCT claim_id, false, 'reextracted', version_id FROM gone", (versions, extractor))
    # A claim a source had stopped saying (living removal, deleted document) that a new version
    # says again is current testimony again, and its assertions are adjudicated anew.
    cur.execute(
        "WITH back AS (UPDATE claims c SET is_current_testimony = true, currency_reason = NULL"
        " FROM claim_occurrences o WHERE o.claim_id = c.claim_id AND o.version_id = ANY(%s)"
        " AND NOT c.is_current_testimony AND c.currency_reason IN ('version_superseded', 'version_deleted')"
        " RETURNING c.claim_id, o.version_id),"
        " ev AS (INSERT INTO testimony_currency_events (claim_id, is_current, reason, version_id)"
        "        SELECT claim_id, true, 'said_again', version_id FROM back)"
        " UPDATE assertions a SET status = 'pending', epoch = a.epoch + 1 FROM back"
        " WHERE a.claim_id = back.claim_id", (versions,))


def write_ocr(cur: psycopg.Cursor, rows: list[dict[str, Any]]) -> None:
    """The pages and recognised lines of the OCR'd versions among `rows` (offsets and boxes, no text)."""
    copy_rows(cur, "ocr_pages", _OCR_PAGE_COLUMNS, _OCR_PAGE_TYPES, (
        (as_uuid(r["version_id"]), p["page"], p["source"], p["width"], p["height"], p["char_start"], p["char_end"],
         p["lines"], p["reason"])
        for r in rows for p in r["ocr_pages"] or []))
    copy_rows(cur, "ocr_lines", _OCR_LINE_COLUMNS, _OCR_LINE_TYPES, (
        (as_uuid(r["version_id"]), ln["page"], ln["line"], ln["block"], ln["char_start"], ln["char_end"], ln["x0"],
         ln["y0"], ln["x1"], ln["y1"], ln["confidence"], ln["low_confidence"])
        for r in rows for ln in r["ocr_lines"] or []))


def write_finished(conn: psycopg.Connection, rows: list[dict[str, Any]], md_keys: dict[str, str],
                   extractor: str | None) -> None:
    """Write versions that went through every stage (outcome process/resume, no error).

    `extractor` None: claim extraction runs after this write, in its own pass (`vllm`), so the
    extraction stages are left pending."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO representations (version_id, converter, converter_version, derivation,"
            " object_key, char_count) VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (version_id) DO NOTHING",
            [(row["version_id"], row["converter"], row["converter_version"], row["derivation"],
              md_keys[row["version_id"]], len(row["markdown"])) for row in rows])
        copy_rows(cur, "sections", _SECTION_COLUMNS, _SECTION_TYPES, (
            (as_uuid(child_id(r["version_id"], "section", s["ord"])), as_uuid(r["version_id"]), s["ord"], s["heading"],
             s["level"], s["role"], s["char_start"], s["char_end"])
            for r in rows for s in r["sections"]))
        copy_rows(cur, "chunks", _CHUNK_COLUMNS, _CHUNK_TYPES, (
            (as_uuid(child_id(r["version_id"], "chunk", c["ord"])), as_uuid(r["version_id"]), as_uuid(r["doc_id"]),
             as_uuid(child_id(r["version_id"], "section", c["section_ord"])), c["ord"], c["char_start"],
             c["char_end"], c["text"], c["text_hash"],
             _vector(c["embedding"]), bool(c["reused"]), extractor)
            for r in rows for c in r["chunks"]))
        write_ocr(cur, rows)
        if extractor is not None:
            write_claims(cur, rows, extractor)
        else:   # no claims yet, but the chunks' vectors were paid for
            write_costs(cur, rows)
        landed = [row["version_id"] for row in rows]
        cur.execute("UPDATE versions SET status = 'ready', error = NULL, parked_reason = NULL"
                    " WHERE version_id = ANY(%s::uuid[])", (landed,))
        _set_stages(cur, landed, {
            stage: ("pending" if extractor is None and stage in _EXTRACTION_STAGES else "succeeded", None, None)
            for stage in WORK_STAGES[1:]})


def finish_fact_stages(conn: psycopg.Connection) -> int:
    """The facts phase finished: every version whose claims are extracted and none of whose
    claims or assertions wait any more has its fact stages succeeded."""
    cur = conn.execute(
        "INSERT INTO stage_work (version_id, stage, status, attempts, started_at, finished_at)"
        " SELECT w.version_id, s.stage, 'succeeded', 1, now(), now() FROM stage_work w CROSS JOIN unnest(%s::text[]) s(stage)"
        " WHERE w.stage = 'extract_claims' AND w.status = 'succeeded'"
        # only versions not finished yet: a run must not rescan the whole memory
        " AND NOT EXISTS (SELECT 1 FROM stage_work d WHERE d.version_id = w.version_id"
        "                 AND d.stage = 'label_relation' AND d.status = 'succeeded')"
        " AND NOT EXISTS (SELECT 1 FROM claim_normalizations n JOIN claims c USING (claim_id)"
        "                 WHERE n.version_id = w.version_id AND n.normalized_by IS NULL AND c.is_current_testimony)"
        " AND NOT EXISTS (SELECT 1 FROM assertions a JOIN claims c USING (claim_id)"
        "                 WHERE c.version_id = w.version_id AND a.status = 'pending')"
        " ON CONFLICT (version_id, stage) DO UPDATE SET status = 'succeeded', finished_at = now(), updated_at = now()"
        " WHERE stage_work.status <> 'succeeded'", (list(FACT_STAGES),))
    return cur.rowcount


def write_unfinished(conn: psycopg.Connection, row: dict[str, Any], *, dead_letter: bool = False) -> None:
    """Record a version that failed at some stage or is parked for want of a converter route.

    `dead_letter`: the failure was transient and the stage used up its attempts, so it is
    `dead_letter`; otherwise it is permanent (a corrupt file, undecodable text) and `failed`.
    Either way the stage keeps its reason and nothing retries it until `corpusmem retry` or an
    import of the same bytes."""
    if row["version_id"] is None:
        return  # refused before it became a version: only the run report holds it
    with conn.cursor() as cur:
        if row["outcome"] == records.PARKED:
            cur.execute("UPDATE versions SET parked_reason = 'no_route', status = 'converting'"
                        " WHERE version_id = %s", (row["version_id"],))
            _set_stages(cur, row["version_id"], {"convert": ("pending", "no_route", None)})
            return
        failed_stage = WORK_STAGE[row["error_stage"]]
        cur.execute("UPDATE versions SET status = 'failed', error = %s WHERE version_id = %s",
                    (f"{failed_stage}: {row['error']}", row["version_id"]))
        statuses: dict[str, tuple[str, str | None, str | None]] = {}
        for stage in WORK_STAGES[1:]:
            if stage == failed_stage:
                statuses[stage] = ("dead_letter" if dead_letter else "failed", None, row["error"])
                break
            statuses[stage] = ("succeeded", None, None)
        _set_stages(cur, row["version_id"], statuses)


def record_run_items(conn: psycopg.Connection, run_id: str, rows: list[dict[str, Any]]) -> None:
    """Items of a run that did not simply land: refused, failed or parked (once each, however
    often their batch is landed)."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO import_run_items (run_id, item, outcome, stage, error, version_id)"
            " SELECT %(run)s, %(item)s, %(outcome)s, %(stage)s, %(error)s, %(v)s WHERE NOT EXISTS"
            " (SELECT 1 FROM import_run_items WHERE run_id = %(run)s AND item = %(item)s AND outcome = %(outcome)s"
            "  AND stage IS NOT DISTINCT FROM %(stage)s AND error IS NOT DISTINCT FROM %(error)s)",
            [{"run": run_id, "item": r["item"], "outcome": r["outcome"], "stage": r["error_stage"],
              "error": r["error"], "v": r["version_id"]} for r in rows])


def mark_chunk_extracted(cur: psycopg.Cursor, version_id: str, chunk_ord: int, extractor: str) -> None:
    cur.execute("UPDATE chunks SET extracted_by = %s WHERE version_id = %s AND ord = %s",
                (extractor, version_id, chunk_ord))


def finish_extraction(cur: psycopg.Cursor, version_ids: list[str]) -> list[str]:
    """Mark the extraction stages succeeded for versions whose every chunk has been read; return them."""
    done = [str(r[0]) for r in cur.execute(
        "SELECT version_id FROM chunks WHERE version_id = ANY(%s) GROUP BY version_id"
        " HAVING bool_and(extracted_by IS NOT NULL)", ([as_uuid(v) for v in version_ids],)).fetchall()]
    _set_stages(cur, done, {stage: ("succeeded", None, None) for stage in _EXTRACTION_STAGES})
    return done
