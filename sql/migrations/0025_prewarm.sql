-- PostgreSQL's own module for loading relations into its cache (`pg_prewarm`, a contrib module
-- shipped with the server): `corpusmem serve` loads the indexes its reads walk before the first
-- question (`authority.warm_cache`). An HNSW scan of 200 candidates touches about 2,000 pages of
-- the graph; on a server just started, most of them came through the kernel's cache one read at a
-- time. A server where the module is not installed, or this role may not create it, serves as
-- before, with a cold cache.

DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_prewarm;
EXCEPTION WHEN undefined_file OR insufficient_privilege OR feature_not_supported THEN
    RAISE NOTICE 'pg_prewarm is not available here: the read path starts with a cold cache';
END
$$;
