"""Reads behind `corpusmem claims` and `corpusmem why-not`: a document's claims and its ledger."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from sql.read.read_queries import ocr_citation, servable


class DocumentNotFound(LookupError):
    pass


def find_document(conn: psycopg.Connection, ref: str) -> tuple[str, str]:
    """(doc_id, source_ref) of a live document, for a doc_id, a source_ref, a path suffix of one,
    or a title."""
    live = servable("document", "d")
    try:
        uuid.UUID(ref)
        rows = conn.execute(f"SELECT doc_id, source_ref FROM documents d WHERE doc_id = %s AND {live}",
                            (ref,)).fetchall()
    except ValueError:
        rows = conn.execute(
            f"SELECT doc_id, source_ref FROM documents d WHERE (source_ref = %s OR title = %s"
            f" OR source_ref LIKE '%%/' || %s) AND {live} ORDER BY source_ref", (ref, ref, ref)).fetchall()
    if not rows:
        raise DocumentNotFound(f"no document matches {ref!r} (give a doc_id, a source_ref or a title)")
    if len(rows) > 1:
        raise DocumentNotFound(f"{ref!r} matches {len(rows)} documents: "
                               + ", ".join(r[1] for r in rows[:10]) + "; give the full source_ref")
    return str(rows[0][0]), rows[0][1]


def documents_of_kind(conn: psycopg.Connection, source_kind: str) -> list[tuple[str, str]]:
    """(doc_id, source_ref) of every live document of `source_kind`, by source_ref."""
    live = servable("document", "d")
    return [(str(d), ref) for d, ref in conn.execute(
        f"SELECT doc_id, source_ref FROM documents d WHERE source_kind = %s AND {live} ORDER BY source_ref",
        (source_kind,))]


def latest_version(conn: psycopg.Connection, doc_id: str) -> tuple[str, str] | None:
    """(version_id, object key of document.md) of the newest version that has a representation."""
    row = conn.execute(
        "SELECT v.version_id, r.object_key FROM versions v JOIN representations r USING (version_id)"
        " WHERE v.doc_id = %s ORDER BY v.seq DESC LIMIT 1", (doc_id,)).fetchone()
    return (str(row[0]), row[1]) if row else None


def claims_of_version(conn: psycopg.Connection, version_id: str) -> list[tuple[Any, ...]]:
    """(char_start, char_end, claim_text, source_span, is_attributed, asserted_at, valid_from,
    valid_until, precision, kind, is_current_testimony, claim_id, page, first_line, last_line) of
    each claim said in the version; the last three name the OCR'd lines of its span, else null."""
    return conn.execute(
        "SELECT o.char_start, o.char_end, c.claim_text, c.source_span, c.is_attributed, c.asserted_at,"
        " c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind,"
        " c.is_current_testimony, c.claim_id, ocr.page, ocr.first_line, ocr.last_line"
        f" FROM claim_occurrences o JOIN claims c USING (claim_id) {ocr_citation('o')}"
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


def pending_extraction(conn: psycopg.Connection) -> list[str]:
    """Versions written with claim extraction left for its own pass (the `vllm` extractor)."""
    return [str(r[0]) for r in conn.execute(
        "SELECT w.version_id FROM stage_work w JOIN versions v USING (version_id)"
        " WHERE w.stage = 'extract_claims' AND w.status = 'pending' AND v.status = 'ready'"
        " ORDER BY w.version_id").fetchall()]


def extraction_inputs(conn: psycopg.Connection, version_id: str) -> dict[str, Any]:
    """What building a version's chunk contexts needs: document, document.md key, chunks, roles."""
    doc_id, title, asserted_at, key = conn.execute(
        "SELECT v.doc_id, d.title, v.source_modified_at, r.object_key FROM versions v"
        " JOIN documents d USING (doc_id) JOIN representations r USING (version_id) WHERE v.version_id = %s",
        (version_id,)).fetchone()
    chunks = conn.execute(
        "SELECT c.ord, c.char_start, c.char_end, c.text_hash, s.ord, s.role, c.extracted_by FROM chunks c"
        " JOIN sections s USING (section_id) WHERE c.version_id = %s ORDER BY c.ord", (version_id,)).fetchall()
    return {"doc_id": str(doc_id), "title": title, "source_modified_at": asserted_at, "object_key": key,
            "chunks": chunks}


def chunk_keys(conn: psycopg.Connection, version_id: str, chunk_ord: int) -> tuple[str, int, str, Any]:
    """(doc_id, char_start, text_hash, said-on time) of one chunk."""
    row = conn.execute(
        "SELECT c.doc_id, c.char_start, c.text_hash, v.source_modified_at FROM chunks c"
        " JOIN versions v USING (version_id) WHERE c.version_id = %s AND c.ord = %s",
        (version_id, chunk_ord)).fetchone()
    return str(row[0]), row[1], row[2], row[3]
