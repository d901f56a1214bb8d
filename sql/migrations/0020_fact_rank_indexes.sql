-- The facts of a set of entities, ranked without reading the facts themselves. A fact row carries
-- its vector (about 2 KB), so each fact the read API's entity channel ranked was a page read:
-- 1,905 facts of the 20 entities nearest a question read 1,688 pages (15 ms, of a memory of
-- 60,691 facts). With what the ranking needs in the index, each side is an index-only scan:
-- 2.7 ms. They replace 0003's plain indexes on the same columns, which they serve as well.

-- @support fact_rank_indexes
-- The facts naming an entity, as subject or as object, with what ranks them.
DROP INDEX IF EXISTS facts_subject;
DROP INDEX IF EXISTS facts_object;
CREATE INDEX IF NOT EXISTS facts_subject_rank ON facts (subject_id)
    INCLUDE (evidence_count, valid_from, label, fact_id, predicate);
CREATE INDEX IF NOT EXISTS facts_object_rank ON facts (object_id)
    INCLUDE (evidence_count, valid_from, label, fact_id, predicate);
