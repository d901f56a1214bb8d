-- One read engine: every rule of reading is one SQL function or view, which the read API
-- (`sql/read/`) and the query space (`memory_v1`) both call.
--
--   believed        the belief clock: ingested by an instant and not yet invalidated at it
--   may_hold        a world window does not rule an instant out (an unknown bound is open)
--   window_complete a known start, and a known end or `open` precision
--   walkable_edges  the relations a graph walk may follow (both surfaces' graph routes)
--   semantic_nominate  nomination by meaning, beside 0010's lexical_nominate
--
-- The rules are single-expression SQL functions, which PostgreSQL inlines where they are called:
-- a query written with them is planned as if it spelt them out, with the same indexes. A rule's
-- body names no other function: the sandbox role, which reads facts_current and may not look into
-- memory_v1_private, could not inline it. Confirmed at an instant is window_complete AND may_hold.
--
-- It also folds what every search and graph function of 0004 repeated into helpers
-- (`search_nominees`, `record_search`, `budget`, `walk_budget_spent`, `graph_record`) and redefines
-- those functions with them; their signatures, answers and errors are unchanged. `@support` and
-- `@function` sections here replace those of 0004 and later migrations in the query-space manifest.

-- @support clocks
-- The belief clock (transaction time): believed at `b` when ingested by then and not yet
-- invalidated at it.
CREATE FUNCTION memory_v1_private.believed(ingested_at timestamptz, invalidated_at timestamptz, b timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT ingested_at <= b AND (invalidated_at IS NULL OR invalidated_at > b) $$;

-- World time: a window does not rule `v` out. Its start is inclusive, its end exclusive, and an
-- unknown bound is open on its side, so an unknown or partial window is a possible match.
CREATE FUNCTION memory_v1_private.may_hold(valid_from timestamptz, valid_until timestamptz, v timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (valid_from IS NULL OR valid_from <= v) AND (valid_until IS NULL OR valid_until > v) $$;

-- A window whose dates can confirm a match: a known start, and a known end or explicitly open.
-- A NULL end alone never establishes ongoing validity.
CREATE FUNCTION memory_v1_private.window_complete(valid_from timestamptz, valid_until timestamptz,
                                                  valid_precision text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT valid_from IS NOT NULL AND (valid_until IS NOT NULL OR valid_precision = 'open') $$;

-- @support current_facts
-- Facts believed and confirmed at evaluated_at: unknown and partial windows are only possible
-- matches.
CREATE OR REPLACE VIEW memory_v1_private.current_facts AS
SELECT f.*, memory_v1_private.evaluated_at() AS evaluated_at
FROM memory_v1_private.visible_facts f
WHERE memory_v1_private.believed(f.ingested_at, f.invalidated_at, memory_v1_private.evaluated_at())
  AND memory_v1_private.window_complete(f.valid_from, f.valid_until, f.valid_precision)
  AND memory_v1_private.may_hold(f.valid_from, f.valid_until, memory_v1_private.evaluated_at());

-- @support graph_edges
-- The relations a graph walk may follow from `frontier`: believed at `believed_at`, not withdrawn,
-- confirmed at `valid_at` (a complete window that holds there), with surviving provenance and two
-- visible entities; only `predicates` when given. POST /graph/neighborhood and /graph/path, the
-- read API's graph expansion and memory_v1's graph_neighborhood / graph_path all walk these.
--
-- Why a complete window, and not "an unknown bound is open" as the read API walked before: the seed
-- defines the live graph as the current relations (graph_edges_current "inherits the facts_current
-- membership rule"), and facts_current excludes unknown and partial windows ("A NULL end alone
-- never establishes ongoing validity"). An edge carries no temporal_match, so a walk has no way to
-- say that a step is only possible: a path through an undated relation would be served as if it
-- held. Such relations stay readable as facts, marked `possible`.
--
-- The candidates are found through the facts' own indexes first (MATERIALIZED keeps that plan:
-- with the servable checks folded in, PostgreSQL walked a whole index instead), then each is
-- confirmed against the views that decide what is servable.
CREATE FUNCTION memory_v1_private.walkable_edges(valid_at timestamptz, believed_at timestamptz, predicates text[],
                                                 frontier uuid[])
RETURNS TABLE (relation_id uuid, subject_id uuid, object_id uuid, predicate text, label text, evidence_count integer,
               valid_from timestamptz, valid_until timestamptz, valid_precision text, ingested_at timestamptz,
               invalidated_at timestamptz, support text)
LANGUAGE sql STABLE
AS $$
    WITH f AS MATERIALIZED (
        SELECT f.fact_id, f.subject_id, f.object_id, f.predicate, f.label, f.evidence_count, f.valid_from,
               f.valid_until, f.valid_precision, f.ingested_at, f.invalidated_at, f.support
        FROM public.facts f
        WHERE f.kind = 'relation' AND f.support = 'current'
          AND (f.subject_id = ANY(frontier) OR f.object_id = ANY(frontier))
          AND (predicates IS NULL OR f.predicate = ANY(predicates))
          AND memory_v1_private.believed(f.ingested_at, f.invalidated_at, believed_at)
          AND memory_v1_private.window_complete(f.valid_from, f.valid_until, f.valid_precision)
          AND memory_v1_private.may_hold(f.valid_from, f.valid_until, valid_at))
    SELECT f.* FROM f
    WHERE f.fact_id IN (SELECT v.fact_id FROM memory_v1_private.visible_facts v)
      AND f.subject_id IN (SELECT p.entity_id FROM memory_v1_private.entity_provenance p)
      AND f.object_id IN (SELECT p.entity_id FROM memory_v1_private.entity_provenance p)
$$;

-- memory_v1's walks: the walkable edges at both clocks (evaluated_at when neither is given), in
-- relation order.
CREATE OR REPLACE FUNCTION memory_v1_private.graph_edges(valid_at timestamptz, believed_at timestamptz,
                                                         predicates text[], frontier uuid[])
RETURNS TABLE (relation_id uuid, subject_id uuid, object_id uuid)
LANGUAGE sql STABLE
AS $$
    SELECT e.relation_id, e.subject_id, e.object_id
    FROM memory_v1_private.walkable_edges(coalesce($1, memory_v1_private.evaluated_at()),
                                          coalesce($2, memory_v1_private.evaluated_at()), $3, $4) e
    ORDER BY 1
$$;

-- @support semantic_nominate
-- Ids of `source` best first by pgvector cosine distance to `qv`, ties by id, among the rows that
-- have a vector: the claims (or chunks carrying them) about the entities `about` when given, only
-- claims whose world time is known when `dated`, only facts of `predicate` when given. Table names
-- are fixed here, never caller text; the branch of `source` is the one PostgreSQL plans.
CREATE FUNCTION memory_v1_private.semantic_nominate(source text, qv public.vector, k integer,
                                                    about uuid[] DEFAULT NULL, dated boolean DEFAULT false,
                                                    predicate text DEFAULT NULL)
RETURNS TABLE (id uuid, score double precision, ord bigint)
LANGUAGE sql STABLE
AS $$
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT c.claim_id AS i, c.embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.claims c
        WHERE semantic_nominate.source = 'claims' AND semantic_nominate.about IS NULL AND c.embedding IS NOT NULL
          AND (NOT semantic_nominate.dated OR c.claim_valid_precision <> 'unknown')
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
    UNION ALL
    -- The restriction to `about` is a branch of its own, never an OR: PostgreSQL then reads the
    -- few claims about them and sorts them exactly, instead of filtering the approximate nearest
    -- neighbours of the whole table (which may hold none of them).
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT c.claim_id AS i, c.embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.claims c
        WHERE semantic_nominate.source = 'claims' AND semantic_nominate.about IS NOT NULL AND c.embedding IS NOT NULL
          AND c.claim_id IN (SELECT memory_v1_private.ids_about('claims', semantic_nominate.about))
          AND (NOT semantic_nominate.dated OR c.claim_valid_precision <> 'unknown')
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
    UNION ALL
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT c.chunk_id AS i, c.embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.chunks c
        WHERE semantic_nominate.source = 'chunks' AND semantic_nominate.about IS NULL AND c.embedding IS NOT NULL
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
    UNION ALL
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT c.chunk_id AS i, c.embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.chunks c
        WHERE semantic_nominate.source = 'chunks' AND semantic_nominate.about IS NOT NULL AND c.embedding IS NOT NULL
          AND c.chunk_id IN (SELECT memory_v1_private.ids_about('chunks', semantic_nominate.about))
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
    UNION ALL
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT f.fact_id AS i, f.embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.facts f
        WHERE semantic_nominate.source = 'facts' AND f.embedding IS NOT NULL
          AND (semantic_nominate.predicate IS NULL OR f.predicate = semantic_nominate.predicate)
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
    UNION ALL
    SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
        SELECT e.entity_id AS i, e.profile_embedding OPERATOR(public.<=>) semantic_nominate.qv AS d FROM public.entities e
        WHERE semantic_nominate.source = 'entities' AND e.profile_embedding IS NOT NULL
        ORDER BY 2, 1 LIMIT semantic_nominate.k) n
$$;

-- @support nominations
-- Each channel's one definition: semantic_nominate and lexical_nominate (0010), which the read
-- API calls too.
CREATE OR REPLACE FUNCTION memory_v1_private.nominate(source text, channel text, query text, qv public.vector, k integer)
RETURNS TABLE (id uuid, score double precision, ord bigint)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF channel = 'semantic' THEN
        RETURN QUERY SELECT s.id, s.score, s.ord FROM memory_v1_private.semantic_nominate(source, qv, k) s;
    ELSE
        RETURN QUERY SELECT l.id, l.score, l.ord FROM memory_v1_private.lexical_nominate(source, query, k) l;
    END IF;
END
$$;

-- @support search_nominees
-- What every search function does before it confirms: k, the filter checks, the generation check,
-- the query vector (semantic), the statement's candidate budget, then the nominated ids and
-- scores, best first.
CREATE FUNCTION memory_v1_private.search_nominees(fn text, source text, channel text, query text, k integer,
                                                  filters jsonb, spec jsonb, policy_version text, generation text,
                                                  OUT ids uuid[], OUT scores double precision[], OUT model text)
LANGUAGE plpgsql
AS $$
DECLARE
    kk integer := memory_v1_private.search_k(k);
    qv public.vector;
BEGIN
    PERFORM memory_v1_private.check_filters(fn, filters, spec);
    model := memory_v1_private.check_generation(policy_version, generation);
    IF channel = 'semantic' THEN
        qv := memory_v1_private.query_vector(query);
    END IF;
    PERFORM memory_v1_private.spend_candidates(kk);
    SELECT coalesce(array_agg(n.id ORDER BY n.ord), '{}'), coalesce(array_agg(n.score ORDER BY n.ord), '{}')
      INTO ids, scores FROM memory_v1_private.nominate(source, channel, query, qv, kk) n;
END
$$;

-- The SemanticInvocation of a search: of `nominated` ids, `live` still served, `kept` after the
-- caller's filters.
CREATE FUNCTION memory_v1_private.record_search(fn text, nominated integer, live integer, kept integer,
                                                embedder_generation text) RETURNS void
LANGUAGE sql
AS $$ SELECT memory_v1_private.record_invocation(fn, nominated, kept,
         jsonb_build_object('dropped_stale', nominated - live, 'dropped_filtered', live - kept), embedder_generation) $$;

-- @support search_claims
CREATE OR REPLACE FUNCTION memory_v1_private.search_claims(fn text, channel text, query text, k integer, filters jsonb,
                                                           policy_version text, generation text)
RETURNS TABLE (rank integer, score double precision, channel_out text, claim_id uuid, doc_id uuid, claim_text text,
               source_handle text, source_kind text, asserted_at timestamptz, claim_valid_from timestamptz,
               claim_valid_until timestamptz)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    n record;
    live integer;
    kept integer;
BEGIN
    SELECT * INTO n FROM memory_v1_private.search_nominees(fn, 'claims', channel, query, k, filters,
        '{"asserted_from": "instant", "asserted_to": "instant", "doc_id": "uuid", "entity_id": "uuid", "source_kind": "string"}',
        policy_version, generation);
    SELECT count(*) INTO live FROM memory_v1.claims_live c WHERE c.claim_id = ANY(n.ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY o.ord))::integer, o.score, channel, c.claim_id, c.doc_id, c.claim_text,
           c.source_handle, c.source_kind, c.asserted_at, c.claim_valid_from, c.claim_valid_until
    FROM unnest(n.ids, n.scores) WITH ORDINALITY AS o(id, score, ord)
    JOIN memory_v1.claims_live c ON c.claim_id = o.id
    WHERE (filters ->> 'doc_id' IS NULL OR c.doc_id = (filters ->> 'doc_id')::uuid)
      AND (filters ->> 'source_kind' IS NULL OR c.source_kind = filters ->> 'source_kind')
      AND (filters ->> 'asserted_from' IS NULL OR c.asserted_at >= (filters ->> 'asserted_from')::timestamptz)
      AND (filters ->> 'asserted_to' IS NULL OR c.asserted_at <= (filters ->> 'asserted_to')::timestamptz)
      AND (filters ->> 'entity_id' IS NULL OR EXISTS (
            SELECT 1 FROM memory_v1.mentions_live m WHERE m.claim_id = c.claim_id
              AND m.resolved_entity_id = (filters ->> 'entity_id')::uuid)
           OR EXISTS (SELECT 1 FROM public.assertions a WHERE a.claim_id = c.claim_id
              AND (filters ->> 'entity_id')::uuid IN (a.subject_id, a.object_id)))
    ORDER BY o.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_search(fn, cardinality(n.ids), live, kept,
                                            CASE WHEN channel = 'semantic' THEN n.model END);
END
$$;

-- @support search_chunks
CREATE OR REPLACE FUNCTION memory_v1_private.search_chunks(fn text, channel text, query text, k integer, filters jsonb,
                                                           policy_version text, generation text)
RETURNS TABLE (rank integer, score double precision, channel_out text, chunk_id uuid, doc_id uuid, version_id uuid,
               representation_id uuid, section_id uuid, chunk_content_hash text, embedding_text_hash text,
               source_text text, location_header text, embedding_input_policy_version text, policy_generation text,
               embedder_generation text, created_at timestamptz)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    n record;
    live integer;
    kept integer;
BEGIN
    SELECT * INTO n FROM memory_v1_private.search_nominees(fn, 'chunks', channel, query, k, filters,
        '{"doc_id": "uuid", "language": "string", "source_kind": "string", "source_shape": "string",
          "section_role": ["body", "abstract", "introduction", "results", "methods", "discussion", "conclusion",
                           "references", "appendix", "table", "figure_caption", "nav", "boilerplate", "legal"]}',
        policy_version, generation);
    SELECT count(*) INTO live FROM memory_v1.chunks_live c WHERE c.chunk_id = ANY(n.ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY o.ord))::integer, o.score, channel, c.chunk_id, c.doc_id, c.version_id,
           c.representation_id, c.section_id, c.chunk_content_hash, c.embedding_text_hash, ch.text, c.location_header,
           c.embedding_input_policy_version, c.policy_generation, c.embedder_generation, c.created_at
    FROM unnest(n.ids, n.scores) WITH ORDINALITY AS o(id, score, ord)
    JOIN memory_v1.chunks_live c ON c.chunk_id = o.id
    JOIN public.chunks ch ON ch.chunk_id = c.chunk_id
    JOIN memory_v1.documents_live d ON d.doc_id = c.doc_id
    LEFT JOIN memory_v1.sections_live s ON s.section_id = c.section_id
    WHERE (filters ->> 'doc_id' IS NULL OR c.doc_id = (filters ->> 'doc_id')::uuid)
      AND (filters ->> 'source_kind' IS NULL OR d.source_kind = filters ->> 'source_kind')
      AND (filters ->> 'language' IS NULL OR d.language = filters ->> 'language')
      AND (filters ->> 'section_role' IS NULL OR s.role = filters ->> 'section_role')
      -- we record no source shape: a shape filter keeps nothing
      AND (filters ->> 'source_shape' IS NULL)
    ORDER BY o.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_search(fn, cardinality(n.ids), live, kept,
                                            CASE WHEN channel = 'semantic' THEN n.model END);
