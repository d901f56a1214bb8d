-- Which normalizer read a claim, kept beside the claim rather than in its row. Marking a claim read
-- updated the claims row: a new version of the whole row (its text, spans and 384-dimension
-- vector) and of every index entry on it, the HNSW graph's included. Importing 1,000 notes into a
-- memory that already had its vector indexes spent 5.4 s of PostgreSQL's statement time on that
-- mark alone (the claims' own insert was 12.3 s), and each import left every new claim's first row
-- dead for vacuum. A row here is a claim ID, its version and the mark.
CREATE TABLE claim_normalizations (
    claim_id      uuid PRIMARY KEY REFERENCES claims (claim_id) ON DELETE CASCADE,
    version_id    uuid NOT NULL,
    normalized_by text
);
INSERT INTO claim_normalizations (claim_id, version_id, normalized_by)
SELECT claim_id, version_id, normalized_by FROM claims;
-- The claims still to read, by version: what the facts phase asks first, kept small.
CREATE INDEX claim_normalizations_unread ON claim_normalizations (version_id) WHERE normalized_by IS NULL;
DROP INDEX IF EXISTS claims_unnormalized;
ALTER TABLE claims DROP COLUMN normalized_by;
