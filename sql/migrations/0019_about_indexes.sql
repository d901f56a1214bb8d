-- What is said about an entity, found by index. `ids_about` (0015) gathers the claims whose
-- assertions name the entity as subject or object; with no index on either column it read every
-- assertion for each question that names someone (125 ms for a person named in 6,924 claims of a
-- memory of 157,051, against 12.6 ms with these).

-- @support about_indexes
-- `ids_about` finds assertions by the entities they name.
CREATE INDEX IF NOT EXISTS assertions_subject ON assertions (subject_id) WHERE subject_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS assertions_object ON assertions (object_id) WHERE object_id IS NOT NULL;
