-- The 18 shipped saved queries of the `examples` namespace (seed: guides/saved-queries).
-- One block per query: `-- name:`, `-- description:` and `-- parameters:` lines, then the SQL.
-- Parameters are the positional placeholders; ids are UUID strings, instants ISO 8601 with a zone.

-- name: claims_verbatim
-- description: Claims as asserted, nominated semantically and joined to live testimony.
-- parameters: $1 query text
SELECT s.rank, s.score, c.claim_id, c.claim_text, c.source_span, c.source_handle, c.asserted_at,
       c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision
FROM semantic_claims($1::text, 20) AS s
JOIN claims_live AS c ON c.claim_id = s.claim_id
ORDER BY s.rank
LIMIT 20

-- name: claims_about
-- description: Claims that mention an entity, via live claim occurrences, newest first.
-- parameters: $1 entity id
SELECT DISTINCT c.claim_id, c.claim_text, c.source_handle, c.asserted_at, c.doc_id
FROM mentions_live AS m
JOIN claims_live AS c ON c.claim_id = m.claim_id
WHERE m.resolved_entity_id = $1::uuid
  AND EXISTS (SELECT 1 FROM claim_occurrences_live AS o WHERE o.claim_id = c.claim_id)
ORDER BY c.asserted_at DESC NULLS LAST, c.claim_id
LIMIT 50

-- name: claims_as_of
-- description: Claims whose canonical world-time window overlaps an inclusive interval; claims of unknown precision have no bounds and are counted by precision instead.
-- parameters: $1 interval start (instant), $2 interval end (instant)
SELECT c.claim_id, c.claim_text, c.source_handle, c.claim_valid_precision, c.canon_start, c.canon_end,
       c.asserted_at,
       (SELECT count(*) FROM claims_canonical AS u
        WHERE u.is_current_testimony AND u.claim_valid_precision = 'unknown') AS unknown_precision_claims
FROM claims_canonical AS c
WHERE c.is_current_testimony
  AND c.canon_start IS NOT NULL
  AND c.canon_start <= $2::timestamptz
  AND (c.canon_end IS NULL OR c.canon_end > $1::timestamptz)
ORDER BY c.canon_start, c.claim_id
LIMIT 50

-- name: claims_hybrid_rrf
-- description: Semantic and lexical claim channels fused by reciprocal rank.
-- parameters: $1 query text
WITH semantic AS (SELECT claim_id, rank FROM semantic_claims($1::text, 20)),
     lexical AS (SELECT claim_id, rank FROM lexical_claims($1::text, 20)),
     fused AS (
       SELECT coalesce(s.claim_id, l.claim_id) AS claim_id,
              coalesce(1.0 / (60 + s.rank), 0) + coalesce(1.0 / (60 + l.rank), 0) AS rrf_score,
              s.rank AS semantic_rank, l.rank AS lexical_rank
       FROM semantic AS s
       FULL JOIN lexical AS l ON l.claim_id = s.claim_id
     )
SELECT f.claim_id, f.rrf_score, f.semantic_rank, f.lexical_rank, c.claim_text, c.source_handle, c.asserted_at
FROM fused AS f
JOIN claims_live AS c ON c.claim_id = f.claim_id
ORDER BY f.rrf_score DESC, f.claim_id
LIMIT 20

-- name: chunks_hybrid_rrf
-- description: Semantic and lexical chunk channels fused by reciprocal rank.
-- parameters: $1 query text
WITH semantic AS (SELECT chunk_id, rank, source_text FROM semantic_chunks($1::text, 20)),
     lexical AS (SELECT chunk_id, rank, source_text FROM lexical_chunks($1::text, 20)),
     fused AS (
       SELECT coalesce(s.chunk_id, l.chunk_id) AS chunk_id,
              coalesce(1.0 / (60 + s.rank), 0) + coalesce(1.0 / (60 + l.rank), 0) AS rrf_score,
              s.rank AS semantic_rank, l.rank AS lexical_rank,
              coalesce(s.source_text, l.source_text) AS source_text
       FROM semantic AS s
       FULL JOIN lexical AS l ON l.chunk_id = s.chunk_id
     )
