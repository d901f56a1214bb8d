-- The query space `memory_v1`: the 25 read-only views and 12 set-returning functions an agent's SQL
-- may use, the sandbox role `corpusmem_query` that runs those statements, and nothing else.
--
-- Markers `-- @support NAME`, `-- @view NAME`, `-- @function NAME`, `-- @comments` and `-- @grants`
-- start the sections that `sql/query_manifest.py` reads: the text of each `@view` and `@function`
-- section is that object's definition in the manifest (and feeds its hash). The `@comments`
-- section is generated from `sql/memory_v1_space.json` (`python -m sql.query_manifest comments`).
--
-- The views apply the memory's rules: a deleted document (`documents.deleted_at`, versions
-- 'deleted') is a forgotten lineage and leaves every view; a document's current version is its
-- newest ready version; claims whose testimony is no longer current leave `claims_live` and stay
-- in `claims_visible_history`; a fact needs surviving provenance (evidence from a live lineage).
-- `evaluated_at` is the transaction's instant unless the runner sets `corpusmem.evaluated_at`.

CREATE SCHEMA memory_v1_private;
CREATE SCHEMA memory_v1;
COMMENT ON SCHEMA memory_v1_private IS 'Building blocks of the memory_v1 views; not readable by the sandbox role.';

-- @support evaluated_at
CREATE FUNCTION memory_v1_private.evaluated_at() RETURNS timestamptz
LANGUAGE sql STABLE
AS $$ SELECT coalesce(nullif(current_setting('corpusmem.evaluated_at', true), '')::timestamptz, now()) $$;

-- @support uuid_of
-- A stable uuid for rows whose own key is not a uuid (bigint event ids, composite keys).
CREATE FUNCTION memory_v1_private.uuid_of(kind text, key text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT
AS $$ SELECT md5(kind || '|' || key)::uuid $$;

-- @support resolution_method
-- Our resolver steps in the seed's tier vocabulary: exact alias → T0; spelling, sound, rule and
-- minting → T3 (deterministic tiers); the small model → T4_small.
CREATE FUNCTION memory_v1_private.resolution_method(step text) RETURNS text
LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN step IN ('T0', 'document') THEN 'T0' WHEN step = 'small_model' THEN 'T4_small'
                  WHEN step IS NULL THEN NULL ELSE 'T3' END $$;

-- @support lineages
-- Live documents with their current version: the newest ready one, else the newest not deleted.
CREATE VIEW memory_v1_private.lineages AS
SELECT dep.deployment_id, d.doc_id, d.source_kind, d.source_ref, d.title, d.versioning_mode, d.created_at,
       d.source_kind || ':' || d.source_ref AS source_handle,
       cv.version_id AS current_version_id, cv.seq AS current_version_no, cv.status AS current_version_status,
       r.version_id AS current_representation_id, cv.source_modified_at,
       (SELECT max(v.ingested_at) FROM versions v WHERE v.doc_id = d.doc_id AND v.seq > 1) AS last_observed_at
FROM deployment dep
CROSS JOIN documents d
LEFT JOIN LATERAL (SELECT v.version_id, v.seq, v.status, v.source_modified_at FROM versions v
                   WHERE v.doc_id = d.doc_id AND v.status <> 'deleted'
                   ORDER BY (v.status = 'ready') DESC, v.seq DESC LIMIT 1) cv ON true
LEFT JOIN representations r ON r.version_id = cv.version_id AND cv.status = 'ready'
WHERE d.deleted_at IS NULL;

-- @support current_content
-- The one ready reading of each live lineage that every current-content view joins on.
CREATE VIEW memory_v1_private.current_content AS
SELECT l.deployment_id, l.doc_id, l.current_version_id AS version_id, l.current_representation_id AS representation_id,
       l.source_kind, l.source_handle
FROM memory_v1_private.lineages l
WHERE l.current_representation_id IS NOT NULL;

-- @support visible_claims
CREATE VIEW memory_v1_private.visible_claims AS
-- Columns named one by one: a view on claims.embedding would block the ALTER that gives the
-- vector column its dimension when the deployment pins its model (sql/store.py).
SELECT l.deployment_id, c.claim_id, c.doc_id, c.version_id, c.chunk_id, c.claim_text, c.source_span, c.char_start,
       c.char_end, c.added_context, c.is_attributed, c.extractor, c.asserted_at, c.claim_valid_from,
       c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind, c.created_at, c.is_current_testimony,
       l.source_kind, l.source_handle
FROM claims c
JOIN memory_v1_private.lineages l ON l.doc_id = c.doc_id
JOIN versions v ON v.version_id = c.version_id AND v.status <> 'deleted';

-- @support visible_facts
-- Facts with surviving provenance: evidence from a claim of a live lineage's visible version.
CREATE VIEW memory_v1_private.visible_facts AS
-- Columns named one by one, never facts.embedding (see visible_claims).
SELECT dep.deployment_id, f.fact_id, f.kind, f.subject_id, f.predicate, f.object_id, f.label, f.valid_from,
       f.valid_until, f.valid_precision, f.ingested_at, f.invalidated_at, f.support, f.evidence_count,
       f.contradicting_count, f.contradiction_group
FROM deployment dep
CROSS JOIN facts f
WHERE EXISTS (SELECT 1 FROM fact_evidence e JOIN memory_v1_private.visible_claims c ON c.claim_id = e.claim_id
              WHERE e.fact_id = f.fact_id);

-- @support current_facts
-- Facts believed and valid at evaluated_at with a complete window (a known start, and a known end
-- or `open` precision): unknown and partial windows are only possible matches.
CREATE VIEW memory_v1_private.current_facts AS
SELECT f.*, memory_v1_private.evaluated_at() AS evaluated_at
FROM memory_v1_private.visible_facts f
WHERE f.ingested_at <= memory_v1_private.evaluated_at()
  AND (f.invalidated_at IS NULL OR f.invalidated_at > memory_v1_private.evaluated_at())
  AND f.valid_from IS NOT NULL AND (f.valid_until IS NOT NULL OR f.valid_precision = 'open')
  AND f.valid_from <= memory_v1_private.evaluated_at()
  AND (f.valid_until IS NULL OR f.valid_until > memory_v1_private.evaluated_at());

-- @support live_mentions
-- Mentions in current content: the mention's context claim must occur in its lineage's current
-- reading. The resolution is the mention's latest identity event.
CREATE VIEW memory_v1_private.live_mentions AS
SELECT cc.deployment_id,
       memory_v1_private.uuid_of('mention', m.doc_id::text || '|' || m.mention_key || '|' || m.surface) AS mention_id,
       m.doc_id, cc.version_id, cc.representation_id, o.chunk_id, ch.section_id, m.claim_id, m.surface, m.mention_key,
       c.created_at, m.entity_id, ev.step, ev.verdict, ev.decided_at
FROM mentions m
JOIN memory_v1_private.current_content cc ON cc.doc_id = m.doc_id
JOIN claims c ON c.claim_id = m.claim_id
JOIN claim_occurrences o ON o.claim_id = m.claim_id AND o.version_id = cc.version_id
JOIN chunks ch ON ch.chunk_id = o.chunk_id AND ch.doc_id = m.doc_id
LEFT JOIN LATERAL (SELECT i.step, i.verdict, i.decided_at FROM identity_events i
                   WHERE i.doc_id = m.doc_id AND i.mention_key = m.mention_key AND i.surface = m.surface
                     AND i.entity_id = m.entity_id
                   ORDER BY i.event_id DESC LIMIT 1) ev ON true;

-- @support entity_provenance
-- Entities with surviving provenance: a mention in any visible version of a live lineage.
CREATE VIEW memory_v1_private.entity_provenance AS
SELECT DISTINCT m.entity_id
FROM mentions m
JOIN memory_v1_private.visible_claims c ON c.claim_id = m.claim_id
WHERE m.entity_id IS NOT NULL;

-- @support indexes
-- mentions_live reads each mention's latest identity event by the mention's key.
CREATE INDEX IF NOT EXISTS identity_events_mention ON identity_events (doc_id, mention_key, surface, event_id);

-- @view documents_live
CREATE VIEW memory_v1.documents_live (
    deployment_id, doc_id, source_kind, source_ref, source_uri, title, versioning_mode, origin, first_seen_at,
    last_observed_at, current_version_id, current_version_no, current_version_status, current_representation_id,
    has_current_ready_content, source_modified_at, published_at, language) AS
SELECT l.deployment_id, l.doc_id, l.source_kind, l.source_ref, NULL::text, l.title, l.versioning_mode, 'external'::text,
       l.created_at, l.last_observed_at, l.current_version_id, l.current_version_no, l.current_version_status,
       l.current_representation_id, l.current_representation_id IS NOT NULL, l.source_modified_at,
       NULL::timestamptz, NULL::text
FROM memory_v1_private.lineages l;

-- @view document_versions_visible
CREATE VIEW memory_v1.document_versions_visible (
    deployment_id, version_id, doc_id, version_no, content_hash, source_version_ref, status,
    current_representation_id, ingested_at, source_modified_at, published_at, language, superseded_at,
    is_current_version) AS
SELECT l.deployment_id, v.version_id, v.doc_id, v.seq, v.content_hash, v.source_version_ref, v.status,
       r.version_id, v.ingested_at, v.source_modified_at, NULL::timestamptz, NULL::text,
       CASE WHEN v.version_id <> l.current_version_id AND v.seq < l.current_version_no
            THEN (SELECT min(n.ingested_at) FROM versions n
                  WHERE n.doc_id = v.doc_id AND n.seq > v.seq AND n.status = 'ready') END,
       v.version_id = l.current_version_id
FROM versions v
JOIN memory_v1_private.lineages l ON l.doc_id = v.doc_id
LEFT JOIN representations r ON r.version_id = v.version_id AND v.status = 'ready'
WHERE v.status <> 'deleted';

-- @view sections_live
-- Our sections are a flat ordered list with heading levels: the parent is the nearest earlier
-- section of a lower level, and node_path is the ordinal (one level).
CREATE VIEW memory_v1.sections_live (
    deployment_id, section_id, doc_id, version_id, representation_id, structure_generation_id,
    parent_section_id, node_path, heading_level, title, normalized_title, role, ordinal, block_start, block_end,
    char_start, char_end, page_start, page_end, summary) AS
SELECT cc.deployment_id, s.section_id, cc.doc_id, cc.version_id, cc.representation_id, cc.representation_id,
       (SELECT p.section_id FROM sections p WHERE p.version_id = s.version_id AND p.ord < s.ord AND p.level < s.level
        ORDER BY p.ord DESC LIMIT 1),
       s.ord::text,
       CASE WHEN s.heading IS NOT NULL AND s.level BETWEEN 1 AND 6 THEN s.level::smallint END,
       s.heading, coalesce(lower(btrim(s.heading)), ''),
       CASE WHEN s.role IN ('body', 'abstract', 'introduction', 'results', 'methods', 'discussion', 'conclusion',
                            'references', 'appendix', 'table', 'figure_caption', 'nav', 'boilerplate', 'legal')
            THEN s.role WHEN s.role = 'front_matter' THEN 'boilerplate' ELSE 'body' END,
       s.ord, NULL::integer, NULL::integer, s.char_start, s.char_end, NULL::integer, NULL::integer, NULL::text
FROM sections s
JOIN memory_v1_private.current_content cc ON cc.version_id = s.version_id;

-- @view chunks_live
CREATE VIEW memory_v1.chunks_live (
    deployment_id, chunk_id, doc_id, version_id, representation_id, section_id, ordinal, block_start, block_end,
    char_start, char_end, token_count, chunk_content_hash, extraction_input_hash, embedding_text_hash,
    location_facts, location_header, embedding_input_policy_version, policy_generation, embedder_generation,
    chunker_version, prefixer_version, created_at) AS
SELECT cc.deployment_id, ch.chunk_id, ch.doc_id, ch.version_id, cc.representation_id, ch.section_id, ch.ord,
       NULL::integer, NULL::integer, ch.char_start, ch.char_end, NULL::integer, ch.text_hash, NULL::text,
       -- Every chunk of a ready version is embedded (the version is not ready before). The view must
       -- not name chunks.embedding: the first import gives that column its dimension with ALTER
       -- COLUMN TYPE, which PostgreSQL refuses while a view depends on the column.
       ch.text_hash, NULL::jsonb, NULL::text, NULL::text, NULL::text,
       dep.embedding_model, NULL::text, NULL::text, r.created_at
FROM chunks ch
JOIN memory_v1_private.current_content cc ON cc.version_id = ch.version_id AND cc.doc_id = ch.doc_id
JOIN representations r ON r.version_id = ch.version_id
JOIN deployment dep ON dep.deployment_id = cc.deployment_id;

-- @view claims_visible_history
CREATE VIEW memory_v1.claims_visible_history (
    deployment_id, claim_id, doc_id, version_id, representation_id, chunk_id, claim_text, source_span, char_start,
    char_end, added_context, temporal_class, is_attributed, audit_status, kept_flagged, extractor_version,
    asserted_at, claim_valid_from, claim_valid_until, claim_valid_precision, claim_valid_kind, ingested_at,
    source_kind, source_handle, is_current_testimony) AS
SELECT c.deployment_id, c.claim_id, c.doc_id, c.version_id, c.version_id, c.chunk_id, c.claim_text, c.source_span,
       c.char_start, c.char_end, c.added_context, NULL::text, c.is_attributed, 'unaudited'::text,
       EXISTS (SELECT 1 FROM extraction_ledger x WHERE x.chunk_id = c.chunk_id AND x.decision = 'selection_keep_flagged'
               AND x.char_start < c.char_end AND c.char_start < x.char_end),
       c.extractor, c.asserted_at, c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind,
       c.created_at, c.source_kind, c.source_handle, c.is_current_testimony
FROM memory_v1_private.visible_claims c;

-- @view claims_live
CREATE VIEW memory_v1.claims_live AS
SELECT deployment_id, claim_id, doc_id, version_id, representation_id, chunk_id, claim_text, source_span, char_start,
       char_end, added_context, temporal_class, is_attributed, audit_status, kept_flagged, extractor_version,
       asserted_at, claim_valid_from, claim_valid_until, claim_valid_precision, claim_valid_kind, ingested_at,
       source_kind, source_handle
FROM memory_v1.claims_visible_history
WHERE is_current_testimony;

-- @function canonical_bounds
-- The half-open interval a stored window means. Stored claim ends are inclusive and hold the first
-- instant of the last day (month, quarter, year) or the instant itself; all units are UTC.
CREATE FUNCTION memory_v1.canonical_bounds(valid_from timestamptz, valid_until timestamptz, valid_precision text)
RETURNS TABLE (canon_start timestamptz, canon_end timestamptz)
LANGUAGE plpgsql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    unit text;
    step interval;
BEGIN
    IF valid_precision IS NULL OR valid_precision NOT IN ('unknown', 'instant', 'day', 'month', 'quarter', 'year', 'open') THEN
        RAISE EXCEPTION 'invalid_parameter: valid_precision must be one of unknown, instant, day, month, quarter, year, open'
            USING ERRCODE = '22023';
    END IF;
    IF valid_precision = 'unknown' THEN
        RETURN QUERY SELECT NULL::timestamptz, NULL::timestamptz;
    ELSIF valid_precision = 'open' THEN
        RETURN QUERY SELECT valid_from, NULL::timestamptz;
    ELSIF valid_precision = 'instant' THEN
        RETURN QUERY SELECT valid_from, coalesce(valid_until, valid_from) + interval '1 microsecond';
    ELSE
        unit := valid_precision;
        step := CASE valid_precision WHEN 'day' THEN interval '1 day' WHEN 'month' THEN interval '1 month'
                                     WHEN 'quarter' THEN interval '3 months' ELSE interval '1 year' END;
        RETURN QUERY SELECT date_trunc(unit, valid_from, 'UTC'),
                            ((date_trunc(unit, valid_until, 'UTC') AT TIME ZONE 'UTC') + step) AT TIME ZONE 'UTC';
    END IF;
END
$$;

-- @view claims_canonical
CREATE VIEW memory_v1.claims_canonical AS
SELECT h.deployment_id, h.claim_id, h.doc_id, h.version_id, h.representation_id, h.chunk_id, h.claim_text,
       h.source_span, h.char_start, h.char_end, h.added_context, h.temporal_class, h.is_attributed, h.audit_status,
       h.kept_flagged, h.extractor_version, h.asserted_at, h.claim_valid_from, h.claim_valid_until,
       h.claim_valid_precision, h.claim_valid_kind, h.ingested_at, h.source_kind, h.source_handle,
       h.is_current_testimony, b.canon_start, b.canon_end
FROM memory_v1.claims_visible_history h
CROSS JOIN LATERAL memory_v1.canonical_bounds(h.claim_valid_from, h.claim_valid_until, h.claim_valid_precision) b;

-- @view claim_occurrences_live
CREATE VIEW memory_v1.claim_occurrences_live (
    deployment_id, claim_id, chunk_id, derivation_kind, doc_id, version_id, representation_id, section_id,
    evidence_mode, source_locators, attached_at, evidence_spans) AS
SELECT cc.deployment_id, o.claim_id, o.chunk_id, r.derivation, cc.doc_id, cc.version_id, cc.representation_id,
       ch.section_id, NULL::text, NULL::jsonb,
       CASE WHEN o.version_id = c.version_id THEN c.created_at ELSE greatest(c.created_at, r.created_at) END,
       o.evidence_spans
FROM claim_occurrences o
JOIN memory_v1_private.current_content cc ON cc.version_id = o.version_id
JOIN claims c ON c.claim_id = o.claim_id AND c.doc_id = cc.doc_id
JOIN chunks ch ON ch.chunk_id = o.chunk_id AND ch.version_id = o.version_id
JOIN representations r ON r.version_id = o.version_id;

-- @view mentions_live
CREATE VIEW memory_v1.mentions_live (
    deployment_id, mention_id, doc_id, version_id, representation_id, chunk_id, section_id, claim_id, surface_form,
    normalized_lemma, canonical_name_form, emitted_type, type_confidence, language, char_start, char_end,
    created_at, resolved_entity_id, resolution_method, resolution_confidence, resolution_is_new_entity,
    resolved_at) AS
SELECT m.deployment_id, m.mention_id, m.doc_id, m.version_id, m.representation_id, m.chunk_id, m.section_id,
       m.claim_id, m.surface, m.mention_key, NULL::text, NULL::text, NULL::real, NULL::text, NULL::integer,
       NULL::integer, m.created_at,
       CASE WHEN resolved THEN m.entity_id END,
       CASE WHEN resolved THEN memory_v1_private.resolution_method(m.step) END,
       NULL::real,
       CASE WHEN resolved THEN m.verdict = 'new' END,
       CASE WHEN resolved THEN m.decided_at END
FROM memory_v1_private.live_mentions m
CROSS JOIN LATERAL (SELECT m.entity_id IS NOT NULL AND m.step IS NOT NULL
                           AND m.entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance) AS resolved) g;

