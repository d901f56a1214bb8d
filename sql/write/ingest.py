"""The `ingest` stage against the authority: identity, versions, `created`, resumption.

One call per document version, in its own transaction, with the document row locked, so two
writers of the same `(source_kind, source_ref)` are serialised and a failure of one item never
touches another. IDs are derived from content (`doc_id` from the source pair, `version_id` from
the document, sequence number and bytes), so re-running an import creates nothing twice.

The work queue lives here too. An import claims each version it will process for its run (the
`convert` row goes `running` with `owner_run`); `POST /ingest` leaves the version `pending` for
a processor to claim (`claim_versions`). A claim is only ever taken from `pending` or from an
owner that is no longer alive (`run_is_live`, migration 0009), so one version has one owner.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg

from sql.ids import NAMESPACE

# Statuses of a version whose early stages an earlier run started and did not finish.
_UNFINISHED = ("ingesting", "converting", "structuring")


def doc_id_for(source_kind: str, source_ref: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"doc\x00{source_kind}\x00{source_ref}"))


def version_id_for(doc_id: str, seq: int, content_hash: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"version\x00{doc_id}\x00{seq}\x00{content_hash}"))


@dataclass(frozen=True)
class Ingested:
    doc_id: str
    version_id: str
    created: bool
    outcome: str            # process | resume | unchanged | parked
    mime: str               # the sticky type of these bytes
    title: str
    versioning_mode: str
    parked: str | None
    prior_vectors: list[tuple[str, bytes]]
    prior_claims: list[dict]


def ingest_version(
    conn: psycopg.Connection, *, source_kind: str, source_ref: str, title: str, filename: str,
    versioning_mode: str, mime: str, content_hash: str, size_bytes: int, object_key: str,
    source_modified_at: datetime | None, source_version_ref: str | None,
    routable: Collection[str], run_id: str | None, ingested_by: tuple[str, str] | None = None,
) -> Ingested:
    """Record one version of a document (bytes already in the object store). `ingested_by`,
    (kind, ref) of who sent it, is recorded only on a version this call creates: the same bytes
    sent again by someone else change nothing."""
    if source_modified_at is not None and source_modified_at.utcoffset() is None:
        raise ValueError("source_modified_at must be timezone-aware UTC")
    routable = list(routable)
    doc_id = doc_id_for(source_kind, source_ref)
    with conn.transaction():
        conn.execute(
            "INSERT INTO content_objects (content_hash, size_bytes, mime, object_key)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (content_hash) DO NOTHING",
            (content_hash, size_bytes, mime, object_key))
        # The type is sticky per content, except that a routable type replaces one that has no
        # route, which releases the parked conversions of those bytes.
        stored_mime = conn.execute(
            "UPDATE content_objects SET mime = CASE WHEN mime <> ALL(%(r)s) AND %(m)s = ANY(%(r)s)"
            " THEN %(m)s ELSE mime END WHERE content_hash = %(h)s RETURNING mime",
            {"r": routable, "m": mime, "h": content_hash}).fetchone()[0]
        conn.execute(
            "INSERT INTO documents (doc_id, source_kind, source_ref, title, filename, versioning_mode)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (source_kind, source_ref) DO NOTHING",
            (doc_id, source_kind, source_ref, title, filename, versioning_mode))
        doc_title, doc_mode, deleted_at = conn.execute(
            "SELECT title, versioning_mode, deleted_at FROM documents WHERE doc_id = %s FOR UPDATE",
            (doc_id,)).fetchone()
        latest = conn.execute(
            "SELECT version_id, seq, content_hash, status, parked_reason, mime FROM versions"
            " WHERE doc_id = %s ORDER BY seq DESC LIMIT 1", (doc_id,)).fetchone()

        if latest is not None and latest[2] == content_hash and deleted_at is None:
            version_id, _, _, status, parked_reason, version_mime = latest
            version_id = str(version_id)
            if source_version_ref is not None:
                conn.execute(
                    "UPDATE versions SET source_version_ref = %s WHERE version_id = %s"
                    " AND source_version_ref IS DISTINCT FROM %s",
                    (source_version_ref, version_id, source_version_ref))
            if parked_reason is not None and stored_mime in routable:
                conn.execute(
                    "UPDATE versions SET mime = %s, parked_reason = NULL WHERE version_id = %s",
                    (stored_mime, version_id))
                conn.execute("UPDATE stage_work SET defer_reason = NULL, updated_at = now()"
                             " WHERE version_id = %s AND stage = 'convert'", (version_id,))
                outcome, parked = "resume", None
            elif parked_reason is not None:
                outcome, parked = "unchanged", parked_reason
            elif status in _UNFINISHED:
                outcome, parked = "resume", None
            elif status == "failed" and run_id is not None:
                # Importing the same bytes again retries a failed version (it may have failed
                # for a reason since fixed); `POST /ingest` of them stays a no-op, as the seed says.
                reopen_versions(conn, [version_id])
                outcome, parked = "resume", None
            else:
                outcome, parked = "unchanged", None
            if outcome == "resume" and run_id is not None and not _claim(conn, run_id, version_id):
                outcome = "unchanged"  # a live run elsewhere holds it and will land it
            resuming = outcome == "resume"
            return Ingested(doc_id, version_id, False, outcome, stored_mime if resuming else version_mime,
                            doc_title, doc_mode, parked,
                            _prior_vectors(conn, doc_id, version_id) if resuming else [],
                            prior_claims(conn, doc_id, version_id) if resuming else [])

        seq = 1 if latest is None else latest[1] + 1
        version_id = version_id_for(doc_id, seq, content_hash)
        if deleted_at is not None:
            conn.execute("UPDATE documents SET deleted_at = NULL WHERE doc_id = %s", (doc_id,))
        by_kind, by_ref = ingested_by or (None, None)
        conn.execute(
            "INSERT INTO versions (version_id, doc_id, seq, content_hash, mime, source_modified_at,"
            " source_version_ref, status, import_run_id, ingested_by_kind, ingested_by_ref)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, 'converting', %s, %s, %s)",
            (version_id, doc_id, seq, content_hash, stored_mime, source_modified_at,
             source_version_ref, run_id, by_kind, by_ref))
        # An import owns the version it creates from this moment; `POST /ingest` queues it.
        conn.execute(
            "INSERT INTO stage_work (version_id, stage, status, attempts, started_at, finished_at, owner_run)"
            " VALUES (%(v)s, 'ingest', 'succeeded', 1, now(), now(), NULL),"
            " (%(v)s, 'convert', CASE WHEN %(run)s::uuid IS NULL THEN 'pending' ELSE 'running' END, 0,"
            "  CASE WHEN %(run)s::uuid IS NOT NULL THEN now() END, NULL, %(run)s)",
            {"v": version_id, "run": run_id})
        return Ingested(doc_id, version_id, True, "process", stored_mime, doc_title, doc_mode, None,
                        _prior_vectors(conn, doc_id, version_id), prior_claims(conn, doc_id, version_id))


_PREVIOUS_READY = ("SELECT v.version_id FROM versions v WHERE v.doc_id = %s AND v.version_id <> %s"
                   " AND v.status = 'ready' ORDER BY v.seq DESC LIMIT 1")


def prior_claims(conn: psycopg.Connection, doc_id: str, version_id: str) -> list[dict]:
    """What the previous finished version's chunks yielded, by chunk text: its current claims with
    offsets relative to the chunk, and a claimless marker for a chunk that was read and gave
    none, so an unchanged passage keeps its claims and costs no model call."""
    rows = conn.execute(
        "SELECT c.text_hash, c.extracted_by, o.claim_id, o.char_start - c.char_start,"
        " o.char_end - c.char_start, o.evidence_spans, c.char_start"
        " FROM chunks c LEFT JOIN claim_occurrences o ON o.chunk_id = c.chunk_id"
        " LEFT JOIN claims cl ON cl.claim_id = o.claim_id AND cl.is_current_testimony"
        f" WHERE c.version_id = ({_PREVIOUS_READY}) AND c.extracted_by IS NOT NULL"
        " AND (o.claim_id IS NULL OR cl.claim_id IS NOT NULL)"
        " ORDER BY c.ord, o.char_start, o.claim_id", (doc_id, version_id)).fetchall()
    found = []
    for text_hash, extractor, claim_id, rel_start, rel_end, spans, chunk_start in rows:
        found.append({
            "chunk_text_hash": text_hash, "extractor": extractor,
            "claim_id": None if claim_id is None else str(claim_id), "rel_start": rel_start,
            "rel_end": rel_end,
            "rel_evidence": [{"char_start": s["char_start"] - chunk_start, "char_end": s["char_end"] - chunk_start}
                             for s in spans or []]})
    return found


def _prior_vectors(conn: psycopg.Connection, doc_id: str, version_id: str) -> list[tuple[str, bytes]]:
    """(text hash, float32 bytes) of the document's most recent finished version other than this
    one: a chunk whose text is unchanged reuses that vector instead of being embedded again."""
    rows = conn.execute(
        f"SELECT c.text_hash, c.embedding::real[] FROM chunks c WHERE c.version_id = ({_PREVIOUS_READY})"
        " AND c.embedding IS NOT NULL",
        (doc_id, version_id)).fetchall()
    seen: dict[str, bytes] = {}
    for text_hash, values in rows:
        seen.setdefault(text_hash, np.asarray(values, dtype=np.float32).tobytes())
    return sorted(seen.items())


# A version waiting for an owner: queued (`POST /ingest`, `retry`, a finished run that did not
# land it), or held by a run whose driver is gone. A version an import ingested and has not
# written yet is `running` under a live owner and never matches.
_CLAIMABLE = ("v.status = 'converting' AND v.parked_reason IS NULL AND d.deleted_at IS NULL"
              " AND (w.status = 'pending' OR (w.owner_run IS NOT NULL AND NOT run_is_live(w.owner_run)))")


def queued_versions(conn: psycopg.Connection, limit: int) -> list[str]:
    """Versions waiting for an owner, oldest first (`claim_versions` takes them)."""
    return [str(r[0]) for r in conn.execute(
        "SELECT v.version_id FROM versions v JOIN documents d USING (doc_id) JOIN stage_work w"
        f" ON w.version_id = v.version_id AND w.stage = 'convert' WHERE {_CLAIMABLE}"
        " ORDER BY v.ingested_at, v.version_id LIMIT %s", (limit,)).fetchall()]


def claim_versions(conn: psycopg.Connection, run_id: str, version_ids: list[str]) -> list[str]:
    """Make run `run_id` the owner of those of `version_ids` that wait for one; return them.
    `SKIP LOCKED`: a version another claimer is taking at this moment is left to it."""
    with conn.transaction():
        got = {str(r[0]) for r in conn.execute(
            "WITH c AS (SELECT w.version_id FROM stage_work w JOIN versions v USING (version_id)"
            "           JOIN documents d USING (doc_id) WHERE w.stage = 'convert'"
            f"          AND w.version_id = ANY(%(v)s::uuid[]) AND {_CLAIMABLE} FOR UPDATE OF w SKIP LOCKED)"
            " UPDATE stage_work w SET status = 'running', owner_run = %(run)s, defer_reason = NULL,"
            " started_at = now(), finished_at = NULL, updated_at = now()"
            " FROM c WHERE w.version_id = c.version_id AND w.stage = 'convert' RETURNING w.version_id",
            {"v": version_ids, "run": run_id}).fetchall()}
    return [v for v in dict.fromkeys(version_ids) if v in got]


def _claim(conn: psycopg.Connection, run_id: str, version_id: str) -> bool:
    """Claim one version inside `ingest_version`'s transaction (the document row is locked)."""
    return conn.execute(
        "UPDATE stage_work SET status = 'running', owner_run = %(run)s, defer_reason = NULL, started_at = now(),"
        " finished_at = NULL, updated_at = now() WHERE version_id = %(v)s AND stage = 'convert'"
        " AND (owner_run IS NULL OR owner_run = %(run)s OR NOT run_is_live(owner_run)) RETURNING 1",
        {"v": version_id, "run": run_id}).fetchone() is not None