SELECT f.chunk_id, f.rrf_score, f.semantic_rank, f.lexical_rank, k.doc_id, k.section_id, f.source_text
FROM fused AS f
JOIN chunks_live AS k ON k.chunk_id = f.chunk_id
ORDER BY f.rrf_score DESC, f.chunk_id
LIMIT 20

-- name: chunk_neighbors
-- description: The chunks either side of one chunk (two each way) in its current section.
-- parameters: $1 chunk id
SELECT n.chunk_id, n.ordinal, n.ordinal - c.ordinal AS position_from_chunk, n.section_id, n.char_start,
       n.char_end, n.location_header
FROM chunks_live AS c
JOIN chunks_live AS n
  ON n.representation_id = c.representation_id
 AND (n.section_id = c.section_id OR (n.section_id IS NULL AND c.section_id IS NULL))
 AND n.ordinal BETWEEN c.ordinal - 2 AND c.ordinal + 2
WHERE c.chunk_id = $1::uuid
ORDER BY n.ordinal

-- name: documents_about
-- description: Every live document that mentions an entity, with its live metadata, most mentions first.
-- parameters: $1 entity id
SELECT d.doc_id, d.title, d.source_kind, d.source_ref, d.current_version_no, d.source_modified_at,
       m.mention_count, m.first_mentioned_at, m.last_mentioned_at
FROM entity_document_mentions AS m
JOIN documents_live AS d ON d.doc_id = m.doc_id
WHERE m.entity_id = $1::uuid
ORDER BY m.mention_count DESC, d.doc_id
LIMIT 50

-- name: pages_about
-- description: Compiled pages that cite an entity through live page evidence.
-- parameters: $1 entity id
SELECT DISTINCT p.artifact_id, p.git_path, p.layer, p.page_kind, p.kind, p.status, p.page_summary,
       p.last_compiled_at
FROM pages_live AS p
JOIN page_evidence_visible AS e ON e.artifact_id = p.artifact_id
WHERE (e.target_kind = 'relation'
       AND e.target_id IN (SELECT f.fact_id FROM facts_visible_history AS f
                           WHERE f.fact_kind = 'relation'
                             AND (f.subject_entity_id = $1::uuid OR f.object_entity_id = $1::uuid)))
   OR (e.target_kind <> 'relation'
       AND e.target_id IN (SELECT m.doc_id FROM entity_document_mentions AS m WHERE m.entity_id = $1::uuid))
ORDER BY p.last_compiled_at DESC NULLS LAST, p.artifact_id
LIMIT 50

-- name: relation_current
-- description: Current relations for an entity, as adjudicated.
-- parameters: $1 entity id
SELECT f.fact_id, f.fact_label, f.predicate, f.subject_entity_id, f.object_entity_id, f.valid_from,
       f.valid_until, f.valid_precision, f.evidence_count, f.contradict_count, f.contradiction_group,
       f.support_state
FROM facts_current AS f
WHERE f.fact_kind = 'relation'
  AND (f.subject_entity_id = $1::uuid OR f.object_entity_id = $1::uuid)
ORDER BY f.evidence_count DESC, f.fact_id
LIMIT 50

-- name: observation_current
-- description: Current observations about an entity.
-- parameters: $1 entity id
SELECT f.fact_id, f.fact_label, f.statement, f.valid_from, f.valid_until, f.valid_precision,
       f.evidence_count, f.contradict_count, f.contradiction_group, f.support_state
FROM facts_current AS f
WHERE f.fact_kind = 'observation'
  AND f.subject_entity_id = $1::uuid
ORDER BY f.evidence_count DESC, f.fact_id
LIMIT 50

-- name: identity_as_of
-- description: Bounded identity-event transcript of an entity as of one decision instant.
-- parameters: $1 entity id, $2 instant
SELECT i.object_kind, i.event_id, i.outcome, i.method, i.confidence, i.decided_by, i.decided_at,
       i.related_entity_id, i.mention_id, i.is_superseded
FROM identity_events_visible AS i
WHERE i.entity_id = $1::uuid
  AND i.decided_at <= $2::timestamptz
ORDER BY i.decided_at, i.object_kind, i.event_id
LIMIT 100