-- @view entity_document_mentions
CREATE VIEW memory_v1.entity_document_mentions (
    deployment_id, entity_id, doc_id, mention_count, first_mentioned_at, last_mentioned_at) AS
SELECT m.deployment_id, m.resolved_entity_id, m.doc_id, count(*), min(m.created_at), max(m.created_at)
FROM memory_v1.mentions_live m
WHERE m.resolved_entity_id IS NOT NULL
GROUP BY m.deployment_id, m.resolved_entity_id, m.doc_id;

-- @view entities_current
CREATE VIEW memory_v1.entities_current (
    deployment_id, entity_id, entity_type, canonical_name, normalized_name, type_confidence, profile_summary,
    live_mention_count, live_document_count, graph_degree, created_at, updated_at) AS
SELECT dep.deployment_id, e.entity_id, NULL::text, e.canonical_name,
       coalesce((SELECT a.alias_key FROM entity_aliases a WHERE a.entity_id = e.entity_id AND a.alias = e.canonical_name
                 ORDER BY a.alias_key LIMIT 1), lower(e.canonical_name)),
       NULL::real, e.profile, coalesce(n.mentions, 0), coalesce(n.documents, 0), 0::bigint, e.created_at,
       greatest(e.created_at, (SELECT max(a.added_at) FROM entity_aliases a WHERE a.entity_id = e.entity_id))
FROM entities e
CROSS JOIN deployment dep
-- one grouped pass over mentions_live, not one per entity
LEFT JOIN (SELECT m.resolved_entity_id AS entity_id, count(*) AS mentions, count(DISTINCT m.doc_id) AS documents
           FROM memory_v1.mentions_live m WHERE m.resolved_entity_id IS NOT NULL
           GROUP BY m.resolved_entity_id) n ON n.entity_id = e.entity_id
WHERE e.entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance);

-- @view entity_aliases_current
CREATE VIEW memory_v1.entity_aliases_current (
    deployment_id, alias_id, source_entity_id, entity_id, alias_text, normalized_lemma, provenance, confidence,
    first_seen, last_seen) AS
SELECT e.deployment_id, memory_v1_private.uuid_of('alias', a.entity_id::text || '|' || a.alias_key), a.entity_id,
       a.entity_id, a.alias, a.alias_key, 'source'::text, NULL::real, a.added_at, a.added_at
FROM entity_aliases a
JOIN memory_v1.entities_current e ON e.entity_id = a.entity_id;

-- @view identity_events_visible
-- Our identity log has resolution decisions only: merges are proposed for review, never applied.
CREATE VIEW memory_v1.identity_events_visible (
    deployment_id, object_kind, event_id, entity_id, related_entity_id, mention_id, outcome, method, confidence,
    decided_by, decided_at, is_superseded) AS
SELECT m.deployment_id, 'resolution_decision'::text, memory_v1_private.uuid_of('identity_event', i.event_id::text),
       i.entity_id, NULL::uuid, m.mention_id, CASE WHEN i.verdict = 'new' THEN 'new_entity' ELSE 'linked' END,
       memory_v1_private.resolution_method(i.step), NULL::real, 'auto'::text, i.decided_at,
       EXISTS (SELECT 1 FROM identity_events later WHERE later.doc_id = i.doc_id AND later.mention_key = i.mention_key
               AND later.surface = i.surface AND later.event_id > i.event_id)
FROM identity_events i
JOIN memory_v1.mentions_live m
  ON m.mention_id = memory_v1_private.uuid_of('mention', i.doc_id::text || '|' || i.mention_key || '|' || i.surface)
JOIN memory_v1.entities_current e ON e.entity_id = i.entity_id;

-- @view facts_visible_history
CREATE VIEW memory_v1.facts_visible_history (
    deployment_id, fact_kind, fact_id, subject_entity_id, predicate, object_entity_id, statement, fact_label,
    valid_from, valid_until, ingested_at, invalidated_at, contradiction_group, confidence, evidence_count_current,
    contradict_count_current, support_state_current, valid_precision) AS
SELECT f.deployment_id, f.kind, f.fact_id, f.subject_id, f.predicate, f.object_id,
       CASE WHEN f.kind = 'observation' THEN f.label END, f.label, f.valid_from, f.valid_until, f.ingested_at,
       f.invalidated_at, f.contradiction_group, NULL::real, f.evidence_count::bigint, f.contradicting_count::bigint,
       f.support, f.valid_precision
FROM memory_v1_private.visible_facts f;

-- @view facts_current
CREATE VIEW memory_v1.facts_current (
    deployment_id, fact_kind, fact_id, subject_entity_id, predicate, object_entity_id, statement, fact_label,
    valid_from, valid_until, ingested_at, contradiction_group, confidence, evidence_count, contradict_count,
    support_state, evaluated_at, valid_precision) AS
SELECT f.deployment_id, f.kind, f.fact_id, f.subject_id, f.predicate, f.object_id,
       CASE WHEN f.kind = 'observation' THEN f.label END, f.label, f.valid_from, f.valid_until, f.ingested_at,
       f.contradiction_group, NULL::real, f.evidence_count::bigint, f.contradicting_count::bigint, f.support,
       f.evaluated_at, f.valid_precision
FROM memory_v1_private.current_facts f;

-- @view contradiction_members_current
-- A group is current while at least two of its members are current: both sides stand.
CREATE VIEW memory_v1.contradiction_members_current (
    deployment_id, contradiction_group, fact_kind, fact_id, fact_label, valid_from, valid_until, ingested_at,
    evidence_count, contradict_count, support_state, evaluated_at) AS
SELECT f.deployment_id, f.contradiction_group, f.fact_kind, f.fact_id, f.fact_label, f.valid_from, f.valid_until,
       f.ingested_at, f.evidence_count, f.contradict_count, f.support_state, f.evaluated_at
FROM (SELECT c.*, count(*) OVER (PARTITION BY c.contradiction_group) AS members
      FROM memory_v1.facts_current c WHERE c.contradiction_group IS NOT NULL) f
WHERE f.members >= 2;

-- @view graph_edges_current
CREATE VIEW memory_v1.graph_edges_current (
    deployment_id, relation_id, subject_entity_id, object_entity_id, predicate, fact_label, valid_from, valid_until,
    ingested_at, contradiction_group, confidence, evidence_count, contradict_count, support_state, evaluated_at) AS
SELECT f.deployment_id, f.fact_id, f.subject_entity_id, f.object_entity_id, f.predicate, f.fact_label, f.valid_from,
       f.valid_until, f.ingested_at, f.contradiction_group, f.confidence, f.evidence_count, f.contradict_count,
       f.support_state, f.evaluated_at
FROM memory_v1.facts_current f
WHERE f.fact_kind = 'relation'
  AND f.subject_entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance)
  AND f.object_entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance);

-- @view graph_edges_visible_history
CREATE VIEW memory_v1.graph_edges_visible_history (
    deployment_id, relation_id, subject_entity_id, object_entity_id, predicate, fact_label, valid_from, valid_until,
    ingested_at, invalidated_at, contradiction_group, confidence, evidence_count_current, contradict_count_current,
    support_state_current) AS
SELECT f.deployment_id, f.fact_id, f.subject_entity_id, f.object_entity_id, f.predicate, f.fact_label, f.valid_from,
       f.valid_until, f.ingested_at, f.invalidated_at, f.contradiction_group, f.confidence, f.evidence_count_current,
       f.contradict_count_current, f.support_state_current
FROM memory_v1.facts_visible_history f
WHERE f.fact_kind = 'relation'
  AND f.subject_entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance)
  AND f.object_entity_id IN (SELECT entity_id FROM memory_v1_private.entity_provenance);

-- @view fact_claim_evidence_live
-- One row per (fact, claim, stance): a claim that carries several assertions of one fact is one
-- association, first linked when its first assertion was attached.
CREATE VIEW memory_v1.fact_claim_evidence_live (
    deployment_id, fact_kind, fact_id, claim_id, stance, doc_id, source_kind, source_handle, asserted_at,
    claim_valid_from, claim_valid_until, claim_valid_precision, claim_valid_kind, linked_at) AS
SELECT c.deployment_id, f.kind, e.fact_id, e.claim_id, e.stance, c.doc_id, c.source_kind, c.source_handle,
       c.asserted_at, c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind,
       min(e.attached_at)
FROM fact_evidence e
JOIN memory_v1.claims_live c ON c.claim_id = e.claim_id AND c.doc_id = e.doc_id
JOIN memory_v1_private.visible_facts f ON f.fact_id = e.fact_id
GROUP BY c.deployment_id, f.kind, e.fact_id, e.claim_id, e.stance, c.doc_id, c.source_kind, c.source_handle,
         c.asserted_at, c.claim_valid_from, c.claim_valid_until, c.claim_valid_precision, c.claim_valid_kind;

-- @view evidence_lineage
-- The counted unit: one row per fact, live lineage and stance over current testimony, which is
-- exactly what `facts.evidence_count` / `contradicting_count` count (sql/facts_store.py `recount`).
CREATE VIEW memory_v1.evidence_lineage (
    deployment_id, fact_kind, fact_id, doc_id, stance, source_kind, source_handle, claim_count,
    representative_claim_id, asserted_from, asserted_to) AS
SELECT e.deployment_id, e.fact_kind, e.fact_id, e.doc_id, e.stance, min(e.source_kind), min(e.source_handle),
       count(DISTINCT e.claim_id),
       (array_agg(e.claim_id ORDER BY e.asserted_at DESC NULLS LAST, e.claim_id))[1],
       min(e.asserted_at), max(e.asserted_at)
FROM memory_v1.fact_claim_evidence_live e
GROUP BY e.deployment_id, e.fact_kind, e.fact_id, e.doc_id, e.stance;

-- @view testimony_currency_events_visible
-- Every event of one reconcile transaction shares its `occurred_at`, which names the run.
CREATE VIEW memory_v1.testimony_currency_events_visible (
    deployment_id, event_id, claim_id, doc_id, reconciliation_id, became_current, reason, from_extractor_version,
    from_version_id, occurred_at) AS
SELECT c.deployment_id, memory_v1_private.uuid_of('testimony_currency_event', t.event_id::text), t.claim_id, c.doc_id,
       memory_v1_private.uuid_of('reconciliation', t.occurred_at::text), t.is_current, t.reason,
       CASE WHEN t.reason = 'reextracted' THEN c.extractor_version END,
       (SELECT v.version_id FROM memory_v1.document_versions_visible v
        WHERE v.version_id = CASE WHEN t.reason = 'version_superseded' THEN c.version_id ELSE t.version_id END),
       t.occurred_at
FROM testimony_currency_events t
JOIN memory_v1.claims_visible_history c ON c.claim_id = t.claim_id;

-- @view changes_visible
-- No deletion arm: a forgotten object's events leave with it.
CREATE VIEW memory_v1.changes_visible (deployment_id, object_kind, event_id, object_id, occurred_at, label) AS
SELECT f.deployment_id, f.fact_kind || '_ingest', memory_v1_private.uuid_of('fact_ingest', f.fact_id::text), f.fact_id,
       f.ingested_at, coalesce(f.fact_label, '')
FROM memory_v1.facts_visible_history f
UNION ALL
SELECT f.deployment_id, f.fact_kind || '_invalidation', memory_v1_private.uuid_of('fact_invalidation', f.fact_id::text),
       f.fact_id, f.invalidated_at, coalesce(f.fact_label, '')
FROM memory_v1.facts_visible_history f
WHERE f.invalidated_at IS NOT NULL
UNION ALL
SELECT f.deployment_id, f.fact_kind || '_supersession', memory_v1_private.uuid_of('fact_decision', d.decision_id::text),
       f.fact_id, d.decided_at, coalesce(f.fact_label, '')
FROM fact_decisions d
JOIN memory_v1.facts_visible_history f ON f.fact_id = d.fact_id
WHERE d.outcome = 'update'
UNION ALL
SELECT c.deployment_id, 'claim_ingest', memory_v1_private.uuid_of('claim_ingest', c.claim_id::text), c.claim_id,
       c.ingested_at, left(c.claim_text, 200)
FROM memory_v1.claims_visible_history c;

-- @view document_crossrefs_live
-- We record no cross-references between documents: the view has the seed's columns and no rows.
CREATE VIEW memory_v1.document_crossrefs_live (
    deployment_id, crossref_id, from_doc_id, to_doc_id, kind, context, created_at) AS
SELECT dep.deployment_id, NULL::uuid, NULL::uuid, NULL::uuid, NULL::text, NULL::text, NULL::timestamptz
FROM deployment dep
WHERE false;

-- @view pages_live
-- We compile no knowledge pages: the view has the seed's columns and no rows.
CREATE VIEW memory_v1.pages_live (
    deployment_id, artifact_id, layer, page_kind, git_path, kind, parent_artifact_id, page_summary, status,
    last_compiled_at, is_stale, open_review_flags, redaction_required) AS
SELECT dep.deployment_id, NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::text, NULL::uuid, NULL::text,
       NULL::text, NULL::timestamptz, NULL::boolean, NULL::bigint, NULL::boolean
FROM deployment dep
WHERE false;

-- @view page_evidence_visible
-- No knowledge pages, so no page citations: the seed's columns and no rows.
CREATE VIEW memory_v1.page_evidence_visible (
    deployment_id, artifact_id, role, target_kind, target_id, claim_chunk_content_hashes, link_count) AS
SELECT dep.deployment_id, NULL::uuid, NULL::text, NULL::text, NULL::uuid, NULL::text[], NULL::bigint
FROM deployment dep
WHERE false;

