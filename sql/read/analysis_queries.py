"""The queries behind the analysis API (`jobs/analysis.py`): each returns (columns, rows).

What a memory holds is read through the `memory_v1` views, which apply the authority's liveness
rules (a deleted document's versions, claims, facts and mentions are not in them); the records of
the import itself (runs, their items, the extraction and cost ledgers) are read where they are
kept, limited to what belongs to live documents by the same views.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

Result = tuple[list[str], list[tuple]]


def _query(conn: psycopg.Connection, sql: str, params: Any = None) -> Result:
    cur = conn.execute(sql, params)
    return [d.name for d in cur.description], cur.fetchall()


# A version of a live document: its failures, ledger rows and costs are the memory's to show.
_LIVE_VERSION = "SELECT version_id FROM memory_v1.document_versions_visible"


def runs(conn: psycopg.Connection) -> Result:
    return _query(conn, """
        SELECT run_id::text, status, started_at, finished_at,
               extract(epoch FROM finished_at - started_at) AS seconds,
               (counts->>'documents_seen')::int AS documents_seen, (counts->>'new_versions')::int AS new_versions,
               (counts->>'unchanged')::int AS unchanged, (counts->>'failed')::int AS failed,
               (counts->>'chunks')::int AS chunks, (counts->>'claims')::int AS claims,
               (report->'facts'->>'decisions')::int AS fact_decisions, sources
        FROM import_runs ORDER BY started_at, run_id""")


def stage_seconds(conn: psycopg.Connection, run_id: str | None) -> Result:
    """Busy seconds per stage of each run (summed over workers) and documents per busy second."""
    return _query(conn, """
        SELECT r.run_id::text, s.key AS stage, s.value::float AS seconds,
               (r.counts->>'documents_seen')::float / nullif(s.value::float, 0) AS documents_per_second
        FROM import_runs r CROSS JOIN LATERAL jsonb_each_text(coalesce(r.stage_seconds, '{}'::jsonb)) s
        WHERE %(run)s::uuid IS NULL OR r.run_id = %(run)s::uuid
        ORDER BY r.started_at, r.run_id, s.key""", {"run": run_id})


def failures(conn: psycopg.Connection, run_id: str | None) -> Result:
    """What failed, by run, item and stage; items whose version belongs to a deleted document are
    left out with it (an item that failed before it had a version is kept)."""
    return _query(conn, f"""
        SELECT i.run_id::text, i.item, i.stage, i.error, i.version_id::text
        FROM import_run_items i JOIN import_runs r USING (run_id)
        WHERE i.outcome = 'failed' AND (%(run)s::uuid IS NULL OR i.run_id = %(run)s::uuid)
          AND (i.version_id IS NULL OR i.version_id IN ({_LIVE_VERSION}))
        ORDER BY r.started_at, i.item""", {"run": run_id})


def documents(conn: psycopg.Connection) -> Result:
    return _query(conn, """
        SELECT d.doc_id::text, d.title, d.source_kind, d.source_ref, d.source_modified_at AS said_on,
               d.first_seen_at, d.current_version_no AS versions, d.current_version_status AS status,
               coalesce(c.claims, 0) AS claims
        FROM memory_v1.documents_live d
        LEFT JOIN (SELECT doc_id, count(*) AS claims FROM memory_v1.claims_live GROUP BY doc_id) c USING (doc_id)
        ORDER BY d.source_modified_at NULLS LAST, d.source_ref""")


def ledger(conn: psycopg.Connection) -> Result:
    """The extraction ledger of the current versions: what was dropped, flagged, edited, and why."""
    return _query(conn, """
        SELECT d.doc_id::text, d.title, x.decision, coalesce(x.reason, '') AS reason, x.extractor,
               x.char_start, x.char_end
        FROM extraction_ledger x
        JOIN memory_v1.documents_live d ON d.current_version_id = x.version_id
        ORDER BY d.title, x.char_start""")


def entities(conn: psycopg.Connection, name_key: str) -> Result:
    """Live entities with an alias of this key, or whose canonical name contains it."""
    return _query(conn, """
        SELECT DISTINCT e.entity_id::text, e.canonical_name, e.live_document_count AS documents
        FROM memory_v1.entities_current e
        LEFT JOIN memory_v1.entity_aliases_current a ON a.entity_id = e.entity_id
        WHERE a.normalized_lemma = %(k)s OR e.normalized_name = %(k)s
        ORDER BY documents DESC, e.canonical_name""", {"k": name_key})


def busiest_entities(conn: psycopg.Connection, limit: int) -> Result:
    """Live entities by how many visible facts are about them."""
    return _query(conn, """
        SELECT e.entity_id::text, e.canonical_name, count(f.fact_id) AS facts, e.live_document_count AS documents
        FROM memory_v1.entities_current e
        JOIN memory_v1.facts_visible_history f ON e.entity_id IN (f.subject_entity_id, f.object_entity_id)
        GROUP BY e.entity_id, e.canonical_name, e.live_document_count
        ORDER BY facts DESC, documents DESC, e.canonical_name LIMIT %s""", (limit,))


def entities_by_id(conn: psycopg.Connection, entity_ids: list[str]) -> Result:
    return _query(conn, """
        SELECT e.entity_id::text, e.canonical_name, e.live_document_count AS documents
        FROM memory_v1.entities_current e WHERE e.entity_id = ANY(%(ids)s::uuid[])""", {"ids": entity_ids})


def entity_facts(conn: psycopg.Connection, entity_ids: list[str]) -> Result:
    """Every visible fact about these entities, held now or not, with what became of it."""
    return _query(conn, """
        SELECT f.fact_id::text, f.fact_kind AS kind, f.fact_label AS label, f.predicate,
               s.canonical_name AS subject, o.canonical_name AS object,
               f.valid_from, f.valid_until, f.valid_precision, f.ingested_at, f.invalidated_at,
               f.contradiction_group::text, f.evidence_count_current AS evidence, f.contradict_count_current AS contradicting,
               f.support_state_current AS support,
               (SELECT max(d.decided_at) FROM fact_decisions d WHERE d.fact_id = f.fact_id AND d.outcome = 'update')
                   AS updated_at,
               (SELECT string_agg(DISTINCT d.outcome, ',') FROM fact_decisions d WHERE d.fact_id = f.fact_id)
                   AS decisions
        FROM memory_v1.facts_visible_history f
        LEFT JOIN memory_v1.entities_current s ON s.entity_id = f.subject_entity_id
        LEFT JOIN memory_v1.entities_current o ON o.entity_id = f.object_entity_id
        WHERE f.subject_entity_id = ANY(%(ids)s::uuid[]) OR f.object_entity_id = ANY(%(ids)s::uuid[])
        ORDER BY f.valid_from NULLS FIRST, f.ingested_at, f.fact_label""", {"ids": entity_ids})


def believed(conn: psycopg.Connection, believed_at: datetime, valid_at: datetime) -> Result:
    """The facts the memory held at `believed_at` (ingested by then, not yet invalidated) that
    were true at `valid_at` by their windows; partial windows as possible matches: the rules of
    memory_v1.facts_as_of, without its row cap."""
    return _query(conn, """
        SELECT f.fact_id::text, f.fact_kind AS kind, f.fact_label AS label, f.valid_from, f.valid_until,
               f.valid_precision, f.ingested_at, f.invalidated_at, f.evidence_count_current AS evidence,
               CASE WHEN memory_v1_private.window_complete(f.valid_from, f.valid_until, f.valid_precision)
                    THEN 'true' ELSE 'possible' END AS match
        FROM memory_v1.facts_visible_history f
        WHERE memory_v1_private.believed(f.ingested_at, f.invalidated_at, %(b)s)
          AND memory_v1_private.may_hold(f.valid_from, f.valid_until, %(v)s)
        ORDER BY match DESC, f.evidence_count_current DESC, f.fact_label""", {"b": believed_at, "v": valid_at})


def contradictions(conn: psycopg.Connection) -> Result:
    """Each side of each contradiction group held now, with the documents that support it."""
    return _query(conn, """
        SELECT m.contradiction_group::text AS contradiction_group, m.fact_id::text, m.fact_label AS label,
               m.valid_from, m.valid_until, m.evidence_count AS evidence, m.contradict_count AS contradicting,
               string_agg(DISTINCT d.title, '; ' ORDER BY d.title) AS supported_by
        FROM memory_v1.contradiction_members_current m
        LEFT JOIN memory_v1.fact_claim_evidence_live e ON e.fact_id = m.fact_id AND e.stance = 'support'
        LEFT JOIN memory_v1.documents_live d ON d.doc_id = e.doc_id
        GROUP BY 1, 2, 3, 4, 5, 6, 7
        ORDER BY 1, evidence DESC, label""")


def fact_evidence(conn: psycopg.Connection) -> Result:
    """Each fact held now with its evidence counted per distinct document."""
    return _query(conn, """
        SELECT f.fact_id::text, f.fact_kind AS kind, f.fact_label AS label, f.evidence_count AS evidence,
               count(DISTINCT e.doc_id) FILTER (WHERE e.stance = 'support') AS documents,
               f.contradiction_group IS NOT NULL AS contested
        FROM memory_v1.facts_current f
        LEFT JOIN memory_v1.fact_claim_evidence_live e ON e.fact_id = f.fact_id
        GROUP BY f.fact_id, f.fact_kind, f.fact_label, f.evidence_count, f.contradiction_group
        ORDER BY evidence DESC, label""")


def single_source_claims(conn: psycopg.Connection) -> Result:
    """Live claims whose text no other live document also says."""
    return _query(conn, """
        SELECT c.claim_id::text, d.title, c.claim_text, c.asserted_at
        FROM memory_v1.claims_live c JOIN memory_v1.documents_live d USING (doc_id)
        WHERE NOT EXISTS (SELECT 1 FROM memory_v1.claims_live o
                          WHERE o.claim_text = c.claim_text AND o.doc_id <> c.doc_id)
        ORDER BY d.title, c.char_start""")


def ambiguous_names(conn: psycopg.Connection) -> Result:
    """Aliases that name more than one live entity."""
    return _query(conn, """
        SELECT a.normalized_lemma AS alias, count(DISTINCT a.entity_id) AS entities,
               string_agg(DISTINCT e.canonical_name, '; ' ORDER BY e.canonical_name) AS names
        FROM memory_v1.entity_aliases_current a JOIN memory_v1.entities_current e USING (entity_id)
        GROUP BY a.normalized_lemma HAVING count(DISTINCT a.entity_id) > 1
        ORDER BY entities DESC, alias""")


def merge_proposals(conn: psycopg.Connection) -> Result:
    """Proposed merges between two live entities."""
    return _query(conn, """
        SELECT a.canonical_name AS entity, b.canonical_name AS other, p.score, p.reason, p.status, p.proposed_at
        FROM merge_proposals p
        JOIN memory_v1.entities_current a ON a.entity_id = p.entity_id
        JOIN memory_v1.entities_current b ON b.entity_id = p.other_id
        ORDER BY p.score DESC, entity, other""")


def costs(conn: psycopg.Connection) -> Result:
    """The cost ledger by stage, backend and model (rows of deleted documents' versions left out)."""
    return _query(conn, f"""
        SELECT stage, backend, model, sum(calls)::bigint AS calls, sum(tokens_in)::bigint AS tokens_in,
               sum(tokens_out)::bigint AS tokens_out, sum(device_seconds) AS device_seconds,
               min(occurred_at) AS first, max(occurred_at) AS last
        FROM cost_ledger
        WHERE version_id IS NULL OR version_id IN ({_LIVE_VERSION})
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""")


def neighbourhood(conn: psycopg.Connection, entity_ids: list[str], hops: int) -> Result:
    """The relations the memory holds (not retracted; true now or at another time) within `hops`
    of these entities; `current` marks those true now."""
    return _query(conn, """
        WITH RECURSIVE edges AS (
            SELECT g.* FROM memory_v1.graph_edges_visible_history g WHERE g.invalidated_at IS NULL),
        reach(entity_id, depth) AS (
            SELECT unnest(%(ids)s::uuid[]), 0
            UNION
            SELECT CASE WHEN g.subject_entity_id = r.entity_id THEN g.object_entity_id ELSE g.subject_entity_id END,
                   r.depth + 1
            FROM reach r JOIN edges g ON r.entity_id IN (g.subject_entity_id, g.object_entity_id)
            WHERE r.depth < %(hops)s)
        SELECT DISTINCT s.canonical_name AS subject, g.predicate, o.canonical_name AS object, g.fact_label AS label,
               g.valid_from, g.valid_until, g.evidence_count_current AS evidence,
               g.contradiction_group IS NOT NULL AS contested,
               g.relation_id IN (SELECT relation_id FROM memory_v1.graph_edges_current) AS current
        FROM edges g
        JOIN memory_v1.entities_current s ON s.entity_id = g.subject_entity_id
        JOIN memory_v1.entities_current o ON o.entity_id = g.object_entity_id
        WHERE g.subject_entity_id IN (SELECT entity_id FROM reach WHERE depth < %(hops)s)
           OR g.object_entity_id IN (SELECT entity_id FROM reach WHERE depth < %(hops)s)
        ORDER BY subject, predicate, object""", {"ids": entity_ids, "hops": hops})
