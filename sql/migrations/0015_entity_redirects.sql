-- Entity merge review. The resolver only proposes merges (merge_proposals); a person decides.
-- A merge is a redirect from the merged-away entity to its survivor, never a rewrite: mentions,
-- aliases, assertions and the facts adjudicated before the merge keep their entity ids. Reads
-- follow the active redirects through the views below, and the facts the merge touches are
-- adjudicated again, as one entity, into a new set tagged with the redirect (`facts.redirect_id`):
-- while the redirect stands that set is served instead of the earlier facts of the anchors it
-- re-decided; once it is undone the earlier facts are served again, exactly as before the merge.
--
-- `@support` and `@view` sections here replace those of 0004 and 0007 in the query-space manifest.

CREATE TABLE entity_redirects (
    redirect_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    from_entity   uuid NOT NULL REFERENCES entities,
    to_entity     uuid NOT NULL REFERENCES entities,
    reason        text NOT NULL,
    decided_by    text NOT NULL,
    decided_at    timestamptz NOT NULL DEFAULT now(),
    undone_by     text,
    undone_at     timestamptz,
    undo_reason   text,
    CHECK (from_entity <> to_entity),
    CHECK ((undone_at IS NULL) = (undone_by IS NULL))
);
-- An entity is merged into at most one survivor at a time.
CREATE UNIQUE INDEX entity_redirects_active ON entity_redirects (from_entity) WHERE undone_at IS NULL;
CREATE INDEX entity_redirects_to ON entity_redirects (to_entity) WHERE undone_at IS NULL;

-- The anchors whose facts a merge adjudicated again: the survivor, and every entity owning a
-- fact about one of the merged entities.
CREATE TABLE entity_redirect_anchors (
    redirect_id   bigint NOT NULL REFERENCES entity_redirects,
    anchor_id     uuid NOT NULL REFERENCES entities,
    PRIMARY KEY (redirect_id, anchor_id)
);
CREATE INDEX entity_redirect_anchors_anchor ON entity_redirect_anchors (anchor_id, redirect_id);

-- The merge whose adjudication made the fact; NULL for the facts phase's own facts.
ALTER TABLE facts ADD COLUMN redirect_id bigint REFERENCES entity_redirects;
CREATE INDEX facts_redirect ON facts (redirect_id) WHERE redirect_id IS NOT NULL;

-- Who accepted or rejected a proposal, and when.
ALTER TABLE merge_proposals ADD COLUMN decided_by text, ADD COLUMN decided_at timestamptz;

-- Undoing a merge retires the facts its adjudication made, by a recorded decision.
ALTER TABLE fact_decisions DROP CONSTRAINT fact_decisions_outcome_check;
ALTER TABLE fact_decisions ADD CONSTRAINT fact_decisions_outcome_check CHECK (outcome IN (
    'add', 'noop', 'update', 'contradict', 'retracted_source_removal', 'support_withdrawn', 'support_restored',
    'merge_undone'));

-- @support redirected
-- The one rule of identity: every merged-away entity and the survivor it now reads as, through
-- chains of active redirects (B into A, then A into T: B reads as T). An entity not listed here is
-- its own survivor. Merges refuse cycles, and the walk stops at 64 steps whatever the table holds.
CREATE VIEW memory_v1_private.redirected AS
WITH RECURSIVE chain (entity_id, survivor_id, depth) AS (
    SELECT r.from_entity, r.to_entity, 1 FROM entity_redirects r WHERE r.undone_at IS NULL
    UNION ALL
    SELECT c.entity_id, r.to_entity, c.depth + 1
    FROM chain c JOIN entity_redirects r ON r.from_entity = c.survivor_id AND r.undone_at IS NULL
    WHERE c.depth < 64)
SELECT DISTINCT ON (c.entity_id) c.entity_id, c.survivor_id
FROM chain c
ORDER BY c.entity_id, c.depth DESC;

-- @support fact_regimes
-- For each anchor a standing merge adjudicated again, the latest such merge: its facts are the
-- anchor's facts while it stands.
CREATE VIEW memory_v1_private.fact_regimes AS
SELECT DISTINCT ON (a.anchor_id) a.anchor_id, a.redirect_id
FROM entity_redirect_anchors a
JOIN entity_redirects r ON r.redirect_id = a.redirect_id AND r.undone_at IS NULL
ORDER BY a.anchor_id, a.redirect_id DESC;

