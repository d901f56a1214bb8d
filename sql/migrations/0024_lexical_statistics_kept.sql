-- Lexical nomination reads a table's common lexemes from a copy kept in typed arrays, and takes
-- the count of each from the statistics where ANALYZE counted them exactly.
--
-- `lexical_terms` (0022) read `pg_stats.most_common_elems`, an `anyarray` that only a text round
-- trip turns into `text[]`: for the 9,445 lexemes of the LongMemEval memory's chunks, 2.5 ms of
-- parsing at every call, two calls a claims_and_sources_context. It then counted, through the
-- index, every lexeme of the question under the cap of 2,000 rows that the statistics already
-- counted. Where ANALYZE read the whole table (up to 300 × the statistics target, 300,000 rows)
-- and its Lossy Counting pruned nothing (fewer lexemes in all than its bucket width,
-- (10 × target + 10) × 1000 / 7), each listed lexeme's count is exact; a lexeme it does not list
-- is rarer than every listed one, and is counted as before. So, over the LongMemEval memory
-- (25,973 claims, 5,983 chunks), 40 questions: `lexical_terms` on claims 5.5 → 0.5 ms, on chunks
-- 6.6 → 0.6 ms, the same terms and weights.
--
-- The copy is taken after each analysis the import asks for (`authority.analyse`), with the
-- time of that analysis. One that autovacuum ran since, or a table changed since its analysis,
-- makes the copy's counts old: then the common lexemes are read as before and the rest counted.

CREATE TABLE memory_v1_private.lexical_statistics (
    source text PRIMARY KEY CHECK (source IN ('claims', 'chunks')),
    analysed_at timestamptz NOT NULL,   -- the analysis the copy was taken from
    rows_n double precision NOT NULL,   -- rows with a tsvector, as that analysis read them
    exact boolean NOT NULL,             -- it read every row and pruned no lexeme: counts are exact
    lexemes text[] NOT NULL,
    shares real[] NOT NULL
);

-- @support lexical_nominate
CREATE OR REPLACE FUNCTION memory_v1_private.lexical_df_cap() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 2000 $$;

-- Keep `source`'s common lexemes as its last analysis found them (a no-op for a table never
-- analysed). The lexemes in all are read only where that analysis read every row.
CREATE OR REPLACE FUNCTION memory_v1_private.keep_lexical_statistics(source text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    target integer;
    rows_n double precision;
    lexemes_n double precision;
BEGIN
    IF source NOT IN ('claims', 'chunks') THEN
        RAISE EXCEPTION 'lexical statistics are kept for claims or chunks, not %', source;
    END IF;
    SELECT coalesce(nullif(a.attstattarget, -1), current_setting('default_statistics_target')::integer) INTO target
    FROM pg_catalog.pg_attribute a WHERE a.attrelid = ('public.' || source)::regclass AND a.attname = 'tsv';
    SELECT c.reltuples INTO rows_n FROM pg_class c WHERE c.oid = ('public.' || source)::regclass;
    IF rows_n <= 300 * target THEN
        EXECUTE format('SELECT coalesce(sum(length(tsv)), 0) FROM public.%I', source) INTO lexemes_n;
    END IF;
    INSERT INTO memory_v1_private.lexical_statistics AS l
    SELECT source, greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)),
           c.reltuples * (1 - s.null_frac),
           coalesce(rows_n <= 300 * target AND lexemes_n < (10 * target + 10) * 1000 / 7, false),
           s.most_common_elems::text::text[], s.most_common_elem_freqs
    FROM pg_class c JOIN pg_catalog.pg_stats s ON s.schemaname = 'public' AND s.tablename = source AND s.attname = 'tsv'
    WHERE c.oid = ('public.' || source)::regclass AND s.most_common_elems IS NOT NULL
      AND greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) IS NOT NULL
    ON CONFLICT ON CONSTRAINT lexical_statistics_pkey DO UPDATE
        SET analysed_at = excluded.analysed_at, rows_n = excluded.rows_n, exact = excluded.exact,
            lexemes = excluded.lexemes, shares = excluded.shares;
END
$$;

-- The question's distinct lexemes (the english configuration the stored tsvectors use) that occur
-- in `source`, each with its BM25 IDF, log(1 + (N - df + 0.5) / (df + 0.5)).
CREATE OR REPLACE FUNCTION memory_v1_private.lexical_terms(source text, query text)
RETURNS TABLE (term tsquery, weight double precision)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    rows_n double precision;
    lexeme text;
    df integer;
    cap integer := memory_v1_private.lexical_df_cap();
    common text[];
    common_share real[];
    counted_n double precision;
    exact boolean := false;
    margin double precision;
    target integer;
    at integer;
    relation oid := ('public.' || source)::regclass;
