-- The claims of the days a question names ("What did I do two weeks ago?", "What did I mention
-- last Tuesday?", asked on a given day): those whose world time starts on them, and those said on
-- them. `read_queries.nominate_days` reads both ranges through these indexes, so the read is two
-- index scans and not a pass over every claim.
CREATE INDEX IF NOT EXISTS claims_valid_from ON claims (claim_valid_from);
CREATE INDEX IF NOT EXISTS claims_asserted_at ON claims (asserted_at);
