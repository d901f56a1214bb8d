-- Claims (what a source said), where they occur, the audit ledger and the cost ledger.
-- Claims are append-only: nothing here is updated except currency bookkeeping.

CREATE TABLE claims (
    claim_id                uuid PRIMARY KEY,
    doc_id                  uuid NOT NULL REFERENCES documents,
    -- the version and chunk the claim was extracted from; later versions that keep the passage
    -- unchanged point at the same claim through claim_occurrences
    version_id              uuid NOT NULL REFERENCES versions,
    chunk_id                uuid NOT NULL REFERENCES chunks,
    claim_text              text NOT NULL,
    source_span             text NOT NULL,
    char_start              integer NOT NULL,
    char_end                integer NOT NULL CHECK (char_end > char_start),
    evidence_spans          jsonb NOT NULL,
    is_attributed           boolean NOT NULL,
    asserted_at             timestamptz,
    -- world time as the claim states it; ends are inclusive; day and coarser precisions hold
    -- the first instant of the first and of the last day
    claim_valid_from        timestamptz,
    claim_valid_until       timestamptz,
    claim_valid_precision   text NOT NULL CHECK (claim_valid_precision IN
                              ('instant', 'day', 'month', 'quarter', 'year', 'open', 'unknown')),
    claim_valid_kind        text CHECK (claim_valid_kind IN
                              ('event_time', 'effective_period', 'measurement_period', 'proposition_validity')),
    added_context           jsonb NOT NULL DEFAULT '[]',
    entailment_self_verdict text,
    extractor               text NOT NULL,
    is_current_testimony    boolean NOT NULL DEFAULT true,
    currency_reason         text CHECK (currency_reason IN
                              ('reextracted', 'version_superseded', 'version_deleted', 'review_restored')),
    tsv                     tsvector GENERATED ALWAYS AS (to_tsvector('english', claim_text)) STORED,
    embedding               vector,
    created_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX claims_doc ON claims (doc_id);
CREATE INDEX claims_version ON claims (version_id);
CREATE INDEX claims_tsv ON claims USING gin (tsv);

CREATE TABLE claim_occurrences (
    claim_id          uuid NOT NULL REFERENCES claims,
    version_id        uuid NOT NULL REFERENCES versions,
    chunk_id          uuid NOT NULL REFERENCES chunks,
    char_start        integer NOT NULL,
    char_end          integer NOT NULL,
    evidence_spans    jsonb NOT NULL,
    PRIMARY KEY (claim_id, version_id)
);
CREATE INDEX claim_occurrences_version ON claim_occurrences (version_id);

-- The audit ledger: one row per decision that kept text out of memory or changed its wording.
CREATE TABLE extraction_ledger (
    ledger_id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id        uuid NOT NULL REFERENCES versions,
    chunk_id          uuid NOT NULL REFERENCES chunks,
    decision          text NOT NULL CHECK (decision IN ('selection_drop', 'selection_keep_flagged',
                        'decontext_edit', 'claimify_omitted', 'grounding_rejected')),
    reason            text,
    detail            text,
    char_start        integer NOT NULL,
    char_end          integer NOT NULL,
    extractor         text NOT NULL,
    recorded_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extraction_ledger_version ON extraction_ledger (version_id);

-- One row per model call or batch of calls: no document text, only what it cost.
CREATE TABLE cost_ledger (
    cost_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version_id        uuid REFERENCES versions,
    stage             text NOT NULL,
    backend           text NOT NULL,
    model             text NOT NULL,
    calls             integer NOT NULL,
    tokens_in         bigint NOT NULL,
    tokens_out        bigint NOT NULL,
    device_seconds    double precision NOT NULL,
    occurred_at       timestamptz NOT NULL DEFAULT now()
);

-- Which extractor read this chunk (even when it found no claim), so an unchanged passage in a
-- later version is not read again by the same extractor.
ALTER TABLE chunks ADD COLUMN extracted_by text;
