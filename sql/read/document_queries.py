"""SQL behind `GET /documents/{doc_id}/versions`: one live document and every version of it."""

from __future__ import annotations

from sql.read.read_queries import Conn, fetch, fetch_one, servable, version_status


async def document(conn: Conn, doc_id: str) -> tuple | None:
    """(doc_id, title, source_kind, source_ref) of a live document, else None."""
    return await fetch_one(
        conn, f"SELECT d.doc_id, d.title, d.source_kind, d.source_ref FROM documents d WHERE d.doc_id = %s"
        f" AND {servable('document', 'd')}", (doc_id,))


async def versions(conn: Conn, doc_id: str) -> list[tuple]:
    """Its versions, newest first: (version_id, seq, status, ingested_at, content_hash, mime,
    source_modified_at, source_version_ref, error, ingested_by_kind, ingested_by_ref, parked_reason)."""
    return await fetch(
        conn, f"SELECT v.version_id, v.seq, {version_status('v')}, v.ingested_at, v.content_hash, v.mime,"
        " v.source_modified_at, v.source_version_ref, v.error, v.ingested_by_kind, v.ingested_by_ref, v.parked_reason"
        " FROM versions v WHERE v.doc_id = %s ORDER BY v.seq DESC", (doc_id,))
