-- The claims of the days a question names ("What did I do two weeks ago?", asked on a given day):
-- a claim's day is where its world time starts when it states one, else the instant it was said.
-- `read_queries.nominate_days` reads them by this expression, spelt the same, so the range is an
-- index scan and not a pass over every claim.
CREATE INDEX IF NOT EXISTS claims_day ON claims ((coalesce(claim_valid_from, asserted_at)));
