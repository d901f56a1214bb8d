"""The memory_v1 statement validator: every rule with its code, in the seed's order, and a hostile corpus.

Pure unit tests: no database, no Ray. What passes here still runs under the sandbox role; these
tests pin the first layer only.
"""

from __future__ import annotations

import doctest
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.query_space import (
    query_catalog,
    validator,
    validator_calls,
    validator_grammar,
    validator_parse,
)
from sql.query_space.validator import (
    FunctionCall,
    QueryRejected,
    statement_hash,
    validate,
)

RECURSION = """
WITH RECURSIVE reach AS (
  SELECT object_entity_id AS entity_id, 0 AS depth
  FROM graph_edges_current
  WHERE subject_entity_id = $1::uuid
  UNION
  SELECT e.object_entity_id, r.depth + 1
  FROM reach AS r
  JOIN graph_edges_current AS e ON e.subject_entity_id = r.entity_id
  WHERE r.depth < 3
)
SELECT DISTINCT entity_id FROM reach
"""

# The seed's own valid statements (digest §10, the recursion and graph examples), with parameters.
SEED_VALID = [
    ("SELECT fact_kind, fact_label, valid_from, valid_until, evidence_count FROM facts_current "
     "WHERE fact_label ~~* $1 ORDER BY evidence_count DESC LIMIT 20", ["%invoice exporter%"]),
    ("SELECT f.fact_label, f.valid_from, f.evidence_count, f.contradiction_group, e.stance, e.source_handle, "
     "e.asserted_at FROM facts_current AS f JOIN fact_claim_evidence_live AS e ON e.fact_kind = f.fact_kind "
     "AND e.fact_id = f.fact_id WHERE f.fact_label ~~* $1 ORDER BY f.evidence_count DESC, f.fact_id, e.stance, "
     "e.asserted_at DESC LIMIT 50", ["%invoice exporter%"]),
    ("SELECT claim_text, source_handle, asserted_at FROM claims_live WHERE claim_text ~~* $1 "
     "ORDER BY asserted_at DESC LIMIT 20", ["%invoice exporter%"]),
    ("WITH ranked AS ( SELECT e.fact_kind, e.fact_id, e.claim_id, e.stance, c.claim_text, c.source_handle, "
     "c.asserted_at, row_number() OVER ( PARTITION BY e.fact_kind, e.fact_id ORDER BY c.asserted_at DESC NULLS "
     "LAST, c.claim_id ) AS testimony_rank FROM fact_claim_evidence_live AS e JOIN claims_live AS c ON "
     "c.claim_id = e.claim_id ) SELECT f.fact_label, f.evidence_count, f.contradict_count, r.claim_text AS "
     "newest_claim, r.source_handle, r.asserted_at FROM facts_current AS f JOIN ranked AS r ON r.fact_kind = "
     "f.fact_kind AND r.fact_id = f.fact_id WHERE r.testimony_rank = 1 AND r.stance = 'contradicts' ORDER BY "
     "r.asserted_at DESC LIMIT 50", []),
    ("SELECT s.rank, c.claim_text, c.source_handle, c.asserted_at FROM semantic_claims($1, 20) AS s "
     "JOIN claims_live AS c ON c.claim_id = s.claim_id ORDER BY s.rank LIMIT 20",
     ["why did the billing migration slip"]),
    ("SELECT count(*) FROM documents_live", []),
    ("SELECT source_kind, count(*) AS documents FROM documents_live GROUP BY source_kind ORDER BY documents DESC",
     []),
    ("SELECT claim_text, asserted_at FROM claims_live WHERE claim_text ILIKE $1 ORDER BY asserted_at DESC",
     ["%cutover%"]),
    ("SELECT count(*) FROM facts_current WHERE subject_entity_id = $1::uuid",
     ["4f1c2a8e-0000-4000-8000-000000000001"]),
    ("SELECT predicate, count(*) AS n FROM facts_current GROUP BY 1 ORDER BY 2 DESC LIMIT $1", [10]),
    (RECURSION, ["4f1c2a8e-0000-4000-8000-000000000001"]),
    ("SELECT hops, relation_ids, node_ids\nFROM graph_neighborhood($1::uuid, $2::uuid, 2)\nORDER BY hops, relation_ids",
     ["4f1c2a8e-0000-4000-8000-000000000001", "4f1c2a8e-0000-4000-8000-000000000002"]),
    ("SELECT * FROM facts_as_of($1::timestamptz, $2::timestamptz)", ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"]),
]

ALLOWED_FUNCTIONS = ", ".join([
    "count(*)", "count(DISTINCT a)", "sum(a)", "avg(a)", "min(a)", "max(a)", "bool_and(b)", "bool_or(b)",
    "array_agg(a ORDER BY a)", "string_agg(t, ',')", "jsonb_agg(a)", "jsonb_object_agg(t, a)", "coalesce(a, 0)",
    "nullif(a, 0)", "greatest(a, 1)", "least(a, 1)", "lower(t)", "upper(t)", "trim(t)", "trim(both ' ' from t)",
    "btrim(t)", "length(t)", "octet_length(t)", "substring(t from 1 for 2)", "substring(t, 1, 2)",
    "replace(t, 'a', 'b')", "regexp_replace(t, 'a', 'b')", "abs(a)", "ceil(a)", "floor(a)", "round(a, 2)",
    "date_trunc('day', d)", "extract(year from d)", "make_interval(days => 2)", "array_length(r, 1)",
    "cardinality(r)", "jsonb_typeof(j)", "jsonb_array_length(j)", "jsonb_build_object('a', a)",
    "row_number() OVER (PARTITION BY a ORDER BY d)", "rank() OVER w", "dense_rank() OVER w", "lag(a) OVER w",
    "lead(a, 1) OVER w", "first_value(a) OVER w", "last_value(a) OVER w", "pg_catalog.lower(t)",
    "count(*) FILTER (WHERE a > 1)",
])
ALLOWED_OPERATORS = ", ".join([
    "a = 1", "a <> 1", "a != 1", "a < 1", "a <= 1", "a > 1", "a >= 1", "a + 1 - 2 * 3 / 4 % 5", "-a", "t || 'x'",
    "r @> r", "r <@ r", "r && r", "j -> 'k'", "j ->> 'k'", "j #> '{a}'", "j #>> '{a}'", "t ~ 'x'", "t ~* 'x'",
    "t !~ 'x'", "t !~* 'x'", "t LIKE 'x'", "t NOT LIKE 'x'", "t ILIKE 'x'", "t NOT ILIKE 'x'", "t ~~ 'x'",
    "t !~~ 'x'", "t ~~* 'x'", "t !~~* 'x'", "a = ANY($1)", "a BETWEEN 1 AND 2", "a NOT BETWEEN 1 AND 2",
    "(b AND b) OR NOT b", "a IS NULL", "a IS NOT NULL", "b IS TRUE", "b IS NOT FALSE", "a IN (1, 2)",
    "a NOT IN (1, 2)", "CASE WHEN b THEN 1 ELSE 2 END", "ARRAY[1, 2]", "r[1]", "ROW(1, 2)", "t COLLATE \"C\"",
    "INTERVAL '1 day'", "TRUE", "NULL", "'x'", "$$dollar$$", "1.5e3",
])
ALLOWED_CASTS = ", ".join(f"x::{name}" for name in query_catalog.CAST_TYPES) + \
    ", x::uuid[], x::text[], CAST(x AS int4), timestamptz '2026-01-01', x::varchar(10), x::numeric(10, 2)"

VALID = SEED_VALID + [
    (f"SELECT {ALLOWED_FUNCTIONS} FROM facts_current WINDOW w AS (ORDER BY d)", []),
    (f"SELECT {ALLOWED_OPERATORS} FROM facts_current", [[1, 2]]),
    (f"SELECT {ALLOWED_CASTS} FROM facts_current", []),
    ("SELECT * FROM memory_v1.facts_current", []),
    ("SELECT * FROM FACTS_CURRENT", []),
    ('SELECT * FROM "facts_current"', []),
    ("VALUES (1), (2)", []),
    ("(SELECT 1)", []),
    ("SELECT a FROM facts_current UNION ALL SELECT a FROM facts_visible_history", []),
    ("SELECT a FROM facts_current WHERE a IN (SELECT b FROM claims_live) AND EXISTS (SELECT 1 FROM entities_current)",
     []),
    ("SELECT * FROM facts_current JOIN claims_live USING (claim_id) LEFT JOIN entities_current ON TRUE", []),
    ("SELECT a, count(*) FROM facts_current GROUP BY GROUPING SETS ((a), ()) HAVING count(*) > 1", []),
    ("WITH facts AS (SELECT 1 AS a) SELECT a FROM facts", []),  # a CTE may take any name
    ("SELECT DISTINCT ON (a) a FROM facts_current ORDER BY a OFFSET 1 FETCH FIRST 2 ROWS ONLY", []),
    ("SELECT 1 --; DROP TABLE facts", []),
    ("SELECT count(*) FROM facts_current;", []),  # a trailing semicolon ends the one statement
    ("SELECT count(*) FROM facts_current; -- and a comment", []),
    ("SELECT 1 -- a form feed does not end a comment\x0c; DROP TABLE facts", []),
    ("SELECT $a$ x $A$; DROP TABLE facts; $a$", []),  # dollar-quote tags are case-sensitive: one string
    ("SELECT 1 /* a /* nested */ ; DROP TABLE facts */", []),
    ("SELECT * FROM facts_current WHERE fact_label = $$x'; DROP TABLE facts; --$$", []),
    ("SELECT * FROM fetch_chunk_bodies($1::uuid[])", [["4f1c2a8e-0000-4000-8000-000000000001"]]),
    ("SELECT * FROM canonical_bounds(timestamptz '2025-01-01', timestamptz '2025-12-31', 'year')", []),
    ("SELECT * FROM graph_path($1, $2::uuid, $3::uuid, 4, NULL, $4::timestamptz, $5::timestamptz)",
     ["d", "a", "b", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]),
    ("SELECT * FROM graph_citation_path($1::uuid, $2::uuid, $3::uuid, 3)", ["d", "a", "b"]),
    ("SELECT * FROM lexical_chunks($1, 5, '{\"section_role\": \"body\"}'::jsonb)", ["cutover"]),
    ("SELECT * FROM semantic_claims(query => $1, k => 5)", ["cutover"]),
    ("SELECT * FROM graph_neighborhood(deployment_id => $1, start_entity_id => $2::uuid)", ["d", "a"]),
    ("SELECT 'adjacent'\n'literals' FROM facts_current", []),  # PostgreSQL's string continuation
    ("SELECT * FROM facts_current ORDER BY fact_id LIMIT 5 OFFSET 5", []),
    ("SELECT a[1:2], (SELECT 1), ARRAY(SELECT 1) FROM facts_current NATURAL JOIN claims_live", []),
    ("WITH s AS (SELECT * FROM semantic_claims($1, 5)) SELECT * FROM s JOIN claims_live USING (claim_id)", ["x"]),
    ("WITH RECURSIVE reach(entity_id, depth) AS (SELECT object_entity_id, 0 FROM graph_edges_current UNION ALL "
     "SELECT e.object_entity_id, 1 + depth FROM reach JOIN memory_v1.graph_edges_current AS e "
     "ON e.subject_entity_id = reach.entity_id WHERE e.object_entity_id IS NOT NULL AND (depth < 6)) "
     "SELECT entity_id FROM reach", []),
]


@pytest.mark.parametrize(("sql", "parameters"), VALID, ids=range(len(VALID)))
def test_valid_statements_pass(sql: str, parameters: list) -> None:
    statement = validate(sql, parameters)
    assert statement.sql == sql
    assert statement.placeholder_count == len(parameters)
    assert len(statement.query_hash) == 64


def test_shipped_saved_queries_pass() -> None:
    from sql.query_space import saved_queries

    examples = saved_queries.examples()
    assert len(examples) == 18
    for example in examples:
        validate(example.sql, [None] * saved_queries.placeholder_count(example.sql))


RECURSION_BROKEN = {
    "no depth": RECURSION.replace(", 0 AS depth", "").replace(", r.depth + 1", ""),
    "depth not 0": RECURSION.replace("0 AS depth", "1 AS depth"),
    "depth < 7": RECURSION.replace("r.depth < 3", "r.depth < 7"),
    "depth <= 3": RECURSION.replace("r.depth < 3", "r.depth <= 3"),
    "bound as a parameter": RECURSION.replace("r.depth < 3", "r.depth < $2"),
    "bound inside OR": RECURSION.replace("r.depth < 3", "(r.depth < 3 OR e.object_entity_id IS NULL)"),
    "no bound": RECURSION.replace("WHERE r.depth < 3", ""),
    "depth + 2": RECURSION.replace("r.depth + 1", "r.depth + 2"),
    "self-reference twice": RECURSION.replace("FROM reach AS r", "FROM reach AS r JOIN reach AS q ON TRUE"),
    "subquery in FROM": RECURSION.replace("JOIN graph_edges_current AS e",
                                          "JOIN (SELECT * FROM graph_edges_current) AS e"),
    "two CTEs": RECURSION.replace("\nSELECT DISTINCT", ", other AS (SELECT 1)\nSELECT DISTINCT"),
    "CYCLE": RECURSION.replace(")\nSELECT DISTINCT", ") CYCLE entity_id SET is_cycle USING path\nSELECT DISTINCT"),
    "SEARCH": RECURSION.replace(")\nSELECT DISTINCT", ") SEARCH DEPTH FIRST BY entity_id SET ord\nSELECT DISTINCT"),
    "bomb": "WITH RECURSIVE bomb AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM bomb) SELECT count(*) FROM bomb",
}


@pytest.mark.parametrize("variant", sorted(RECURSION_BROKEN))
def test_recursion_outside_the_template_is_unbounded(variant: str) -> None:
    sql = RECURSION_BROKEN[variant]
    parameters = ["x", 3] if "$2" in sql else ([] if "$1" not in sql else ["x"])
    with pytest.raises(QueryRejected) as rejected:
        validate(sql, parameters)
    assert rejected.value.code == "unbounded_recursion", rejected.value.message


# (sql, parameters, code): at least one statement per code, one rule at a time.
REJECTED = [
    # 1 multiple statements
    ("SELECT 1; SELECT 2", [], "multiple_statements"),
    ("SELECT 1 /* a */ ; DROP TABLE facts", [], "multiple_statements"),
    # 2 statement kind
    ("DELETE FROM facts_current", [], "statement_not_allowed"),
    ("TABLE facts_current", [], "statement_not_allowed"),
    ("EXPLAIN SELECT 1", [], "statement_not_allowed"),
    ("SELECT * INTO copy_of_facts FROM facts_current", [], "statement_not_allowed"),
    ("SELECT * FROM facts_current FOR UPDATE", [], "statement_not_allowed"),
    ("SELECT * FROM (SELECT * FROM facts_current FOR SHARE) s", [], "statement_not_allowed"),
    ("SELECT * FROM facts_current TABLESAMPLE SYSTEM (1)", [], "statement_not_allowed"),
    ("WITH d AS (DELETE FROM facts RETURNING *) SELECT * FROM d", [], "statement_not_allowed"),
    ("WITH x AS (SELECT 1) UPDATE facts SET a = 1", [], "statement_not_allowed"),
    # 3 parse error and NUL bytes
    ("SELECT FROM WHERE", [], "parse_error"),
    ("SELECT 'unterminated", [], "parse_error"),
    ("SELECT 1 /* /* */ ; DROP TABLE facts", [], "parse_error"),
    ("SELECT 'a\x00b' FROM facts_current", [], "parse_error"),
    ("SELECT E'a\\0b' FROM facts_current", [], "parse_error"),
    ("SELECT a FROM facts_current WHERE a = $ 1", [1], "parse_error"),
    ("-- nothing but a comment", [], "parse_error"),
    # 4 reserved names
    ("SELECT 1 AS __rememberstack_x", [], "statement_not_allowed"),
    ("SELECT __corpusmem_secret FROM facts_current", [], "statement_not_allowed"),
    ('SELECT 1 AS "__CORPUSMEM_x"', [], "statement_not_allowed"),
    # 5 placeholders and parameter sizes
    ("SELECT $1, $3", [1, 2, 3], "invalid_parameter"),
    ("SELECT $1", [], "invalid_parameter"),
    ("SELECT $1", [1, 2], "invalid_parameter"),
    ("SELECT $0", [], "invalid_parameter"),
    ("SELECT 1", [0] * 65, "invalid_parameter"),
    ("SELECT $1", ["x" * 262_145], "invalid_parameter"),
    ("SELECT 1 " + " " * 65_536, [], "invalid_parameter"),
    # 6 relations
    ("SELECT * FROM pg_catalog.pg_class", [], "relation_not_allowed"),
    ("SELECT * FROM pg_class", [], "relation_not_allowed"),
    ("SELECT * FROM information_schema.tables", [], "relation_not_allowed"),
    ("SELECT * FROM facts", [], "relation_not_allowed"),
    ("SELECT * FROM claims", [], "relation_not_allowed"),
    ("SELECT * FROM documents", [], "relation_not_allowed"),
    ("SELECT * FROM processing_state", [], "relation_not_allowed"),
    ("SELECT * FROM public.facts_current", [], "relation_not_allowed"),
    ("SELECT * FROM other.memory_v1.facts_current", [], "relation_not_allowed"),
    ("SELECT * FROM ONLY facts_current", [], "relation_not_allowed"),
    ("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", [], "relation_not_allowed"),
    ("SELECT * FROM (WITH x AS (SELECT 1) SELECT * FROM x) s, x", [], "relation_not_allowed"),
    # 7 functions
    ("SELECT now() FROM facts_current", [], "function_not_allowed"),
    ("SELECT CURRENT_DATE FROM facts_current", [], "function_not_allowed"),
    ("SELECT CURRENT_TIMESTAMP FROM facts_current", [], "function_not_allowed"),
    ("SELECT LOCALTIMESTAMP FROM facts_current", [], "function_not_allowed"),
    ("SELECT CURRENT_USER FROM facts_current", [], "function_not_allowed"),
    ("SELECT current_schema FROM facts_current", [], "function_not_allowed"),
    ("SELECT user FROM facts_current", [], "function_not_allowed"),
    ("SELECT char_length(claim_text) FROM claims_live", [], "function_not_allowed"),
    ("SELECT substr(claim_text, 1) FROM claims_live", [], "function_not_allowed"),
    ("SELECT public.lower(claim_text) FROM claims_live", [], "function_not_allowed"),
    ('SELECT "LOWER"(claim_text) FROM claims_live', [], "function_not_allowed"),
    ("SELECT date_part('year', asserted_at) FROM claims_live", [], "function_not_allowed"),
    ("SELECT * FROM unnest($1::uuid[])", [[]], "function_not_allowed"),
    ("SELECT * FROM generate_series(1, 10)", [], "function_not_allowed"),
    ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) FROM facts_current", [], "function_not_allowed"),
    ("SELECT * FROM XMLTABLE('/a' PASSING '<a/>' COLUMNS x int)", [], "function_not_allowed"),
    ("SELECT * FROM JSON_TABLE(j, '$' COLUMNS (a int PATH '$.a'))", [], "function_not_allowed"),
    ("SELECT xmlelement(name a) FROM facts_current", [], "function_not_allowed"),
    ("SELECT * FROM other.semantic_claims($1, 2)", ["x"], "function_not_allowed"),
    ("SELECT pg_catalog.semantic_claims($1, 2)", ["x"], "function_not_allowed"),
    # 8 operators
    ("SELECT a ^ 2 FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a IS DISTINCT FROM b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a IS NOT DISTINCT FROM b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT t SIMILAR TO 'x' FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a @@ b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a <-> b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT j ?| b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT j ? 'k' FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a << 1 FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a OPERATOR(pg_catalog.+) b FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a = ALL($1) FROM facts_current", [[1]], "operator_not_allowed"),
    ("SELECT a > ANY($1) FROM facts_current", [[1]], "operator_not_allowed"),
    ("SELECT * FROM facts_current ORDER BY a USING <", [], "operator_not_allowed"),
    ("SELECT array_agg(a ORDER BY a USING <) FROM facts_current", [], "operator_not_allowed"),
    ("SELECT count(*) OVER (ORDER BY a USING >) FROM facts_current", [], "operator_not_allowed"),
    ("SELECT * FROM facts_current WHERE a = SOME(SELECT b FROM claims_live)", [], "operator_not_allowed"),
    ("SELECT * FROM facts_current WHERE t LIKE ANY($1)", [["x"]], "operator_not_allowed"),
    ("SELECT * FROM facts_current ORDER BY a USING OPERATOR(pg_catalog.<) NULLS LAST, b", [], "operator_not_allowed"),
    # 9 casts
    ("SELECT 'pg_class'::regclass FROM facts_current", [], "operator_not_allowed"),
    ("SELECT x::json FROM facts_current", [], "operator_not_allowed"),
    ("SELECT x::oid FROM facts_current", [], "operator_not_allowed"),
    ("SELECT CAST(x AS bytea) FROM facts_current", [], "operator_not_allowed"),
    ("SELECT x::json[] FROM facts_current", [], "operator_not_allowed"),
    ('SELECT x::"char" FROM facts_current', [], "operator_not_allowed"),
    # 10 syntax
    ("SELECT count(*) WITHIN GROUP (ORDER BY a) FROM facts_current", [], "statement_not_allowed"),
    ("SELECT d AT TIME ZONE 'UTC' FROM facts_current", [], "statement_not_allowed"),
    ("SELECT :name FROM facts_current", [], "statement_not_allowed"),
    ("SELECT %s FROM facts_current", [], "statement_not_allowed"),
    # 12 placement
    ("SELECT semantic_claims($1, 2)", ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM (SELECT * FROM semantic_claims($1, 2)) s", ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM semantic_claims($1, 2) UNION SELECT * FROM lexical_claims($1, 2)", ["x"],
     "function_placement_not_allowed"),
    ("WITH u AS (SELECT * FROM semantic_claims($1, 2) UNION SELECT * FROM lexical_claims($1, 2)) SELECT * FROM u",
     ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM facts_current f, LATERAL semantic_facts(f.fact_label, 2)", [], "function_placement_not_allowed"),
    ("SELECT * FROM facts_current f JOIN LATERAL semantic_facts($1, 2) s ON TRUE", ["x"],
     "function_placement_not_allowed"),
    ("SELECT * FROM facts_current WHERE fact_id IN (SELECT fact_id FROM semantic_facts($1, 2))", ["x"],
     "function_placement_not_allowed"),
    ("SELECT * FROM facts_current WHERE EXISTS (SELECT 1 FROM semantic_facts($1, 2))", ["x"],
     "function_placement_not_allowed"),
    ("SELECT * FROM ROWS FROM (semantic_claims($1, 2), lexical_claims($1, 2))", ["x"],
     "function_placement_not_allowed"),
    ("SELECT * FROM semantic_claims(lower($1), 2)", ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM semantic_claims($1, 1 + 1)", ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM fetch_chunk_bodies(ARRAY[$1::uuid])", ["x"], "function_placement_not_allowed"),
    ("SELECT * FROM (WITH s AS (SELECT * FROM semantic_claims($1, 2)) SELECT * FROM s) t", ["x"],
     "function_placement_not_allowed"),
    # argument checks
    ("SELECT * FROM graph_path($2, $1, $3)", ["a", "d", "b"], "invalid_parameter"),
    ("SELECT * FROM graph_neighborhood('d'::uuid, $1)", ["a"], "invalid_parameter"),
    ("SELECT * FROM graph_neighborhood($1, $2, 2, NULL, $3::timestamptz)", ["d", "a", "2026-01-01T00:00:00Z"],
     "invalid_parameter"),
    ("SELECT * FROM graph_path($1, $2, $3, 4, NULL, $4, $5)", ["d", "a", "b", None, "2026-01-01T00:00:00Z"],
     "invalid_parameter"),
    ("SELECT * FROM graph_neighborhood(start_entity_id => $1, deployment_id => $2)", ["a", "d"], "invalid_parameter"),
    ("SELECT * FROM graph_neighborhood($1, $2, valid_at => $3::timestamptz)", ["d", "a", "2026-01-01T00:00:00Z"],
     "invalid_parameter"),
    ("SELECT * FROM semantic_claims($1, 0)", ["x"], "invalid_parameter"),
    ("SELECT * FROM semantic_claims($1, k => -1)", ["x"], "invalid_parameter"),
    ("SELECT * FROM lexical_chunks($1, $2)", ["x", -3], "invalid_parameter"),
    ("SELECT * FROM lexical_chunks($1, $2)", ["x", "0"], "invalid_parameter"),
]


@pytest.mark.parametrize(("sql", "parameters", "code"), REJECTED,
                         ids=[f"{n}-{code}" for n, (_, _, code) in enumerate(REJECTED)])
def test_each_rule_has_its_code(sql: str, parameters: list, code: str) -> None:
    with pytest.raises(QueryRejected) as rejected:
        validate(sql, parameters)
    assert rejected.value.code == code, rejected.value.message
    assert rejected.value.message


# (sql, parameters, code): a statement breaking several rules gets the code of the first in the seed's order.
FIRST_RULE_WINS = [
    ("DELETE FROM x; SELECT 1", [], "multiple_statements"),
    ("SELECT now(); SELECT * FROM pg_class", [], "multiple_statements"),
    ("DELETE FROM facts WHERE now() > $3", [], "statement_not_allowed"),
    ("WITH d AS (DELETE FROM facts RETURNING *) SELECT now(), $4 FROM pg_class", [], "statement_not_allowed"),
    ("SELECT * FROM facts_current WHERE fact_label = 'x\x00' FOR UPDATE", [], "statement_not_allowed"),
    ("SELECT __corpusmem_x, $1, $3 FROM pg_class", [], "statement_not_allowed"),
    ("SELECT $1, $3 FROM pg_class WHERE now() > x", [1, 2, 3], "invalid_parameter"),
    ("SELECT * FROM pg_class WHERE now() > x", [], "relation_not_allowed"),
    ("SELECT pg_sleep(1) ^ 2 FROM facts_current", [], "function_not_allowed"),
    ("SELECT (a ^ 2)::regclass FROM facts_current", [], "operator_not_allowed"),
    ("SELECT a::regclass, count(*) WITHIN GROUP (ORDER BY a) FROM facts_current", [], "operator_not_allowed"),
    ("WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT count(*) WITHIN GROUP (ORDER BY n) FROM r) SELECT 1", [],
     "statement_not_allowed"),
    ("WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT semantic_claims($1, 2)", ["x"],
     "unbounded_recursion"),
    ("SELECT semantic_claims($1, 0)", ["x"], "function_placement_not_allowed"),
    ("SELECT 1 FROM semantic_claims($1, 0) a, semantic_claims($1, 0) b, semantic_claims($1, 0) c, "
     "semantic_claims($1, 0) d", ["x"], "quota_exceeded"),
]


@pytest.mark.parametrize(("sql", "parameters", "code"), FIRST_RULE_WINS, ids=[c for _, _, c in FIRST_RULE_WINS])
def test_first_broken_rule_decides_the_code(sql: str, parameters: list, code: str) -> None:
    with pytest.raises(QueryRejected) as rejected:
        validate(sql, parameters)
    assert rejected.value.code == code, rejected.value.message


# One call per category, taking $1 only, so that n calls need one parameter.
CATEGORY_CALLS = {
    "nomination": ("semantic_claims($1, 5)", "why"),
    "body_fetch": ("fetch_chunk_bodies($1::uuid[])", ["4f1c2a8e-0000-4000-8000-000000000001"]),
    "bitemporal": ("facts_as_of($1::timestamptz, $1::timestamptz)", "2026-01-01T00:00:00Z"),
    "temporal": ("canonical_bounds($1::timestamptz, NULL, 'open')", "2026-01-01T00:00:00Z"),
    "graph": ("graph_path($1, $1::uuid, $1::uuid)", "4f1c2a8e-0000-4000-8000-000000000001"),
}


def test_every_category_is_covered() -> None:
    assert set(CATEGORY_CALLS) == set(query_catalog.FUNCTIONS.values())


@pytest.mark.parametrize("category", sorted(CATEGORY_CALLS))
def test_three_calls_per_category_pass_and_four_are_over_quota(category: str) -> None:
    call, parameter = CATEGORY_CALLS[category]

    def statement(n: int) -> str:
        return "SELECT 1 FROM " + ", ".join(f"{call} AS c{i}" for i in range(n))

    assert len(validate(statement(3), [parameter]).public_calls) == 3
    with pytest.raises(QueryRejected) as rejected:
        validate(statement(4), [parameter])
    assert rejected.value.code == "quota_exceeded"


def test_quota_counts_calls_in_cte_bodies_too() -> None:
    sql = ("WITH a AS (SELECT * FROM semantic_claims($1, 5)), b AS (SELECT * FROM lexical_claims($1, 5)) "
           "SELECT 1 FROM a, b, semantic_chunks($1, 5) AS c")
    assert [call.name for call in validate(sql, ["x"]).public_calls] == ["semantic_claims", "lexical_claims",
                                                                          "semantic_chunks"]
    with pytest.raises(QueryRejected, match="quota_exceeded"):
        validate(sql + ", semantic_facts($1, 5) AS d", ["x"])


# Hostile statements: each refused with a code that names what it tried.
HOSTILE = [
    ("SELECT pg_sleep(10)", "function_not_allowed"),
    ("SELECT * FROM facts_current WHERE pg_catalog.pg_sleep(1) IS NULL", "function_not_allowed"),
    ("SELECT pg_read_file('/etc/passwd')", "function_not_allowed"),
    ("SELECT pg_ls_dir('.')", "function_not_allowed"),
    ("SELECT lo_import('/etc/passwd')", "function_not_allowed"),
    ("SELECT lo_export(1, '/tmp/x')", "function_not_allowed"),
    ("SELECT * FROM dblink('host=elsewhere', 'SELECT 1') AS t(a int)", "function_not_allowed"),
    ("SELECT set_config('role', 'postgres', false)", "function_not_allowed"),
    ("SELECT current_setting('corpusmem.api_secret')", "function_not_allowed"),
    ("SELECT nextval('facts_id_seq')", "function_not_allowed"),
    ("SELECT query_to_xml('SELECT * FROM facts', true, true, '')", "function_not_allowed"),
    ("COPY facts TO '/tmp/facts.csv'", "statement_not_allowed"),
    ("COPY (SELECT 1) TO PROGRAM 'id'", "statement_not_allowed"),
    ("DO $$ BEGIN PERFORM pg_sleep(10); END $$", "statement_not_allowed"),
    ("CALL refresh_everything()", "statement_not_allowed"),
    ("SET ROLE postgres", "statement_not_allowed"),
    ("SET statement_timeout = 0", "statement_not_allowed"),
    ("RESET ALL", "statement_not_allowed"),
    ("BEGIN", "statement_not_allowed"),
    ("SELECT 1; DROP TABLE facts", "multiple_statements"),
    ("SELECT 1; COMMIT; DROP TABLE facts", "multiple_statements"),
    ("WITH gone AS (DELETE FROM facts RETURNING *) SELECT count(*) FROM gone", "statement_not_allowed"),
    ("WITH x AS (INSERT INTO facts DEFAULT VALUES RETURNING *) SELECT * FROM x", "statement_not_allowed"),
    ("SELECT 1 /* ; */ ; DROP TABLE facts", "multiple_statements"),
    # standard_conforming_strings: a backslash does not escape the quote, so this is two statements.
    ("SELECT * FROM facts_current WHERE fact_label = '\\'; DELETE FROM facts; --'", "multiple_statements"),
    ("SELECT E'\\'; DELETE FROM facts' FROM facts", "relation_not_allowed"),
    ('SELECT * FROM "pg_catalog"."pg_class"', "relation_not_allowed"),
    ('SELECT * FROM "FACTS_CURRENT"', "relation_not_allowed"),
    ('SELECT * FROM "pg_authid"', "relation_not_allowed"),
    ('SELECT * FROM U&"\\0070g_class"', "parse_error"),
    ("SELECT * FROM facts_current WHERE a = $q$x$q$; DROP TABLE facts", "multiple_statements"),
    ("SELECT E'\\x00' FROM facts_current", "parse_error"),
    ("SELECT 'a\x00'", "parse_error"),
    ("SELECT 1 -- a comment ends at a carriage return\r; DELETE FROM facts", "multiple_statements"),
    ("SELECT $a$ x $a$; DELETE FROM facts; $a$", "parse_error"),  # PostgreSQL: unterminated dollar quote
    ("SELECT CURRENT_TIME(2) FROM facts_current", "function_not_allowed"),
    ("SELECT int4('1'), regclass('pg_authid') FROM facts_current", "function_not_allowed"),
    ("SELECT 1 WHERE EXISTS (TABLE facts)", "relation_not_allowed"),
    ("SELECT * FROM facts_current f1, facts f2", "relation_not_allowed"),
    ("SELECT (SELECT max(secret) FROM api_credentials) FROM facts_current", "relation_not_allowed"),
    ("SELECT * FROM memory_v1.facts_current JOIN pg_catalog.pg_roles ON TRUE", "relation_not_allowed"),
]


@pytest.mark.parametrize(("sql", "code"), HOSTILE, ids=[sql[:40] for sql, _ in HOSTILE])
def test_hostile_statements_are_refused(sql: str, code: str) -> None:
    with pytest.raises(QueryRejected) as rejected:
        validate(sql, [])
    assert rejected.value.code == code, rejected.value.message


def test_hundred_thousand_element_in_list_is_refused_at_once() -> None:
    sql = "SELECT * FROM facts_current WHERE evidence_count IN (" + ",".join(map(str, range(100_000))) + ")"
    started = time.perf_counter()
    with pytest.raises(QueryRejected) as rejected:
        validate(sql, [])
    assert rejected.value.code == "invalid_parameter"  # SQL text over 65,536 bytes, before any parsing
    assert time.perf_counter() - started < 0.5


def test_large_in_list_under_the_text_cap_validates_in_bounded_time() -> None:
    # Linear in the text: about 0.1 s for 2,000 elements on an idle laptop core. The bound is loose
    # because the test machine is shared; the 64 KiB text cap bounds the worst case.
    sql = "SELECT * FROM facts_current WHERE evidence_count IN (" + ",".join(["7"] * 2_000) + ")"
    started = time.perf_counter()
    validate(sql, [])
    assert time.perf_counter() - started < 5.0


def test_cartesian_blow_up_is_left_to_the_statement_timeout() -> None:
    # The validator cannot bound a join's size; the sandbox's statement_timeout does.
    validate("SELECT count(*) FROM claims_live a, claims_live b, claims_live c, claims_live d", [])


def test_validated_statement_describes_the_statement() -> None:
    sql = ("WITH s AS (SELECT * FROM semantic_claims($3::text, 20)) "
           "SELECT c.claim_text, count(*) FROM s JOIN memory_v1.claims_live AS c ON c.claim_id = s.claim_id "
           "JOIN claims_live AS d ON TRUE, graph_neighborhood($1::uuid, $2::uuid, 2, NULL) AS g "
           "WHERE lower(c.claim_text) ~~ $4 GROUP BY 1 ORDER BY 2 DESC")
    statement = validate(sql, ["deployment", "entity", "why", "%x%"])
    assert statement.referenced_views == ("claims_live",)
    assert statement.referenced_functions == ("count", "graph_neighborhood", "lower", "semantic_claims")
    assert statement.ordered_result is True
    assert statement.placeholder_count == 4
    assert statement.public_calls == (
        FunctionCall(name="semantic_claims", category="nomination", ordinal=0,
                     arguments=(("param", 3), ("literal", 20)), casts=("text", None), argument_names=(None, None)),
        FunctionCall(name="graph_neighborhood", category="graph", ordinal=1,
                     arguments=(("param", 1), ("param", 2), ("literal", 2), ("null", None)),
                     casts=("uuid", "uuid", None, None), argument_names=(None, None, None, None)),
    )


@pytest.mark.parametrize(("sql", "ordered"), [
    ("SELECT a FROM facts_current ORDER BY a", True),
    ("SELECT a FROM facts_current", False),
    ("SELECT a FROM (SELECT a FROM facts_current ORDER BY a) s", False),
    ("SELECT a FROM facts_current UNION SELECT a FROM facts_current ORDER BY 1", True),
    ("(SELECT a FROM facts_current ORDER BY a)", True),
])
def test_ordered_result_means_a_top_level_order_by(sql: str, ordered: bool) -> None:
    assert validate(sql).ordered_result is ordered


def test_literal_arguments_are_python_values() -> None:
    call = validate("SELECT * FROM lexical_claims('budget', 7, '{\"doc_id\": \"x\"}'::jsonb)").public_calls[0]
    assert call.arguments == (("literal", "budget"), ("literal", 7), ("literal", '{"doc_id": "x"}'))
    assert call.casts == (None, None, "jsonb")


def test_query_hash_ignores_layout_and_values_but_not_parameter_types() -> None:
    base = validate("SELECT fact_label FROM facts_current WHERE evidence_count > $1", [1]).query_hash
    assert validate("select  FACT_LABEL\nfrom facts_current -- why\nwhere evidence_count > $1", [99]).query_hash == base
    assert validate("SELECT fact_label FROM facts_current WHERE evidence_count > $1", ["1"]).query_hash != base
    assert validate("SELECT fact_label FROM facts_current WHERE evidence_count >= $1", [1]).query_hash != base
    assert statement_hash("SELECT fact_label FROM facts_current WHERE evidence_count > $1", [5]) == base


@pytest.mark.parametrize("sql", ["SELECT FROM WHERE", "SELECT 'open", "-- nothing", "SELECT 1 /* open"])
def test_statement_hash_is_empty_when_the_text_does_not_parse(sql: str) -> None:
    assert statement_hash(sql, []) == ""


def test_statement_hash_of_a_refused_but_parsable_statement() -> None:
    assert len(statement_hash("SELECT * FROM pg_catalog.pg_class", [])) == 64


def test_rejection_carries_code_and_message() -> None:
    with pytest.raises(QueryRejected) as rejected:
        validate("SELECT * FROM pg_catalog.pg_class")
    assert (rejected.value.code, rejected.value.message) == (
        "relation_not_allowed", "relation pg_catalog.pg_class is not in memory_v1")


@pytest.mark.parametrize("module", [validator, validator_parse, validator_grammar, validator_calls])
def test_doctests(module: object) -> None:
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0


@pytest.mark.parametrize("sql", [
    "SELECT " + "(" * 200 + "1" + ")" * 200,
    "SELECT " + "lower(" * 100 + "'x'" + ")" * 100,
    "SELECT " + "NOT " * 400 + "TRUE",
    "SELECT " + "CASE WHEN TRUE THEN " * 300 + "1" + " END" * 300,
    "SELECT r" + "[1]" * 7 + " FROM facts_current",
])
def test_statements_too_deep_for_the_parser_are_parse_errors(sql: str) -> None:
    started = time.perf_counter()
    with pytest.raises(QueryRejected) as rejected:
        validate(sql)
    assert rejected.value.code == "parse_error"
    assert time.perf_counter() - started < 2.0  # refused before or while parsing, never by stack exhaustion
    assert statement_hash(sql) == ""


def test_nesting_within_the_caps_still_validates() -> None:
    validate("SELECT " + "(" * 20 + "1" + ")" * 20 + ", lower(upper(lower(trim('x')))), r[1][2][3] FROM facts_current")


def test_statement_hash_is_empty_for_several_statements() -> None:
    # The hash names one statement; text holding several has none.
    assert statement_hash("SELECT 1; SELECT 2") == ""


def test_quoted_keyword_is_a_column_not_a_session_function() -> None:
    assert validate('SELECT "user", "current_schema" FROM facts_current').referenced_functions == ()


# Property tests: statements built from fragments inside and outside the query space.
_FORBIDDEN_RELATIONS = ["facts", "claims", "documents", "pg_class", "pg_catalog.pg_authid", "information_schema.tables",
                        "public.facts_current", '"FACTS_CURRENT"']
_FORBIDDEN_FUNCTIONS = ["now()", "pg_sleep(1)", "char_length(t)", "substr(t, 1)", "public.lower(t)",
                        "current_setting('x')", "to_char(d, 'YYYY')", "concat(t, t)"]
_ALLOWED_FUNCTIONS = ["count(*)", "lower(t)", "coalesce(a, 0)", "pg_catalog.upper(t)", "abs(a)", "length(t)",
                      "date_trunc('day', d)", "max(a)"]
_FRAGMENTS = ["SELECT", "FROM", "WHERE", "(", ")", ",", ";", "'", '"', "$1", "$$", "--", "/*", "*/", "::", "[", "]",
              "facts_current", "pg_class", "lower", "now()", "AND", "OR", "NOT", "=", "<", "WITH", "RECURSIVE", "AS",
              "UNION", "semantic_claims($1, 2)", "ORDER BY", "USING", "1", "x", "\\", "E'", "U&", "\x00", "ARRAY",
              "ANY"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=30), st.lists(st.integers(), max_size=3))
