-- Entities, assertions, facts and every decision about them.
-- Facts change only through recorded decisions (fact_decisions); claims, assertions and
-- identity events are append-only.

-- An untyped referent: one entity however it is spelled.
CREATE TABLE entities (
    entity_id          uuid PRIMARY KEY,
    canonical_name     text NOT NULL,
    -- short prose from the entity's top facts; helps decide identity, is not the identity
    profile            text,
    profile_embedding  vector,
    profile_stale      boolean NOT NULL DEFAULT true,
    created_run        uuid,
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- Every spelling the sources used. `resolved_key` is the mention key that added it: during a
-- run only that key's resolver shard may see a spelling added in the same run.
CREATE TABLE entity_aliases (
    entity_id          uuid NOT NULL REFERENCES entities,
    alias              text NOT NULL,
    alias_key          text NOT NULL,
    dm_codes           text[] NOT NULL,
    resolved_key       text NOT NULL,
    added_run          uuid,
    added_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, alias_key)
);
CREATE INDEX entity_aliases_key ON entity_aliases (alias_key);
CREATE INDEX entity_aliases_trgm ON entity_aliases USING gin (alias_key gin_trgm_ops);
CREATE INDEX entity_aliases_dm ON entity_aliases USING gin (dm_codes);

-- A name as one document used it, and the entity it was resolved to.
CREATE TABLE mentions (
    doc_id             uuid NOT NULL REFERENCES documents,
    mention_key        text NOT NULL,
    surface            text NOT NULL,
    claim_id           uuid NOT NULL REFERENCES claims,  -- the first claim that used it: its context
    entity_id          uuid REFERENCES entities,
    asserted_at        timestamptz,
    PRIMARY KEY (doc_id, mention_key, surface)
);
CREATE INDEX mentions_unresolved ON mentions (mention_key) WHERE entity_id IS NULL;

-- One row per identity verdict: the mention, the step that decided it, the scores.
CREATE TABLE identity_events (
    event_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    doc_id             uuid NOT NULL,
    mention_key        text NOT NULL,
    surface            text NOT NULL,
    entity_id          uuid NOT NULL REFERENCES entities,
    verdict            text NOT NULL CHECK (verdict IN ('matched', 'new')),
    step               text NOT NULL CHECK (step IN ('document', 'T0', 'T1', 'T2', 'T3', 'rule',
                         'small_model', 'new')),
    candidates         jsonb NOT NULL DEFAULT '[]',
    resolver_version   text NOT NULL,
    run_id             uuid,
    decided_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX identity_events_entity ON identity_events (entity_id);

-- Merges are proposed for review, never applied by the engine.
CREATE TABLE merge_proposals (
    entity_id          uuid NOT NULL REFERENCES entities,
    other_id           uuid NOT NULL REFERENCES entities,
    score              real NOT NULL,
    reason             text NOT NULL,
    status             text NOT NULL DEFAULT 'proposed' CHECK (status IN ('proposed', 'accepted', 'rejected')),
    run_id             uuid,
    proposed_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, other_id),
    CHECK (entity_id < other_id)
);

-- What one claim asserts, normalized: a relation or an observation.
CREATE TABLE assertions (
    assertion_id       uuid PRIMARY KEY,
    claim_id           uuid NOT NULL REFERENCES claims,
    doc_id             uuid NOT NULL REFERENCES documents,
    ord                integer NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('relation', 'observation')),
    subject_key        text NOT NULL,
    predicate          text,
    object_key         text,
    attribute          text,
    value              text,
    statement          text NOT NULL,
    negated            boolean NOT NULL DEFAULT false,
    change             boolean NOT NULL DEFAULT false,
    ends_key           text,                   -- "moved from X": X's key; '*' for any earlier one
    -- the assertion's world-time window, fact-style (exclusive end), and where it came from:
    -- 'stated' by the claim, 'said_on' (a change announced as of the document date), 'none'
    valid_from         timestamptz,
    valid_until        timestamptz,
    valid_precision    text NOT NULL,
    window_source      text NOT NULL CHECK (window_source IN ('stated', 'said_on', 'none')),
    asserted_at        timestamptz,
    normalizer         text NOT NULL,
    subject_id         uuid REFERENCES entities,
    object_id          uuid REFERENCES entities,
    ends_id            uuid REFERENCES entities,
    anchor_id          uuid REFERENCES entities,
    status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'adjudicated', 'skipped')),
    -- times the claim came back as testimony after a removal: a returning claim is new testimony
    -- and makes a new fact, never revives the retracted one
    epoch              integer NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'relation') = (predicate IS NOT NULL AND object_key IS NOT NULL))
);
CREATE INDEX assertions_claim ON assertions (claim_id);
CREATE INDEX assertions_pending ON assertions (anchor_id) WHERE status = 'pending';

