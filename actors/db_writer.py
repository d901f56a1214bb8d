"""The actors that hold a PostgreSQL connection: `Ingest` (store bytes, record versions),
`LoadQueued` (rows for versions taken from the queue) and `Write` (land finished versions by
binary COPY). Each is a Ray Data callable class, so its connection and object store are opened
once per actor, not per batch.

Every call out of the process (PostgreSQL, the object store) is retried when it fails
transiently (`actors/retries.py`): the connection is opened again, the attempt is recorded on the
version's stage row (`failed`, `retry_backoff`) and the next one waits a doubling backoff. A
unit that fails transiently `RetryPolicy.attempts` times is `dead_letter` with its last reason;
anything else (a corrupt file, a bug) fails once and is `failed`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

import psycopg
import pyarrow as pa
from pgvector.psycopg import register_vector

from actors import metrics
from actors.object_store import ObjectStore
from actors.retries import GaveUp, RetryPolicy, describe, with_retries
from pipeline import records
from pipeline.documents.ocr_convert import pages_recognised
from pipeline.documents.routes import Routes
from sql.write import ingest as ingest_sql
from sql.write import writes

_log = logging.getLogger(__name__)


class Link:
    """One autocommit PostgreSQL connection, opened again after it broke."""

    def __init__(self, dsn: str, application_name: str | None = None) -> None:
        self._dsn = dsn
        self._application_name = application_name
        self._conn: psycopg.Connection | None = None

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            # autocommit: each `transaction()` block is then a real transaction, never a
            # savepoint inside one that an earlier read opened
            self._conn = psycopg.connect(self._dsn, autocommit=True,
                                         **({"application_name": self._application_name}
                                            if self._application_name else {}))
            register_vector(self._conn)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def after(self, err: BaseException) -> None:
        """A connection that failed is not trusted again."""
        if isinstance(err, psycopg.Error) and self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
            self._conn = None


def _best_effort(what: str, call: Callable[[], None]) -> None:
    """Recording a failed attempt must not turn into a failure of its own (the database may be
    what failed): the next attempt, or the dead letter, is recorded anyway."""
    try:
        call()
    except Exception:
        _log.warning("could not record %s", what, exc_info=True)


class Ingest:
    """Hash, store the bytes once per hash, and record the version (or find it unchanged). An
    import's run becomes the owner of every version it will process (`ingest_version`)."""

    def __init__(self, dsn: str, object_store: str, run_id: str | None, routes: Routes,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem ingest")
        self._store = ObjectStore(object_store)
        self._run_id = run_id
        self._routes = routes
        self._retry = retry

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = records.clock()
        rows = records.to_rows(batch)
        for row in rows:
            if row["outcome"] == records.FAILED:
                continue
            try:
                with_retries(self._retry, partial(self._ingest, row), self._link.after)
            except GaveUp as err:
                # no version exists yet: the run report holds it, and importing it again retries it
                records.fail(row, "ingest", str(err))
            except Exception as err:  # one bad item must not take the batch down
                _log.exception("ingest failed for %s", row["item"])
                records.fail(row, "ingest", describe(err))
        records.share_seconds(rows, "ingest", started)
        return records.to_table(rows)

    def _ingest(self, row: dict) -> None:
        content_hash, key = self._store.put("raw", row["content"])
        got = ingest_sql.ingest_version(
            self._link.conn, source_kind=row["source_kind"], source_ref=row["source_ref"],
            title=row["title"], filename=row["filename"], versioning_mode=row["versioning_mode"],
            mime=row["mime"], content_hash=content_hash, size_bytes=len(row["content"]),
            object_key=key, source_modified_at=row["source_modified_at"],
            source_version_ref=row["source_version_ref"],
            routable=self._routes.routable_types(row["filename"], row["mime"]), run_id=self._run_id)
        row.update(doc_id=got.doc_id, version_id=got.version_id, created=got.created,
                   content_hash=content_hash, mime=got.mime, title=got.title,
                   versioning_mode=got.versioning_mode, outcome=got.outcome,
                   prior_vectors=[{"text_hash": h, "embedding": e} for h, e in got.prior_vectors],
                   prior_claims=got.prior_claims)
        if got.outcome == records.UNCHANGED:
            row.update(content=None)
            if got.parked:
                row.update(outcome=records.PARKED)


class Write:
    """Land a batch of versions in one transaction; on a permanent failure, land them one by one
    so a single bad version is recorded as failed and the others still land.

    Only versions the run still owns are written (`owned_versions`, under row locks), and landing
    ends the claim: a batch landed twice (a Ray task retried after its commit) writes nothing the
    second time, and a version another owner took over is left to it."""

    def __init__(self, dsn: str, object_store: str, run_id: str, extractor: str | None,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem write")
        self._store = ObjectStore(object_store)
        self._run_id = run_id
        self._extractor = extractor
        self._retry = retry

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = records.clock()
        rows = records.to_rows(batch)
        try:
            self._land_retrying(rows)
        except GaveUp as err:
            self._give_up(rows, err)
        except Exception:
            _log.exception("a batch of %d versions failed to land; retrying one by one", len(rows))
            for row in rows:
                try:
                    self._land_retrying([row])
                except GaveUp as err:
                    self._give_up([row], err)
                except Exception as err:
                    records.fail(row, "write", describe(err))
                    with_retries(self._retry, partial(self._land, [row]), self._link.after)
        records.share_seconds(rows, "write", started)
        report = report_table(rows)
        _count_landed(report)
        return report

    def _land_retrying(self, rows: list[dict]) -> None:
        active = [r["version_id"] for r in rows if records.is_active(r)]

        def on_retry(err: BaseException) -> None:
            self._link.after(err)
            _best_effort("a failed write attempt", lambda: writes.record_attempt(
                self._link.conn, active, writes.WORK_STAGE["write"], describe(err), self._run_id))

        with_retries(self._retry, lambda: self._land(rows), on_retry)

    def _give_up(self, rows: list[dict], err: GaveUp) -> None:
        for row in rows:
            if records.is_active(row):
                records.fail(row, "write", str(err), dead_letter=True)
        with_retries(self._retry, lambda: self._land(rows), self._link.after)

    def _land(self, rows: list[dict]) -> None:
        finished = [r for r in rows if records.is_active(r)]
        md_keys = {r["version_id"]: self._store.put("md", r["markdown"].encode("utf-8"))[1] for r in finished}
        conn = self._link.conn
        with conn.transaction():
            owned = writes.owned_versions(conn, self._run_id, [r["version_id"] for r in rows if r["version_id"]])
            mine = [r for r in finished if r["version_id"] in owned]
            if mine:
                writes.write_finished(conn, mine, md_keys, self._extractor)
            for row in rows:
                if row["outcome"] in (records.FAILED, records.PARKED) and row["version_id"] in owned:
                    writes.write_unfinished(conn, row, dead_letter=bool(row["dead_letter"]))
            noteworthy = [r for r in rows if r["outcome"] in (records.FAILED, records.PARKED)]
            if noteworthy:
                writes.record_run_items(conn, self._run_id, noteworthy)
        for row in finished:
            if row["version_id"] not in owned:
                # landed already (this batch, once before) or held by another owner
                row.update(outcome=records.UNCHANGED, created=False)


# The reason a version is dead-lettered with when its stored bytes cannot be read: the one failure
# that the bytes coming back cures (`corpusmem check --repair` re-queues it then).
UNREADABLE_BYTES = "stored bytes unreadable"

REPORT_SCHEMA = pa.schema([
    ("item", pa.string()), ("source_ref", pa.string()), ("outcome", pa.string()),
    ("created", pa.bool_()), ("version_id", pa.string()), ("error_stage", pa.string()),
    ("error", pa.string()), ("chunks", pa.int64()), ("chunk_vectors_computed", pa.int64()),
    ("claim_vectors_computed", pa.int64()), ("vectors_cached", pa.int64()),
    ("vectors_reused", pa.int64()), ("claims", pa.int64()), ("claims_reused", pa.int64()),
    ("ledger_rows", pa.int64()), ("ocr_pages", pa.int64()),
    # pages the vision model described, and the reason of each page it did not (`DESCRIPTION`)
    ("described_pages", pa.int64()), ("description_failures", pa.list_(pa.string())),
    *[(f"s_{stage}", pa.float64()) for stage in records.STAGES],
    *[(f"c_{stage}", pa.float64()) for stage in records.STAGES],
])


def _count_landed(report: pa.Table) -> None:
    """Every row of a run reaches this stage, failed or not: a row counts at each stage it spent
    time in, with the outcome it ended with."""
    for r in report.to_pylist():
        for stage in records.STAGES:
            if r[f"s_{stage}"]:
                metrics.inc("corpusmem_documents_total", stage=stage, outcome=r["outcome"])
        metrics.inc("corpusmem_chunks_total", r["chunks"])
        metrics.inc("corpusmem_claims_total", r["claims"], stage="extract")
        if r["outcome"] == records.FAILED:
            metrics.inc("corpusmem_failures_total", stage=r["error_stage"] or "unknown", reason=metrics.reason(r["error"]))


def report_table(rows: list[dict]) -> pa.Table:
    """What the driver needs of each row: small, so the driver's memory stays flat."""
    out = []
    for r in rows:
        active = records.is_active(r)
        chunks = (r["chunks"] or []) if active else []
        claims = (r["claims"] or []) if active else []
        reused = sum(1 for c in chunks if c["reused"])
        claims_reused = sum(1 for c in claims if c["reused"])
        out.append({
            "item": r["item"], "source_ref": r["source_ref"], "outcome": r["outcome"],
            "created": r["created"], "version_id": r["version_id"], "error_stage": r["error_stage"],
            "error": r["error"], "chunks": len(chunks),
            "chunk_vectors_computed": r["chunk_vectors_computed"] or 0,
            "claim_vectors_computed": r["claim_vectors_computed"] or 0,
            "vectors_cached": len(chunks) - reused + len(claims) - claims_reused
            - (r["chunk_vectors_computed"] or 0) - (r["claim_vectors_computed"] or 0) if active else 0,
            "vectors_reused": reused, "claims": len(claims), "claims_reused": claims_reused,
            "ledger_rows": len(r["ledger"] or []) if active else 0,
            "ocr_pages": pages_recognised(r) if active else 0,
            # whatever became of the document: a failed one counts the descriptions that failed it
            "described_pages": sum(1 for d in r["descriptions"] or [] if d["kind"] is not None),
            "description_failures": [d["reason"] for d in r["descriptions"] or [] if d["kind"] is None],
            **{f"{t}_{s}": r[f"{t}_{s}"] for s in records.STAGES for t in ("s", "c")}})
    return pa.Table.from_pylist(out, schema=REPORT_SCHEMA)


class LoadQueued:
    """Rows for versions taken from the queue (`POST /ingest`, `retry`, a dead owner's): the
    document, its bytes from the object store, and what the previous version lets the new one
    reuse. Takes the place of read + ingest. Reading the bytes is the first thing `convert`
    needs, so an object store that stays unreadable dead-letters `convert`."""

    def __init__(self, dsn: str, object_store: str, run_id: str, retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem load")
        self._store = ObjectStore(object_store)
        self._run_id = run_id
        self._retry = retry

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = records.clock()
        rows = []
        for version_id in batch.column("version_id").to_pylist():
            found = with_retries(self._retry, partial(self._queued_row, version_id), self._link.after)
            if found is None:
                continue
            row = records.new_row(
                item=found["source_ref"], source_kind=found["source_kind"], source_ref=found["source_ref"],
                filename=found["filename"], title=found["title"], mime=found["mime"],
                versioning_mode=found["versioning_mode"], source_modified_at=found["source_modified_at"],
                source_version_ref=found["source_version_ref"], size_bytes=found["size_bytes"],
                outcome=records.PROCESS, doc_id=found["doc_id"], version_id=version_id,
                content_hash=found["content_hash"], created=True, prior_vectors=found["prior_vectors"],
                prior_claims=found["prior_claims"])

            def on_retry(err: BaseException, version_id: str = version_id) -> None:
                self._link.after(err)
                _best_effort("a failed read attempt", lambda: writes.record_attempt(
                    self._link.conn, [version_id], "convert", f"{UNREADABLE_BYTES}: {describe(err)}",
                    self._run_id))

            try:
                row["content"] = with_retries(self._retry, partial(self._store.get, found["object_key"]), on_retry)
            except GaveUp as err:
                records.fail(row, "convert", f"{UNREADABLE_BYTES}: {err}", dead_letter=True)
                with_retries(self._retry, partial(self._dead_letter, row), self._link.after)
            rows.append(row)
        records.share_seconds(rows, "read", started)
        return records.to_table(rows)

    def _queued_row(self, version_id: str) -> dict | None:
        return ingest_sql.queued_row(self._link.conn, version_id)

    def _dead_letter(self, row: dict) -> None:
        conn = self._link.conn
        with conn.transaction():
            if writes.owned_versions(conn, self._run_id, [row["version_id"]]):
                writes.write_unfinished(conn, row, dead_letter=True)