def test_any_text_is_validated_or_refused_with_a_code(fragments: list[str], parameters: list[int]) -> None:
    sql = " ".join(fragments)
    try:
        statement = validate(sql, parameters)
    except QueryRejected as rejected:
        assert rejected.code in {
            "multiple_statements", "statement_not_allowed", "parse_error", "invalid_parameter", "relation_not_allowed",
            "function_not_allowed", "operator_not_allowed", "unbounded_recursion", "function_placement_not_allowed",
            "quota_exceeded"}
        return
    assert set(statement.referenced_views) <= set(query_catalog.VIEWS)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(list(query_catalog.VIEWS) + _FORBIDDEN_RELATIONS), min_size=1, max_size=3),
    st.lists(st.sampled_from(_ALLOWED_FUNCTIONS + _FORBIDDEN_FUNCTIONS), min_size=1, max_size=4),
    st.booleans(),
)
def test_only_the_query_space_is_readable(relations: list[str], functions: list[str], in_where: bool) -> None:
    joins = " ".join(f"JOIN {relation} AS r{i} ON TRUE" for i, relation in enumerate(relations[1:], 1))
    where = f" WHERE {functions[-1]} IS NOT NULL" if in_where else ""
    sql = f"SELECT {', '.join(functions)} FROM {relations[0]} AS r0 {joins}{where}"
    outside = [relation for relation in relations if relation in _FORBIDDEN_RELATIONS]
    refused = [function for function in functions if function in _FORBIDDEN_FUNCTIONS]
    try:
        statement = validate(sql)
    except QueryRejected as rejected:
        # Relations are checked before functions: the first broken rule decides.
        assert rejected.code == ("relation_not_allowed" if outside else "function_not_allowed"), rejected.message
        assert outside or refused
        return
    assert not outside and not refused
    assert set(statement.referenced_views) == set(relations)
