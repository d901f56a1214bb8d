-- Lexical nomination that ranks by the question's rare words, for the read API and memory_v1 alike.
--
-- Until now the `bm25` channel matched `websearch_to_tsquery`, which ANDs every word of the
-- question: "What activity did John's colleague, Rob, invite him to?" matched only a text holding
-- all of activity, John, colleague, Rob and invite, so most questions nominated nothing lexically.
-- Okapi BM25 scores any text holding some of the words, each weighted by its inverse document
-- frequency, so a rare name outweighs a word every text holds. That is what this does, with two
-- simplifications that suit claims and chunks (short texts, a term rarely repeated in one):
-- a term counts once per text (no term-frequency saturation), and ties go to the shorter text.
--
-- A term's document frequency is counted through the GIN index up to `lexical_df_cap()` rows; a
-- term that common nominates nothing on its own (its IDF would be near zero, and its candidates
-- would be most of the table). So one question costs at most a few index scans of that size.
--
-- One definition: `read_queries.nominate` (the HTTP API) and `memory_v1_private.nominate` (the
-- query space's lexical_claims / lexical_chunks) both call `lexical_nominate`.

-- @support lexical_nominate
CREATE FUNCTION memory_v1_private.lexical_df_cap() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 2000 $$;

-- The question's distinct lexemes (the english configuration the stored tsvectors use) that occur
-- in `source`, each with its BM25 IDF, log(1 + (N - df + 0.5) / (df + 0.5)).
CREATE FUNCTION memory_v1_private.lexical_terms(source text, query text)
RETURNS TABLE (term tsquery, weight double precision)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    rows_n double precision;
    lexeme text;
    df integer;
    cap integer := memory_v1_private.lexical_df_cap();
BEGIN
    IF source NOT IN ('claims', 'chunks') THEN
        RAISE EXCEPTION 'lexical nomination reads claims or chunks, not %', source;
    END IF;
    SELECT c.reltuples INTO rows_n FROM pg_class c WHERE c.oid = ('public.' || source)::regclass;
    IF rows_n IS NULL OR rows_n < 1 THEN  -- never analysed yet: count
        IF source = 'claims' THEN SELECT count(*) INTO rows_n FROM public.claims;
        ELSE SELECT count(*) INTO rows_n FROM public.chunks; END IF;
    END IF;
    FOR lexeme IN SELECT DISTINCT l FROM unnest(tsvector_to_array(to_tsvector('english', query))) l ORDER BY l LOOP
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

-- The claims that mention or assert about the entities `about`, or the chunks that carry such
-- claims: what a nomination restricted to entities may return, for either channel.
CREATE FUNCTION memory_v1_private.ids_about(source text, about uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE
AS $$
    WITH c AS (SELECT m.claim_id FROM public.mentions m WHERE m.entity_id = ANY(about)
               UNION SELECT a.claim_id FROM public.assertions a WHERE a.subject_id = ANY(about) OR a.object_id = ANY(about))
    SELECT claim_id FROM c WHERE source = 'claims'
    UNION ALL
    SELECT DISTINCT co.chunk_id FROM public.claim_occurrences co JOIN c ON c.claim_id = co.claim_id WHERE source = 'chunks'
$$;

-- Ids of `source` best first: the summed IDF of the question's terms each text holds, ties to the
-- shorter text, then the id; only those about the entities `about` when given.
CREATE FUNCTION memory_v1_private.lexical_nominate(source text, query text, k integer, about uuid[] DEFAULT NULL)
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

-- @support nominations
-- As in 0004, with the lexical branches read through lexical_nominate.
CREATE OR REPLACE FUNCTION memory_v1_private.nominate(source text, channel text, query text, qv public.vector, k integer)
RETURNS TABLE (id uuid, score double precision, ord bigint)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF channel = 'semantic' THEN
        IF source = 'claims' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT c.claim_id AS i, c.embedding OPERATOR(public.<=>) qv AS d FROM public.claims c
                WHERE c.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSIF source = 'chunks' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT c.chunk_id AS i, c.embedding OPERATOR(public.<=>) qv AS d FROM public.chunks c
                WHERE c.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSIF source = 'facts' THEN
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT f.fact_id AS i, f.embedding OPERATOR(public.<=>) qv AS d FROM public.facts f
                WHERE f.embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        ELSE
            RETURN QUERY SELECT n.i, 1 - n.d, row_number() OVER (ORDER BY n.d, n.i) FROM (
                SELECT e.entity_id AS i, e.profile_embedding OPERATOR(public.<=>) qv AS d FROM public.entities e
                WHERE e.profile_embedding IS NOT NULL ORDER BY 2, 1 LIMIT k) n;
        END IF;
    ELSE
        RETURN QUERY SELECT l.id, l.score, l.ord FROM memory_v1_private.lexical_nominate(source, query, k) l;
    END IF;
END
$$;