-- @support entity_spellings
-- Every recorded spelling with the survivor it names now (`source_entity_id`: where it was
-- recorded); what name lookups read.
CREATE VIEW memory_v1_private.entity_spellings AS
SELECT coalesce(r.survivor_id, a.entity_id) AS entity_id, a.entity_id AS source_entity_id, a.alias, a.alias_key,
       a.dm_codes, a.added_at
FROM entity_aliases a
LEFT JOIN memory_v1_private.redirected r ON r.entity_id = a.entity_id;

-- @support entity_provenance
-- Survivors with surviving provenance: a mention, of the entity or of one merged into it, in any
-- visible version of a live lineage. A merged-away entity is never listed: it reads as its
-- survivor. Asking about some entities still reads only their mentions (mentions_entity).
CREATE OR REPLACE VIEW memory_v1_private.entity_provenance AS
SELECT e.entity_id
FROM entities e
WHERE NOT EXISTS (SELECT 1 FROM entity_redirects x WHERE x.from_entity = e.entity_id AND x.undone_at IS NULL)
  AND (EXISTS (SELECT 1 FROM mentions m JOIN memory_v1_private.visible_claims c ON c.claim_id = m.claim_id
               WHERE m.entity_id = e.entity_id)
       OR EXISTS (SELECT 1 FROM memory_v1_private.redirected r JOIN mentions m ON m.entity_id = r.entity_id
                  JOIN memory_v1_private.visible_claims c ON c.claim_id = m.claim_id
                  WHERE r.survivor_id = e.entity_id));

-- @support live_mentions
-- Mentions in current content: the mention's context claim must occur in its lineage's current
-- reading. The resolution is the mention's latest identity event; `entity_id` is the survivor of
-- the entity it was resolved to.
CREATE OR REPLACE VIEW memory_v1_private.live_mentions AS
SELECT cc.deployment_id,
       memory_v1_private.uuid_of('mention', m.doc_id::text || '|' || m.mention_key || '|' || m.surface) AS mention_id,
       m.doc_id, cc.version_id, cc.representation_id, o.chunk_id, ch.section_id, m.claim_id, m.surface, m.mention_key,
       c.created_at, coalesce(r.survivor_id, m.entity_id) AS entity_id, ev.step, ev.verdict, ev.decided_at
FROM mentions m
JOIN memory_v1_private.current_content cc ON cc.doc_id = m.doc_id
JOIN claims c ON c.claim_id = m.claim_id
JOIN claim_occurrences o ON o.claim_id = m.claim_id AND o.version_id = cc.version_id
JOIN chunks ch ON ch.chunk_id = o.chunk_id AND ch.doc_id = m.doc_id
LEFT JOIN memory_v1_private.redirected r ON r.entity_id = m.entity_id
LEFT JOIN LATERAL (SELECT i.step, i.verdict, i.decided_at FROM identity_events i
                   WHERE i.doc_id = m.doc_id AND i.mention_key = m.mention_key AND i.surface = m.surface
                     AND i.entity_id = m.entity_id
                   ORDER BY i.event_id DESC LIMIT 1) ev ON true;