CREATE TABLE contradiction_groups (
    group_id           uuid PRIMARY KEY,
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- What is held true. `anchor_id` is the entity whose adjudicator shard owns the fact.
CREATE TABLE facts (
    fact_id             uuid PRIMARY KEY,
    kind                text NOT NULL CHECK (kind IN ('relation', 'observation')),
    anchor_id           uuid NOT NULL REFERENCES entities,
    subject_id          uuid NOT NULL REFERENCES entities,
    predicate           text,
    object_id           uuid REFERENCES entities,
    attribute           text,
    value               text,
    statement_key       text,                   -- an observation's wording, for matching repeats
    label               text NOT NULL,
    -- world time: exclusive end; precision never faked; partial windows stay partial
    valid_from          timestamptz,
    valid_until         timestamptz,
    valid_precision     text NOT NULL CHECK (valid_precision IN
                          ('instant', 'day', 'month', 'quarter', 'year', 'open', 'unknown')),
    window_source       text NOT NULL CHECK (window_source IN ('stated', 'said_on', 'none')),
    -- belief time
    ingested_at         timestamptz NOT NULL DEFAULT now(),
    invalidated_at      timestamptz,
    support             text NOT NULL DEFAULT 'current' CHECK (support IN ('current', 'withdrawn')),
    evidence_count      integer NOT NULL DEFAULT 0,
    contradicting_count integer NOT NULL DEFAULT 0,
    contradiction_group uuid REFERENCES contradiction_groups,
    superseded_by       uuid REFERENCES facts,
    tsv                 tsvector GENERATED ALWAYS AS (to_tsvector('english', label)) STORED,
    embedding           vector,
    created_run         uuid,
    CHECK ((kind = 'relation') = (predicate IS NOT NULL AND object_id IS NOT NULL))
);
CREATE INDEX facts_anchor ON facts (anchor_id);
CREATE INDEX facts_subject ON facts (subject_id);
CREATE INDEX facts_object ON facts (object_id);
CREATE INDEX facts_group ON facts (contradiction_group) WHERE contradiction_group IS NOT NULL;
CREATE INDEX facts_tsv ON facts USING gin (tsv);

-- Claims attached to a fact, with their stance.
CREATE TABLE fact_evidence (
    fact_id            uuid NOT NULL REFERENCES facts,
    assertion_id       uuid NOT NULL REFERENCES assertions,
    claim_id           uuid NOT NULL REFERENCES claims,
    doc_id             uuid NOT NULL REFERENCES documents,
    stance             text NOT NULL CHECK (stance IN ('supports', 'contradicts')),
    attached_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (fact_id, assertion_id)
);
CREATE INDEX fact_evidence_claim ON fact_evidence (claim_id);

-- The decision transcript: one row per decision about a fact.
CREATE TABLE fact_decisions (
    decision_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id            uuid NOT NULL REFERENCES facts,
    subject_kind       text NOT NULL CHECK (subject_kind IN ('relation', 'observation')),
    outcome            text NOT NULL CHECK (outcome IN ('add', 'noop', 'update', 'contradict',
                         'retracted_source_removal', 'support_withdrawn', 'support_restored')),
    method             text NOT NULL,
    confidence         real,
    related_id         uuid,
    assertion_id       uuid,
    claim_ids          uuid[] NOT NULL DEFAULT '{}',
    decided_by         text NOT NULL,
    decided_at         timestamptz NOT NULL DEFAULT now(),
    features           jsonb NOT NULL DEFAULT '{}',
    rationale          text,
    run_id             uuid
);
CREATE INDEX fact_decisions_fact ON fact_decisions (fact_id, decision_id);

-- Testimony currency changes, for audit (living removals, deletions, re-extraction).
CREATE TABLE testimony_currency_events (
    event_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    claim_id           uuid NOT NULL REFERENCES claims,
    is_current         boolean NOT NULL,
    reason             text NOT NULL,
    version_id         uuid,
    occurred_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX testimony_currency_events_claim ON testimony_currency_events (claim_id);

-- Which normalizer read a claim (even when it found no assertion), so a claim is read once.
ALTER TABLE claims ADD COLUMN normalized_by text;
CREATE INDEX claims_unnormalized ON claims (version_id) WHERE normalized_by IS NULL;
CREATE INDEX facts_statement_trgm ON facts USING gin (statement_key gin_trgm_ops);