END
$$;

-- @function semantic_facts
-- Confirmed against facts_current: a nominated fact that does not hold now is dropped.
CREATE OR REPLACE FUNCTION memory_v1.semantic_facts(query text, k integer, filters jsonb DEFAULT NULL,
                                                    embedding_input_policy_version text DEFAULT NULL,
                                                    embedder_generation text DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, fact_id uuid, fact_kind text, fact_label text,
               predicate text, subject_entity_id uuid, object_entity_id uuid, evidence_count bigint,
               contradict_count bigint, support_state text, evaluated_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    n record;
    live integer;
    kept integer;
BEGIN
    SELECT * INTO n FROM memory_v1_private.search_nominees('semantic_facts', 'facts', 'semantic', query, k, filters,
        '{"fact_kind": ["relation", "observation"], "support_state": ["current", "withdrawn"], "predicate": "string",
          "subject_entity_id": "uuid", "object_entity_id": "uuid"}',
        embedding_input_policy_version, embedder_generation);
    SELECT count(*) INTO live FROM memory_v1.facts_current f WHERE f.fact_id = ANY(n.ids);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY o.ord))::integer, o.score, 'semantic'::text, f.fact_id, f.fact_kind,
           f.fact_label, f.predicate, f.subject_entity_id, f.object_entity_id, f.evidence_count, f.contradict_count,
           f.support_state, f.evaluated_at
    FROM unnest(n.ids, n.scores) WITH ORDINALITY AS o(id, score, ord)
    JOIN memory_v1.facts_current f ON f.fact_id = o.id
    WHERE (filters ->> 'fact_kind' IS NULL OR f.fact_kind = filters ->> 'fact_kind')
      AND (filters ->> 'support_state' IS NULL OR f.support_state = filters ->> 'support_state')
      AND (filters ->> 'predicate' IS NULL OR f.predicate = filters ->> 'predicate')
      AND (filters ->> 'subject_entity_id' IS NULL OR f.subject_entity_id = (filters ->> 'subject_entity_id')::uuid)
      AND (filters ->> 'object_entity_id' IS NULL OR f.object_entity_id = (filters ->> 'object_entity_id')::uuid)
    ORDER BY o.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    PERFORM memory_v1_private.record_search('semantic_facts', cardinality(n.ids), live, kept, n.model);
