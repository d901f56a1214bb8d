"""Claims in, assertions and mentions out: the SQL side of `normalize_relations`."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from sql.write.copying import as_uuid, copy_deduplicated

NAMESPACE = uuid.UUID("0b7d4f6a-2c1e-4e8b-9a3d-5c6f7e8a9b0c")

_ASSERTION_COLUMNS = ("assertion_id", "claim_id", "doc_id", "ord", "kind", "subject_key", "predicate", "object_key",
                      "attribute", "value", "statement", "negated", "change", "ends_key", "valid_from",
                      "valid_until", "valid_precision", "window_source", "asserted_at", "normalizer")
_ASSERTION_TYPES = ("uuid", "uuid", "uuid", "int4", "text", "text", "text", "text", "text", "text", "text",
                    "bool", "bool", "text", "timestamptz", "timestamptz", "text", "text", "timestamptz", "text")


def assertion_id_for(claim_id: str, normalizer: str, ord_: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"assertion\x00{claim_id}\x00{normalizer}\x00{ord_}"))


def versions_to_normalize(conn: psycopg.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute(
        "SELECT DISTINCT n.version_id FROM claim_normalizations n JOIN claims c USING (claim_id)"
        " WHERE n.normalized_by IS NULL AND c.is_current_testimony ORDER BY 1").fetchall()]


def claims_of(conn: psycopg.Connection, version_ids: list[str]) -> list[dict[str, Any]]:
    """Claims of these versions not yet normalized, with what the normalizer may read."""
    cur = conn.execute(
        "SELECT c.claim_id::text, c.doc_id::text, c.version_id::text, c.claim_text, c.is_attributed,"
        " c.claim_valid_from AS valid_from, c.claim_valid_until AS valid_until,"
        " c.claim_valid_precision AS precision, c.claim_valid_kind AS kind, c.asserted_at,"
        # the document's opening text: its own first line names its topic better than a file name
        " d.title, (SELECT left(string_agg(ch.text, E'\\n' ORDER BY ch.ord), 2000) FROM (SELECT text, ord"
        "           FROM chunks WHERE version_id = c.version_id ORDER BY ord LIMIT 3) ch) AS opening"
        " FROM claim_normalizations n JOIN claims c USING (claim_id) JOIN documents d USING (doc_id)"
        " WHERE n.version_id = ANY(%s::uuid[]) AND n.normalized_by IS NULL AND c.is_current_testimony"
        " ORDER BY c.version_id, c.char_start, c.claim_id", (version_ids,))
    names = [d.name for d in cur.description]
    claims = [dict(zip(names, row)) for row in cur.fetchall()]
    # the version's whole text (one string, shared by its claims): the normalizer reads the code it sets
    texts = dict(conn.execute(
        "SELECT version_id::text, string_agg(text, E'\\n' ORDER BY ord) FROM chunks"
        " WHERE version_id = ANY(%s::uuid[]) GROUP BY version_id", (sorted({c["version_id"] for c in claims}),)))
    for c in claims:
        c["version_text"] = texts.get(c["version_id"])
    return claims


def write(conn: psycopg.Connection, assertions: list[dict[str, Any]], mentions: list[dict[str, Any]],
          claim_ids: list[str], normalizer: str, costs: list[tuple[str, Any]] = ()) -> None:
    """Assertions and mentions of a batch of claims, what the model calls cost (version_id,
    CallCost), and the mark that the claims were read, together."""
    with conn.transaction(), conn.cursor() as cur:
        copy_deduplicated(cur, "assertions", _ASSERTION_COLUMNS, _ASSERTION_TYPES, (
            tuple(as_uuid(a[c]) if t == "uuid" else a[c] for c, t in zip(_ASSERTION_COLUMNS, _ASSERTION_TYPES))
            for a in assertions))
        cur.executemany(
            "INSERT INTO mentions (doc_id, mention_key, surface, claim_id, asserted_at)"
            " VALUES (%(doc_id)s, %(mention_key)s, %(surface)s, %(claim_id)s, %(asserted_at)s)"
            " ON CONFLICT DO NOTHING", mentions)
        cur.executemany(
            "INSERT INTO cost_ledger (version_id, stage, backend, model, calls, tokens_in, tokens_out, device_seconds)"
            " VALUES (%s, 'normalize_relations', %s, %s, %s, %s, %s, %s)",
            [(v, c.backend, c.model, c.calls, c.tokens_in, c.tokens_out, c.device_seconds) for v, c in costs])
        cur.execute("UPDATE claim_normalizations SET normalized_by = %s WHERE claim_id = ANY(%s::uuid[])",
                    (normalizer, claim_ids))