def reopen_versions(conn: psycopg.Connection, version_ids: list[str], stage: str | None = None) -> list[str]:
    """Failed versions (a `failed` or `dead_letter` document stage, at `stage` if given) back to
    the queue: the version `converting` again, those stages and `convert` `pending`, attempts
    kept. Returns the versions reopened."""
    from sql.write.writes import WORK_STAGES

    stages = list(WORK_STAGES[1:])
    with conn.transaction():
        reopened = [str(r[0]) for r in conn.execute(
            "UPDATE versions v SET status = 'converting', error = NULL WHERE v.version_id = ANY(%(v)s::uuid[])"
            " AND v.status = 'failed' AND EXISTS (SELECT 1 FROM stage_work w WHERE w.version_id = v.version_id"
            " AND w.status IN ('failed', 'dead_letter') AND w.stage = ANY(%(s)s)"
            " AND (%(stage)s::text IS NULL OR w.stage = %(stage)s)) RETURNING v.version_id",
            {"v": version_ids, "s": stages, "stage": stage}).fetchall()]
        conn.execute(
            "UPDATE stage_work SET status = 'pending', defer_reason = NULL, finished_at = NULL, owner_run = NULL,"
            " updated_at = now() WHERE version_id = ANY(%s::uuid[]) AND stage = ANY(%s)"
            " AND (status IN ('failed', 'dead_letter') OR stage = 'convert')", (reopened, stages))
    return reopened


