-- What the memory serves, defined once. The memory_v1 views (0004) are built on the private views
-- of `memory_v1_private`; the read API, the CLI and the demo read through the same ones, so a
-- deleted document, a superseded version, testimony that is no longer current, a retracted fact
-- or an entity without live provenance leaves every read surface at once:
--
--   lineages            live documents (not deleted) and their current version
--   current_content     the one ready reading of each live lineage (its sections and chunks)
--   visible_claims      claims of a live lineage's visible versions, current testimony or not
--   live_claims         visible claims that are current testimony: what evidence may show
--   visible_facts       facts with surviving provenance (evidence from a visible claim), any belief
--   believed_facts      visible facts not retracted: what the memory holds now
--   entity_provenance   entities named in a visible claim
--
-- `@support` sections here replace or extend those of 0004 in the query-space manifest.

-- Reconcile works from a persisted watermark over testimony_currency_events, never from a
-- wall-clock `since`: what an interrupted reconcile left is finished by the next one. Every
-- writer of currency events holds the reconcile lock (sql/write/reconcile.py), so no event with
-- a lower id can commit after the watermark passed it.
CREATE TABLE reconcile_watermark (
    singleton         boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last_event_id     bigint NOT NULL,
    advanced_at       timestamptz NOT NULL DEFAULT now()
);
-- From the first event: a memory migrated before this may hold events an interrupted reconcile
-- never reached, and recounting a fact that is already right changes nothing.
INSERT INTO reconcile_watermark (last_event_id) VALUES (0);

-- @support entity_provenance
-- Entities with surviving provenance: a mention in any visible version of a live lineage. The same
-- rows as 0004's DISTINCT over all mentions; as a correlated EXISTS, asking about some entities
-- reads only their mentions (through mentions_entity).
CREATE OR REPLACE VIEW memory_v1_private.entity_provenance AS
SELECT e.entity_id
FROM entities e
WHERE EXISTS (SELECT 1 FROM mentions m JOIN memory_v1_private.visible_claims c ON c.claim_id = m.claim_id
              WHERE m.entity_id = e.entity_id);

-- @support live_claims
-- What a live lineage still says: the rows of claims_live, for reads that need the claim's own
-- columns beside them.
CREATE VIEW memory_v1_private.live_claims AS
SELECT c.*
FROM memory_v1_private.visible_claims c
WHERE c.is_current_testimony;

-- @support believed_facts
-- Facts the memory holds now: surviving provenance and not retracted. Earlier belief (a past
-- `believed_at`) reads visible_facts with its own clock.
CREATE VIEW memory_v1_private.believed_facts AS
SELECT f.*
FROM memory_v1_private.visible_facts f
WHERE f.invalidated_at IS NULL;

-- @support servable_indexes
-- entity_provenance finds an entity's mentions by entity.
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity_id) WHERE entity_id IS NOT NULL;
