-- Indexes for the read API's nomination: fact labels matched as words inside a question
-- (ILIKE '%…%' goes through trigrams instead of reading every fact).
CREATE INDEX IF NOT EXISTS facts_label_trgm ON facts USING gin (label gin_trgm_ops);