-- @support search_support
-- What every search function shares: k, filter checks, the statement's candidate budget, the
-- query vector the runner supplies, and the record of what each call did.
CREATE FUNCTION memory_v1_private.search_k(k integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF k IS NULL THEN
        RETURN 20;
    ELSIF k < 1 THEN
        RAISE EXCEPTION 'invalid_parameter: k must be at least 1' USING ERRCODE = '22023';
    END IF;
    RETURN least(k, 100);
END
$$;

-- `spec` maps each allowed key to its kind: uuid, instant, string, or a JSON array of allowed strings.
CREATE FUNCTION memory_v1_private.check_filters(fn text, filters jsonb, spec jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    key text;
    value jsonb;
    kind jsonb;
BEGIN
    IF filters IS NULL OR filters = 'null'::jsonb THEN
        RETURN;
    END IF;
    IF jsonb_typeof(filters) <> 'object' THEN
        RAISE EXCEPTION 'invalid_parameter: % filters must be a JSON object', fn USING ERRCODE = '22023';
    END IF;
    FOR key, value IN SELECT * FROM jsonb_each(filters) LOOP
        kind := spec -> key;
        IF kind IS NULL THEN
            RAISE EXCEPTION 'invalid_parameter: % has no filter %', fn, key USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(value) <> 'string' THEN
            RAISE EXCEPTION 'invalid_parameter: filter % of % must be a scalar string', key, fn USING ERRCODE = '22023';
        END IF;
        BEGIN
            IF kind = '"uuid"' THEN
                PERFORM (value ->> 0)::uuid;
            ELSIF kind = '"instant"' THEN
                PERFORM (value ->> 0)::timestamptz;
            END IF;
        EXCEPTION WHEN others THEN
            RAISE EXCEPTION 'invalid_parameter: filter % of % must be a %', key, fn, kind ->> 0 USING ERRCODE = '22023';
        END;
        IF jsonb_typeof(kind) = 'array' AND NOT kind ? (value ->> 0) THEN
            RAISE EXCEPTION 'invalid_parameter: filter % of % must be one of %', key, fn, kind USING ERRCODE = '22023';
        END IF;
    END LOOP;
END
$$;

CREATE FUNCTION memory_v1_private.spend_candidates(n integer) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    spent integer := coalesce(nullif(current_setting('corpusmem.search_candidates', true), '')::integer, 0) + n;
BEGIN
    IF spent > 200 THEN
        RAISE EXCEPTION 'quota_exceeded: the statement''s 200-candidate search budget is spent' USING ERRCODE = '54000';
    END IF;
    PERFORM set_config('corpusmem.search_candidates', spent::text, true);
END
$$;

CREATE FUNCTION memory_v1_private.check_generation(policy_version text, generation text) RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    model text := (SELECT d.embedding_model FROM public.deployment d);
BEGIN
    IF policy_version IS NOT NULL THEN
        RAISE EXCEPTION 'generation_unavailable: this memory has no embedding input policy %', policy_version
            USING ERRCODE = '22023';
    END IF;
    IF generation IS NOT NULL AND generation IS DISTINCT FROM model THEN
        RAISE EXCEPTION 'generation_unavailable: this memory has no embedder generation %', generation
            USING ERRCODE = '22023';
    END IF;
    RETURN model;
END
$$;

-- The runner puts the query's vector in `corpusmem.query_vectors` ({"text": [floats]}) before the
-- statement: SQL cannot embed text.
CREATE FUNCTION memory_v1_private.query_vector(query text) RETURNS public.vector
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    raw jsonb;
    v public.vector;
    dim integer := (SELECT d.embedding_dim FROM public.deployment d);
BEGIN
    BEGIN
        raw := nullif(current_setting('corpusmem.query_vectors', true), '')::jsonb;
    EXCEPTION WHEN others THEN
        raw := NULL;
    END;
    IF raw IS NULL OR jsonb_typeof(raw) <> 'object' OR query IS NULL OR NOT raw ? query THEN
        RAISE EXCEPTION 'p1_unavailable: no query vector for this text' USING ERRCODE = '55000';
    END IF;
    BEGIN
        v := ((raw -> query)::text)::public.vector;
    EXCEPTION WHEN others THEN
        RAISE EXCEPTION 'p1_unavailable: the query vector for this text is not an array of numbers' USING ERRCODE = '55000';
    END;
    IF public.vector_dims(v) <> dim THEN
        RAISE EXCEPTION 'p1_unavailable: the query vector has % dimensions, this memory %', public.vector_dims(v), dim
            USING ERRCODE = '55000';
    END IF;
    RETURN v;
END
$$;

-- Appends one SemanticInvocation to the transaction-local `corpusmem.semantic_invocations`.
CREATE FUNCTION memory_v1_private.record_invocation(fn text, nominated integer, confirmed integer, counters jsonb,
                                                    embedder_generation text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    so_far jsonb := coalesce(nullif(current_setting('corpusmem.semantic_invocations', true), '')::jsonb, '[]'::jsonb);
BEGIN
    PERFORM set_config('corpusmem.semantic_invocations', (so_far || jsonb_build_array(
        jsonb_build_object('function', fn, 'nominated', nominated, 'confirmed', confirmed,
                           'dropped_stale', 0, 'dropped_filtered', 0, 'dropped_ambiguous', 0, 'dropped_absent', 0,
                           'dropped_body_mismatch', 0, 'dropped_absent_current', 0, 'dropped_absent_projection', 0,
                           'dropped_hash_mismatch', 0, 'policy_generation', NULL,
                           'embedder_generation', embedder_generation, 'generation', embedder_generation,
                           'pg_confirmed_at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'),
                           'termination_reason', 'completed') || counters))::text, true);
END
$$;

-- @support nominations
-- Nominated ids, best first, with their scores: pgvector cosine over the stored vectors
-- (`semantic`) or PostgreSQL full-text ranking over the stored tsvectors (`bm25`). Table names are
-- fixed here, never caller text.
CREATE FUNCTION memory_v1_private.nominate(source text, channel text, query text, qv public.vector, k integer)
RETURNS TABLE (id uuid, score double precision, ord bigint)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF channel = 'semantic' THEN
        IF source = 'claims' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT c.claim_id AS i, c.embedding OPERATOR(public.<=>) qv AS d FROM public.claims c
                WHERE c.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSIF source = 'chunks' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT c.chunk_id AS i, c.embedding OPERATOR(public.<=>) qv AS d FROM public.chunks c
                WHERE c.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSIF source = 'facts' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT f.fact_id AS i, f.embedding OPERATOR(public.<=>) qv AS d FROM public.facts f
                WHERE f.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSE
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT e.entity_id AS i, e.profile_embedding OPERATOR(public.<=>) qv AS d FROM public.entities e
                WHERE e.profile_embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        END IF;
    ELSIF source = 'claims' THEN
        RETURN QUERY SELECT n.i, n.s::double precision, row_number() OVER (ORDER BY n.s DESC, n.i) FROM (
            SELECT c.claim_id AS i, ts_rank_cd(c.tsv, websearch_to_tsquery('english', query)) AS s FROM public.claims c
            WHERE c.tsv @@ websearch_to_tsquery('english', query) ORDER BY 2 DESC, 1 LIMIT k) n;
    ELSE
        RETURN QUERY SELECT n.i, n.s::double precision, row_number() OVER (ORDER BY n.s DESC, n.i) FROM (
            SELECT c.chunk_id AS i, ts_rank_cd(c.tsv, websearch_to_tsquery('english', query)) AS s FROM public.chunks c
            WHERE c.tsv @@ websearch_to_tsquery('english', query) ORDER BY 2 DESC, 1 LIMIT k) n;
    END IF;
END
$$;

-- @support search_claims
CREATE FUNCTION memory_v1_private.search_claims(fn text, channel text, query text, k integer, filters jsonb,
                                                policy_version text, generation text)
RETURNS TABLE (rank integer, score double precision, channel_out text, claim_id uuid, doc_id uuid, claim_text text,
               source_handle text, source_kind text, asserted_at timestamptz, claim_valid_from timestamptz,
               claim_valid_until timestamptz)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    kk integer := memory_v1_private.search_k(k);
    model text;
    qv public.vector;
    ids uuid[];
    scores double precision[];
    live integer;
    kept integer;
BEGIN
    PERFORM memory_v1_private.check_filters(fn, filters,
        '{"asserted_from": "instant", "asserted_to": "instant", "doc_id": "uuid", "entity_id": "uuid", "source_kind": "string"}');
    model := memory_v1_private.check_generation(policy_version, generation);
    IF channel = 'semantic' THEN
        qv := memory_v1_private.query_vector(query);
    END IF;
    PERFORM memory_v1_private.spend_candidates(kk);
    SELECT coalesce(array_agg(n.id ORDER BY n.ord), '{}'), coalesce(array_agg(n.score ORDER BY n.ord), '{}')
      INTO ids, scores FROM memory_v1_private.nominate('claims', channel, query, qv, kk) n;
    SELECT count(*) INTO live FROM memory_v1.claims_live c WHERE c.claim_id = ANY(ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY n.ord))::integer, n.score, channel, c.claim_id, c.doc_id, c.claim_text,
           c.source_handle, c.source_kind, c.asserted_at, c.claim_valid_from, c.claim_valid_until
    FROM unnest(ids, scores) WITH ORDINALITY AS n(id, score, ord)
    JOIN memory_v1.claims_live c ON c.claim_id = n.id
    WHERE (filters ->> 'doc_id' IS NULL OR c.doc_id = (filters ->> 'doc_id')::uuid)
      AND (filters ->> 'source_kind' IS NULL OR c.source_kind = filters ->> 'source_kind')
      AND (filters ->> 'asserted_from' IS NULL OR c.asserted_at >= (filters ->> 'asserted_from')::timestamptz)
      AND (filters ->> 'asserted_to' IS NULL OR c.asserted_at <= (filters ->> 'asserted_to')::timestamptz)
      AND (filters ->> 'entity_id' IS NULL OR EXISTS (
            SELECT 1 FROM memory_v1.mentions_live m WHERE m.claim_id = c.claim_id
              AND m.resolved_entity_id = (filters ->> 'entity_id')::uuid)
           OR EXISTS (SELECT 1 FROM public.assertions a WHERE a.claim_id = c.claim_id
              AND (filters ->> 'entity_id')::uuid IN (a.subject_id, a.object_id)))
    ORDER BY n.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_invocation(fn, cardinality(ids), kept,
        jsonb_build_object('dropped_stale', cardinality(ids) - live, 'dropped_filtered', live - kept),
        CASE WHEN channel = 'semantic' THEN model END);
END
$$;

-- @support search_chunks
CREATE FUNCTION memory_v1_private.search_chunks(fn text, channel text, query text, k integer, filters jsonb,
                                                policy_version text, generation text)
RETURNS TABLE (rank integer, score double precision, channel_out text, chunk_id uuid, doc_id uuid, version_id uuid,
               representation_id uuid, section_id uuid, chunk_content_hash text, embedding_text_hash text,
               source_text text, location_header text, embedding_input_policy_version text, policy_generation text,
               embedder_generation text, created_at timestamptz)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    kk integer := memory_v1_private.search_k(k);
    model text;
    qv public.vector;
    ids uuid[];
    scores double precision[];
    live integer;
    kept integer;
BEGIN
    PERFORM memory_v1_private.check_filters(fn, filters,
        '{"doc_id": "uuid", "language": "string", "source_kind": "string", "source_shape": "string",
          "section_role": ["body", "abstract", "introduction", "results", "methods", "discussion", "conclusion",
                           "references", "appendix", "table", "figure_caption", "nav", "boilerplate", "legal"]}');
    model := memory_v1_private.check_generation(policy_version, generation);
    IF channel = 'semantic' THEN
        qv := memory_v1_private.query_vector(query);
    END IF;
    PERFORM memory_v1_private.spend_candidates(kk);
    SELECT coalesce(array_agg(n.id ORDER BY n.ord), '{}'), coalesce(array_agg(n.score ORDER BY n.ord), '{}')
      INTO ids, scores FROM memory_v1_private.nominate('chunks', channel, query, qv, kk) n;
    SELECT count(*) INTO live FROM memory_v1.chunks_live c WHERE c.chunk_id = ANY(ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY n.ord))::integer, n.score, channel, c.chunk_id, c.doc_id, c.version_id,
           c.representation_id, c.section_id, c.chunk_content_hash, c.embedding_text_hash, ch.text, c.location_header,
           c.embedding_input_policy_version, c.policy_generation, c.embedder_generation, c.created_at
    FROM unnest(ids, scores) WITH ORDINALITY AS n(id, score, ord)
    JOIN memory_v1.chunks_live c ON c.chunk_id = n.id
    JOIN public.chunks ch ON ch.chunk_id = c.chunk_id
    JOIN memory_v1.documents_live d ON d.doc_id = c.doc_id
    LEFT JOIN memory_v1.sections_live s ON s.section_id = c.section_id
    WHERE (filters ->> 'doc_id' IS NULL OR c.doc_id = (filters ->> 'doc_id')::uuid)
      AND (filters ->> 'source_kind' IS NULL OR d.source_kind = filters ->> 'source_kind')
      AND (filters ->> 'language' IS NULL OR d.language = filters ->> 'language')
      AND (filters ->> 'section_role' IS NULL OR s.role = filters ->> 'section_role')
      -- we record no source shape: a shape filter keeps nothing
      AND (filters ->> 'source_shape' IS NULL)
    ORDER BY n.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_invocation(fn, cardinality(ids), kept,
        jsonb_build_object('dropped_stale', cardinality(ids) - live, 'dropped_filtered', live - kept),
        CASE WHEN channel = 'semantic' THEN model END);
END
$$;