def reroute_parked(conn: psycopg.Connection, has_route: Callable[[str, str], bool],
                   version_id: str | None = None) -> list[str]:
    """Versions parked `no_route` that now have a route (`has_route(mime, filename)`;
    `version_id`: only that one), back to the queue: no parked reason, `convert` pending with no
    owner. Returns them."""
    with conn.transaction():
        parked = conn.execute(
            "SELECT v.version_id::text, v.mime, d.filename FROM versions v JOIN documents d USING (doc_id)"
            " WHERE d.deleted_at IS NULL AND v.parked_reason = 'no_route' AND v.status = 'converting'"
            " AND (%(v)s::uuid IS NULL OR v.version_id = %(v)s::uuid) FOR UPDATE OF v", {"v": version_id}).fetchall()
        routed = [v for v, mime, filename in parked if has_route(mime, filename or "")]
        rerouted = [str(r[0]) for r in conn.execute(
            "UPDATE versions SET parked_reason = NULL WHERE version_id = ANY(%s::uuid[]) RETURNING version_id",
            (routed,)).fetchall()]
        conn.execute(
            "UPDATE stage_work SET status = 'pending', defer_reason = NULL, owner_run = NULL, finished_at = NULL,"
            " updated_at = now() WHERE version_id = ANY(%s::uuid[]) AND stage = 'convert'", (rerouted,))
    return rerouted


def queued_row(conn: psycopg.Connection, version_id: str) -> dict | None:
    """What the pipeline needs to process a queued version: its document, bytes' key, and the
    previous version's vectors and claims to reuse."""
    row = conn.execute(
        "SELECT d.doc_id::text, d.source_kind, d.source_ref, d.filename, d.title, d.versioning_mode, v.mime,"
        " v.source_modified_at, v.source_version_ref, v.content_hash, o.object_key, o.size_bytes"
        " FROM versions v JOIN documents d USING (doc_id) JOIN content_objects o USING (content_hash)"
        " WHERE v.version_id = %s", (version_id,)).fetchone()
    if row is None:
        return None
    keys = ("doc_id", "source_kind", "source_ref", "filename", "title", "versioning_mode", "mime",
            "source_modified_at", "source_version_ref", "content_hash", "object_key", "size_bytes")
    found = dict(zip(keys, row))
    found["prior_vectors"] = [{"text_hash": h, "embedding": e} for h, e in _prior_vectors(conn, found["doc_id"], version_id)]
    found["prior_claims"] = prior_claims(conn, found["doc_id"], version_id)
    return found
