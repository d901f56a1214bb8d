"""SQL behind `GET /documents/{doc_id}/versions`: one live document and every version of it."""

from __future__ import annotations

from sql.read.read_queries import Conn, fetch, fetch_one, servable


async def document(conn: Conn, doc_id: str) -> tuple | None:
    """(doc_id, title, source_kind, source_ref) of a live document, else None."""
    return await fetch_one(
        conn, f"SELECT d.doc_id, d.title, d.source_kind, d.source_ref FROM documents d WHERE d.doc_id = %s"
        f" AND {servable('document', 'd')}", (doc_id,))


async def versions(conn: Conn, doc_id: str) -> list[tuple]:
    """Its versions, newest first: (version_id, seq, status, ingested_at, content_hash, mime,
    source_modified_at, source_version_ref, error, ingested_by_kind, ingested_by_ref)."""
    return await fetch(
        conn, "SELECT version_id, seq, status, ingested_at, content_hash, mime, source_modified_at,"
        " source_version_ref, error, ingested_by_kind, ingested_by_ref FROM versions WHERE doc_id = %s"
        " ORDER BY seq DESC", (doc_id,))
