-- The authority tables of the import spine: deployment, content objects, documents, versions,
-- representations, sections, chunks, per-version stage work and import runs.
-- Vector columns are created without a dimension; the deployment pins one (sql/store.py
-- `pin_deployment`), which types the columns and builds their HNSW indexes.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;

CREATE TABLE deployment (
    deployment_id     uuid PRIMARY KEY,
    -- one deployment per database
    singleton         boolean NOT NULL DEFAULT true UNIQUE CHECK (singleton),
    build_revision    text NOT NULL,
    embedding_model   text NOT NULL,
    embedding_dim     integer NOT NULL CHECK (embedding_dim > 0 AND embedding_dim <= 2000),
    created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE content_objects (
    content_hash      text PRIMARY KEY CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    size_bytes        bigint NOT NULL CHECK (size_bytes >= 0),
    -- the type of the first upload is kept (sticky per content)
    mime              text NOT NULL,
    object_key        text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    doc_id            uuid PRIMARY KEY,
    source_kind       text NOT NULL CHECK (length(source_kind) BETWEEN 1 AND 128),
    source_ref        text NOT NULL CHECK (length(source_ref) BETWEEN 1 AND 4096),
    title             text NOT NULL,
    filename          text NOT NULL,
    versioning_mode   text NOT NULL CHECK (versioning_mode IN ('snapshot', 'living')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    deleted_at        timestamptz,
    UNIQUE (source_kind, source_ref)
);

CREATE TABLE versions (
    version_id          uuid PRIMARY KEY,
    doc_id              uuid NOT NULL REFERENCES documents,
    seq                 integer NOT NULL CHECK (seq >= 1),
    content_hash        text NOT NULL REFERENCES content_objects,
    mime                text NOT NULL,
    -- said-on time; timestamptz cannot hold a naive value, and the importer refuses naive input
    source_modified_at  timestamptz,
    source_version_ref  text,
    ingested_at         timestamptz NOT NULL DEFAULT now(),
    status              text NOT NULL CHECK (status IN
                          ('ingesting', 'converting', 'structuring', 'ready', 'failed', 'deleted')),
    error               text,
    parked_reason       text CHECK (parked_reason IN ('no_route')),
    import_run_id       uuid,
    UNIQUE (doc_id, seq)
);
CREATE INDEX versions_content_hash ON versions (content_hash);

CREATE TABLE representations (
    version_id          uuid PRIMARY KEY REFERENCES versions,
    converter           text NOT NULL,
    converter_version   text NOT NULL,
    derivation          text NOT NULL CHECK (derivation IN ('passthrough', 'converted')),
    -- object-store key of document.md; every char offset below indexes that text
    object_key          text NOT NULL,
    char_count          integer NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sections (
    section_id        uuid PRIMARY KEY,
    version_id        uuid NOT NULL REFERENCES versions,
    ord               integer NOT NULL,
    heading           text,
    level             integer NOT NULL,
    role              text NOT NULL,
    char_start        integer NOT NULL,
    char_end          integer NOT NULL CHECK (char_end >= char_start),
    UNIQUE (version_id, ord)
);

CREATE TABLE chunks (
    chunk_id          uuid PRIMARY KEY,
    version_id        uuid NOT NULL REFERENCES versions,
    doc_id            uuid NOT NULL REFERENCES documents,
    section_id        uuid NOT NULL REFERENCES sections,
    ord               integer NOT NULL,
    char_start        integer NOT NULL,
    char_end          integer NOT NULL CHECK (char_end > char_start),
    text              text NOT NULL,
    text_hash         text NOT NULL,
    tsv               tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    embedding         vector,
    -- true when the vector was taken from an earlier version's chunk with the same text
    embedding_reused  boolean NOT NULL DEFAULT false,
    UNIQUE (version_id, ord)
);
CREATE INDEX chunks_doc_text_hash ON chunks (doc_id, text_hash);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);

CREATE TABLE stage_work (
    version_id        uuid NOT NULL REFERENCES versions,
    stage             text NOT NULL,
    status            text NOT NULL CHECK (status IN
                        ('missing', 'pending', 'running', 'succeeded', 'skipped', 'failed', 'dead_letter')),
    defer_reason      text,
    attempts          integer NOT NULL DEFAULT 0,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (version_id, stage)
);
CREATE INDEX stage_work_status ON stage_work (stage, status);

CREATE TABLE import_runs (
    run_id            uuid PRIMARY KEY,
    sources           jsonb NOT NULL,
    options           jsonb NOT NULL,
    status            text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    counts            jsonb,
    stage_seconds     jsonb,
    report            jsonb,
    started_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);

-- One row per item of a run that did not simply land: refused, failed, parked.
CREATE TABLE import_run_items (
    run_id            uuid NOT NULL REFERENCES import_runs,
    item              text NOT NULL,
    outcome           text NOT NULL,
    stage             text,
    error             text,
    version_id        uuid
);
CREATE INDEX import_run_items_run ON import_run_items (run_id);
