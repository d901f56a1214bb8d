-- A row's vector stays in the row.
--
-- pgvector stores a vector `external`: in a row over PostgreSQL's 2 KB toast target it is moved to
-- the table's TOAST relation, and a chunk (its text, its tsvector and a 1.5 KB vector) or a claim
-- of a long chat turn is such a row. Every read of that vector is then a TOAST lookup: the score
-- of each candidate an HNSW scan returns, every row of a sequential scan (which the planner prices
-- without them, and so chooses over the index for a table of a few thousand chunks), and the
-- tsvector each lexical candidate is scored with. With rows up to the largest that fits a page
-- kept whole, measured in one process over the kept development memories (recall unchanged), the
-- PostgreSQL CPU of a claims_and_sources_context: LongMemEval's 129 questions (25,532 claims,
-- 5,983 chunks) 39.2 → 23.1 ms, its chunks' nomination by meaning 14.2 → 1.8 ms; LoCoMo's 529
-- 14.7 → 11.2 ms; `bench serve`'s memory (108,367 claims) 14.0–14.2 → 12.4–12.8 ms.
--
-- The setting applies to rows written from now on; `VACUUM FULL claims, chunks, facts, entities`
-- (then `VACUUM ANALYZE` of the same, for the index-only scans) moves an existing memory's rows.

ALTER TABLE claims SET (toast_tuple_target = 8160);
ALTER TABLE chunks SET (toast_tuple_target = 8160);
ALTER TABLE facts SET (toast_tuple_target = 8160);
ALTER TABLE entities SET (toast_tuple_target = 8160);
