-- Lexical nomination reads the common words of a large memory from the statistics too.
--
-- `lexical_terms` passes over a question's lexeme without counting it where ANALYZE's statistics
-- already show it in `lexical_df_cap()` rows or more (0013); on a table larger than ANALYZE's
-- sample (30,000 rows at the default statistics target) only at twice the cap. Every lexeme
-- between the two was counted through the index, 2,000 rows read from the table, and then
-- nominated nothing: on a memory of 108,367 claims, a question's lexical nomination over claims
-- read about 2,160 rows of that band and 400 of useful ones, and took 3.1 of its 3.6 ms counting.
-- With a statistics target of 1,000 on the tsv columns, ANALYZE reads up to 300,000 rows whole, the
-- shares are exact there, and the band is passed over. ANALYZE of 108,367 claims reads them all:
-- 1.3 s instead of 0.4 s.

ALTER TABLE claims ALTER COLUMN tsv SET STATISTICS 1000;
ALTER TABLE chunks ALTER COLUMN tsv SET STATISTICS 1000;

-- @support lexical_nominate
CREATE OR REPLACE FUNCTION memory_v1_private.lexical_df_cap() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 2000 $$;

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
    margin double precision;
    target integer;
    at integer;
BEGIN
    IF source NOT IN ('claims', 'chunks') THEN
        RAISE EXCEPTION 'lexical nomination reads claims or chunks, not %', source;
    END IF;
    SELECT c.reltuples INTO rows_n FROM pg_class c WHERE c.oid = ('public.' || source)::regclass;
    IF rows_n IS NULL OR rows_n < 1 THEN  -- never analysed yet: count
        IF source = 'claims' THEN SELECT count(*) INTO rows_n FROM public.claims;
        ELSE SELECT count(*) INTO rows_n FROM public.chunks; END IF;
    END IF;
    -- The column's most common lexemes as ANALYZE found them, each with the share of rows holding
    -- it. ANALYZE's Lossy Counting can only under-count, so a lexeme whose share already reaches
    -- the cap holds at least that many rows: it nominates nothing, and is not counted. Where
    -- ANALYZE read a sample (a table of more than 300 × the column's statistics target, 300,000
    -- rows here) the share is a sample's, so the lexeme is passed over only at twice the cap. The
    -- share is a float4: its count is rounded back to a whole number of rows.
    SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs INTO common, common_share
    FROM pg_catalog.pg_stats s WHERE s.schemaname = 'public' AND s.tablename = source AND s.attname = 'tsv';
    -- ANALYZE samples 300 rows per unit of the largest statistics target among the columns it
    -- reads: at least the tsv column's own.
    SELECT coalesce(nullif(a.attstattarget, -1), current_setting('default_statistics_target')::integer) INTO target
    FROM pg_catalog.pg_attribute a WHERE a.attrelid = ('public.' || source)::regclass AND a.attname = 'tsv';
    margin := CASE WHEN rows_n <= 300 * target THEN 1 ELSE 2 END;
    FOR lexeme IN SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', query))) l ORDER BY l LOOP
        at := array_position(common, lexeme);
        IF at IS NOT NULL AND round(common_share[at] * rows_n) >= cap * margin THEN
            CONTINUE;
        END IF;
        term := quote_literal(lexeme)::tsquery;
        IF source = 'claims' THEN
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
