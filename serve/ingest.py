"""`POST /ingest`: the API's one write. It stores the bytes, records the version (or finds the
same bytes unchanged) and leaves the version queued; the processor `corpusmem serve` starts
(`jobs/process.py`) runs queued versions through the import pipeline in micro-batches."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePosixPath

import psycopg

from actors.object_store import ObjectStore
from pipeline.documents.convert import ROUTES
from serve import models as m
from sql.write import ingest as ingest_sql


def ingest(conn: psycopg.Connection, store: ObjectStore, deployment_id: str, body: bytes, *, filename: str,
           mime: str, title: str | None, source_kind: str | None, source_ref: str | None,
           source_modified_at: datetime | None, versioning_mode: str, source_version_ref: str | None
           ) -> m.IngestedVersion:
    content_hash, key = store.put("raw", body)
    if source_kind is None:
        # No source identity: the document is its bytes.
        source_kind, source_ref = "upload", f"sha256:{content_hash}"
    got = ingest_sql.ingest_version(
        conn, source_kind=source_kind, source_ref=source_ref, title=title or PurePosixPath(filename).stem,
        filename=filename, versioning_mode=versioning_mode, mime=mime, content_hash=content_hash,
        size_bytes=len(body), object_key=key, source_modified_at=source_modified_at,
        source_version_ref=source_version_ref, routable=tuple(ROUTES), run_id=None)
    return m.IngestedVersion(deployment_id=deployment_id, doc_id=got.doc_id, version_id=got.version_id,
                             content_hash=content_hash, created=got.created, mime=got.mime, title=got.title,
                             versioning_mode=got.versioning_mode, parked=got.parked)