BEGIN
    IF source NOT IN ('claims', 'chunks') THEN
        RAISE EXCEPTION 'lexical nomination reads claims or chunks, not %', source;
    END IF;
    SELECT c.reltuples INTO rows_n FROM pg_class c WHERE c.oid = relation;
    IF rows_n IS NULL OR rows_n < 1 THEN  -- never analysed yet: count
        IF source = 'claims' THEN SELECT count(*) INTO rows_n FROM public.claims;
        ELSE SELECT count(*) INTO rows_n FROM public.chunks; END IF;
    END IF;
    -- The column's most common lexemes as ANALYZE found them, each with the share of rows holding
    -- it: the kept copy where it is of the table's last analysis, else the statistics themselves.
    SELECT l.lexemes, l.shares, l.rows_n, l.exact AND pg_stat_get_mod_since_analyze(relation) = 0
    INTO common, common_share, counted_n, exact
    FROM memory_v1_private.lexical_statistics l
    WHERE l.source = lexical_terms.source
      AND l.analysed_at = greatest(pg_stat_get_last_analyze_time(relation), pg_stat_get_last_autoanalyze_time(relation));
    IF NOT FOUND THEN
        exact := false;
        SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs INTO common, common_share
        FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = source AND s.attname = 'tsv';
    END IF;
    -- ANALYZE's Lossy Counting can only under-count, so a lexeme whose share already reaches the
    -- cap holds at least that many rows: it nominates nothing, and is not counted. Where ANALYZE
    -- read a sample (a table of more than 300 × the column's statistics target, 300,000 rows here)
    -- the share is a sample's, so the lexeme is passed over only at twice the cap. The share is a
    -- float4: its count is rounded back to a whole number of rows.
    SELECT coalesce(nullif(a.attstattarget, -1), current_setting('default_statistics_target')::integer) INTO target
    FROM pg_catalog.pg_attribute a WHERE a.attrelid = relation AND a.attname = 'tsv';
    margin := CASE WHEN rows_n <= 300 * target THEN 1 ELSE 2 END;
    FOR lexeme IN SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', query))) l ORDER BY l LOOP
        at := array_position(common, lexeme);
        IF at IS NOT NULL AND round(common_share[at] * rows_n) >= cap * margin THEN
            CONTINUE;
        END IF;
        term := quote_literal(lexeme)::tsquery;
        IF at IS NOT NULL AND exact THEN
            df := round(common_share[at] * counted_n);   -- counted by ANALYZE, row for row
        ELSIF source = 'claims' THEN
            SELECT count(*) INTO df FROM (SELECT 1 FROM public.claims c WHERE c.tsv @@ term LIMIT cap) s;
        ELSE
            SELECT count(*) INTO df FROM (SELECT 1 FROM public.chunks c WHERE c.tsv @@ term LIMIT cap) s;
        END IF;
        IF df > 0 AND df < cap THEN
            weight := ln(1 + (greatest(rows_n, df) - df + 0.5) / (df + 0.5));
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;

-- Ids of `source` best first: the summed IDF of the question's terms each text holds, ties to the
-- shorter text, then the id; only those about the entities `about` when given.
CREATE OR REPLACE FUNCTION memory_v1_private.lexical_nominate(source text, query text, k integer, about uuid[] DEFAULT NULL)
RETURNS TABLE (id uuid, score double precision, ord bigint)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    terms tsquery[];
    weights double precision[];
    any_term tsquery;
BEGIN
    SELECT array_agg(t.term ORDER BY t.term::text), array_agg(t.weight ORDER BY t.term::text) INTO terms, weights
    FROM memory_v1_private.lexical_terms(source, query) t;
    IF terms IS NULL THEN
        RETURN;
    END IF;
    SELECT string_agg(t::text, ' | ')::tsquery INTO any_term FROM unnest(terms) t;
    IF source = 'claims' THEN
        RETURN QUERY SELECT x.i, x.s, row_number() OVER (ORDER BY x.s DESC, x.len, x.i) FROM (
            SELECT c.claim_id AS i, length(c.tsv) AS len,
                   (SELECT sum(u.w) FROM unnest(terms, weights) u(t, w) WHERE c.tsv @@ u.t) AS s
            FROM public.claims c
            WHERE c.tsv @@ any_term
              AND (about IS NULL OR c.claim_id IN (SELECT memory_v1_private.ids_about('claims', about)))
            ORDER BY 3 DESC, 2, 1 LIMIT k) x;
    ELSE
        RETURN QUERY SELECT x.i, x.s, row_number() OVER (ORDER BY x.s DESC, x.len, x.i) FROM (
            SELECT c.chunk_id AS i, length(c.tsv) AS len,
                   (SELECT sum(u.w) FROM unnest(terms, weights) u(t, w) WHERE c.tsv @@ u.t) AS s
            FROM public.chunks c
            WHERE c.tsv @@ any_term
              AND (about IS NULL OR c.chunk_id IN (SELECT memory_v1_private.ids_about('chunks', about)))
            ORDER BY 3 DESC, 2, 1 LIMIT k) x;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION memory_v1_private.keep_lexical_statistics(text) FROM PUBLIC;

SELECT memory_v1_private.keep_lexical_statistics('claims');
SELECT memory_v1_private.keep_lexical_statistics('chunks');
