"""Read queries used by `corpusmem demo` to show what an import wrote."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector

from sql.read.read_queries import servable


def documents(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT d.source_ref, v.mime, v.source_modified_at, v.status,"
        " (SELECT count(*) FROM sections s WHERE s.version_id = v.version_id),"
        " (SELECT count(*) FROM chunks c WHERE c.version_id = v.version_id)"
        " FROM documents d JOIN LATERAL (SELECT * FROM versions v WHERE v.doc_id = d.doc_id"
        f" ORDER BY v.seq DESC LIMIT 1) v ON true WHERE {servable('document', 'd')}"
        " ORDER BY v.source_modified_at NULLS LAST, d.title").fetchall()


def non_body_sections(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT d.title, s.heading, s.role FROM sections s JOIN versions v USING (version_id)"
        f" JOIN documents d USING (doc_id) WHERE s.role <> 'body' AND {servable('content', 'v')}"
        " ORDER BY d.title, s.ord").fetchall()


def nearest_chunks(conn: psycopg.Connection, vector: np.ndarray, k: int) -> list[tuple[Any, ...]]:
    register_vector(conn)
    return conn.execute(
        "SELECT d.title, c.char_start, c.char_end, c.embedding <=> %s AS distance, c.text"
        f" FROM chunks c JOIN documents d USING (doc_id) WHERE {servable('content', 'c')}"
        " ORDER BY distance LIMIT %s", (Vector(vector), k)).fetchall()


def sample_claims(conn: psycopg.Connection, limit: int = 6) -> list[tuple[Any, ...]]:
    """One claim per document, preferring one whose wording Claimify changed (attributed, a date
    resolved) and then one with a stated time; oldest said first."""
    return conn.execute(
        "SELECT title, char_start, char_end, claim_text, source_span, asserted_at, claim_valid_from,"
        " claim_valid_until, claim_valid_precision FROM (SELECT DISTINCT ON (c.doc_id) d.title, c.char_start,"
        " c.char_end, c.claim_text, c.source_span, c.asserted_at, c.claim_valid_from, c.claim_valid_until,"
        " c.claim_valid_precision FROM claims c JOIN documents d USING (doc_id)"
        f" WHERE c.asserted_at IS NOT NULL AND {servable('claim', 'c')}"
        " AND (c.added_context <> '[]'::jsonb OR c.claim_valid_from IS NOT NULL)"
        " ORDER BY c.doc_id, c.added_context = '[]'::jsonb, c.claim_valid_from IS NULL,"
        " length(c.claim_text) DESC, c.char_start) chosen"
        " ORDER BY asserted_at, char_start LIMIT %s", (limit,)).fetchall()