END
$$;

-- @function semantic_entities
CREATE OR REPLACE FUNCTION memory_v1.semantic_entities(query text, k integer, filters jsonb DEFAULT NULL)
RETURNS TABLE (rank integer, score double precision, channel text, entity_id uuid, entity_type text,
               canonical_name text, profile_summary text, live_mention_count bigint, live_document_count bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    n record;
    kept integer;
BEGIN
    SELECT * INTO n FROM memory_v1_private.search_nominees('semantic_entities', 'entities', 'semantic', query, k,
                                                           filters, '{}', NULL, NULL);
    RETURN QUERY
    SELECT (row_number() OVER (ORDER BY o.ord))::integer, o.score, 'semantic'::text, e.entity_id, e.entity_type,
           e.canonical_name, e.profile_summary, e.live_mention_count, e.live_document_count
    FROM unnest(n.ids, n.scores) WITH ORDINALITY AS o(id, score, ord)
    JOIN memory_v1.entities_current e ON e.entity_id = o.id
    ORDER BY o.ord;
    GET DIAGNOSTICS kept = ROW_COUNT;
    -- an entity is never filtered: whatever is not kept is stale
    PERFORM memory_v1_private.record_search('semantic_entities', cardinality(n.ids), kept, kept, n.model);
END
$$;

-- @function facts_as_of
-- Believed at believed_at and not ruled out at valid_at: a complete window that holds is
-- `confirmed`, an unknown or partial one that may hold is `possible`.
CREATE OR REPLACE FUNCTION memory_v1.facts_as_of(valid_at timestamptz, believed_at timestamptz,
                                                 max_rows integer DEFAULT 200)
RETURNS TABLE (deployment_id uuid, fact_kind text, fact_id uuid, subject_entity_id uuid, predicate text,
               object_entity_id uuid, statement text, fact_label text, valid_from timestamptz, valid_until timestamptz,
               ingested_at timestamptz, invalidated_at timestamptz, contradiction_group uuid, confidence real,
               evidence_count_current bigint, contradict_count_current bigint, support_state_current text,
               applied_valid_at timestamptz, applied_believed_at timestamptz, identity_regime text,
               valid_precision text, temporal_match text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v timestamptz := facts_as_of.valid_at;
    b timestamptz := facts_as_of.believed_at;
BEGIN
    IF v IS NULL OR b IS NULL THEN
        RAISE EXCEPTION 'invalid_parameter: facts_as_of needs both valid_at and believed_at' USING ERRCODE = '22023';
    END IF;
    IF facts_as_of.max_rows IS NOT NULL AND facts_as_of.max_rows < 1 THEN
        RAISE EXCEPTION 'invalid_parameter: max_rows must be at least 1' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    SELECT f.deployment_id, f.fact_kind, f.fact_id, f.subject_entity_id, f.predicate, f.object_entity_id, f.statement,
           f.fact_label, f.valid_from, f.valid_until, f.ingested_at, f.invalidated_at, f.contradiction_group,
           f.confidence, f.evidence_count_current, f.contradict_count_current, f.support_state_current, v, b,
           'current'::text, f.valid_precision,
           CASE WHEN memory_v1_private.window_complete(f.valid_from, f.valid_until, f.valid_precision)
                THEN 'confirmed' ELSE 'possible' END
    FROM memory_v1.facts_visible_history f
    WHERE memory_v1_private.believed(f.ingested_at, f.invalidated_at, b)
      AND memory_v1_private.may_hold(f.valid_from, f.valid_until, v)
    ORDER BY f.evidence_count_current DESC, f.fact_id
    LIMIT least(coalesce(facts_as_of.max_rows, 200), 1000);
END
$$;

-- @support graph_budgets
-- A caller's budget, its default when not given, within 1 and the cap.
CREATE FUNCTION memory_v1_private.budget(asked integer, fallback integer, cap integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT greatest(1, least(coalesce(asked, fallback), cap)) $$;

-- The budget a walk has spent before it examines one more edge, or NULL.
CREATE FUNCTION memory_v1_private.walk_budget_spent(examined bigint, expand_cap integer, started timestamptz,
                                                    time_cap integer) RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT CASE WHEN examined >= expand_cap THEN 'expansion_budget'
                  WHEN clock_timestamp() - started > make_interval(secs => time_cap / 1000.0) THEN 'time_budget' END $$;

-- @support graph_invocation
-- Appends one GraphInvocation to the transaction-local `corpusmem.graph_invocations`, so the
-- runner learns what each graph call did even when the statement leaves the status row unread.
CREATE OR REPLACE FUNCTION memory_v1_private.record_graph_invocation(fn text, status jsonb) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    so_far jsonb := coalesce(nullif(current_setting('corpusmem.graph_invocations', true), '')::jsonb, '[]'::jsonb);
BEGIN
    PERFORM set_config('corpusmem.graph_invocations', (so_far || jsonb_build_array(
        jsonb_build_object('function', fn, 'ordinal', jsonb_array_length(so_far)) || status))::text, true);
END
$$;

-- Records the status a graph call ends with; true when the statement wants it as a row too. The
-- runner reads the status from corpusmem.graph_invocations and asks for no status row: a statement
-- that does not select row_kind could not tell it from a path.
CREATE FUNCTION memory_v1_private.graph_record(fn text, reason text, examined bigint, returned bigint,
                                               depth_cap integer, expand_cap integer, frontier_cap integer,
                                               results_cap integer, time_cap integer, applied_valid_at timestamptz,
                                               applied_believed_at timestamptz, evaluated_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM memory_v1_private.record_graph_invocation(fn,
        jsonb_build_object('truncated', reason IS NOT NULL, 'truncation_reason', reason, 'examined_edges', examined,
        'returned_paths', returned, 'effective_depth', depth_cap, 'effective_expansion_budget', expand_cap,
        'effective_frontier_budget', frontier_cap, 'effective_result_budget', results_cap,
        'effective_time_budget_ms', time_cap, 'applied_valid_at', applied_valid_at,
        'applied_believed_at', applied_believed_at, 'evaluated_at', evaluated_at));
    RETURN current_setting('corpusmem.graph_status_rows', true) IS DISTINCT FROM 'omit';
END
$$;

-- The status row a neighbourhood or path walk ends with, recorded for the runner as well.
CREATE OR REPLACE FUNCTION memory_v1_private.graph_status(fn text, reason text, examined bigint, returned bigint,
                                                          depth_cap integer, expand_cap integer, frontier_cap integer,
                                                          results_cap integer, time_cap integer, valid_at timestamptz,
                                                          believed_at timestamptz)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql
AS $$
BEGIN
    row_kind := 'status';
    truncated := reason IS NOT NULL;
    truncation_reason := reason;
    examined_edges := examined;
    returned_paths := returned;
    effective_depth := depth_cap;
    effective_expansion_budget := expand_cap;
    effective_frontier_budget := frontier_cap;
    effective_result_budget := results_cap;
    effective_time_budget_ms := time_cap;
    applied_valid_at := coalesce(graph_status.valid_at, memory_v1_private.evaluated_at());
    applied_believed_at := coalesce(graph_status.believed_at, memory_v1_private.evaluated_at());
    IF memory_v1_private.graph_record(fn, reason, examined, returned, depth_cap, expand_cap, frontier_cap, results_cap,
                                      time_cap, applied_valid_at, applied_believed_at, NULL) THEN
        RETURN NEXT;
    END IF;
END
$$;

-- @function graph_neighborhood
-- Breadth-first over relations in either direction: one shortest path to each entity reached,
-- then one status row. Budgets stop the walk and name themselves in truncation_reason.
CREATE OR REPLACE FUNCTION memory_v1.graph_neighborhood(deployment_id uuid, start_entity_id uuid,
                                                        max_depth integer DEFAULT 2, predicates text[] DEFAULT NULL,
                                                        valid_at timestamptz DEFAULT NULL,
                                                        believed_at timestamptz DEFAULT NULL,
                                                        max_results integer DEFAULT 100,
                                                        expansion_budget integer DEFAULT 2000,
                                                        frontier_budget integer DEFAULT 1000,
                                                        time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    depth_cap integer := memory_v1_private.budget(graph_neighborhood.max_depth, 2, 4);
    results_cap integer := memory_v1_private.budget(graph_neighborhood.max_results, 100, 500);
    expand_cap integer := memory_v1_private.budget(graph_neighborhood.expansion_budget, 2000, 2000);
    frontier_cap integer := memory_v1_private.budget(graph_neighborhood.frontier_budget, 1000, 1000);
    time_cap integer := memory_v1_private.budget(graph_neighborhood.time_budget_ms, 1000, 5000);
    started timestamptz := clock_timestamp();
    reason text;
    spent text;
    examined bigint := 0;
    returned bigint := 0;
    level integer := 0;
    frontier uuid[];
    next_frontier uuid[];
    visited uuid[];
    paths jsonb;
    edge record;
    here uuid;
    there uuid;
    path jsonb;
BEGIN
    PERFORM memory_v1_private.graph_check('graph_neighborhood', graph_neighborhood.deployment_id, valid_at, believed_at);
    IF graph_neighborhood.max_depth > 4 THEN
        reason := 'depth_budget';
    END IF;
    frontier := ARRAY[start_entity_id];
    visited := ARRAY[start_entity_id];
    paths := jsonb_build_object(start_entity_id::text, jsonb_build_object('r', '[]'::jsonb, 'n', jsonb_build_array(start_entity_id)));
    <<walk>>
    WHILE level < depth_cap AND cardinality(frontier) > 0 LOOP
        level := level + 1;
        next_frontier := '{}';
        FOR edge IN SELECT * FROM memory_v1_private.graph_edges(valid_at, believed_at, predicates, frontier) LOOP
            spent := memory_v1_private.walk_budget_spent(examined, expand_cap, started, time_cap);
            IF spent IS NOT NULL THEN
                reason := spent;
                EXIT walk;
            END IF;
            examined := examined + 1;
            FOREACH here IN ARRAY ARRAY[edge.subject_id, edge.object_id] LOOP
                there := CASE WHEN here = edge.subject_id THEN edge.object_id ELSE edge.subject_id END;
                CONTINUE WHEN NOT here = ANY(frontier) OR there = ANY(visited);
                IF returned >= results_cap THEN
                    reason := 'result_budget';
                    EXIT walk;
                END IF;
                IF cardinality(next_frontier) >= frontier_cap THEN
                    reason := 'frontier_budget';
                    EXIT walk;
                END IF;
                path := paths -> here::text;
                path := jsonb_build_object('r', (path -> 'r') || to_jsonb(edge.relation_id), 'n', (path -> 'n') || to_jsonb(there));
                paths := paths || jsonb_build_object(there::text, path);
                visited := visited || there;
                next_frontier := next_frontier || there;
                returned := returned + 1;
                row_kind := 'path';
                hops := level;
                relation_ids := ARRAY(SELECT jsonb_array_elements_text(path -> 'r')::uuid);
                node_ids := ARRAY(SELECT jsonb_array_elements_text(path -> 'n')::uuid);
                RETURN NEXT;
            END LOOP;
        END LOOP;
        frontier := next_frontier;
    END LOOP;
    RETURN QUERY SELECT * FROM memory_v1_private.graph_status('graph_neighborhood', reason, examined, returned, depth_cap,
        expand_cap, frontier_cap, results_cap, time_cap, valid_at, believed_at);
END
$$;

-- @function graph_path
-- Breadth-first from one entity, keeping every path of the current length, until a level reaches
-- the other entity: those equal-length shortest paths (up to max_results), then one status row.
CREATE OR REPLACE FUNCTION memory_v1.graph_path(deployment_id uuid, from_entity_id uuid, to_entity_id uuid,
                                                max_depth integer DEFAULT 4, predicates text[] DEFAULT NULL,
                                                valid_at timestamptz DEFAULT NULL, believed_at timestamptz DEFAULT NULL,
                                                max_results integer DEFAULT 3, expansion_budget integer DEFAULT 2000,
                                                frontier_budget integer DEFAULT 1000, time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, relation_ids uuid[], node_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, applied_valid_at timestamptz, applied_believed_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    depth_cap integer := memory_v1_private.budget(graph_path.max_depth, 4, 6);
    results_cap integer := memory_v1_private.budget(graph_path.max_results, 3, 10);
    expand_cap integer := memory_v1_private.budget(graph_path.expansion_budget, 2000, 2000);
    frontier_cap integer := memory_v1_private.budget(graph_path.frontier_budget, 1000, 1000);
    time_cap integer := memory_v1_private.budget(graph_path.time_budget_ms, 1000, 5000);
    started timestamptz := clock_timestamp();
    reason text;
    spent text;
    examined bigint := 0;
    returned bigint := 0;
    level integer := 0;
    frontier jsonb;          -- paths of the current length: [{"r": [...], "n": [...]}]
    next_frontier jsonb;
    ends uuid[];
    visited uuid[];
    reached jsonb := '[]'::jsonb;
    edge record;
    p jsonb;
    tail uuid;
    there uuid;
BEGIN
    PERFORM memory_v1_private.graph_check('graph_path', graph_path.deployment_id, valid_at, believed_at);
    IF graph_path.max_depth > 6 THEN
        reason := 'depth_budget';
    END IF;
    frontier := jsonb_build_array(jsonb_build_object('r', '[]'::jsonb, 'n', jsonb_build_array(from_entity_id)));
    visited := ARRAY[from_entity_id];
    IF from_entity_id = to_entity_id THEN
        reached := frontier;
    END IF;
    <<walk>>
    WHILE jsonb_array_length(reached) = 0 AND level < depth_cap AND jsonb_array_length(frontier) > 0 LOOP
        level := level + 1;
        next_frontier := '[]'::jsonb;
        ends := ARRAY(SELECT DISTINCT (x -> 'n' ->> (jsonb_array_length(x -> 'n') - 1))::uuid
                      FROM jsonb_array_elements(frontier) x);
        FOR edge IN SELECT * FROM memory_v1_private.graph_edges(valid_at, believed_at, predicates, ends) LOOP
            spent := memory_v1_private.walk_budget_spent(examined, expand_cap, started, time_cap);
            IF spent IS NOT NULL THEN
                reason := spent;
                EXIT walk;
            END IF;
            examined := examined + 1;
            FOR p IN SELECT x FROM jsonb_array_elements(frontier) x LOOP
                tail := (p -> 'n' ->> (jsonb_array_length(p -> 'n') - 1))::uuid;
                CONTINUE WHEN tail <> edge.subject_id AND tail <> edge.object_id;
                there := CASE WHEN tail = edge.subject_id THEN edge.object_id ELSE edge.subject_id END;
                CONTINUE WHEN there = ANY(visited);
                IF jsonb_array_length(next_frontier) >= frontier_cap THEN
                    reason := 'frontier_budget';
                    EXIT walk;
                END IF;
                next_frontier := next_frontier || jsonb_build_array(jsonb_build_object(
                    'r', (p -> 'r') || to_jsonb(edge.relation_id), 'n', (p -> 'n') || to_jsonb(there)));
            END LOOP;
        END LOOP;
        visited := visited || ARRAY(SELECT DISTINCT (x -> 'n' ->> level)::uuid FROM jsonb_array_elements(next_frontier) x);
        reached := coalesce((SELECT jsonb_agg(x ORDER BY (x -> 'r')::text) FROM jsonb_array_elements(next_frontier) x
                             WHERE (x -> 'n' ->> level)::uuid = to_entity_id), '[]'::jsonb);
        frontier := next_frontier;
    END LOOP;
    FOR p IN SELECT x FROM jsonb_array_elements(reached) x LOOP
        IF returned >= results_cap THEN
            reason := coalesce(reason, 'result_budget');
            EXIT;
        END IF;
        returned := returned + 1;
        row_kind := 'path';
        hops := jsonb_array_length(p -> 'r');
        relation_ids := ARRAY(SELECT jsonb_array_elements_text(p -> 'r')::uuid);
        node_ids := ARRAY(SELECT jsonb_array_elements_text(p -> 'n')::uuid);
        RETURN NEXT;
    END LOOP;
    RETURN QUERY SELECT * FROM memory_v1_private.graph_status('graph_path', reason, examined, returned, depth_cap,
        expand_cap, frontier_cap, results_cap, time_cap, valid_at, believed_at);
END
$$;

-- @function graph_citation_path
-- We record no cross-references between documents, so there is never a citation chain: after the
-- argument checks the answer is the status row alone.
CREATE OR REPLACE FUNCTION memory_v1.graph_citation_path(deployment_id uuid, from_doc_id uuid, to_doc_id uuid,
                                                         max_depth integer DEFAULT 6, max_paths integer DEFAULT 3,
                                                         expansion_budget integer DEFAULT 2000,
                                                         frontier_budget integer DEFAULT 1000,
                                                         time_budget_ms integer DEFAULT 1000)
RETURNS TABLE (row_kind text, hops integer, crossref_ids uuid[], document_ids uuid[], truncated boolean,
               truncation_reason text, examined_edges bigint, returned_paths bigint, effective_depth integer,
               effective_expansion_budget integer, effective_frontier_budget integer, effective_result_budget integer,
               effective_time_budget_ms integer, evaluated_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    PERFORM memory_v1_private.graph_check('graph_citation_path', graph_citation_path.deployment_id, NULL, NULL);
    row_kind := 'status';
    truncated := coalesce(graph_citation_path.max_depth, 6) > 6;
    truncation_reason := CASE WHEN truncated THEN 'depth_budget' END;
    examined_edges := 0;
    returned_paths := 0;
    effective_depth := memory_v1_private.budget(graph_citation_path.max_depth, 6, 6);
    effective_expansion_budget := memory_v1_private.budget(graph_citation_path.expansion_budget, 2000, 2000);
    effective_frontier_budget := memory_v1_private.budget(graph_citation_path.frontier_budget, 1000, 1000);
    effective_result_budget := memory_v1_private.budget(graph_citation_path.max_paths, 3, 10);
    effective_time_budget_ms := memory_v1_private.budget(graph_citation_path.time_budget_ms, 1000, 5000);
    evaluated_at := memory_v1_private.evaluated_at();
    IF memory_v1_private.graph_record('graph_citation_path', truncation_reason, examined_edges, returned_paths,
                                      effective_depth, effective_expansion_budget, effective_frontier_budget,
                                      effective_result_budget, effective_time_budget_ms, NULL, NULL, evaluated_at) THEN
        RETURN NEXT;
    END IF;
END
$$;

-- @grants
-- The new building blocks are the owner's, like 0004's; the sandbox role reads facts_current,
-- whose rules it calls with its own rights.
REVOKE ALL ON FUNCTION memory_v1_private.believed(timestamptz, timestamptz, timestamptz),
                       memory_v1_private.may_hold(timestamptz, timestamptz, timestamptz),
                       memory_v1_private.window_complete(timestamptz, timestamptz, text),
                       memory_v1_private.walkable_edges(timestamptz, timestamptz, text[], uuid[]),
                       memory_v1_private.semantic_nominate(text, public.vector, integer, uuid[], boolean, text),
                       memory_v1_private.search_nominees(text, text, text, text, integer, jsonb, jsonb, text, text),
                       memory_v1_private.record_search(text, integer, integer, integer, text),
                       memory_v1_private.budget(integer, integer, integer),
                       memory_v1_private.walk_budget_spent(bigint, integer, timestamptz, integer),
                       memory_v1_private.graph_record(text, text, bigint, bigint, integer, integer, integer, integer,
                                                      integer, timestamptz, timestamptz, timestamptz)
    FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'corpusmem_query') THEN
        GRANT EXECUTE ON FUNCTION memory_v1_private.believed(timestamptz, timestamptz, timestamptz),
                                  memory_v1_private.may_hold(timestamptz, timestamptz, timestamptz),
                                  memory_v1_private.window_complete(timestamptz, timestamptz, text)
            TO corpusmem_query;
    END IF;
END
$$;
