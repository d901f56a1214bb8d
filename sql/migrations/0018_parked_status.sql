-- A parked version reads as parked. The authority keeps a version waiting for a converter route
-- at status 'converting' with its `parked_reason` (the work queue reads the pair), and 0004's
-- views passed that status through, so an import of files no converter reads listed every one of
-- them as converting, for ever. What a version's status reads as is decided here, once: the
-- memory_v1 views, the read API's /documents and `corpusmem status` all call `version_status`,
-- and the views name the reason beside it.
--
-- `@support` and `@view` sections here replace those of 0004 in the query-space manifest; the
-- `@comments` section follows the description's new words for the two status columns.

-- @support version_status
-- `parked` for a version that waits for a converter route, else its stored status.
CREATE FUNCTION memory_v1_private.version_status(status text, parked_reason text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN parked_reason IS NOT NULL AND status = 'converting' THEN 'parked' ELSE status END $$;

-- @support lineages
-- Live documents with their current version: the newest ready one, else the newest not deleted;
-- its status as it reads (`version_status`) and, when parked, why.
CREATE OR REPLACE VIEW memory_v1_private.lineages AS
SELECT dep.deployment_id, d.doc_id, d.source_kind, d.source_ref, d.title, d.versioning_mode, d.created_at,
       d.source_kind || ':' || d.source_ref AS source_handle,
       cv.version_id AS current_version_id, cv.seq AS current_version_no,
       memory_v1_private.version_status(cv.status, cv.parked_reason) AS current_version_status,
       r.version_id AS current_representation_id, cv.source_modified_at,
       (SELECT max(v.ingested_at) FROM versions v WHERE v.doc_id = d.doc_id AND v.seq > 1) AS last_observed_at,
       CASE WHEN cv.status = 'converting' THEN cv.parked_reason END AS current_version_parked_reason
FROM deployment dep
CROSS JOIN documents d
LEFT JOIN LATERAL (SELECT v.version_id, v.seq, v.status, v.source_modified_at, v.parked_reason FROM versions v
                   WHERE v.doc_id = d.doc_id AND v.status <> 'deleted'
                   ORDER BY (v.status = 'ready') DESC, v.seq DESC LIMIT 1) cv ON true
LEFT JOIN representations r ON r.version_id = cv.version_id AND cv.status = 'ready'
WHERE d.deleted_at IS NULL;

-- @view documents_live
CREATE OR REPLACE VIEW memory_v1.documents_live (
    deployment_id, doc_id, source_kind, source_ref, source_uri, title, versioning_mode, origin, first_seen_at,
    last_observed_at, current_version_id, current_version_no, current_version_status, current_representation_id,
    has_current_ready_content, source_modified_at, published_at, language, current_version_parked_reason) AS
SELECT l.deployment_id, l.doc_id, l.source_kind, l.source_ref, NULL::text, l.title, l.versioning_mode, 'external'::text,
       l.created_at, l.last_observed_at, l.current_version_id, l.current_version_no, l.current_version_status,
       l.current_representation_id, l.current_representation_id IS NOT NULL, l.source_modified_at,
       NULL::timestamptz, NULL::text, l.current_version_parked_reason
FROM memory_v1_private.lineages l;

-- @view document_versions_visible
CREATE OR REPLACE VIEW memory_v1.document_versions_visible (
    deployment_id, version_id, doc_id, version_no, content_hash, source_version_ref, status,
    current_representation_id, ingested_at, source_modified_at, published_at, language, superseded_at,
    is_current_version, parked_reason) AS
SELECT l.deployment_id, v.version_id, v.doc_id, v.seq, v.content_hash, v.source_version_ref,
       memory_v1_private.version_status(v.status, v.parked_reason),
       r.version_id, v.ingested_at, v.source_modified_at, NULL::timestamptz, NULL::text,
       CASE WHEN v.version_id <> l.current_version_id AND v.seq < l.current_version_no
            THEN (SELECT min(n.ingested_at) FROM versions n
                  WHERE n.doc_id = v.doc_id AND n.seq > v.seq AND n.status = 'ready') END,
       v.version_id = l.current_version_id,
       CASE WHEN v.status = 'converting' THEN v.parked_reason END
FROM versions v
JOIN memory_v1_private.lineages l ON l.doc_id = v.doc_id
LEFT JOIN representations r ON r.version_id = v.version_id AND v.status = 'ready'
WHERE v.status <> 'deleted';

-- @comments
COMMENT ON COLUMN memory_v1.document_versions_visible.status IS 'Processing status of the version, such as ready or failed; parked when it waits for a converter route (parked_reason says why). Values: `ingesting`, `converting`, `structuring`, `ready`, `failed`, `deleted`, `parked`.';
COMMENT ON COLUMN memory_v1.document_versions_visible.parked_reason IS 'Why a parked version waits, null for any other status. Values: `no_route` (no converter route for its type; `corpusmem retry` converts it once one exists).';
COMMENT ON COLUMN memory_v1.documents_live.current_version_status IS 'Processing status of the current version, null when there is no visible current version; parked when it waits for a converter route (current_version_parked_reason says why). Values: `ingesting`, `converting`, `structuring`, `ready`, `failed`, `deleted`, `parked`.';
COMMENT ON COLUMN memory_v1.documents_live.current_version_parked_reason IS 'Why the current version is parked, null for any other status. Values: `no_route` (no converter route for its type; `corpusmem retry` converts it once one exists).';

-- @grants
-- The views call `version_status` with the reader's rights, like 0004's helpers.
REVOKE ALL ON FUNCTION memory_v1_private.version_status(text, text) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'corpusmem_query') THEN
        GRANT EXECUTE ON FUNCTION memory_v1_private.version_status(text, text) TO corpusmem_query;
    END IF;
END
$$;