-- @support visible_facts
-- Facts with surviving provenance (evidence from a claim of a live lineage's visible version)
-- that are in force for their anchor: an anchor merged into another has none of its own; an
-- anchor a standing merge adjudicated again has that merge's facts; any other, the facts
-- phase's.
CREATE OR REPLACE VIEW memory_v1_private.visible_facts AS
-- Columns named one by one, never facts.embedding (see visible_claims).
SELECT dep.deployment_id, f.fact_id, f.kind, f.subject_id, f.predicate, f.object_id, f.label, f.valid_from,
       f.valid_until, f.valid_precision, f.ingested_at, f.invalidated_at, f.support, f.evidence_count,
       f.contradicting_count, f.contradiction_group
FROM deployment dep
CROSS JOIN facts f
LEFT JOIN memory_v1_private.fact_regimes g ON g.anchor_id = f.anchor_id
WHERE f.redirect_id IS NOT DISTINCT FROM g.redirect_id
  AND NOT EXISTS (SELECT 1 FROM entity_redirects x WHERE x.from_entity = f.anchor_id AND x.undone_at IS NULL)
  AND EXISTS (SELECT 1 FROM fact_evidence e JOIN memory_v1_private.visible_claims c ON c.claim_id = e.claim_id
              WHERE e.fact_id = f.fact_id);

-- @support ids_about
-- The claims (or chunks carrying them) about the entities `about`, and about every entity merged
-- into one of them.
CREATE OR REPLACE FUNCTION memory_v1_private.ids_about(source text, about uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE
AS $$
    WITH e AS (SELECT about || coalesce((SELECT array_agg(r.entity_id) FROM memory_v1_private.redirected r
                                         WHERE r.survivor_id = ANY(about)), '{}') AS ids),
    c AS (SELECT m.claim_id FROM public.mentions m, e WHERE m.entity_id = ANY(e.ids)
          UNION SELECT a.claim_id FROM public.assertions a, e WHERE a.subject_id = ANY(e.ids) OR a.object_id = ANY(e.ids))
    SELECT claim_id FROM c WHERE source = 'claims'
    UNION ALL
    SELECT DISTINCT co.chunk_id FROM public.claim_occurrences co JOIN c ON c.claim_id = co.claim_id WHERE source = 'chunks'
$$;

-- @view entity_aliases_current
CREATE OR REPLACE VIEW memory_v1.entity_aliases_current (
    deployment_id, alias_id, source_entity_id, entity_id, alias_text, normalized_lemma, provenance, confidence,
    first_seen, last_seen) AS
SELECT e.deployment_id, memory_v1_private.uuid_of('alias', a.source_entity_id::text || '|' || a.alias_key),
       a.source_entity_id, a.entity_id, a.alias, a.alias_key, 'source'::text, NULL::real, a.added_at, a.added_at
FROM memory_v1_private.entity_spellings a
JOIN memory_v1.entities_current e ON e.entity_id = a.entity_id;

-- @view identity_events_visible
-- Resolution decisions, named by the survivor of the entity they chose, and the merges that
-- stand (an undone merge leaves with its redirect; entity_redirects keeps who undid it and when).
CREATE OR REPLACE VIEW memory_v1.identity_events_visible (
    deployment_id, object_kind, event_id, entity_id, related_entity_id, mention_id, outcome, method, confidence,
    decided_by, decided_at, is_superseded) AS
SELECT m.deployment_id, 'resolution_decision'::text, memory_v1_private.uuid_of('identity_event', i.event_id::text),
       e.entity_id, NULL::uuid, m.mention_id, CASE WHEN i.verdict = 'new' THEN 'new_entity' ELSE 'linked' END,
       memory_v1_private.resolution_method(i.step), NULL::real, 'auto'::text, i.decided_at,
       EXISTS (SELECT 1 FROM identity_events later WHERE later.doc_id = i.doc_id AND later.mention_key = i.mention_key
               AND later.surface = i.surface AND later.event_id > i.event_id)
FROM identity_events i
JOIN memory_v1.mentions_live m
  ON m.mention_id = memory_v1_private.uuid_of('mention', i.doc_id::text || '|' || i.mention_key || '|' || i.surface)
LEFT JOIN memory_v1_private.redirected r ON r.entity_id = i.entity_id
JOIN memory_v1.entities_current e ON e.entity_id = coalesce(r.survivor_id, i.entity_id)
UNION ALL
SELECT e.deployment_id, 'merge_event'::text, memory_v1_private.uuid_of('merge_event', x.redirect_id::text),
       e.entity_id, x.from_entity, NULL::uuid, 'merge'::text, 'human'::text, NULL::real, x.decided_by, x.decided_at,
       false
FROM entity_redirects x
LEFT JOIN memory_v1_private.redirected r ON r.entity_id = x.to_entity
JOIN memory_v1.entities_current e ON e.entity_id = coalesce(r.survivor_id, x.to_entity)
WHERE x.undone_at IS NULL;