-- name: entity_timeline
-- description: One entity's visible facts grouped by a disclosed time bucket (the UTC day their world-time window starts).
-- parameters: $1 entity id
SELECT 'day' AS bucket, date_trunc('day', f.valid_from) AS bucket_start, count(*) AS facts,
       sum(CASE WHEN f.fact_kind = 'relation' THEN 1 ELSE 0 END) AS relations,
       sum(CASE WHEN f.fact_kind = 'observation' THEN 1 ELSE 0 END) AS observations,
       array_agg(f.fact_label) AS fact_labels
FROM facts_visible_history AS f
WHERE f.subject_entity_id = $1::uuid OR f.object_entity_id = $1::uuid
GROUP BY 1, 2
ORDER BY 2 NULLS FIRST
LIMIT 200

-- name: explain
-- description: Why the system holds a fact: its history, live evidence, lineage, and source documents.
-- parameters: $1 fact id
SELECT f.fact_kind, f.fact_label, f.valid_from, f.valid_until, f.ingested_at, f.invalidated_at,
       f.evidence_count_current, f.contradict_count_current, f.support_state_current,
       e.stance, e.claim_id, c.claim_text, e.source_handle, e.asserted_at, l.claim_count AS lineage_claim_count,
       d.doc_id, d.title, d.source_kind
FROM facts_visible_history AS f
LEFT JOIN fact_claim_evidence_live AS e ON e.fact_kind = f.fact_kind AND e.fact_id = f.fact_id
LEFT JOIN claims_live AS c ON c.claim_id = e.claim_id
LEFT JOIN evidence_lineage AS l
  ON l.fact_kind = f.fact_kind AND l.fact_id = f.fact_id AND l.doc_id = e.doc_id AND l.stance = e.stance
LEFT JOIN documents_live AS d ON d.doc_id = e.doc_id
WHERE f.fact_id = $1::uuid
ORDER BY e.stance, e.asserted_at DESC NULLS LAST, e.claim_id
LIMIT 100

-- name: multi_hop_context
-- description: Evidence along a route between two entities, with semantic nominations ranked first.
-- parameters: $1 deployment id, $2 from entity id, $3 to entity id, $4 query text
WITH route AS (SELECT row_kind, relation_ids FROM graph_path($1::uuid, $2::uuid, $3::uuid, 4)),
     nominated AS (SELECT claim_id, rank FROM semantic_claims($4::text, 50))
SELECT DISTINCT g.relation_id, g.fact_label, c.claim_id, c.claim_text, c.source_handle, c.asserted_at,
       n.rank AS semantic_rank
FROM route AS r
JOIN graph_edges_current AS g ON g.relation_id = ANY (r.relation_ids)
JOIN fact_claim_evidence_live AS e ON e.fact_kind = 'relation' AND e.fact_id = g.relation_id
JOIN claims_live AS c ON c.claim_id = e.claim_id
LEFT JOIN nominated AS n ON n.claim_id = c.claim_id
WHERE r.row_kind = 'path'
ORDER BY semantic_rank NULLS LAST, g.relation_id, c.claim_id
LIMIT 100

-- name: changed_since
-- description: What the system learned after an instant.
-- parameters: $1 instant
SELECT object_kind, object_id, occurred_at, label
FROM changes_visible
WHERE occurred_at > $1::timestamptz
ORDER BY occurred_at, object_kind, event_id
LIMIT 100

-- name: graph_neighborhood
-- description: Relations within two hops of an entity.
-- parameters: $1 deployment id, $2 entity id
SELECT row_kind, hops, relation_ids, node_ids
FROM graph_neighborhood($1::uuid, $2::uuid, 2)
ORDER BY hops, relation_ids

-- name: graph_path
-- description: Routes between two entities, each returned whole (up to four hops).
-- parameters: $1 deployment id, $2 from entity id, $3 to entity id
SELECT row_kind, hops, relation_ids, node_ids
FROM graph_path($1::uuid, $2::uuid, $3::uuid, 4)
ORDER BY hops, relation_ids

-- name: graph_citation_path
-- description: Directed citation routes between two live documents (up to six hops).
-- parameters: $1 deployment id, $2 from document id, $3 to document id
SELECT row_kind, hops, crossref_ids, document_ids
FROM graph_citation_path($1::uuid, $2::uuid, $3::uuid, 6)
ORDER BY hops, crossref_ids