-- @function semantic_claims
CREATE FUNCTION memory_v1.semantic_claims(query text, k integer, filters jsonb DEFAULT NULL,
                                          embedding_input_policy_version text DEFAULT NULL,
                                          embedder_generation text DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, claim_id uuid, doc_id uuid, claim_text text,
               source_handle text, source_kind text, asserted_at timestamptz, claim_valid_from timestamptz,
               claim_valid_until timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM memory_v1_private.search_claims('semantic_claims', 'semantic', query, k, filters,
                                                     embedding_input_policy_version, embedder_generation) $$;

-- @function lexical_claims
CREATE FUNCTION memory_v1.lexical_claims(query text, k integer, filters jsonb DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, claim_id uuid, doc_id uuid, claim_text text,
               source_handle text, source_kind text, asserted_at timestamptz, claim_valid_from timestamptz,
               claim_valid_until timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM memory_v1_private.search_claims('lexical_claims', 'bm25', query, k, filters, NULL, NULL) $$;

-- @function semantic_chunks
CREATE FUNCTION memory_v1.semantic_chunks(query text, k integer, filters jsonb DEFAULT NULL,
                                          embedding_input_policy_version text DEFAULT NULL,
                                          embedder_generation text DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, chunk_id uuid, doc_id uuid, version_id uuid,
               representation_id uuid, section_id uuid, chunk_content_hash text, embedding_text_hash text,
               source_text text, location_header text, embedding_input_policy_version text, policy_generation text,
               embedder_generation text, created_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM memory_v1_private.search_chunks('semantic_chunks', 'semantic', $1, $2, $3, $4, $5) $$;

-- @function lexical_chunks
CREATE FUNCTION memory_v1.lexical_chunks(query text, k integer, filters jsonb DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, chunk_id uuid, doc_id uuid, version_id uuid,
               representation_id uuid, section_id uuid, chunk_content_hash text, embedding_text_hash text,
               source_text text, location_header text, embedding_input_policy_version text, policy_generation text,
               embedder_generation text, created_at timestamptz)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM memory_v1_private.search_chunks('lexical_chunks', 'bm25', query, k, filters, NULL, NULL) $$;

-- @function semantic_facts
-- Confirmed against facts_current: a nominated fact that does not hold now is dropped.
CREATE FUNCTION memory_v1.semantic_facts(query text, k integer, filters jsonb DEFAULT NULL,
                                         embedding_input_policy_version text DEFAULT NULL,
                                         embedder_generation text DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, fact_id uuid, fact_kind text, fact_label text,
               predicate text, subject_entity_id uuid, object_entity_id uuid, evidence_count bigint,
               contradict_count bigint, support_state text, evaluated_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    kk integer := memory_v1_private.search_k(k);
    model text;
    qv public.vector;
    ids uuid[];
    scores double precision[];
    live integer;
    kept integer;
BEGIN
    PERFORM memory_v1_private.check_filters('semantic_facts', filters,
        '{"fact_kind": ["relation", "observation"], "support_state": ["current", "withdrawn"], "predicate": "string",
          "subject_entity_id": "uuid", "object_entity_id": "uuid"}');
    model := memory_v1_private.check_generation(embedding_input_policy_version, embedder_generation);
    qv := memory_v1_private.query_vector(query);
    PERFORM memory_v1_private.spend_candidates(kk);
    SELECT coalesce(array_agg(n.id ORDER BY n.ord), '{}'), coalesce(array_agg(n.score ORDER BY n.ord), '{}')
      INTO ids, scores FROM memory_v1_private.nominate('facts', 'semantic', query, qv, kk) n;
    SELECT count(*) INTO live FROM memory_v1.facts_current f WHERE f.fact_id = ANY(ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY n.ord))::integer, n.score, 'semantic'::text, f.fact_id, f.fact_kind,
           f.fact_label, f.predicate, f.subject_entity_id, f.object_entity_id, f.evidence_count, f.contradict_count,
           f.support_state, f.evaluated_at
    FROM unnest(ids, scores) WITH ORDINALITY AS n(id, score, ord)
    JOIN memory_v1.facts_current f ON f.fact_id = n.id
    WHERE (filters ->> 'fact_kind' IS NULL OR f.fact_kind = filters ->> 'fact_kind')
      AND (filters ->> 'support_state' IS NULL OR f.support_state = filters ->> 'support_state')
      AND (filters ->> 'predicate' IS NULL OR f.predicate = filters ->> 'predicate')
      AND (filters ->> 'subject_entity_id' IS NULL OR f.subject_entity_id = (filters ->> 'subject_entity_id')::uuid)
      AND (filters ->> 'object_entity_id' IS NULL OR f.object_entity_id = (filters ->> 'object_entity_id')::uuid)
    ORDER BY n.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_invocation('semantic_facts', cardinality(ids), kept,
        jsonb_build_object('dropped_stale', cardinality(ids) - live, 'dropped_filtered', live - kept), model);
END
$$;

-- @function semantic_entities
CREATE FUNCTION memory_v1.semantic_entities(query text, k integer, filters jsonb DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, entity_id uuid, entity_type text,
               canonical_name text, profile_summary text, live_mention_count bigint, live_document_count bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    kk integer := memory_v1_private.search_k(k);
    model text;
    qv public.vector;
    ids uuid[];
    scores double precision[];
    kept integer;
BEGIN
    PERFORM memory_v1_private.check_filters('semantic_entities', filters, '{}');
    model := memory_v1_private.check_generation(NULL, NULL);
    qv := memory_v1_private.query_vector(query);
    PERFORM memory_v1_private.spend_candidates(kk);
    SELECT coalesce(array_agg(n.id ORDER BY n.ord), '{}'), coalesce(array_agg(n.score ORDER BY n.ord), '{}')
      INTO ids, scores FROM memory_v1_private.nominate('entities', 'semantic', query, qv, kk) n;
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY n.ord))::integer, n.score, 'semantic'::text, e.entity_id, e.entity_type,
           e.canonical_name, e.profile_summary, e.live_mention_count, e.live_document_count
    FROM unnest(ids, scores) WITH ORDINALITY AS n(id, score, ord)
    JOIN memory_v1.entities_current e ON e.entity_id = n.id
    ORDER BY n.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_invocation('semantic_entities', cardinality(ids), kept,
        jsonb_build_object('dropped_stale', cardinality(ids) - kept), model);
END
$$;

-- @function fetch_chunk_bodies
-- Each chunk is re-read through chunks_live and its text re-hashed against its content hash
-- before any byte is returned.
CREATE FUNCTION memory_v1.fetch_chunk_bodies(chunk_ids uuid[])
RETURNS TABLE (input_ordinal integer, chunk_id uuid, doc_id uuid, version_id uuid, representation_id uuid,
               section_id uuid, chunk_content_hash text, embedding_text_hash text, source_text text,
               location_header text, embedding_input_policy_version text, policy_generation text,
               embedder_generation text, created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    requested integer := coalesce(cardinality(chunk_ids), 0);
    live integer;
    verified integer;
    generations integer;
    call_bytes bigint;
    statement_bytes bigint;
    kept integer;
BEGIN
    IF chunk_ids IS NULL OR requested = 0 THEN
        RAISE EXCEPTION 'invalid_parameter: fetch_chunk_bodies needs at least one chunk id' USING ERRCODE = '22023';
    ELSIF requested > 50 THEN
        RAISE EXCEPTION 'invalid_parameter: fetch_chunk_bodies takes at most 50 chunk ids per call' USING ERRCODE = '22023';
    END IF;
    SELECT count(*), count(*) FILTER (WHERE encode(sha256(convert_to(ch.text, 'UTF8')), 'hex') = c.chunk_content_hash),
           count(DISTINCT coalesce(c.embedder_generation, '')),
           coalesce(sum(octet_length(ch.text)) FILTER (WHERE encode(sha256(convert_to(ch.text, 'UTF8')), 'hex') = c.chunk_content_hash), 0)
      INTO live, verified, generations, call_bytes
    FROM memory_v1.chunks_live c JOIN public.chunks ch ON ch.chunk_id = c.chunk_id
    WHERE c.chunk_id = ANY(chunk_ids);
    IF generations > 1 THEN
        RAISE EXCEPTION 'generation_unavailable: the requested chunks span more than one embedding generation'
            USING ERRCODE = '22023';
    END IF;
    IF call_bytes > 524288 THEN
        RAISE EXCEPTION 'quota_exceeded: more than 512 KiB of chunk text in one fetch_chunk_bodies call' USING ERRCODE = '54000';
    END IF;
    statement_bytes := coalesce(nullif(current_setting('corpusmem.chunk_body_bytes', true), '')::bigint, 0) + call_bytes;
    IF statement_bytes > 4194304 THEN
        RAISE EXCEPTION 'quota_exceeded: more than 4 MiB of chunk text in one statement' USING ERRCODE = '54000';
    END IF;
    PERFORM set_config('corpusmem.chunk_body_bytes', statement_bytes::text, true);
    RETURN QUERY
    SELECT n.ord::integer, c.chunk_id, c.doc_id, c.version_id, c.representation_id, c.section_id, c.chunk_content_hash,
           c.embedding_text_hash, ch.text, c.location_header, c.embedding_input_policy_version, c.policy_generation,
           c.embedder_generation, c.created_at
    FROM unnest(chunk_ids) WITH ORDINALITY AS n(id, ord)
    JOIN memory_v1.chunks_live c ON c.chunk_id = n.id
    JOIN public.chunks ch ON ch.chunk_id = c.chunk_id
    WHERE encode(sha256(convert_to(ch.text, 'UTF8')), 'hex') = c.chunk_content_hash
    ORDER BY n.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_invocation('fetch_chunk_bodies', requested, kept,
        jsonb_build_object('dropped_absent', requested - kept - (live - verified), 'dropped_hash_mismatch', live - verified),
        (SELECT min(c.embedder_generation) FROM memory_v1.chunks_live c WHERE c.chunk_id = ANY(chunk_ids)));
END
$$;

-- @function facts_as_of
-- Believed at believed_at (ingested by then, not yet invalidated) and not ruled out at valid_at: a
-- complete window that holds is `confirmed`, an unknown or partial one that may hold is `possible`.
CREATE FUNCTION memory_v1.facts_as_of(valid_at timestamptz, believed_at timestamptz, max_rows integer DEFAULT 200)
RETURNS TABLE (deployment_id uuid, fact_kind text, fact_id uuid, subject_entity_id uuid, predicate text,
               object_entity_id uuid, statement text, fact_label text, valid_from timestamptz, valid_until timestamptz,
               ingested_at timestamptz, invalidated_at timestamptz, contradiction_group uuid, confidence real,
               evidence_count_current bigint, contradict_count_current bigint, support_state_current text,
               applied_valid_at timestamptz, applied_believed_at timestamptz, identity_regime text,
               valid_precision text, temporal_match text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v timestamptz := facts_as_of.valid_at;
    b timestamptz := facts_as_of.believed_at;
BEGIN
    IF v IS NULL OR b IS NULL THEN
        RAISE EXCEPTION 'invalid_parameter: facts_as_of needs both valid_at and believed_at' USING ERRCODE = '22023';
    END IF;
    IF facts_as_of.max_rows IS NOT NULL AND facts_as_of.max_rows < 1 THEN
        RAISE EXCEPTION 'invalid_parameter: max_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT f.deployment_id, f.fact_kind, f.fact_id, f.subject_entity_id, f.predicate, f.object_entity_id, f.statement,
           f.fact_label, f.valid_from, f.valid_until, f.ingested_at, f.invalidated_at, f.contradiction_group,
           f.confidence, f.evidence_count_current, f.contradict_count_current, f.support_state_current, v, b,
           'current'::text, f.valid_precision,
           CASE WHEN f.valid_from IS NOT NULL AND (f.valid_until IS NOT NULL OR f.valid_precision = 'open')
                THEN 'confirmed' ELSE 'possible' END
    FROM memory_v1.facts_visible_history f
    WHERE f.ingested_at <= b AND (f.invalidated_at IS NULL OR f.invalidated_at > b)
      AND (f.valid_from IS NULL OR f.valid_from <= v) AND (f.valid_until IS NULL OR f.valid_until > v)
    ORDER BY f.evidence_count_current DESC, f.fact_id
    LIMIT least(coalesce(facts_as_of.max_rows, 200), 1000);
END
$$;

-- @support graph_edges
-- The relation edges a graph walk may use: graph_edges_current at evaluated_at, or the relations
-- believed at `believed_at` and holding (complete window) at `valid_at`; withdrawn support never
-- carries a walk, and both endpoints must be visible entities.
CREATE FUNCTION memory_v1_private.graph_edges(valid_at timestamptz, believed_at timestamptz, predicates text[],
                                              frontier uuid[])
RETURNS TABLE (relation_id uuid, subject_id uuid, object_id uuid)
LANGUAGE sql STABLE
AS $$
    SELECT e.relation_id, e.subject_entity_id, e.object_entity_id FROM memory_v1.graph_edges_current e
    WHERE $1 IS NULL AND e.support_state = 'current'
      AND (e.subject_entity_id = ANY($4) OR e.object_entity_id = ANY($4))
      AND ($3 IS NULL OR e.predicate = ANY($3))
    UNION ALL
    SELECT e.relation_id, e.subject_entity_id, e.object_entity_id FROM memory_v1.graph_edges_visible_history e
    WHERE $1 IS NOT NULL AND e.support_state_current = 'current'
      AND (e.subject_entity_id = ANY($4) OR e.object_entity_id = ANY($4))
      AND ($3 IS NULL OR e.predicate = ANY($3))
      AND e.ingested_at <= $2 AND (e.invalidated_at IS NULL OR e.invalidated_at > $2)
      AND e.valid_from IS NOT NULL AND e.valid_from <= $1
      AND ((e.valid_until IS NULL AND EXISTS (SELECT 1 FROM public.facts f WHERE f.fact_id = e.relation_id
                                               AND f.valid_precision = 'open'))
           OR e.valid_until > $1)
    ORDER BY 1
$$;

-- @support graph_check
CREATE FUNCTION memory_v1_private.graph_check(fn text, deployment uuid, valid_at timestamptz, believed_at timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF deployment IS NULL OR deployment IS DISTINCT FROM (SELECT d.deployment_id FROM public.deployment d) THEN
        RAISE EXCEPTION 'invalid_parameter: the first argument of % must be this deployment''s id', fn
            USING ERRCODE = '22023';
    END IF;
    IF (valid_at IS NULL) <> (believed_at IS NULL) THEN
        RAISE EXCEPTION 'invalid_parameter: % takes both valid_at and believed_at or neither', fn USING ERRCODE = '22023';
    END IF;
END
$$;

-- @support graph_invocation
-- Appends one GraphInvocation to the transaction-local `corpusmem.graph_invocations`, so the
-- runner learns what each graph call did even when the statement leaves the status row unread.
CREATE FUNCTION memory_v1_private.record_graph_invocation(fn text, status jsonb) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    so_far jsonb := coalesce(nullif(current_setting('corpusmem.graph_invocations', true), '')::jsonb, '[]'::jsonb);
BEGIN
    PERFORM set_config('corpusmem.graph_invocations', (so_far || jsonb_build_array(
        jsonb_build_object('function', fn, 'ordinal', jsonb_array_length(so_far)) || status))::text, true);
END
$$;

-- The status row a neighbourhood or path walk ends with, recorded for the runner as well (which
-- then asks for no status row).
CREATE FUNCTION memory_v1_private.graph_status(fn text, reason text, examined bigint, returned bigint,
                                               depth_cap integer, expand_cap integer, frontier_cap integer,
                                               results_cap integer, time_cap integer, valid_at timestamptz,
                                               believed_at timestamptz)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql
AS $$
BEGIN
    row_kind := 'status';
    truncated := reason IS NOT NULL;
    truncation_reason := reason;
    examined_edges := examined;
    returned_paths := returned;
    effective_depth := depth_cap;
    effective_expansion_budget := expand_cap;
    effective_frontier_budget := frontier_cap;
    effective_result_budget := results_cap;
    effective_time_budget_ms := time_cap;
    applied_valid_at := coalesce(graph_status.valid_at, memory_v1_private.evaluated_at());
    applied_believed_at := coalesce(graph_status.believed_at, memory_v1_private.evaluated_at());
    PERFORM memory_v1_private.record_graph_invocation(fn,
        jsonb_build_object('truncated', truncated, 'truncation_reason', truncation_reason, 'examined_edges', examined_edges,
        'returned_paths', returned_paths, 'effective_depth', effective_depth, 'effective_expansion_budget', effective_expansion_budget,
        'effective_frontier_budget', effective_frontier_budget, 'effective_result_budget', effective_result_budget,
        'effective_time_budget_ms', effective_time_budget_ms, 'applied_valid_at', applied_valid_at, 'applied_believed_at', applied_believed_at, 'evaluated_at', NULL));
    -- The runner reads the status from corpusmem.graph_invocations and asks for no status row:
    -- a statement that does not select row_kind could not tell it from a path.
    IF current_setting('corpusmem.graph_status_rows', true) IS DISTINCT FROM 'omit' THEN
        RETURN NEXT;
    END IF;
END
$$;

-- @function graph_neighborhood
-- Breadth-first over relations in either direction: one shortest path to each entity reached,
-- then one status row. Budgets stop the walk and name themselves in truncation_reason.
CREATE FUNCTION memory_v1.graph_neighborhood(deployment_id uuid, start_entity_id uuid, max_depth integer DEFAULT 2,
                                             predicates text[] DEFAULT NULL, valid_at timestamptz DEFAULT NULL,
                                             believed_at timestamptz DEFAULT NULL, max_results integer DEFAULT 100,
                                             expansion_budget integer DEFAULT 2000, frontier_budget integer DEFAULT 1000,
                                             time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    depth_cap integer := greatest(1, least(coalesce(graph_neighborhood.max_depth, 2), 4));
    results_cap integer := greatest(1, least(coalesce(graph_neighborhood.max_results, 100), 500));
    expand_cap integer := greatest(1, least(coalesce(graph_neighborhood.expansion_budget, 2000), 2000));
    frontier_cap integer := greatest(1, least(coalesce(graph_neighborhood.frontier_budget, 1000), 1000));
    time_cap integer := greatest(1, least(coalesce(graph_neighborhood.time_budget_ms, 1000), 5000));
    started timestamptz := clock_timestamp();
    reason text;
    examined bigint := 0;
    returned bigint := 0;
    level integer := 0;
    frontier uuid[];
    next_frontier uuid[];
    visited uuid[];
    paths jsonb;
    edge record;
    here uuid;
    there uuid;
    path jsonb;
BEGIN
    PERFORM memory_v1_private.graph_check('graph_neighborhood', graph_neighborhood.deployment_id, valid_at, believed_at);
    IF graph_neighborhood.max_depth > 4 THEN
        reason := 'depth_budget';
    END IF;
    frontier := ARRAY[start_entity_id];
    visited := ARRAY[start_entity_id];
    paths := jsonb_build_object(start_entity_id::text, jsonb_build_object('r', '[]'::jsonb, 'n', jsonb_build_array(start_entity_id)));
    <<walk>>
    WHILE level < depth_cap AND cardinality(frontier) > 0 LOOP
        level := level + 1;
        next_frontier := '{}';
        FOR edge IN SELECT * FROM memory_v1_private.graph_edges(valid_at, believed_at, predicates, frontier) LOOP
            IF examined >= expand_cap THEN
                reason := 'expansion_budget';
                EXIT walk;
            END IF;
            IF clock_timestamp() - started > make_interval(secs => time_cap / 1000.0) THEN
                reason := 'time_budget';
                EXIT walk;
            END IF;
            examined := examined + 1;
            FOREACH here IN ARRAY ARRAY[edge.subject_id, edge.object_id] LOOP
                there := CASE WHEN here = edge.subject_id THEN edge.object_id ELSE edge.subject_id END;
                CONTINUE WHEN NOT here = ANY(frontier) OR there = ANY(visited);
                IF returned >= results_cap THEN
                    reason := 'result_budget';
                    EXIT walk;
                END IF;
                IF cardinality(next_frontier) >= frontier_cap THEN
                    reason := 'frontier_budget';
                    EXIT walk;
                END IF;
                path := paths -> here::text;
                path := jsonb_build_object('r', (path -> 'r') || to_jsonb(edge.relation_id), 'n', (path -> 'n') || to_jsonb(there));
                paths := paths || jsonb_build_object(there::text, path);
                visited := visited || there;
                next_frontier := next_frontier || there;
                returned := returned + 1;
                row_kind := 'path';
                hops := level;
                relation_ids := ARRAY(SELECT jsonb_array_elements_text(path -> 'r')::uuid);
                node_ids := ARRAY(SELECT jsonb_array_elements_text(path -> 'n')::uuid);
                RETURN NEXT;
            END LOOP;
        END LOOP;
        frontier := next_frontier;
    END LOOP;
    RETURN QUERY SELECT * FROM memory_v1_private.graph_status('graph_neighborhood', reason, examined, returned, depth_cap,
        expand_cap, frontier_cap, results_cap, time_cap, valid_at, believed_at);
END
$$;

-- @function graph_path
-- Breadth-first from one entity, keeping every path of the current length, until a level reaches
-- the other entity: those equal-length shortest paths (up to max_results), then one status row.
CREATE FUNCTION memory_v1.graph_path(deployment_id uuid, from_entity_id uuid, to_entity_id uuid,
                                     max_depth integer DEFAULT 4, predicates text[] DEFAULT NULL,
                                     valid_at timestamptz DEFAULT NULL, believed_at timestamptz DEFAULT NULL,
                                     max_results integer DEFAULT 3, expansion_budget integer DEFAULT 2000,
                                     frontier_budget integer DEFAULT 1000, time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    depth_cap integer := greatest(1, least(coalesce(graph_path.max_depth, 4), 6));
    results_cap integer := greatest(1, least(coalesce(graph_path.max_results, 3), 10));
    expand_cap integer := greatest(1, least(coalesce(graph_path.expansion_budget, 2000), 2000));
    frontier_cap integer := greatest(1, least(coalesce(graph_path.frontier_budget, 1000), 1000));
    time_cap integer := greatest(1, least(coalesce(graph_path.time_budget_ms, 1000), 5000));
    started timestamptz := clock_timestamp();
    reason text;
    examined bigint := 0;
    returned bigint := 0;
    level integer := 0;
    frontier jsonb;          -- paths of the current length: [{"r": [...], "n": [...]}]
    next_frontier jsonb;
    ends uuid[];
    visited uuid[];
    reached jsonb := '[]'::jsonb;
    edge record;
    p jsonb;
    tail uuid;
    there uuid;
BEGIN
    PERFORM memory_v1_private.graph_check('graph_path', graph_path.deployment_id, valid_at, believed_at);
    IF graph_path.max_depth > 6 THEN
        reason := 'depth_budget';
    END IF;
    frontier := jsonb_build_array(jsonb_build_object('r', '[]'::jsonb, 'n', jsonb_build_array(from_entity_id)));
    visited := ARRAY[from_entity_id];
    IF from_entity_id = to_entity_id THEN
        reached := frontier;
    END IF;
    <<walk>>
    WHILE jsonb_array_length(reached) = 0 AND level < depth_cap AND jsonb_array_length(frontier) > 0 LOOP
        level := level + 1;
        next_frontier := '[]'::jsonb;
        ends := ARRAY(SELECT DISTINCT (x -> 'n' ->> (jsonb_array_length(x -> 'n') - 1))::uuid
                      FROM jsonb_array_elements(frontier) x);
        FOR edge IN SELECT * FROM memory_v1_private.graph_edges(valid_at, believed_at, predicates, ends) LOOP
            IF examined >= expand_cap THEN
                reason := 'expansion_budget';
                EXIT walk;
            END IF;
            IF clock_timestamp() - started > make_interval(secs => time_cap / 1000.0) THEN
                reason := 'time_budget';
                EXIT walk;
            END IF;
            examined := examined + 1;
            FOR p IN SELECT x FROM jsonb_array_elements(frontier) x LOOP
                tail := (p -> 'n' ->> (jsonb_array_length(p -> 'n') - 1))::uuid;
                CONTINUE WHEN tail <> edge.subject_id AND tail <> edge.object_id;
                there := CASE WHEN tail = edge.subject_id THEN edge.object_id ELSE edge.subject_id END;
                CONTINUE WHEN there = ANY(visited);
                IF jsonb_array_length(next_frontier) >= frontier_cap THEN
                    reason := 'frontier_budget';
                    EXIT walk;
                END IF;
                next_frontier := next_frontier || jsonb_build_array(jsonb_build_object(
                    'r', (p -> 'r') || to_jsonb(edge.relation_id), 'n', (p -> 'n') || to_jsonb(there)));
            END LOOP;
        END LOOP;
        visited := visited || ARRAY(SELECT DISTINCT (x -> 'n' ->> level)::uuid FROM jsonb_array_elements(next_frontier) x);
        reached := coalesce((SELECT jsonb_agg(x ORDER BY (x -> 'r')::text) FROM jsonb_array_elements(next_frontier) x
                             WHERE (x -> 'n' ->> level)::uuid = to_entity_id), '[]'::jsonb);
        frontier := next_frontier;
    END LOOP;
    FOR p IN SELECT x FROM jsonb_array_elements(reached) x LOOP
        IF returned >= results_cap THEN
            reason := coalesce(reason, 'result_budget');
            EXIT;
        END IF;
        returned := returned + 1;
        row_kind := 'path';
        hops := jsonb_array_length(p -> 'r');
        relation_ids := ARRAY(SELECT jsonb_array_elements_text(p -> 'r')::uuid);
        node_ids := ARRAY(SELECT jsonb_array_elements_text(p -> 'n')::uuid);
        RETURN NEXT;
    END LOOP;
    RETURN QUERY SELECT * FROM memory_v1_private.graph_status('graph_path', reason, examined, returned, depth_cap,
        expand_cap, frontier_cap, results_cap, time_cap, valid_at, believed_at);
END
$$;

-- @function graph_citation_path
-- We record no cross-references between documents, so there is never a citation chain: after the
-- argument checks the answer is the status row alone.
CREATE FUNCTION memory_v1.graph_citation_path(deployment_id uuid, from_doc_id uuid, to_doc_id uuid,
                                              max_depth integer DEFAULT 6, max_paths integer DEFAULT 3,
                                              expansion_budget integer DEFAULT 2000, frontier_budget integer DEFAULT 1000,
                                              time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, crossref_ids uuid[], document_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, evaluated_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    PERFORM memory_v1_private.graph_check('graph_citation_path', graph_citation_path.deployment_id, NULL, NULL);
    row_kind := 'status';
    truncated := coalesce(graph_citation_path.max_depth, 6) > 6;
    truncation_reason := CASE WHEN truncated THEN 'depth_budget' END;
    examined_edges := 0;
    returned_paths := 0;
    effective_depth := greatest(1, least(coalesce(graph_citation_path.max_depth, 6), 6));
    effective_expansion_budget := greatest(1, least(coalesce(graph_citation_path.expansion_budget, 2000), 2000));
    effective_frontier_budget := greatest(1, least(coalesce(graph_citation_path.frontier_budget, 1000), 1000));
    effective_result_budget := greatest(1, least(coalesce(graph_citation_path.max_paths, 3), 10));
    effective_time_budget_ms := greatest(1, least(coalesce(graph_citation_path.time_budget_ms, 1000), 5000));
    evaluated_at := memory_v1_private.evaluated_at();
    PERFORM memory_v1_private.record_graph_invocation('graph_citation_path',
        jsonb_build_object('truncated', truncated, 'truncation_reason', truncation_reason, 'examined_edges', examined_edges,
        'returned_paths', returned_paths, 'effective_depth', effective_depth, 'effective_expansion_budget', effective_expansion_budget,
        'effective_frontier_budget', effective_frontier_budget, 'effective_result_budget', effective_result_budget,
        'effective_time_budget_ms', effective_time_budget_ms, 'applied_valid_at', NULL, 'applied_believed_at', NULL, 'evaluated_at', evaluated_at));
    -- The runner reads the status from corpusmem.graph_invocations and asks for no status row:
    -- a statement that does not select row_kind could not tell it from a path.
    IF current_setting('corpusmem.graph_status_rows', true) IS DISTINCT FROM 'omit' THEN
        RETURN NEXT;
    END IF;
END
$$;

-- @comments
-- Generated from sql/memory_v1_space.json by `python -m sql.query_manifest comments`.
COMMENT ON VIEW memory_v1.changes_visible IS 'One row per externally visible change event, keyed by the synthetic pair (deployment_id, object_kind, event_id): every union arm names its own transition in object_kind and supplies an identifier from its own source table, so the underlying identifier spaces cannot collide. Each arm reads an already invariant-bearing relation or joins one, so a change event appears only while its object is still visible. THERE IS DELIBERATELY NO DELETION ARM: forgetting a lineage, tombstoning a version, or retiring a page removes the affected events instead of announcing the removal, and labels are drawn only from visible objects, so neither the event set nor the label text can become a side channel for what was forgotten. The occurrence clock is transaction time and never world validity, the feed is uncapped at the relation level so a caller bounds it with an ordinary predicate, and the view carries no counts and asserts no facts.';
COMMENT ON COLUMN memory_v1.changes_visible.deployment_id IS 'The deployment that owns the change event.';
COMMENT ON COLUMN memory_v1.changes_visible.object_kind IS 'Which kind of change event this is, naming both the changed object and the transition. Values: `relation_ingest`, `relation_invalidation`, `relation_supersession`, `observation_ingest`, `observation_invalidation`, `observation_supersession`, `claim_ingest`, `knowledge_page_compilation`.';
COMMENT ON COLUMN memory_v1.changes_visible.event_id IS 'Identity of the event within its own source, unique together with object_kind.';
COMMENT ON COLUMN memory_v1.changes_visible.object_id IS 'The object that changed, joinable to the relation named by object_kind.';
COMMENT ON COLUMN memory_v1.changes_visible.occurred_at IS 'When the change occurred, which is a transaction-time instant and never world validity.';
COMMENT ON COLUMN memory_v1.changes_visible.label IS 'Short human-readable label for the changed object, drawn only from objects that are themselves visible.';
COMMENT ON VIEW memory_v1.chunks_live IS 'One row per chunk coordinate in the current ready representation of a live lineage, keyed by (deployment_id, chunk_id) and joined to documents_live on (deployment_id, doc_id) and to sections_live on (deployment_id, section_id). This relation is metadata only and deliberately carries no authoritative body column: chunk text is returned solely by the confirmed body-fetch path, which re-verifies the coordinate and the content and embedding hashes before any bytes leave the system. Chunks of superseded versions, non-ready readings, and forgotten lineages are absent, and a section_id is exposed only when that section belongs to the representation''s current structure generation. The location header is generated orientation text, never evidence; the view carries no counts and no validity clocks.';
COMMENT ON COLUMN memory_v1.chunks_live.deployment_id IS 'The deployment that owns the chunk.';
COMMENT ON COLUMN memory_v1.chunks_live.chunk_id IS 'Stable identity of this retrieval unit within the current reading.';
COMMENT ON COLUMN memory_v1.chunks_live.doc_id IS 'The live lineage the chunk belongs to.';
COMMENT ON COLUMN memory_v1.chunks_live.version_id IS 'The lineage''s current version the chunk was cut from.';
COMMENT ON COLUMN memory_v1.chunks_live.representation_id IS 'The current ready reading whose block grid and offsets the chunk uses.';
COMMENT ON COLUMN memory_v1.chunks_live.section_id IS 'The section containing the chunk, null when the chunk has no section in the current structure generation.';
COMMENT ON COLUMN memory_v1.chunks_live.ordinal IS 'Position of the chunk within the document.';
COMMENT ON COLUMN memory_v1.chunks_live.block_start IS 'First block ordinal packed into the chunk.';
COMMENT ON COLUMN memory_v1.chunks_live.block_end IS 'Last block ordinal packed into the chunk, inclusive.';
COMMENT ON COLUMN memory_v1.chunks_live.char_start IS 'Start character offset of the chunk within this representation''s markdown.';
COMMENT ON COLUMN memory_v1.chunks_live.char_end IS 'End character offset of the chunk within this representation''s markdown.';
COMMENT ON COLUMN memory_v1.chunks_live.token_count IS 'Token length of the chunk, null when it was never measured.';
COMMENT ON COLUMN memory_v1.chunks_live.chunk_content_hash IS 'Hash of the chunk''s ordered block hashes, which is its content identity.';
COMMENT ON COLUMN memory_v1.chunks_live.extraction_input_hash IS 'Hash of the stable extraction inputs, which is the reuse key that avoids re-extracting unchanged content.';
COMMENT ON COLUMN memory_v1.chunks_live.embedding_text_hash IS 'Hash of the exact text that was embedded under the D80 policy, null when the chunk has not been embedded.';
COMMENT ON COLUMN memory_v1.chunks_live.location_facts IS 'The deterministic D80 location facts as structured data, null when no policy generation has stamped the chunk.';
COMMENT ON COLUMN memory_v1.chunks_live.location_header IS 'The deterministic D80 location header prepended to the embedded text; it is generated orientation text and is never asserted evidence.';
COMMENT ON COLUMN memory_v1.chunks_live.embedding_input_policy_version IS 'The D80 embedding-input policy in force for this chunk, null when unstamped.';
COMMENT ON COLUMN memory_v1.chunks_live.policy_generation IS 'The generation label of that policy application, null when unstamped.';
COMMENT ON COLUMN memory_v1.chunks_live.embedder_generation IS 'The embedder generation that produced the chunk vector, null when the chunk has not been embedded.';
COMMENT ON COLUMN memory_v1.chunks_live.chunker_version IS 'The chunker configuration that produced this cut, null on rows written before the stamp existed.';
COMMENT ON COLUMN memory_v1.chunks_live.prefixer_version IS 'The context-prefixer generation for this chunk, null when no prefix was generated.';
COMMENT ON COLUMN memory_v1.chunks_live.created_at IS 'When the chunk row was written, which is a processing instant rather than a world-time clock.';
COMMENT ON VIEW memory_v1.claim_occurrences_live IS 'One row per current claim occurrence, keyed by (deployment_id, claim_id, chunk_id, derivation_kind) with null derivation kinds treated as equal, and joined to claims_visible_history on (deployment_id, claim_id) and to chunks_live on (deployment_id, chunk_id). It is the explicit association answering which current chunk, version, representation, and section carry a claim, and evidence_spans is the complete body support for that occurrence. Repeated attachments collapse to the earliest, so attached_at is the first time the occurrence was recorded. Occurrences in superseded versions, non-ready readings, and forgotten lineages are absent. Claim char_start/char_end remain the immutable origin; they are not the complete evidence list. The view carries no counts and no validity clocks.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.deployment_id IS 'The deployment that owns the occurrence.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.claim_id IS 'The claim carried by this chunk occurrence.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.chunk_id IS 'The current-content chunk that carries the claim.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.derivation_kind IS 'How this occurrence was derived from the source, such as passthrough, asr, or ocr; null when the reading recorded no label.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.doc_id IS 'The live lineage carrying the occurrence.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.version_id IS 'The lineage''s current version carrying the occurrence.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.representation_id IS 'The current ready reading carrying the occurrence.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.section_id IS 'The section containing the carrying chunk, null when the chunk has no section in the current structure generation.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.evidence_mode IS 'How mediated this occurrence is, such as source_expression or model_observation; null when the reading recorded no mode.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.source_locators IS 'The resolved source locator set for this occurrence, null when the reading resolved none.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.attached_at IS 'When this occurrence was first recorded, which is a processing instant rather than a world-time clock.';
COMMENT ON COLUMN memory_v1.claim_occurrences_live.evidence_spans IS 'The complete ordered list of supporting body ranges for this occurrence, origin first, as {char_start, char_end} objects in the carrying representation.';
COMMENT ON VIEW memory_v1.claims_canonical IS 'One row per historically visible claim with surviving lineage, keyed by (deployment_id, claim_id), carrying the stored inclusive D41 window beside the half-open canonical bounds that every overlap predicate must use (D107 §5). canon_start is inclusive and canon_end exclusive; both are null when precision is unknown, and canon_end is also null for an open window. Overlap is a.start < b.end AND b.start < a.end with a null end as unbounded. This relation is IMMUTABLE SOURCE TESTIMONY: it never answers what currently holds. Claims of forgotten lineages and tombstoned versions are absent.';
COMMENT ON COLUMN memory_v1.claims_canonical.deployment_id IS 'The deployment that owns the claim.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_id IS 'Stable identity of this immutable claim.';
COMMENT ON COLUMN memory_v1.claims_canonical.doc_id IS 'The live lineage that asserted the claim.';
COMMENT ON COLUMN memory_v1.claims_canonical.version_id IS 'The non-tombstoned version the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_canonical.representation_id IS 'The reading whose character offsets the claim''s anchors use.';
COMMENT ON COLUMN memory_v1.claims_canonical.chunk_id IS 'The chunk the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_text IS 'The standalone assertion as extracted, which is source testimony rather than adjudicated truth.';
COMMENT ON COLUMN memory_v1.claims_canonical.source_span IS 'The verbatim slice of the source the claim derives from.';
COMMENT ON COLUMN memory_v1.claims_canonical.char_start IS 'Start character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_canonical.char_end IS 'End character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_canonical.added_context IS 'The substrings decontextualization added, each with the bundle source it came from.';
COMMENT ON COLUMN memory_v1.claims_canonical.temporal_class IS 'How the claim behaves over time, either static, dynamic, or atemporal; null when unclassified. Values: `static`, `dynamic`, `atemporal`.';
COMMENT ON COLUMN memory_v1.claims_canonical.is_attributed IS 'True when the claim preserves an attribution, so it entails that someone said it rather than that it holds.';
COMMENT ON COLUMN memory_v1.claims_canonical.audit_status IS 'Result of the sampled independent grounding audit, defaulting to unaudited. Values: `unaudited`, `sampled_pass`, `sampled_fail`, `escalated`.';
COMMENT ON COLUMN memory_v1.claims_canonical.kept_flagged IS 'True when selection kept the claim but marked it for review.';
COMMENT ON COLUMN memory_v1.claims_canonical.extractor_version IS 'The extractor generation that produced the claim, which is part of the D54 extraction basis.';
COMMENT ON COLUMN memory_v1.claims_canonical.asserted_at IS 'Assertion-event time: when the source asserted this, null when the source carries no date.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_valid_from IS 'Immutable inclusive start of the world-time interval the SOURCE asserted, null for unbounded-before or unknown.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_valid_until IS 'Immutable inclusive end of that interval, null for open-per-source or unknown as disambiguated by claim_valid_precision.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_valid_precision IS 'Granularity of the asserted interval, from unknown through instant, day, month, quarter, and year to open. Values: `unknown`, `instant`, `day`, `month`, `quarter`, `year`, `open`.';
COMMENT ON COLUMN memory_v1.claims_canonical.claim_valid_kind IS 'Which world-interval was asserted, such as event_time or measurement_period; null when unclassified. Values: `proposition_validity`, `event_time`, `measurement_period`, `effective_period`.';
COMMENT ON COLUMN memory_v1.claims_canonical.ingested_at IS 'Transaction-time: when this deployment extracted the claim.';
COMMENT ON COLUMN memory_v1.claims_canonical.source_kind IS 'The connector family of the asserting lineage.';
COMMENT ON COLUMN memory_v1.claims_canonical.source_handle IS 'Stable human-usable handle for the asserting lineage, formed from its connector-native identity.';
COMMENT ON COLUMN memory_v1.claims_canonical.is_current_testimony IS 'True while this claim is the current transcription of its chunk under D54; false once a newer extraction generation or a living-mode version move superseded it.';
COMMENT ON COLUMN memory_v1.claims_canonical.canon_start IS 'Inclusive start of the half-open canonical window (D107 §5); null when precision is unknown.';
COMMENT ON COLUMN memory_v1.claims_canonical.canon_end IS 'Exclusive end of the half-open canonical window; null when the window is open or unknown.';
COMMENT ON VIEW memory_v1.claims_live IS 'One row per current-testimony claim, keyed by (deployment_id, claim_id): the subset of claims_visible_history whose D54 currency flag is still set. Like every claim relation this is IMMUTABLE SOURCE TESTIMONY, and "live" here means current transcription of a live source, never current truth: a claim in this relation can be contradicted by the adjudicated worldview, and querying its validity window to answer what holds now is the wrong query — start from facts_current and follow fact_claim_evidence_live back to here. The stored claim_valid_* window is inclusive D41 storage; world-time overlap belongs on claims_canonical. Claims of forgotten lineages and tombstoned versions are absent, and this relation is the sole claim input to the D54 counting path. The view carries no counts.';
COMMENT ON COLUMN memory_v1.claims_live.deployment_id IS 'The deployment that owns the claim.';
COMMENT ON COLUMN memory_v1.claims_live.claim_id IS 'Stable identity of this immutable claim.';
COMMENT ON COLUMN memory_v1.claims_live.doc_id IS 'The live lineage that asserted the claim.';
COMMENT ON COLUMN memory_v1.claims_live.version_id IS 'The non-tombstoned version the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_live.representation_id IS 'The reading whose character offsets the claim''s anchors use.';
COMMENT ON COLUMN memory_v1.claims_live.chunk_id IS 'The chunk the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_live.claim_text IS 'The standalone assertion as extracted, which is source testimony rather than adjudicated truth.';
COMMENT ON COLUMN memory_v1.claims_live.source_span IS 'The verbatim slice of the source the claim derives from.';
COMMENT ON COLUMN memory_v1.claims_live.char_start IS 'Start character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_live.char_end IS 'End character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_live.added_context IS 'The substrings decontextualization added, each with the bundle source it came from.';
COMMENT ON COLUMN memory_v1.claims_live.temporal_class IS 'How the claim behaves over time, either static, dynamic, or atemporal; null when unclassified. Values: `static`, `dynamic`, `atemporal`.';
COMMENT ON COLUMN memory_v1.claims_live.is_attributed IS 'True when the claim preserves an attribution, so it entails that someone said it rather than that it holds.';
COMMENT ON COLUMN memory_v1.claims_live.audit_status IS 'Result of the sampled independent grounding audit, defaulting to unaudited. Values: `unaudited`, `sampled_pass`, `sampled_fail`, `escalated`.';
COMMENT ON COLUMN memory_v1.claims_live.kept_flagged IS 'True when selection kept the claim but marked it for review.';
COMMENT ON COLUMN memory_v1.claims_live.extractor_version IS 'The extractor generation that produced the claim, which is part of the D54 extraction basis.';
COMMENT ON COLUMN memory_v1.claims_live.asserted_at IS 'Assertion-event time: when the source asserted this, null when the source carries no date.';
COMMENT ON COLUMN memory_v1.claims_live.claim_valid_from IS 'Immutable start of the world-time interval the SOURCE asserted, null for unbounded-before or unknown.';
COMMENT ON COLUMN memory_v1.claims_live.claim_valid_until IS 'Immutable end of that interval, null for open-per-source or unknown as disambiguated by claim_valid_precision.';
COMMENT ON COLUMN memory_v1.claims_live.claim_valid_precision IS 'Granularity of the asserted interval, from unknown through instant, day, month, quarter, and year to open. Values: `unknown`, `instant`, `day`, `month`, `quarter`, `year`, `open`.';
COMMENT ON COLUMN memory_v1.claims_live.claim_valid_kind IS 'Which world-interval was asserted, such as event_time or measurement_period; null when unclassified. Values: `proposition_validity`, `event_time`, `measurement_period`, `effective_period`.';
COMMENT ON COLUMN memory_v1.claims_live.ingested_at IS 'Transaction-time: when this deployment extracted the claim.';
COMMENT ON COLUMN memory_v1.claims_live.source_kind IS 'The connector family of the asserting lineage.';
COMMENT ON COLUMN memory_v1.claims_live.source_handle IS 'Stable human-usable handle for the asserting lineage, formed from its connector-native identity.';
COMMENT ON VIEW memory_v1.claims_visible_history IS 'One row per claim whose source lineage is live and whose source version is not tombstoned, keyed by (deployment_id, claim_id) and joined to documents_live on (deployment_id, doc_id) and to document_versions_visible on (deployment_id, version_id). This relation is IMMUTABLE SOURCE TESTIMONY and never answers what currently holds: claim_valid_from and claim_valid_until are the inclusive stored D41 window (an instant has equal endpoints). World-time overlap MUST use claims_canonical.canon_start / canon_end, which are the half-open canonical bounds; filtering these raw columns as a current-truth or overlap predicate is the wrong query — use facts_current for what holds now, and claims_canonical for as-of testimony. A null claim_valid_from means unbounded-before or unknown and a null claim_valid_until means open-per-source or unknown, disambiguated by claim_valid_precision. Claims of forgotten lineages and tombstoned versions are absent; is_current_testimony is D54 bookkeeping and never validity. The view carries no counts.';
COMMENT ON COLUMN memory_v1.claims_visible_history.deployment_id IS 'The deployment that owns the claim.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_id IS 'Stable identity of this immutable claim.';
COMMENT ON COLUMN memory_v1.claims_visible_history.doc_id IS 'The live lineage that asserted the claim.';
COMMENT ON COLUMN memory_v1.claims_visible_history.version_id IS 'The non-tombstoned version the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_visible_history.representation_id IS 'The reading whose character offsets the claim''s anchors use.';
COMMENT ON COLUMN memory_v1.claims_visible_history.chunk_id IS 'The chunk the claim was extracted from.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_text IS 'The standalone assertion as extracted, which is source testimony rather than adjudicated truth.';
COMMENT ON COLUMN memory_v1.claims_visible_history.source_span IS 'The verbatim slice of the source the claim derives from.';
COMMENT ON COLUMN memory_v1.claims_visible_history.char_start IS 'Start character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_visible_history.char_end IS 'End character offset of source_span within the named representation''s markdown.';
COMMENT ON COLUMN memory_v1.claims_visible_history.added_context IS 'The substrings decontextualization added, each with the bundle source it came from.';
COMMENT ON COLUMN memory_v1.claims_visible_history.temporal_class IS 'How the claim behaves over time, either static, dynamic, or atemporal; null when unclassified. Values: `static`, `dynamic`, `atemporal`.';
COMMENT ON COLUMN memory_v1.claims_visible_history.is_attributed IS 'True when the claim preserves an attribution, so it entails that someone said it rather than that it holds.';
COMMENT ON COLUMN memory_v1.claims_visible_history.audit_status IS 'Result of the sampled independent grounding audit, defaulting to unaudited. Values: `unaudited`, `sampled_pass`, `sampled_fail`, `escalated`.';
COMMENT ON COLUMN memory_v1.claims_visible_history.kept_flagged IS 'True when selection kept the claim but marked it for review.';
COMMENT ON COLUMN memory_v1.claims_visible_history.extractor_version IS 'The extractor generation that produced the claim, which is part of the D54 extraction basis.';
COMMENT ON COLUMN memory_v1.claims_visible_history.asserted_at IS 'Assertion-event time: when the source asserted this, null when the source carries no date.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_valid_from IS 'Immutable start of the world-time interval the SOURCE asserted, null for unbounded-before or unknown.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_valid_until IS 'Immutable end of that interval, null for open-per-source or unknown as disambiguated by claim_valid_precision.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_valid_precision IS 'Granularity of the asserted interval, from unknown through instant, day, month, quarter, and year to open. Values: `unknown`, `instant`, `day`, `month`, `quarter`, `year`, `open`.';
COMMENT ON COLUMN memory_v1.claims_visible_history.claim_valid_kind IS 'Which world-interval was asserted, such as event_time or measurement_period; null when unclassified. Values: `proposition_validity`, `event_time`, `measurement_period`, `effective_period`.';
COMMENT ON COLUMN memory_v1.claims_visible_history.ingested_at IS 'Transaction-time: when this deployment extracted the claim.';
COMMENT ON COLUMN memory_v1.claims_visible_history.source_kind IS 'The connector family of the asserting lineage.';
COMMENT ON COLUMN memory_v1.claims_visible_history.source_handle IS 'Stable human-usable handle for the asserting lineage, formed from its connector-native identity.';
COMMENT ON COLUMN memory_v1.claims_visible_history.is_current_testimony IS 'True while this claim is the current transcription of its chunk under D54; false once a newer extraction generation or a living-mode version move superseded it.';
COMMENT ON VIEW memory_v1.contradiction_members_current IS 'One row per current member of a contradiction group, keyed by (deployment_id, contradiction_group, fact_kind, fact_id) and joined to facts_current on (deployment_id, fact_kind, fact_id). A contradiction group is the system declining to silently pick a winner, so both sides stand and are visible here with their own clocks, counts, and support state. Membership, clocks, and the shared evaluation instant are inherited unchanged from facts_current, including the half-open world-time interval and the surviving-provenance requirement. Because arbitrary SQL can still filter this relation down to one side, a result built from it carries no platform guarantee that co-members are complete: that guarantee belongs to the assured operations. The counts are exact counts of distinct current-testimony lineages, and support state is derived at read time.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.deployment_id IS 'The deployment that owns the fact.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.contradiction_group IS 'The shared identifier binding the members of one unadjudicated contradiction.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.fact_kind IS 'Which fact layer this member belongs to, either relation or observation. Values: `relation`, `observation`.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.fact_id IS 'Stable identity of the member fact.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.fact_label IS 'Human-readable sentence for the member, null when no label has been generated.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.valid_from IS 'World-time start of the member, null for unknown or always.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.valid_until IS 'World-time end of the member, null while the member is open.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.ingested_at IS 'Transaction-time start: when the system first believed the member.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.evidence_count IS 'Exact count of distinct current-testimony lineages supporting the member.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.contradict_count IS 'Exact count of distinct current-testimony lineages contradicting the member.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.support_state IS 'Exactly current or withdrawn, derived at read time from the open review queue. Values: `current`, `withdrawn`.';
COMMENT ON COLUMN memory_v1.contradiction_members_current.evaluated_at IS 'The single statement instant at which both clocks were applied, shared with every other current relation in the statement.';
COMMENT ON VIEW memory_v1.document_crossrefs_live IS 'One row per resolved cross-reference whose BOTH endpoint lineages are live, keyed by (deployment_id, crossref_id) and joined to documents_live on (deployment_id, from_doc_id) and (deployment_id, to_doc_id). An unresolved reference, a reference whose target was never ingested, or one whose source or target lineage has been forgotten is absent rather than half-resolved, so this relation never reveals that a document once existed. The raw citation text is deliberately not exposed, because it is retained even after a target is forgotten; the bounded context is truncated to 500 characters. The creation clock is a processing instant, and the view carries no counts and asserts no facts.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.deployment_id IS 'The deployment that owns both endpoint lineages.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.crossref_id IS 'Stable identity of this cross-reference.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.from_doc_id IS 'The live lineage that makes the reference.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.to_doc_id IS 'The live lineage that is referenced.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.kind IS 'What kind of reference this is, one of cites, links_to, attaches, or replies_to. Values: `cites`, `links_to`, `attaches`, `replies_to`.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.context IS 'Bounded surrounding context of the reference, truncated to 500 characters and null when none was captured.';
COMMENT ON COLUMN memory_v1.document_crossrefs_live.created_at IS 'When the reference was extracted, which is a processing instant.';
COMMENT ON VIEW memory_v1.document_versions_visible IS 'One row per non-tombstoned version of a live document lineage, keyed by (deployment_id, version_id) and joined to documents_live on (deployment_id, doc_id). A tombstoned version and every version of a forgotten lineage are absent, which is why the whole schema authorizes version-derived rows through this relation rather than through document_versions directly. This is version history, not fact history: is_current_version says which snapshot the lineage currently points at, and no column here asserts what the system currently believes to be true. The view carries no counts.';
COMMENT ON COLUMN memory_v1.document_versions_visible.deployment_id IS 'The deployment that owns the version.';
COMMENT ON COLUMN memory_v1.document_versions_visible.version_id IS 'Stable identity of this observed snapshot of the lineage.';
COMMENT ON COLUMN memory_v1.document_versions_visible.doc_id IS 'The lineage this version belongs to, joinable to documents_live.';
COMMENT ON COLUMN memory_v1.document_versions_visible.version_no IS 'One-based ordinal of the version within its lineage.';
COMMENT ON COLUMN memory_v1.document_versions_visible.content_hash IS 'Hash of the immutable bytes this version observed, shared by lineages carrying identical content.';
COMMENT ON COLUMN memory_v1.document_versions_visible.source_version_ref IS 'The connector revision or etag for this snapshot, null when the source has none.';
COMMENT ON COLUMN memory_v1.document_versions_visible.status IS 'Processing status of the version, such as ready or failed. Values: `ingesting`, `converting`, `structuring`, `ready`, `failed`, `deleted`.';
COMMENT ON COLUMN memory_v1.document_versions_visible.current_representation_id IS 'The reading of this version that is currently live, null while no reading has completed.';
COMMENT ON COLUMN memory_v1.document_versions_visible.ingested_at IS 'Transaction-time origin: when this deployment ingested the snapshot.';
COMMENT ON COLUMN memory_v1.document_versions_visible.source_modified_at IS 'When the source says this snapshot was authored, null when the source gives no date.';
COMMENT ON COLUMN memory_v1.document_versions_visible.published_at IS 'The document''s own publication date for this snapshot, null when unknown.';
COMMENT ON COLUMN memory_v1.document_versions_visible.language IS 'Detected primary language of this snapshot, null when undetected.';
COMMENT ON COLUMN memory_v1.document_versions_visible.superseded_at IS 'When a newer version became current, null while this version is still the lineage''s current one.';
COMMENT ON COLUMN memory_v1.document_versions_visible.is_current_version IS 'True only for the lineage''s current snapshot.';
COMMENT ON VIEW memory_v1.documents_live IS 'One row per live document lineage, keyed by (deployment_id, doc_id). A tombstoned lineage is absent, and the current version and representation coordinates are produced only from a non-tombstoned version and a ready representation, so no column can name deleted state. The two optional joins project coordinates of an already authorized lineage and admit no row of their own. This is a live-content relation, not a fact or evidence relation: title and source metadata are orientation, never asserted evidence, and the view carries no counts and no clock semantics beyond the observation instants it names.';
COMMENT ON COLUMN memory_v1.documents_live.deployment_id IS 'The deployment that owns this document lineage; every join to another memory_v1 relation carries it.';
COMMENT ON COLUMN memory_v1.documents_live.doc_id IS 'Stable lineage identity, unique within the deployment and never reused.';
COMMENT ON COLUMN memory_v1.documents_live.source_kind IS 'The connector family that produced the lineage, such as google_drive or upload.';
COMMENT ON COLUMN memory_v1.documents_live.source_ref IS 'The connector-native stable identifier, null for one-shot sources that have none.';
COMMENT ON COLUMN memory_v1.documents_live.source_uri IS 'The original location of the source, null when the source has no addressable location.';
COMMENT ON COLUMN memory_v1.documents_live.title IS 'Best-effort human title of the lineage, which is orientation text rather than asserted evidence.';
COMMENT ON COLUMN memory_v1.documents_live.versioning_mode IS 'The D55 currency mode of the lineage, either snapshot or living. Values: `snapshot`, `living`.';
COMMENT ON COLUMN memory_v1.documents_live.origin IS 'The D42 provenance stamp, either external or system_generated. Values: `external`, `system_generated`.';
COMMENT ON COLUMN memory_v1.documents_live.first_seen_at IS 'The instant this deployment first observed the lineage.';
COMMENT ON COLUMN memory_v1.documents_live.last_observed_at IS 'The instant the connector last observed the lineage, null when it has never been re-observed.';
COMMENT ON COLUMN memory_v1.documents_live.current_version_id IS 'The lineage''s current snapshot, null when no non-tombstoned current version exists.';
COMMENT ON COLUMN memory_v1.documents_live.current_version_no IS 'The one-based ordinal of the current version within the lineage, null when there is no visible current version.';
COMMENT ON COLUMN memory_v1.documents_live.current_version_status IS 'Processing status of the current version, null when there is no visible current version. Values: `ingesting`, `converting`, `structuring`, `ready`, `failed`, `deleted`.';
COMMENT ON COLUMN memory_v1.documents_live.current_representation_id IS 'The current ready reading of the current version, null when no ready representation exists.';
COMMENT ON COLUMN memory_v1.documents_live.has_current_ready_content IS 'True only when the lineage has a ready current version and a ready current representation, which is the precondition every current-content relation joins on.';
COMMENT ON COLUMN memory_v1.documents_live.source_modified_at IS 'When the source says the current snapshot was authored, which dates derived testimony.';
COMMENT ON COLUMN memory_v1.documents_live.published_at IS 'The document''s own publication date on the current version, null when unknown.';
COMMENT ON COLUMN memory_v1.documents_live.language IS 'Detected primary language of the current version, null when undetected.';
COMMENT ON VIEW memory_v1.entities_current IS 'One row per externally visible survivor entity, keyed by (deployment_id, entity_id). Membership requires SURVIVING PROVENANCE, which is an explicit association to at least one live document lineage: a mention of this survivor in any non-tombstoned version of a live lineage, or a live document-entity bridge. An entity whose every source has been forgotten is therefore absent rather than orphaned, and merged entities are absent because a merge redirects to a survivor instead of rewriting history. MEMBERSHIP AND THE COUNTS ANSWER DIFFERENT QUESTIONS, and the difference is deliberate: the two counts are exact over CURRENT content only — they equal this entity''s rows in mentions_live and entity_document_mentions — so an entity whose only mention sits in a superseded version of a live lineage is published here with both counts at zero and has no row in entity_document_mentions at all. A zero count is not an absence of provenance. graph_degree is a deprecated compatibility scalar fixed at zero after D98 because current adjacency is computed from live PostgreSQL relations; profile_summary is orientation text, never evidence; and the clocks are registry maintenance instants that carry no world-validity meaning. After D96, entity_type and type_confidence are vacated (always NULL); identity is the entity_id.';
COMMENT ON COLUMN memory_v1.entities_current.deployment_id IS 'The deployment that owns the entity.';
COMMENT ON COLUMN memory_v1.entities_current.entity_id IS 'Stable survivor identity, which is never reused and never rewritten by a merge.';
COMMENT ON COLUMN memory_v1.entities_current.entity_type IS 'Vacated after D96: this compatibility output position always returns NULL because identity is the entity_id and no entity class is stored; use observation or profile fact text for kind-like retrieval.';
COMMENT ON COLUMN memory_v1.entities_current.canonical_name IS 'Preferred display name of the entity.';
COMMENT ON COLUMN memory_v1.entities_current.normalized_name IS 'Accent-folded lower-case form of the canonical name, used for matching.';
COMMENT ON COLUMN memory_v1.entities_current.type_confidence IS 'Vacated after D96: this compatibility output position always returns NULL because the removed entity-class vote has no confidence value; identity decisions are recorded by resolution tier and confidence instead.';
COMMENT ON COLUMN memory_v1.entities_current.profile_summary IS 'Registry-maintained blurb about the entity; it is labeled orientation text and is never asserted evidence.';
COMMENT ON COLUMN memory_v1.entities_current.live_mention_count IS 'Exact count of the mentions of this entity in the CURRENT content of live lineages, which is zero when every mention of it survives only in a superseded version.';
COMMENT ON COLUMN memory_v1.entities_current.live_document_count IS 'Exact count of the live document lineages whose CURRENT content mentions this entity, which is zero for the same reason.';
COMMENT ON COLUMN memory_v1.entities_current.graph_degree IS 'Deprecated compatibility scalar fixed at zero after D98; consumers compute live relation degree from PostgreSQL adjacency.';
COMMENT ON COLUMN memory_v1.entities_current.created_at IS 'When the entity was minted.';
COMMENT ON COLUMN memory_v1.entities_current.updated_at IS 'When the entity registry row was last maintained.';
COMMENT ON VIEW memory_v1.entity_aliases_current IS 'One row per current alias-to-survivor mapping, keyed by (deployment_id, alias_id) and joined to entities_current on (deployment_id, entity_id). Merge redirects are resolved, so an alias recorded against a since-merged entity now names the survivor while source_entity_id preserves where it was recorded. An alias whose survivor has no surviving provenance is absent, because membership is inherited from entities_current. The clocks are observation instants rather than validity, and the view carries no counts.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.deployment_id IS 'The deployment that owns the alias.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.alias_id IS 'Stable identity of this alias row.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.source_entity_id IS 'The entity the alias was originally recorded against, which may since have been merged away.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.entity_id IS 'The survivor entity the alias currently names, joinable to entities_current.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.alias_text IS 'The surface form as observed or as canonicalized.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.normalized_lemma IS 'Accent-folded lower-case match key for the alias.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.provenance IS 'Where the alias came from, either source when observed in a document or llm_canonical when emitted by the extractor. Values: `source`, `llm_canonical`.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.confidence IS 'Confidence that this surface really names the entity, null when never scored.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.first_seen IS 'When the alias was first recorded.';
COMMENT ON COLUMN memory_v1.entity_aliases_current.last_seen IS 'When the alias was last observed.';
COMMENT ON VIEW memory_v1.entity_document_mentions IS 'One row per survivor entity and live document lineage, keyed by (deployment_id, entity_id, doc_id) and joined to entities_current on (deployment_id, entity_id) and documents_live on (deployment_id, doc_id). The mention count is EXACT rather than sampled or capped, and it counts exactly the mentions this deployment can still show: one for every row of mentions_live in this lineage whose resolution names this survivor, and nothing else. Mentions of forgotten lineages, mentions of superseded versions and non-current readings, mentions with no chunk coordinate, mentions whose own lineage disagrees with their chunk''s, and mentions whose resolution has been superseded are therefore counted nowhere — a mention of superseded content is not live content and is not counted. Merge redirects are resolved before counting, so a merged entity contributes to its survivor and never appears on its own. The clocks are mention-recording instants, not world-validity, and this relation carries no evidence and no fact semantics.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.deployment_id IS 'The deployment that owns both the entity and the document.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.entity_id IS 'The survivor entity, with merge redirects already resolved.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.doc_id IS 'The live lineage the entity is mentioned in.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.mention_count IS 'Exact count of the mentions of this survivor in this lineage''s current content.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.first_mentioned_at IS 'When the earliest counted mention was recorded.';
COMMENT ON COLUMN memory_v1.entity_document_mentions.last_mentioned_at IS 'When the latest counted mention was recorded.';
COMMENT ON VIEW memory_v1.evidence_lineage IS 'One row per fact, current-testimony document lineage, and stance, keyed by (deployment_id, fact_kind, fact_id, doc_id, stance) and joined to the fact relations on (deployment_id, fact_kind, fact_id) and to documents_live on (deployment_id, doc_id). THIS RELATION IS THE SOLE PUBLIC INPUT FOR D54 EVIDENCE COUNTS: an evidence count is the number of rows here for a fact and stance, which is exactly the number of distinct current-testimony source lineages, so repeating an assertion inside one document and re-extracting the same document both leave every count unchanged while a genuinely independent second source moves it by one. claim_count is descriptive colour about how loudly one lineage says it and must never be summed into an evidence count. Evidence from forgotten lineages and from superseded testimony is absent. The assertion range is source-asserted event time, not fact validity.';
COMMENT ON COLUMN memory_v1.evidence_lineage.deployment_id IS 'The deployment that owns the evidence.';
COMMENT ON COLUMN memory_v1.evidence_lineage.fact_kind IS 'Which fact layer the evidence points at, either relation or observation. Values: `relation`, `observation`.';
COMMENT ON COLUMN memory_v1.evidence_lineage.fact_id IS 'The adjudicated fact this lineage supports or contradicts.';
COMMENT ON COLUMN memory_v1.evidence_lineage.doc_id IS 'The live document lineage that is the counted unit of corroboration.';
COMMENT ON COLUMN memory_v1.evidence_lineage.stance IS 'Exactly supports or contradicts. Values: `supports`, `contradicts`.';
COMMENT ON COLUMN memory_v1.evidence_lineage.source_kind IS 'The connector family of the lineage.';
COMMENT ON COLUMN memory_v1.evidence_lineage.source_handle IS 'Stable human-usable handle for the lineage, formed from its connector-native identity.';
COMMENT ON COLUMN memory_v1.evidence_lineage.claim_count IS 'How many current-testimony claims in this lineage take this stance, which is DESCRIPTIVE ONLY and is never an evidence count.';
COMMENT ON COLUMN memory_v1.evidence_lineage.representative_claim_id IS 'The most recently asserted claim of this lineage and stance, chosen deterministically as a readable exemplar.';
COMMENT ON COLUMN memory_v1.evidence_lineage.asserted_from IS 'Earliest assertion instant among those claims, null when none of them carries a date.';
COMMENT ON COLUMN memory_v1.evidence_lineage.asserted_to IS 'Latest assertion instant among those claims, null when none of them carries a date.';
COMMENT ON VIEW memory_v1.fact_claim_evidence_live IS 'One row per current claim-to-fact association, keyed by (deployment_id, fact_kind, fact_id, claim_id, stance) and joined to facts_current or facts_visible_history on (deployment_id, fact_kind, fact_id) and to claims_live on (deployment_id, claim_id). This is the AUDITABLE BRIDGE between the two truth layers: it records which immutable testimony supports or contradicts an adjudicated fact, and stance is exactly supports or contradicts. Only current testimony from live lineages appears, and an association whose denormalized lineage disagrees with its claim''s lineage is treated as mismatched state and dropped rather than exposed. The claim-validity columns are the SOURCE''s asserted interval, inclusive at both endpoints and never the fact''s validity; a null endpoint is unbounded or unknown. The view carries no counts: aggregate evidence_lineage instead.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.deployment_id IS 'The deployment that owns the association.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.fact_kind IS 'Which fact layer the association points at, either relation or observation. Values: `relation`, `observation`.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.fact_id IS 'The adjudicated fact this claim supports or contradicts.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.claim_id IS 'The current-testimony claim on the other side of the bridge.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.stance IS 'Exactly supports or contradicts, matching the shipped evidence stance vocabulary. Values: `supports`, `contradicts`.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.doc_id IS 'The live lineage that asserted the claim, which is the unit D54 counts.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.source_kind IS 'The connector family of that lineage.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.source_handle IS 'Stable human-usable handle for that lineage, formed from its connector-native identity.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.asserted_at IS 'When the source asserted the claim, null when the source carries no date.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.claim_valid_from IS 'Immutable start of the world-time interval the SOURCE asserted, null for unbounded-before or unknown.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.claim_valid_until IS 'Immutable end of that interval, null for open-per-source or unknown.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.claim_valid_precision IS 'Granularity of the asserted interval, from unknown through instant to open. Values: `unknown`, `instant`, `day`, `month`, `quarter`, `year`, `open`.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.claim_valid_kind IS 'Which world-interval was asserted, null when unclassified. Values: `proposition_validity`, `event_time`, `measurement_period`, `effective_period`.';
COMMENT ON COLUMN memory_v1.fact_claim_evidence_live.linked_at IS 'When the association was recorded, which is a processing instant rather than a validity clock.';
COMMENT ON VIEW memory_v1.facts_current IS 'Confirmed facts holding at the single evaluated_at instant and still believed. Unknown or partial windows are excluded from this strict current view; inspect facts_visible_history for possible matches and historical achievements. A NULL end alone never establishes ongoing validity. Counts are distinct current testimony lineages.';
COMMENT ON COLUMN memory_v1.facts_current.deployment_id IS 'The deployment that owns the fact.';
COMMENT ON COLUMN memory_v1.facts_current.fact_kind IS 'Which fact layer this row belongs to, either relation or observation. Values: `relation`, `observation`.';
COMMENT ON COLUMN memory_v1.facts_current.fact_id IS 'Stable identity of the adjudicated fact.';
COMMENT ON COLUMN memory_v1.facts_current.subject_entity_id IS 'Survivor identity of the subject entity, with merge redirects resolved.';
COMMENT ON COLUMN memory_v1.facts_current.predicate IS 'The governed predicate of a relation, null for an observation.';
COMMENT ON COLUMN memory_v1.facts_current.object_entity_id IS 'Survivor identity of the object entity of a relation, null for an observation.';
COMMENT ON COLUMN memory_v1.facts_current.statement IS 'The canonical statement of an observation, null for a relation.';
COMMENT ON COLUMN memory_v1.facts_current.fact_label IS 'Human-readable sentence for the fact, null when no label has been generated.';
COMMENT ON COLUMN memory_v1.facts_current.valid_from IS 'Canonical inclusive world-time start; NULL means unknown.';
COMMENT ON COLUMN memory_v1.facts_current.valid_until IS 'Canonical exclusive world-time end; NULL means unknown unless valid_precision is open.';
COMMENT ON COLUMN memory_v1.facts_current.ingested_at IS 'Transaction-time start: when the system first believed the fact.';
COMMENT ON COLUMN memory_v1.facts_current.contradiction_group IS 'Shared identifier of an unadjudicated contradiction, null when the fact is in no contradiction group.';
COMMENT ON COLUMN memory_v1.facts_current.confidence IS 'Aggregate confidence over the fact''s evidence, null when never scored.';
COMMENT ON COLUMN memory_v1.facts_current.evidence_count IS 'Exact count of distinct current-testimony lineages supporting the fact.';
COMMENT ON COLUMN memory_v1.facts_current.contradict_count IS 'Exact count of distinct current-testimony lineages contradicting the fact.';
COMMENT ON COLUMN memory_v1.facts_current.support_state IS 'Exactly current or withdrawn, derived at read time from the open review queue. Values: `current`, `withdrawn`.';
COMMENT ON COLUMN memory_v1.facts_current.evaluated_at IS 'The single statement instant at which both clocks were applied, shared by every current relation referenced in the same statement.';
COMMENT ON COLUMN memory_v1.facts_current.valid_precision IS 'Chosen world-date precision; unknown and partial boundaries are distinct from explicitly open.';
COMMENT ON VIEW memory_v1.facts_visible_history IS 'Historically visible adjudicated facts with one canonical world window and separate system timestamps. Membership requires surviving provenance. Unknown dates and partial windows are possible temporal matches, not proof of being current; open precision explicitly means ongoing. Completed windows remain believed history while invalidated_at is NULL. Evidence counts and support state are current testimony, not reconstructed historical counts.';
COMMENT ON COLUMN memory_v1.facts_visible_history.deployment_id IS 'The deployment that owns the fact.';
COMMENT ON COLUMN memory_v1.facts_visible_history.fact_kind IS 'Which fact layer this row belongs to, either relation or observation. Values: `relation`, `observation`.';
COMMENT ON COLUMN memory_v1.facts_visible_history.fact_id IS 'Stable identity of the adjudicated fact.';
COMMENT ON COLUMN memory_v1.facts_visible_history.subject_entity_id IS 'Survivor identity of the subject entity, with merge redirects resolved.';
COMMENT ON COLUMN memory_v1.facts_visible_history.predicate IS 'The governed predicate of a relation, null for an observation.';
COMMENT ON COLUMN memory_v1.facts_visible_history.object_entity_id IS 'Survivor identity of the object entity of a relation, null for an observation.';
COMMENT ON COLUMN memory_v1.facts_visible_history.statement IS 'The canonical statement of an observation, null for a relation.';
COMMENT ON COLUMN memory_v1.facts_visible_history.fact_label IS 'Human-readable sentence for the fact, null when no label has been generated.';
COMMENT ON COLUMN memory_v1.facts_visible_history.valid_from IS 'Canonical inclusive world-time start; NULL means unknown.';
COMMENT ON COLUMN memory_v1.facts_visible_history.valid_until IS 'Canonical exclusive world-time end; NULL means unknown unless valid_precision is open.';
COMMENT ON COLUMN memory_v1.facts_visible_history.ingested_at IS 'Raw transaction-time start: when the system first believed the fact.';
COMMENT ON COLUMN memory_v1.facts_visible_history.invalidated_at IS 'Raw transaction-time end: when the system learned the fact was superseded, null while it is still believed.';
COMMENT ON COLUMN memory_v1.facts_visible_history.contradiction_group IS 'Shared identifier of an unadjudicated contradiction, null when the fact is in no contradiction group.';
COMMENT ON COLUMN memory_v1.facts_visible_history.confidence IS 'Aggregate confidence over the fact''s evidence, null when never scored.';
COMMENT ON COLUMN memory_v1.facts_visible_history.evidence_count_current IS 'LIVE count of distinct current-testimony lineages supporting the fact, read now and never a historical reconstruction.';
COMMENT ON COLUMN memory_v1.facts_visible_history.contradict_count_current IS 'LIVE count of distinct current-testimony lineages contradicting the fact, read now and never a historical reconstruction.';
COMMENT ON COLUMN memory_v1.facts_visible_history.support_state_current IS 'LIVE support state, exactly current or withdrawn, derived now from the open review queue and never a stored column. Values: `current`, `withdrawn`.';
COMMENT ON COLUMN memory_v1.facts_visible_history.valid_precision IS 'Chosen world-date precision; unknown and partial boundaries are distinct from explicitly open.';
COMMENT ON VIEW memory_v1.graph_edges_current IS 'One row per current relation edge, keyed by (deployment_id, relation_id) and joined to entities_current on (deployment_id, subject_entity_id) and (deployment_id, object_entity_id). This is the LIVE graph surface, evaluated in PostgreSQL rather than read from a projection: it inherits the facts_current membership rule, the same half-open world-time interval, and the same shared evaluation instant, which is emitted on every row. Both endpoints are survivor identities and both are required to be visible entities, so an edge is dropped as a unit rather than dangling into an entity that has no surviving provenance. The counts are exact counts of distinct current-testimony lineages, and support state is derived at read time from the open review queue. Observations never project here, because they are entity-anchored facts rather than edges.';
COMMENT ON COLUMN memory_v1.graph_edges_current.deployment_id IS 'The deployment that owns the edge.';
COMMENT ON COLUMN memory_v1.graph_edges_current.relation_id IS 'Stable identity of the relation this edge projects.';
COMMENT ON COLUMN memory_v1.graph_edges_current.subject_entity_id IS 'Survivor identity of the edge''s source entity, guaranteed present in entities_current.';
COMMENT ON COLUMN memory_v1.graph_edges_current.object_entity_id IS 'Survivor identity of the edge''s target entity, guaranteed present in entities_current.';
COMMENT ON COLUMN memory_v1.graph_edges_current.predicate IS 'The governed predicate carried by the edge.';
COMMENT ON COLUMN memory_v1.graph_edges_current.fact_label IS 'Human-readable sentence for the relation, null when no label has been generated.';
COMMENT ON COLUMN memory_v1.graph_edges_current.valid_from IS 'World-time start of the relation, null for unknown or always.';
COMMENT ON COLUMN memory_v1.graph_edges_current.valid_until IS 'World-time end of the relation, null while it is open; the interval is half-open.';
COMMENT ON COLUMN memory_v1.graph_edges_current.ingested_at IS 'Transaction-time start: when the system first believed the relation.';
COMMENT ON COLUMN memory_v1.graph_edges_current.contradiction_group IS 'Shared identifier of an unadjudicated contradiction, null when the edge is in no contradiction group.';
COMMENT ON COLUMN memory_v1.graph_edges_current.confidence IS 'Aggregate confidence over the relation''s evidence, null when never scored.';
COMMENT ON COLUMN memory_v1.graph_edges_current.evidence_count IS 'Exact count of distinct current-testimony lineages supporting the relation.';
COMMENT ON COLUMN memory_v1.graph_edges_current.contradict_count IS 'Exact count of distinct current-testimony lineages contradicting the relation.';
COMMENT ON COLUMN memory_v1.graph_edges_current.support_state IS 'Exactly current or withdrawn, derived at read time from the open review queue. Values: `current`, `withdrawn`.';
COMMENT ON COLUMN memory_v1.graph_edges_current.evaluated_at IS 'The single statement instant at which both clocks were applied, shared with every other current relation in the statement.';
COMMENT ON VIEW memory_v1.graph_edges_visible_history IS 'One row per historically visible relation edge, keyed by (deployment_id, relation_id) and joined to entities_current on both endpoint columns. Membership requires surviving historical provenance and two visible survivor endpoints, so a relation whose sources have all been forgotten disappears and an edge is never left dangling. Both clocks are RAW: world time is half-open, transaction time is bounded by ingested_at and invalidated_at, a null endpoint is unbounded or unknown, and membership here is not a claim that the edge currently holds. The three columns suffixed _current are LIVE CURRENT-TESTIMONY VALUES READ NOW and never assert that those counts or that support state held at any historical instant; they come from evidence_lineage and from the open support_withdrawn review row respectively.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.deployment_id IS 'The deployment that owns the edge.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.relation_id IS 'Stable identity of the relation this edge projects.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.subject_entity_id IS 'Survivor identity of the edge''s source entity, guaranteed present in entities_current.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.object_entity_id IS 'Survivor identity of the edge''s target entity, guaranteed present in entities_current.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.predicate IS 'The governed predicate carried by the edge.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.fact_label IS 'Human-readable sentence for the relation, null when no label has been generated.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.valid_from IS 'Raw world-time start of the relation, null for unknown or always.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.valid_until IS 'Raw world-time end of the relation, null while it has not been capped; the interval is half-open.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.ingested_at IS 'Raw transaction-time start: when the system first believed the relation.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.invalidated_at IS 'Raw transaction-time end: when the system learned the relation was superseded, null while it is still believed.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.contradiction_group IS 'Shared identifier of an unadjudicated contradiction, null when the edge is in no contradiction group.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.confidence IS 'Aggregate confidence over the relation''s evidence, null when never scored.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.evidence_count_current IS 'LIVE count of distinct current-testimony lineages supporting the relation, read now and never a historical reconstruction.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.contradict_count_current IS 'LIVE count of distinct current-testimony lineages contradicting the relation, read now and never a historical reconstruction.';
COMMENT ON COLUMN memory_v1.graph_edges_visible_history.support_state_current IS 'LIVE support state, exactly current or withdrawn, read now and never a historical reconstruction. Values: `current`, `withdrawn`.';
COMMENT ON VIEW memory_v1.identity_events_visible IS 'One row per visible identity event, keyed by the synthetic pair (deployment_id, object_kind, event_id): each union arm names its own log in object_kind and supplies that log''s own identifier, so the two identifier spaces cannot collide. Resolution events carry a mention and an outcome of linked or new_entity; they appear only while that exact mention is present in mentions_live, which binds them to the current-content transcript and its complete visibility gate. Merge events carry a counterpart entity and an outcome of merge or unmerge, where a split is recorded as the un-merge that reversed a merge. Every event requires its survivor entity to pass the entities_current provenance gate. Decision clocks are transaction time and carry no world-validity meaning; the view carries no counts and asserts no facts.';
COMMENT ON COLUMN memory_v1.identity_events_visible.deployment_id IS 'The deployment that owns the event.';
COMMENT ON COLUMN memory_v1.identity_events_visible.object_kind IS 'Which append-only log the event comes from, either resolution_decision or merge_event. Values: `resolution_decision`, `merge_event`.';
COMMENT ON COLUMN memory_v1.identity_events_visible.event_id IS 'Identity of the event within its own log, unique together with object_kind.';
COMMENT ON COLUMN memory_v1.identity_events_visible.entity_id IS 'The survivor entity the event is about, joinable to entities_current.';
COMMENT ON COLUMN memory_v1.identity_events_visible.related_entity_id IS 'The counterpart entity of a merge or unmerge, null for a resolution event.';
COMMENT ON COLUMN memory_v1.identity_events_visible.mention_id IS 'The mention a resolution event decided, null for a merge event.';
COMMENT ON COLUMN memory_v1.identity_events_visible.outcome IS 'What the event did, one of linked, new_entity, merge, or unmerge. Values: `linked`, `new_entity`, `merge`, `unmerge`.';
COMMENT ON COLUMN memory_v1.identity_events_visible.method IS 'Which mechanism produced the event, such as a resolution tier or merge_event. Values: `T0`, `T3`, `T4_small`, `T4_frontier`, `human`, `merge_event`.';
COMMENT ON COLUMN memory_v1.identity_events_visible.confidence IS 'Confidence recorded for the decision, null when the log records none.';
COMMENT ON COLUMN memory_v1.identity_events_visible.decided_by IS 'Whether the decision was automatic or human. Values: `auto`, `human`.';
COMMENT ON COLUMN memory_v1.identity_events_visible.decided_at IS 'When the decision was made, which is a transaction-time instant.';
COMMENT ON COLUMN memory_v1.identity_events_visible.is_superseded IS 'True once a later decision replaced this one, or a later un-merge reversed it.';
COMMENT ON VIEW memory_v1.mentions_live IS 'One row per mention occurring in current content, keyed by (deployment_id, mention_id) and joined to chunks_live on (deployment_id, chunk_id), documents_live on (deployment_id, doc_id), and entities_current on (deployment_id, resolved_entity_id). Membership binds every coordinate of the mention: the chunk must be a current-content chunk and the mention''s own lineage must be that chunk''s lineage, so mentions in superseded versions, in non-ready readings, in forgotten lineages, and mentions whose recorded lineage disagrees with their chunk''s are all absent. Resolution is deliberately nullable and UNRESOLVED MENTIONS REMAIN VISIBLE: the five resolution columns are populated together or not at all, from the mention''s single live, unsuperseded decision and only when the survivor that decision names passes the entities_current provenance gate, so a decision pointing at a retired, merged-away, or provenance-free identity leaves the whole resolution null rather than describing a decision whose subject this schema will not show. The claim coordinate is gated the same way and is null unless that claim is itself a visible claim of this lineage. Merge redirects are resolved before exposure. This relation is source transcript, not evidence and not fact; it carries no counts and no validity clocks. After D96, emitted_type and type_confidence are vacated compatibility positions that always return NULL.';
COMMENT ON COLUMN memory_v1.mentions_live.deployment_id IS 'The deployment that owns the mention.';
COMMENT ON COLUMN memory_v1.mentions_live.mention_id IS 'Stable identity of this mention in the immutable mention transcript.';
COMMENT ON COLUMN memory_v1.mentions_live.doc_id IS 'The live lineage the mention occurs in.';
COMMENT ON COLUMN memory_v1.mentions_live.version_id IS 'The lineage''s current version the mention occurs in.';
COMMENT ON COLUMN memory_v1.mentions_live.representation_id IS 'The current ready reading whose offsets the mention anchors use.';
COMMENT ON COLUMN memory_v1.mentions_live.chunk_id IS 'The current-content chunk the mention occurs in.';
COMMENT ON COLUMN memory_v1.mentions_live.section_id IS 'The section containing the mention, null when the chunk has no section in the current structure generation.';
COMMENT ON COLUMN memory_v1.mentions_live.claim_id IS 'The claim the mention occurs in, exposed only while that claim is itself visible and null otherwise.';
COMMENT ON COLUMN memory_v1.mentions_live.surface_form IS 'The mention exactly as it appeared in the source.';
COMMENT ON COLUMN memory_v1.mentions_live.normalized_lemma IS 'Accent-folded lower-case form of the surface form.';
COMMENT ON COLUMN memory_v1.mentions_live.canonical_name_form IS 'The nominative or canonical form the extractor emitted, null when it emitted none.';
COMMENT ON COLUMN memory_v1.mentions_live.emitted_type IS 'Vacated after D96: this compatibility output position always returns NULL because extraction emits entity names rather than type classes; the source and canonical spellings remain available on this mention.';
COMMENT ON COLUMN memory_v1.mentions_live.type_confidence IS 'Vacated after D96: this compatibility output position always returns NULL because extraction no longer produces an entity-class confidence; resolution confidence remains available separately.';
COMMENT ON COLUMN memory_v1.mentions_live.language IS 'Language of the mention, null when undetected.';
COMMENT ON COLUMN memory_v1.mentions_live.char_start IS 'Start character offset of the mention within the named representation''s markdown, null when unrecorded.';
COMMENT ON COLUMN memory_v1.mentions_live.char_end IS 'End character offset of the mention within the named representation''s markdown, null when unrecorded.';
COMMENT ON COLUMN memory_v1.mentions_live.created_at IS 'When the mention was recorded, which is a processing instant.';
COMMENT ON COLUMN memory_v1.mentions_live.resolved_entity_id IS 'The survivor entity this mention currently resolves to, null while the mention is unresolved or while the entity that decision names is not itself visible.';
COMMENT ON COLUMN memory_v1.mentions_live.resolution_method IS 'Which decision tier produced the live resolution, null exactly when resolved_entity_id is null. Values: `T0`, `T3`, `T4_small`, `T4_frontier`, `human`.';
COMMENT ON COLUMN memory_v1.mentions_live.resolution_confidence IS 'Confidence of that live resolution, null exactly when resolved_entity_id is null.';
COMMENT ON COLUMN memory_v1.mentions_live.resolution_is_new_entity IS 'True when the live resolution minted a new entity, null exactly when resolved_entity_id is null.';
COMMENT ON COLUMN memory_v1.mentions_live.resolved_at IS 'When the live resolution was decided, null exactly when resolved_entity_id is null.';
COMMENT ON VIEW memory_v1.page_evidence_visible IS 'One row per visible artifact-to-target citation, keyed by (deployment_id, artifact_id, role, target_kind, target_id) and joinable to pages_live on (deployment_id, artifact_id), documents_live on target_id for claim and document targets, and the fact relations on target_id for relation targets. EACH TARGET PASSES ITS OWN VISIBILITY GATE: a citation appears only while its cited lineage is live or its cited relation still has surviving provenance, so forgetting a source removes the link rather than leaving a reference to vanished content. The authoritative citation set is evaluated once and joined directly to non-tombstoned artifact status, which is exactly the membership rule pages_live applies, so a visible page always has at least one row here and a link never outlives the page that carries it. A claim citation is a stable coordinate on the asserting LINEAGE, and its chunk content hashes are exposed only as locators inside that already authorized lineage: the hash never authorizes a read and cannot be used to bypass the lineage gate. Because several chunk coordinates in one lineage collapse into one association, link_count reports exactly how many underlying links were collapsed. The view carries no clocks.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.deployment_id IS 'The deployment that owns the association.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.artifact_id IS 'The visible knowledge artifact that carries the citation.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.role IS 'What the citation does, one of supports, contradicts, or cites. Values: `supports`, `contradicts`, `cites`.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.target_kind IS 'What is cited, one of claim, relation, or document. Values: `claim`, `relation`, `document`.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.target_id IS 'The cited target: the asserting lineage for a claim citation, the relation for a relation citation, or the lineage for a document citation.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.claim_chunk_content_hashes IS 'Sorted chunk-content hashes locating the cited claims inside the lineage, null for non-claim targets; these are locators only and never authorize a read.';
COMMENT ON COLUMN memory_v1.page_evidence_visible.link_count IS 'Exact number of underlying citation links collapsed into this association.';
COMMENT ON VIEW memory_v1.pages_live IS 'One row per visible knowledge artifact, keyed by (deployment_id, artifact_id) and joined to page_evidence_visible on the same pair. Membership is FAIL-CLOSED ON PROVENANCE as well as on status: an artifact appears only while it is not tombstoned AND at least one of its citations still points at a visible target, so a page whose every cited source has been forgotten leaves with them instead of surviving as compiled prose about content this deployment can no longer show. Both page kinds carry citations, so an artifact with none is anomalous rather than ordinary: it is absent here and counted in the operator quarantine report, where it can be recompiled or retired. A tombstoned parent, and a parent that is itself absent for either reason, is reported as null rather than dangling. Everything textual here is COMPILED ORIENTATION PROSE AT COMPILED GRAIN: page_summary is a writer''s abstract of cited evidence and can never be promoted to a live fact, and the artifact body itself lives in the knowledge repository rather than in this schema. The review-flag count is exact over unprocessed flags, is_stale means the compiled page is known to lag its inputs, and last_compiled_at is a processing instant rather than a validity clock.';
COMMENT ON COLUMN memory_v1.pages_live.deployment_id IS 'The deployment that owns the artifact.';
COMMENT ON COLUMN memory_v1.pages_live.artifact_id IS 'Stable identity of this knowledge artifact.';
COMMENT ON COLUMN memory_v1.pages_live.layer IS 'Content tier of the artifact, one of K1, K2, or K3. Values: `K1`, `K2`, `K3`.';
COMMENT ON COLUMN memory_v1.pages_live.page_kind IS 'Ownership contract of the body, either compiled when machine-owned or authored when human-owned. Values: `compiled`, `authored`.';
COMMENT ON COLUMN memory_v1.pages_live.git_path IS 'Path of the artifact''s file in the knowledge repository.';
COMMENT ON COLUMN memory_v1.pages_live.kind IS 'Free-form editorial kind such as summary or profile, null when unset.';
COMMENT ON COLUMN memory_v1.pages_live.parent_artifact_id IS 'Parent artifact in the compile tree, exposed only while that parent is itself visible and null otherwise.';
COMMENT ON COLUMN memory_v1.pages_live.page_summary IS 'Writer-emitted abstract of the page; it is compiled orientation prose and is never asserted evidence.';
COMMENT ON COLUMN memory_v1.pages_live.status IS 'Lifecycle status of the artifact, one of active, stale, or quarantined. Values: `active`, `stale`, `quarantined`.';
COMMENT ON COLUMN memory_v1.pages_live.last_compiled_at IS 'When the artifact was last compiled, null when it has never been compiled.';
COMMENT ON COLUMN memory_v1.pages_live.is_stale IS 'True when a compiled artifact is known to lag its inputs, either by status or by an unprocessed refresh.';
COMMENT ON COLUMN memory_v1.pages_live.open_review_flags IS 'Exact count of unprocessed authored-review flags on the artifact, always zero for a compiled page.';
COMMENT ON COLUMN memory_v1.pages_live.redaction_required IS 'True when an open authored-review flag asks the author to redact content.';
COMMENT ON VIEW memory_v1.sections_live IS 'One row per section of the current ready representation of a live lineage, keyed by (deployment_id, section_id) and joined to documents_live on (deployment_id, doc_id). Sections of a superseded version, of a non-ready reading, of a superseded D79 structure generation, and of a forgotten lineage are all absent, so a node_path resolves to exactly one live tree. Character and block offsets are meaningful only against the named representation. The summary column is orientation text, not evidence, and the view carries no counts and no validity clocks.';
COMMENT ON COLUMN memory_v1.sections_live.deployment_id IS 'The deployment that owns the section.';
COMMENT ON COLUMN memory_v1.sections_live.section_id IS 'Stable identity of this section node.';
COMMENT ON COLUMN memory_v1.sections_live.doc_id IS 'The live lineage the section belongs to.';
COMMENT ON COLUMN memory_v1.sections_live.version_id IS 'The lineage''s current version, whose bytes this section indexes.';
COMMENT ON COLUMN memory_v1.sections_live.representation_id IS 'The current ready reading whose character offsets this section uses.';
COMMENT ON COLUMN memory_v1.sections_live.structure_generation_id IS 'The D79 structure generation that produced this tree, always the representation''s current generation.';
COMMENT ON COLUMN memory_v1.sections_live.parent_section_id IS 'The parent node in the section tree, null for the root section.';
COMMENT ON COLUMN memory_v1.sections_live.node_path IS 'Materialized path such as 0.2.1, unique within the structure generation.';
COMMENT ON COLUMN memory_v1.sections_live.heading_level IS 'Source heading depth from one to six, null when the section carries no heading.';
COMMENT ON COLUMN memory_v1.sections_live.title IS 'Section title as read from the source, null when the section has none.';
COMMENT ON COLUMN memory_v1.sections_live.normalized_title IS 'Case-folded and trimmed title used for stable matching, empty when there is no title.';
COMMENT ON COLUMN memory_v1.sections_live.role IS 'Structural role of the section, such as body, references, or boilerplate. Values: `body`, `abstract`, `introduction`, `results`, `methods`, `discussion`, `conclusion`, `references`, `appendix`, `table`, `figure_caption`, `nav`, `boilerplate`, `legal`.';
COMMENT ON COLUMN memory_v1.sections_live.ordinal IS 'Position of the section among its siblings.';
COMMENT ON COLUMN memory_v1.sections_live.block_start IS 'First block ordinal of the section on the deterministic block grid.';
COMMENT ON COLUMN memory_v1.sections_live.block_end IS 'Last block ordinal of the section, inclusive.';
COMMENT ON COLUMN memory_v1.sections_live.char_start IS 'Start character offset of the section within this representation''s markdown.';
COMMENT ON COLUMN memory_v1.sections_live.char_end IS 'End character offset of the section within this representation''s markdown.';
COMMENT ON COLUMN memory_v1.sections_live.page_start IS 'First source page of the section, null when the source is not paginated.';
COMMENT ON COLUMN memory_v1.sections_live.page_end IS 'Last source page of the section, null when the source is not paginated.';
COMMENT ON COLUMN memory_v1.sections_live.summary IS 'Section summary generated for navigation and context; it is labeled orientation text and is never asserted evidence.';
COMMENT ON VIEW memory_v1.testimony_currency_events_visible IS 'One row per visible D54 testimony-currency transition, keyed by (deployment_id, event_id) and joined to claims_visible_history on (deployment_id, claim_id) and to documents_live on (deployment_id, doc_id). A currency transition is BOOKKEEPING and never validity: nothing about the claim changes and no fact is adjudicated by it. Transitions of forgotten lineages and of claims whose source version is tombstoned are absent, and from_version_id is null rather than dangling whenever the superseded version is itself no longer visible, so this relation cannot be read as a tombstone side channel. The occurrence instant is transaction time; the view carries no counts and no world-validity clocks.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.deployment_id IS 'The deployment that owns the transition.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.event_id IS 'Stable identity of this append-only transition record.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.claim_id IS 'The claim whose testimony currency changed.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.doc_id IS 'The live lineage whose basis change drove the transition.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.reconciliation_id IS 'The single reconciliation run that emitted the transition, so a retried run is recognizable as one run.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.became_current IS 'True when the claim regained currency and false when it lost currency.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.reason IS 'Why currency changed, one of reextracted, version_superseded, version_deleted, or review_restored. Values: `reextracted`, `version_superseded`, `version_deleted`, `review_restored`.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.from_extractor_version IS 'The superseded extractor generation for a re-extraction, null for the other reasons.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.from_version_id IS 'The superseded document version, exposed only while that version is itself visible and null otherwise.';
COMMENT ON COLUMN memory_v1.testimony_currency_events_visible.occurred_at IS 'When the transition occurred, which is a transaction-time instant and never a validity clock.';
COMMENT ON FUNCTION memory_v1.semantic_claims(text, integer, jsonb, text, text) IS 'Claims ranked by meaning.';
COMMENT ON FUNCTION memory_v1.lexical_claims(text, integer, jsonb) IS 'Claims ranked by keyword (BM25). Same columns and filters as semantic_claims.';
COMMENT ON FUNCTION memory_v1.semantic_chunks(text, integer, jsonb, text, text) IS 'Source chunks ranked by meaning.';
COMMENT ON FUNCTION memory_v1.lexical_chunks(text, integer, jsonb) IS 'Source chunks ranked by keyword (BM25). Same columns and filters as semantic_chunks.';
COMMENT ON FUNCTION memory_v1.semantic_facts(text, integer, jsonb, text, text) IS 'Facts (relations and observations) ranked by meaning.';
COMMENT ON FUNCTION memory_v1.semantic_entities(text, integer, jsonb) IS 'Entities ranked by how well their profile matches. No filters.';
COMMENT ON FUNCTION memory_v1.fetch_chunk_bodies(uuid[]) IS 'The text of up to 50 chunks, re-verified against their content and embedding hashes before it is returned. All requested chunks must belong to one embedding generation.';
COMMENT ON FUNCTION memory_v1.facts_as_of(timestamp with time zone, timestamp with time zone, integer) IS 'The facts that were valid at valid_at, as the memory believed at believed_at.';
COMMENT ON FUNCTION memory_v1.canonical_bounds(timestamp with time zone, timestamp with time zone, text) IS 'Turn a stored validity window and its precision into the half-open interval it means: a day covers the whole UTC day, a year the whole year, an instant a one-microsecond point; open has no end and unknown has no bounds.';
COMMENT ON FUNCTION memory_v1.graph_neighborhood(uuid, uuid, integer, text[], timestamp with time zone, timestamp with time zone, integer, integer, integer, integer) IS 'Paths to the entities within max_depth hops, and one terminal status row.';
COMMENT ON FUNCTION memory_v1.graph_path(uuid, uuid, uuid, integer, text[], timestamp with time zone, timestamp with time zone, integer, integer, integer, integer) IS 'Equal-length shortest paths between two entities, and one terminal status row.';
COMMENT ON FUNCTION memory_v1.graph_citation_path(uuid, uuid, uuid, integer, integer, integer, integer, integer) IS 'Directed citation chains between two live documents, and one terminal status row.';

-- @grants
-- The sandbox role: it logs in, reads memory_v1 and calls its functions, and nothing else. Roles
-- are cluster-wide, so it is created once; a server where we may not create roles keeps working
-- without it (the query space then refuses to run statements).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'corpusmem_query') THEN
        BEGIN
            CREATE ROLE corpusmem_query LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE WARNING 'cannot create the sandbox role corpusmem_query: %', SQLERRM;
        END;
    END IF;
END
$$;

REVOKE ALL ON SCHEMA memory_v1 FROM PUBLIC;
REVOKE ALL ON SCHEMA memory_v1_private FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA memory_v1 FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA memory_v1 FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA memory_v1_private FROM PUBLIC;
-- PUBLIC's USAGE on schema public would let the sandbox name our tables (it still could not read
-- them) and call extension functions: nobody but the owner needs it.
REVOKE ALL ON SCHEMA public FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'corpusmem_query') THEN
        GRANT USAGE ON SCHEMA memory_v1 TO corpusmem_query;
        GRANT SELECT ON ALL TABLES IN SCHEMA memory_v1 TO corpusmem_query;
        GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA memory_v1 TO corpusmem_query;
        -- views call these helpers with the reader's rights; the schema itself stays closed
        GRANT EXECUTE ON FUNCTION memory_v1_private.evaluated_at(), memory_v1_private.uuid_of(text, text),
                                  memory_v1_private.resolution_method(text) TO corpusmem_query;
        EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO corpusmem_query', current_database());
        ALTER ROLE corpusmem_query SET default_transaction_read_only = on;
    END IF;
END
$$;
