-- The chunks about an entity, found claim by claim. `ids_about` (0015) ran its chunks branch as a
-- hash join over every claim occurrence: a SQL function's body is planned without the entities it
-- is asked about, so PostgreSQL took them for many. The claims about one entity of `bench serve`'s
-- memory (108,367 claims) are a few hundred, and their chunks cost 15.3 ms a question, against
-- 1.3 ms read through the occurrences' key one claim at a time (`OFFSET 0` keeps the lookup a
-- correlated subquery); the same ids for every entity, alone and three at a time. A
-- claims_and_sources_context anchored on an entity nominates chunks about it twice.

-- @support ids_about
-- The claims (or chunks carrying them) about the entities `about`, and about every entity merged
-- into one of them.
CREATE OR REPLACE FUNCTION memory_v1_private.ids_about(source text, about uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE
AS $$
    WITH e AS (SELECT about || coalesce((SELECT array_agg(r.entity_id) FROM memory_v1_private.redirected r
                                         WHERE r.survivor_id = ANY(about)), '{}') AS ids),
    c AS (SELECT m.claim_id FROM public.mentions m, e WHERE m.entity_id = ANY(e.ids)
          UNION SELECT a.claim_id FROM public.assertions a, e WHERE a.subject_id = ANY(e.ids) OR a.object_id = ANY(e.ids))
    SELECT claim_id FROM c WHERE source = 'claims'
    UNION ALL
    SELECT DISTINCT co.chunk_id FROM c CROSS JOIN LATERAL (SELECT o.chunk_id FROM public.claim_occurrences o
                                                            WHERE o.claim_id = c.claim_id OFFSET 0) co
    WHERE source = 'chunks'
$$;
