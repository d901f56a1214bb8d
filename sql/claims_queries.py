"""Reads behind `corpusmem claims` and `corpusmem why-not`: a document's claims and its ledger."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg


class DocumentNotFound(LookupError):
    pass


def find_document(conn: psycopg.Connection, ref: str) -> tuple[str, str]:
    """(doc_id, source_ref) for a doc_id, a source_ref, a path suffix of one, or a title."""
    try:
        uuid.UUID(ref)
        rows = conn.execute("SELECT doc_id, source_ref FROM documents WHERE doc_id = %s", (ref,)).fetchall()
    except ValueError:
        rows = conn.execute(
            "SELECT doc_id, source_ref FROM documents WHERE source_ref = %s OR title = %s"
            " OR source_ref LIKE '%%/' || %s ORDER BY source_ref", (ref, ref, ref)).fetchall()
    if not rows:
        raise DocumentNotFound(f"no document matches {ref!r} (give a doc_id, a source_ref or a title)")
    if len(rows) > 1:
        raise DocumentNotFound(f"{ref!r} matches {len(rows)} documents: "
                               + ", ".join(r[1] for r in rows[:10]) + "; give the full source_ref")
    return str(rows[0][0]), rows[0][1]


def latest_version(conn: psycopg.Connection, doc_id: str) -> tuple[str, str] | None:
    """(version_id, object key of document.md) of the newest version that has a representation."""
    row = conn.execute(
        "SELECT v.version_id, r.object_key FROM versions v JOIN representations r USING (version_id)"
        " WHERE v.doc_id = %s ORDER BY v.seq DESC LIMIT 1", (doc_id,)).fetchone()
    return (str(row[0]), row[1]) if row else None


def claims_of_version(conn: psycopg.Connection, version_id: str) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT o.char_start, o.char_end, c.claim_text, c.source_span, c.is_attributed, c.asserted_at,"
        " c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind,"
        " c.is_current_testimony, c.claim_id FROM claim_occurrences o JOIN claims c USING (claim_id)"
        " WHERE o.version_id = %s ORDER BY o.char_start, c.claim_text", (version_id,)).fetchall()


def ledger_overlapping(conn: psycopg.Connection, version_id: str, start: int, end: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT decision, reason, detail, char_start, char_end, extractor FROM extraction_ledger"
        " WHERE version_id = %s AND char_start < %s AND char_end > %s ORDER BY ledger_id",
        (version_id, end, start)).fetchall()


def claims_overlapping(conn: psycopg.Connection, version_id: str, start: int, end: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT c.claim_text, o.char_start, o.char_end FROM claim_occurrences o JOIN claims c USING (claim_id)"
        " WHERE o.version_id = %s AND o.char_start < %s AND o.char_end > %s ORDER BY o.char_start",
        (version_id, end, start)).fetchall()


def chunk_at(conn: psycopg.Connection, version_id: str, offset: int) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT c.ord, s.role, c.extracted_by FROM chunks c JOIN sections s USING (section_id)"
        " WHERE c.version_id = %s AND c.char_start <= %s AND c.char_end > %s", (version_id, offset, offset)).fetchone()
