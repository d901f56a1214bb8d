"""The actors that hold a PostgreSQL connection: `Ingest` (store bytes, record versions) and
`Write` (land finished versions by binary COPY). Each is a Ray Data callable class, so its
connection and object store are opened once per actor, not per batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection

import psycopg
import pyarrow as pa
from pgvector.psycopg import register_vector

from actors.object_store import ObjectStore
from pipeline import records
from sql.write import ingest as ingest_sql
from sql.write import writes

_log = logging.getLogger(__name__)


class Ingest:
    """Hash, store the bytes once per hash, and record the version (or find it unchanged)."""

    def __init__(self, dsn: str, object_store: str, run_id: str | None, routable: Collection[str]) -> None:
        self._conn = psycopg.connect(dsn, autocommit=True)
        register_vector(self._conn)
        self._store = ObjectStore(object_store)
        self._run_id = run_id
        self._routable = tuple(routable)

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = time.perf_counter()
        rows = records.to_rows(batch)
        for row in rows:
            if row["outcome"] == records.FAILED:
                continue
            try:
                self._ingest(row)
            except Exception as err:  # one bad item must not take the batch down
                _log.exception("ingest failed for %s", row["item"])
                records.fail(row, "ingest", f"{type(err).__name__}: {err}")
        records.share_seconds(rows, "ingest", time.perf_counter() - started)
        return records.to_table(rows)

    def _ingest(self, row: dict) -> None:
        content_hash, key = self._store.put("raw", row["content"])
        got = ingest_sql.ingest_version(
            self._conn, source_kind=row["source_kind"], source_ref=row["source_ref"],
            title=row["title"], filename=row["filename"], versioning_mode=row["versioning_mode"],
            mime=row["mime"], content_hash=content_hash, size_bytes=len(row["content"]),
            object_key=key, source_modified_at=row["source_modified_at"],
            source_version_ref=row["source_version_ref"], routable=self._routable, run_id=self._run_id)
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
    """Land a batch of versions in one transaction; on failure, retry them one by one so a single
    bad version is recorded as failed and the others still land."""

    def __init__(self, dsn: str, object_store: str, run_id: str, extractor: str | None) -> None:
        # autocommit: each `transaction()` block is then a real transaction, never a savepoint
        # inside one that an earlier read opened
        self._conn = psycopg.connect(dsn, autocommit=True)
        register_vector(self._conn)
        self._store = ObjectStore(object_store)
        self._run_id = run_id
        self._extractor = extractor

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = time.perf_counter()
        rows = records.to_rows(batch)
        finished = [r for r in rows if records.is_active(r)]
        try:
            self._land(finished, [r for r in rows if not records.is_active(r)])
        except Exception:
            _log.exception("a batch of %d versions failed to land; retrying one by one", len(rows))
            for row in rows:
                try:
                    self._land([row] if records.is_active(row) else [], [] if records.is_active(row) else [row])
                except Exception as err:
                    records.fail(row, "write", f"{type(err).__name__}: {err}")
                    self._land([], [row])
        records.share_seconds(rows, "write", time.perf_counter() - started)
        return report_table(rows)

    def _land(self, finished: list[dict], others: list[dict]) -> None:
        md_keys = {r["version_id"]: self._store.put("md", r["markdown"].encode("utf-8"))[1]
                   for r in finished}
        with self._conn.transaction():
            if finished:
                writes.write_finished(self._conn, finished, md_keys, self._extractor)
            for row in others:
                if row["outcome"] in (records.FAILED, records.PARKED):
                    writes.write_unfinished(self._conn, row)
            noteworthy = [r for r in others if r["outcome"] in (records.FAILED, records.PARKED)]
            if noteworthy:
                writes.record_run_items(self._conn, self._run_id, noteworthy)


REPORT_SCHEMA = pa.schema([
    ("item", pa.string()), ("source_ref", pa.string()), ("outcome", pa.string()),
    ("created", pa.bool_()), ("version_id", pa.string()), ("error_stage", pa.string()),
    ("error", pa.string()), ("chunks", pa.int64()), ("vectors_computed", pa.int64()),
    ("vectors_reused", pa.int64()), ("claims", pa.int64()), ("claims_reused", pa.int64()),
    ("ledger_rows", pa.int64()),
    *[(f"s_{stage}", pa.float64()) for stage in records.STAGES],
])


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
            "vectors_computed": len(chunks) - reused + len(claims) - claims_reused,
            "vectors_reused": reused, "claims": len(claims), "claims_reused": claims_reused,
            "ledger_rows": len(r["ledger"] or []) if active else 0, **{f"s_{s}": r[f"s_{s}"] for s in records.STAGES}})
    return pa.Table.from_pylist(out, schema=REPORT_SCHEMA)


class LoadQueued:
    """Rows for versions `POST /ingest` queued: the document, its bytes from the object store, and
    what the previous version lets the new one reuse. Takes the place of read + ingest."""

    def __init__(self, dsn: str, object_store: str) -> None:
        self._conn = psycopg.connect(dsn, autocommit=True)
        register_vector(self._conn)
        self._store = ObjectStore(object_store)

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = time.perf_counter()
        rows = []
        for version_id in batch.column("version_id").to_pylist():
            found = ingest_sql.queued_row(self._conn, version_id)
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
            try:
                row["content"] = self._store.get(found["object_key"])
            except OSError as err:
                records.fail(row, "read", f"stored bytes unreadable: {err}")
            rows.append(row)
        records.share_seconds(rows, "read", time.perf_counter() - started)
        return records.to_table(rows)
