-- Who created a version (the seed's `ingested_by`): the `X-Ingest-Principal-Kind` and
-- `X-Ingest-Principal-Ref` headers of `POST /ingest`, when the deployment trusts them.
--
-- Three kinds, never collapsed into one another: `user` (a person), `api_credential` (a machine
-- credential a person made) and `service` (the deployment's own automation). The ref is opaque
-- to the engine and is personal data: it lives in these two columns alone, so erasing an actor is
-- `UPDATE versions SET ingested_by_kind = NULL, ingested_by_ref = NULL WHERE ...`, and no view of
-- the memory_v1 query space exposes it. Set once, when the version is created; a version from an
-- import, or from an untrusted request, has neither.
ALTER TABLE versions
    ADD COLUMN ingested_by_kind text CHECK (ingested_by_kind IN ('user', 'api_credential', 'service')),
    ADD COLUMN ingested_by_ref  text CHECK (ingested_by_ref ~ '^[ -~]{1,255}$'),
    ADD CONSTRAINT versions_ingested_by_pair CHECK ((ingested_by_kind IS NULL) = (ingested_by_ref IS NULL));
