"""`POST /ingest`: the API's one write. It stores the bytes, records the version (or finds the
same bytes unchanged) and leaves the version queued; the processor `corpusmem serve` starts
(`jobs/process.py`) runs queued versions through the import pipeline in micro-batches.

Who ingested a version travels in the `X-Ingest-Principal-Kind` and `-Ref` headers, so it never
lands in an access log. They are believed only where the deployment says a gateway that
authenticates the actor sets them (CORPUSMEM_TRUSTED_PRINCIPAL_SOURCE) and the caller has full
write authority; otherwise any client could name anyone, so they are ignored, not refused."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePosixPath

from fastapi import HTTPException

import psycopg

from actors.object_store import ObjectStore
from pipeline.documents.convert import ROUTES
from serve import models as m
from sql.write import ingest as ingest_sql


PRINCIPAL_KIND, PRINCIPAL_REF = "X-Ingest-Principal-Kind", "X-Ingest-Principal-Ref"
PRINCIPAL_PAIR = f"{PRINCIPAL_KIND} and {PRINCIPAL_REF} must be supplied together"
PRINCIPAL_INVALID = "invalid_ingest_principal"


def principal(kind: str | None, ref: str | None) -> m.IngestPrincipal | None:
    """The trusted headers' actor, or None when neither is sent; `422` with the seed's `detail`
    for one without the other, an unknown kind, or a ref that is not 1 to 255 printable ASCII
    characters (a control character, a tab or a non-ASCII letter included)."""
    if kind is None and ref is None:
        return None
    if kind is None or ref is None:
        raise HTTPException(422, PRINCIPAL_PAIR)
    if kind not in m.INGEST_PRINCIPAL_KINDS or not 1 <= len(ref) <= 255 \
            or not all(" " <= ch <= "~" for ch in ref):
        raise HTTPException(422, PRINCIPAL_INVALID)
    return m.IngestPrincipal(kind=kind, ref=ref)


def ingest(conn: psycopg.Connection, store: ObjectStore, deployment_id: str, body: bytes, *, filename: str,
           mime: str, title: str | None, source_kind: str | None, source_ref: str | None,
           source_modified_at: datetime | None, versioning_mode: str, source_version_ref: str | None,
           ingested_by: m.IngestPrincipal | None = None) -> m.IngestedVersion:
    content_hash, key = store.put("raw", body)
    if source_kind is None:
        # No source identity: the document is its bytes.
        source_kind, source_ref = "upload", f"sha256:{content_hash}"
    got = ingest_sql.ingest_version(
        conn, source_kind=source_kind, source_ref=source_ref, title=title or PurePosixPath(filename).stem,
        filename=filename, versioning_mode=versioning_mode, mime=mime, content_hash=content_hash,
        size_bytes=len(body), object_key=key, source_modified_at=source_modified_at,
        source_version_ref=source_version_ref, routable=tuple(ROUTES), run_id=None,
        ingested_by=(ingested_by.kind, ingested_by.ref) if ingested_by else None)
    return m.IngestedVersion(deployment_id=deployment_id, doc_id=got.doc_id, version_id=got.version_id,
                             content_hash=content_hash, created=got.created, mime=got.mime, title=got.title,
                             versioning_mode=got.versioning_mode, parked=got.parked)
