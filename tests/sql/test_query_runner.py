"""The SQL query space run for real: the example corpus imported once, statements run as the sandbox
role through `sql.query_space.query_runner`, saved queries seeded, revalidated and run.

Every result is checked against the wire model (`serve.query_models.QueryResult`, unknown fields
refused), so what the runner builds is exactly what `POST /query/sql` answers.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import psycopg
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from psycopg import sql as pgsql

from serve.query_models import QueryResult
from serve.retrieval import facts as facts_retrieval
from sql.admission import Admission, NotAdmitted
from sql.query_space import query_catalog, query_manifest, saved_queries
from sql.query_space.query_runner import STATEMENTS, Caps, QueryRunner
from sql.query_space.validator import ValidatedStatement
from sql.read import facts_queries
from tests.support.memory import clone_example, unique_name

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def corpus(pg_admin_dsn, example_import, tmp_path_factory):
    """This module's own clone of the session's imported example corpus: (settings, deployment_id).
    A clone, since these tests write (saved-query states, a view comment changed and restored)."""
    memory = clone_example(pg_admin_dsn, example_import, unique_name("cm_query"),
                            tmp_path_factory.mktemp("query-memory"))
    with psycopg.connect(memory.dsn, autocommit=True) as conn:
        deployment_id = str(conn.execute("SELECT deployment_id FROM deployment").fetchone()[0])
        saved_queries.seed(conn, query_manifest.manifest_hash())
    return memory, deployment_id


@pytest.fixture(scope="module")
def embed(corpus):
    from actors.embedder import load_model
    from jobs import runtime

    model = load_model(runtime.embedding_model(corpus[0], corpus[0].dsn), "cpu")
    return lambda text: model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0]


@pytest.fixture(scope="module")
def runner(corpus, embed):
    # A budget per test module run far above what these tests spend: admission has its own tests.
    run = QueryRunner(corpus[0].dsn, corpus[1], embed,
                      admission=Admission(replace(STATEMENTS, caller_seconds=600, deployment_seconds=600)))
    yield run
    run.close()


def owner(corpus, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(corpus[0].dsn) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def ids(corpus) -> dict[str, str]:
    """Real ids of the example corpus, read as the owner, for statement parameters."""
    def one(sql: str) -> str:
        return str(owner(corpus, sql)[0][0])
    dana = one("SELECT entity_id FROM memory_v1.entities_current WHERE canonical_name = 'Dana'")
    return {
        "deployment": corpus[1], "dana": dana,
        "billing": one("SELECT entity_id FROM memory_v1.entities_current WHERE canonical_name = 'billing migration'"),
        "chunk": one("SELECT chunk_id FROM memory_v1.chunks_live ORDER BY doc_id, ordinal LIMIT 1 OFFSET 1"),
        "fact": one("SELECT fact_id FROM memory_v1.facts_current WHERE fact_label = 'Dana leads billing migration'"),
        "doc_a": one("SELECT doc_id FROM memory_v1.documents_live ORDER BY title LIMIT 1"),
        "doc_b": one("SELECT doc_id FROM memory_v1.documents_live ORDER BY title DESC LIMIT 1"),
    }


def parsed(result: dict) -> dict:
    QueryResult.model_validate(result)
    return result


# -- the seed's statements (digest §10), with parameters that exist in the example corpus ---------

SEED_STATEMENTS = [
    (("SELECT fact_kind, fact_label, valid_from, valid_until, evidence_count FROM facts_current "
     "WHERE fact_label ~~* $1 ORDER BY evidence_count DESC LIMIT 20"), ["%billing%"]),
    (("SELECT f.fact_label, f.valid_from, f.evidence_count, f.contradiction_group, e.stance, e.source_handle, "
     "e.asserted_at FROM facts_current AS f JOIN fact_claim_evidence_live AS e ON e.fact_kind = f.fact_kind "
     "AND e.fact_id = f.fact_id WHERE f.fact_label ~~* $1 ORDER BY f.evidence_count DESC, f.fact_id, e.stance, "
     "e.asserted_at DESC LIMIT 50"), ["%billing%"]),
    (("SELECT claim_text, source_handle, asserted_at FROM claims_live WHERE claim_text ~~* $1 "
     "ORDER BY asserted_at DESC LIMIT 20"), ["%billing%"]),
    (("SELECT s.rank, c.claim_text, c.source_handle, c.asserted_at FROM semantic_claims($1, 20) AS s "
     "JOIN claims_live AS c ON c.claim_id = s.claim_id ORDER BY s.rank LIMIT 20"),
     ["why did the billing migration slip"]),
    ("SELECT count(*) FROM documents_live", []),
    ("SELECT source_kind, count(*) AS documents FROM documents_live GROUP BY source_kind ORDER BY documents DESC", []),
    ("SELECT claim_text, asserted_at FROM claims_live WHERE claim_text ILIKE $1 ORDER BY asserted_at DESC",
     ["%cutover%"]),
    ("SELECT count(*) FROM facts_current WHERE subject_entity_id = $1::uuid", ["<dana>"]),
    ("SELECT predicate, count(*) AS n FROM facts_current GROUP BY 1 ORDER BY 2 DESC LIMIT $1", [10]),
    (("WITH RECURSIVE reach AS ( SELECT object_entity_id AS entity_id, 0 AS depth FROM graph_edges_current "
     "WHERE subject_entity_id = $1::uuid UNION SELECT e.object_entity_id, r.depth + 1 FROM reach AS r "
     "JOIN graph_edges_current AS e ON e.subject_entity_id = r.entity_id WHERE r.depth < 3 ) "
     "SELECT DISTINCT entity_id FROM reach"), ["<dana>"]),
    ("SELECT hops, relation_ids, node_ids FROM graph_neighborhood($1::uuid, $2::uuid, 2) ORDER BY hops, relation_ids",
     ["<deployment>", "<dana>"]),
]


def _bind(parameters: list, ids: dict[str, str]) -> list:
    return [ids[p[1:-1]] if isinstance(p, str) and p.startswith("<") else p for p in parameters]


@pytest.mark.parametrize("sql, parameters", SEED_STATEMENTS, ids=[f"seed{n}" for n in range(len(SEED_STATEMENTS))])
def test_seed_statements_run_and_return_rows(runner, ids, sql, parameters):
    result = parsed(runner.run(sql, _bind(parameters, ids)))
    assert result["termination_reason"] == "completed", (result["error_code"], result["error_message"])
    assert result["rows"] and result["returned_row_count"] == len(result["rows"])
    assert not result["empty_result"]
    assert set(result["referenced_views"]) <= set(query_catalog.VIEWS)
    assert result["surface_manifest_hash"] == query_manifest.manifest_hash()
    assert result["deployment_id"] == ids["deployment"]


def test_result_header_follows_the_seed_example(runner):
    result = parsed(runner.run("SELECT source_kind, count(*) AS documents FROM documents_live "
                               "GROUP BY source_kind ORDER BY documents DESC", max_rows=50))
    assert result["columns"] == [{"name": "source_kind", "type": "text", "nullable": True},
                                 {"name": "documents", "type": "bigint", "nullable": True}]
    assert result["referenced_views"] == ["documents_live"] and result["referenced_functions"] == ["count"]
    assert result["source_grain_tags"] == ["document_lineage_live"]
    assert result["ordered_result"] is True and result["evaluated_at"] is None
    assert result["pg_snapshot_at"] and result["limits"] == {"row_cap": 50, "byte_cap": 1_048_576,
                                                             "statement_timeout_ms": 5000, "analytical_tier": False}
    assert sum(row[1] for row in result["rows"]) == 11   # the example corpus: 8 files + 3 zip members
    assert (result["contract"], result["grade"], result["negative_kind"], result["exact_total"]) == \
        ("QueryResult/v1", "exploratory_tabular", None, None)


def test_evaluated_at_only_for_current_sources_and_shared_by_them(runner):
    current = parsed(runner.run("SELECT f.evaluated_at, c.evaluated_at FROM facts_current AS f "
                                "LEFT JOIN contradiction_members_current AS c ON c.fact_id = f.fact_id LIMIT 5"))
    assert current["evaluated_at"] is not None
    assert {row[0] for row in current["rows"]} == {current["evaluated_at"]}
    assert {row[1] for row in current["rows"]} <= {current["evaluated_at"], None}
    mixed = parsed(runner.run("SELECT count(*) FROM facts_current AS f JOIN claims_live AS c ON true"))
    assert mixed["evaluated_at"] is None and mixed["pg_snapshot_at"] is not None


def test_row_cap_clamps_and_truncates(runner):
    many = "SELECT a.claim_id, b.claim_id FROM claims_live AS a CROSS JOIN claims_live AS b"
    result = parsed(runner.run(many, max_rows=5000))
    assert result["limits"]["row_cap"] == 1000
    assert result["returned_row_count"] == 1000 and (result["truncated"], result["truncation_reason"]) == \
        (True, "row_cap")
    none = parsed(runner.run(many, max_rows=0))
    assert none["rows"] == [] and none["empty_result"] and none["truncation_reason"] == "row_cap"
    few = parsed(runner.run("SELECT count(*) FROM claims_live", max_rows=0))
    assert few["rows"] == [] and few["limits"]["row_cap"] == 0


def test_byte_cap_cuts_and_counts_json_bytes(runner):
    result = parsed(runner.run("SELECT claim_text FROM claims_live", caps=Caps(row_cap=1000, byte_cap=600)))
    assert (result["truncated"], result["truncation_reason"]) == (True, "byte_cap")
    assert 0 < result["returned_byte_count"] <= 600
    assert result["returned_byte_count"] == len(json.dumps(result["rows"], separators=(",", ":"),
                                                           ensure_ascii=False).encode())


def test_cartesian_blow_up_stops_at_the_statement_timeout(runner):
    started = time.monotonic()
    result = parsed(runner.run("SELECT count(*) FROM chunks_live AS a, chunks_live AS b, chunks_live AS c, "
                               "claims_live AS d, claims_live AS e"))
    assert (result["termination_reason"], result["error_code"]) == ("failed", "statement_timeout")
    assert time.monotonic() - started < 7 and result["rows"] == [] and result["empty_result"]


def test_recursive_bomb_is_refused_and_the_role_times_it_out_anyway(runner):
    bomb = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    refused = parsed(runner.run(bomb))
    assert (refused["termination_reason"], refused["error_code"]) == ("rejected", "unbounded_recursion")
    started = time.monotonic()
    result = parsed(runner.execute(_fooled(bomb), [], Caps(statement_timeout_ms=1500)))
    assert result["error_code"] in ("statement_timeout", "resource_limit")
    assert time.monotonic() - started < 4


def _fooled(sql: str) -> ValidatedStatement:
    """A statement as if the validator had let it through."""
    return ValidatedStatement(sql=sql, query_hash="fooled", referenced_views=(), referenced_functions=(),
                              public_calls=(), ordered_result=False, placeholder_count=0)


@pytest.mark.parametrize("sql, code", [
    ("SELECT pg_read_file('/etc/passwd')", "function_not_allowed"),
    ("SELECT * FROM pg_ls_dir('.')", "function_not_allowed"),
    ("SELECT lo_import('/etc/passwd')", "function_not_allowed"),
    ("SELECT * FROM facts", "relation_not_allowed"),
    ("SELECT * FROM public.facts", "relation_not_allowed"),
    ("SELECT * FROM public.deployment", "relation_not_allowed"),
    ("SELECT * FROM saved_queries", "relation_not_allowed"),
    # A cursor holds one query: PostgreSQL's parser refuses anything else before it runs.
    ("CREATE TABLE memory_v1.planted (a int)", "parse_error"),
    ("DELETE FROM memory_v1.facts_current", "parse_error"),
    ("SELECT 1; DELETE FROM memory_v1.facts_current", "multiple_statements"),
    ("SELECT * FROM memory_v1_private.visible_claims", "relation_not_allowed"),
    ("SELECT * FROM pg_catalog.pg_authid", "relation_not_allowed"),
])
def test_a_statement_that_fools_the_validator_still_fails_at_the_role(runner, sql, code):
    assert runner.run(sql)["termination_reason"] == "rejected"   # the first layer holds
    result = parsed(runner.execute(_fooled(sql), [], Caps()))
    assert (result["termination_reason"], result["error_code"]) == ("failed", code), result["error_message"]
    assert "passwd" not in result["error_message"] and "facts" not in result["error_message"]


def test_a_session_setting_changed_by_a_fooled_statement_does_not_outlive_it(runner):
    parsed(runner.execute(_fooled("SELECT set_config('statement_timeout', '0', false)"), [], Caps()))
    result = runner.execute(_fooled("SELECT pg_sleep(3)"), [], Caps(statement_timeout_ms=500))
    assert result["error_code"] == "statement_timeout"


def test_the_sandbox_role_reads_memory_v1_and_nothing_else(corpus):
    readable = owner(corpus, "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                             " WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')"
                             " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
                             " AND has_table_privilege(%s, c.oid, 'SELECT')", query_catalog.SANDBOX_ROLE)
    assert {schema for schema, _ in readable} == {"memory_v1"}
    assert {view for _, view in readable} == set(query_catalog.VIEWS)
    writable = owner(corpus, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                             " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v')"
                             " AND has_table_privilege(%s, c.oid, 'INSERT, UPDATE, DELETE')", query_catalog.SANDBOX_ROLE)
    assert writable == [(0,)]


def _columns() -> dict[str, list[str]]:
    return {v["name"]: [c["name"] for c in v["columns"] if c["type"] in ("text", "uuid", "integer", "bigint",
                                                                          "boolean", "timestamp with time zone")]
            for v in query_manifest.manifest()["views"]}


@st.composite
def statements(draw):
    """Random statements from a small grammar over the views and their columns."""
    columns = _columns()
    view = draw(st.sampled_from(sorted(columns)))
    chosen = draw(st.lists(st.sampled_from(columns[view]), min_size=1, max_size=3, unique=True))
    shape = draw(st.sampled_from(["plain", "count", "join", "cte"]))
    limit = draw(st.integers(min_value=0, max_value=2000))
    where = draw(st.sampled_from(["", f" WHERE {chosen[0]} IS NOT NULL", f" WHERE {chosen[0]} IS NULL"]))
    if shape == "count":
        return f"SELECT {chosen[0]}, count(*) AS n FROM {view}{where} GROUP BY 1 ORDER BY 2 DESC LIMIT {limit}"
    if shape == "join":
        other = draw(st.sampled_from(sorted(columns)))
        return (f"SELECT a.{chosen[0]}, count(*) AS n FROM {view} AS a CROSS JOIN {other} AS b "
                f"GROUP BY a.{chosen[0]} LIMIT {limit}")
    if shape == "cte":
        return f"WITH picked AS (SELECT {', '.join(chosen)} FROM {view}{where}) SELECT * FROM picked LIMIT {limit}"
    return f"SELECT {', '.join(chosen)} FROM memory_v1.{view}{where} ORDER BY 1 LIMIT {limit}"


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(sql=statements())
def test_random_statements_stay_inside_memory_v1_and_the_time_cap(runner, sql):
    started = time.monotonic()
    result = parsed(runner.run(sql, max_rows=1000))
    assert time.monotonic() - started < 6.5
    assert result["termination_reason"] in ("completed", "failed"), (sql, result["error_code"])
    if result["termination_reason"] == "failed":
        assert result["error_code"] in ("statement_timeout", "resource_limit"), (sql, result["error_code"])
    assert result["referenced_views"] and set(result["referenced_views"]) <= set(query_catalog.VIEWS)
    assert result["returned_row_count"] <= 1000 and result["returned_byte_count"] <= 1_048_576


def test_admission_refuses_a_third_concurrent_statement_per_caller(corpus, embed):
    admission = Admission(STATEMENTS)
    run = QueryRunner(corpus[0].dsn, corpus[1], embed, admission=admission)
    try:
        with admission.admit("credential:a"), admission.admit("credential:a"):
            third = parsed(run.run("SELECT count(*) FROM documents_live", caller="credential:a"))
            other = parsed(run.run("SELECT count(*) FROM documents_live", caller="open"))
        assert (third["termination_reason"], third["error_code"]) == ("rejected", "concurrency_exceeded")
        assert other["termination_reason"] == "completed"
    finally:
        run.close()


def test_admission_refuses_past_the_statement_seconds_budget(corpus, embed):
    run = QueryRunner(corpus[0].dsn, corpus[1], embed,
                      admission=Admission(replace(STATEMENTS, caller_seconds=0.000_001)))
    try:
        first = parsed(run.run("SELECT count(*) FROM claims_live", caller="open"))
        second = parsed(run.run("SELECT count(*) FROM claims_live", caller="open"))
        assert first["termination_reason"] == "completed"
        assert (second["termination_reason"], second["error_code"]) == ("rejected", "quota_exceeded")
    finally:
        run.close()


def test_rejections_never_reach_the_database(runner):
    result = parsed(runner.run("DELETE FROM facts_current"))
    assert (result["termination_reason"], result["error_code"]) == ("rejected", "statement_not_allowed")
    assert result["rows"] == [] and result["empty_result"] and result["error_message"]
    unparsable = parsed(runner.run("SELEC nonsense ((("))
    assert unparsable["query_hash"] == "" and unparsable["termination_reason"] == "rejected"
    assert parsed(runner.run("SELECT now()"))["error_code"] == "function_not_allowed"


def test_graph_functions_need_this_deployment_as_their_first_parameter(runner, ids):
    sql = "SELECT row_kind, hops, node_ids FROM graph_neighborhood($1::uuid, $2::uuid, 2)"
    other = parsed(runner.run(sql, ["00000000-0000-0000-0000-000000000000", ids["dana"]]))
    assert (other["termination_reason"], other["error_code"]) == ("rejected", "invalid_parameter")
    result = parsed(runner.run(sql, [ids["deployment"], ids["dana"]]))
    assert result["termination_reason"] == "completed", result["error_message"]
    assert "status" not in {row[0] for row in result["rows"]}
    assert [g["function"] for g in result["graph_invocations"]] == ["graph_neighborhood"]
    # the seed's own example selects no row_kind: the status row must not be among its rows either
    bare = parsed(runner.run("SELECT hops, relation_ids, node_ids FROM graph_neighborhood($1::uuid, $2::uuid, 2)",
                             [ids["deployment"], ids["dana"]]))
    assert bare["rows"] and all(hops is not None and nodes for hops, _, nodes in bare["rows"])
    assert result["limits"]["statement_timeout_ms"] == 5000


def test_semantic_search_reports_its_invocation(runner):
    result = parsed(runner.run("SELECT s.claim_id FROM semantic_claims($1, 5) AS s", ["who leads billing"]))
    assert result["termination_reason"] == "completed", result["error_message"]
    assert [i["function"] for i in result["semantic_invocations"]] == ["semantic_claims"]
    assert 0 < result["returned_row_count"] <= 5
    named = parsed(runner.run("SELECT s.claim_id FROM semantic_claims(k => 5, query => $1) AS s",
                              ["who leads billing"]))
    assert named["termination_reason"] == "completed", named["error_message"]
    assert named["rows"] == result["rows"]


def test_explain_plans_without_running(runner):
    result = parsed(runner.explain("SELECT count(*) FROM claims_live WHERE claim_text ~~* $1", ["%billing%"]))
    assert result["termination_reason"] == "completed", result["error_message"]
    assert result["columns"] == [{"name": "QUERY PLAN", "type": "json", "nullable": True}]
    assert len(result["rows"]) == 1 and "Plan" in result["rows"][0][0][0]
    bomb = parsed(runner.explain("SELECT count(*) FROM chunks_live AS a, chunks_live AS b, chunks_live AS c, "
                                 "claims_live AS d, claims_live AS e"))
    assert bomb["termination_reason"] == "completed" and bomb["elapsed_ms"] < 2000


def test_views_agree_with_the_assured_facts_read(corpus, runner, ids):
    result = parsed(runner.run("SELECT fact_id FROM facts_current WHERE subject_entity_id = $1::uuid "
                               "OR object_entity_id = $1::uuid", [ids["dana"]], max_rows=1000))
    answer = facts_queries.read(corpus[0].dsn, lambda c: facts_retrieval.facts(c, entity_ids=[ids["dana"]], k=1000, hops=1))
    with psycopg.connect(corpus[0].dsn) as conn:
        about = {str(r[0]) for r in conn.execute(
            "SELECT fact_id FROM facts WHERE %s IN (subject_id, object_id, anchor_id)", (ids["dana"],)).fetchall()}
    # facts_current holds facts known to be valid now: the operation's `confirmed` ones (its
    # `possible` ones have an unknown window, which the view leaves out by the seed's rule).
    confirmed = {f.fact_id for f in answer.facts if f.fact_id in about and f.temporal_match == "confirmed"}
    assert {row[0] for row in result["rows"]} == confirmed
    assert "Dana leads billing migration" in {f.label for f in answer.facts}


# -- saved queries ----------------------------------------------------------------------------

SAVED_PARAMETERS = {
    "claims_verbatim": ["who leads the billing migration"], "claims_about": ["<dana>"],
    "claims_as_of": ["2026-01-01T00:00:00Z", "2026-12-31T23:59:59Z"],
    "claims_hybrid_rrf": ["billing migration cutover"], "chunks_hybrid_rrf": ["billing migration cutover"],
    "chunk_neighbors": ["<chunk>"], "documents_about": ["<dana>"], "pages_about": ["<dana>"],
    "relation_current": ["<dana>"], "observation_current": ["<dana>"],
    "identity_as_of": ["<dana>", "2030-01-01T00:00:00Z"], "entity_timeline": ["<dana>"], "explain": ["<fact>"],
    "multi_hop_context": ["<deployment>", "<dana>", "<billing>", "who leads the billing migration"],
    "changed_since": ["2000-01-01T00:00:00Z"], "graph_neighborhood": ["<deployment>", "<dana>"],
    "graph_path": ["<deployment>", "<dana>", "<billing>"], "graph_citation_path": ["<deployment>", "<doc_a>", "<doc_b>"],
}
# Our corpus has no compiled pages and no citations between documents: these answer with no rows.
SAVED_WITHOUT_ROWS = {"pages_about", "graph_citation_path"}


def test_eighteen_shipped_examples_seeded_active(corpus):
    with psycopg.connect(corpus[0].dsn) as conn:
        listed = saved_queries.list_queries(conn)
    assert [q["name"] for q in listed] == sorted(SAVED_PARAMETERS)
    assert {(q["namespace"], q["status"], q["origin"], q["assurance"]) for q in listed} == \
        {("examples", "active", "shipped_example", "shipped_example")}
    assert {q["validated_surface_manifest_hash"] for q in listed} == {query_manifest.manifest_hash()}


@pytest.mark.parametrize("name", sorted(SAVED_PARAMETERS))
def test_each_shipped_example_runs_on_the_example_corpus(corpus, runner, ids, name):
    with psycopg.connect(corpus[0].dsn) as conn:
        saved = saved_queries.runnable(conn, "examples", name, None, query_manifest.manifest_hash())
    assert saved["parameter_schema"] == {}
    result = parsed(runner.run(saved["sql"], _bind(SAVED_PARAMETERS[name], ids),
                               saved_query=saved_queries.saved_query_ref(saved)))
    assert result["termination_reason"] == "completed", (result["error_code"], result["error_message"])
    assert result["saved_query"]["name"] == name and result["saved_query"]["version"] == "1"
    assert bool(result["rows"]) is (name not in SAVED_WITHOUT_ROWS)


def test_manifest_change_moves_saved_queries_to_pending_until_revalidated(corpus):
    current = query_manifest.manifest_hash()
    with psycopg.connect(corpus[0].dsn, autocommit=True) as conn:
        with pytest.raises(saved_queries.SavedQueryError) as unknown:
            saved_queries.runnable(conn, "examples", "nope", None, current)
        assert (unknown.value.code, unknown.value.status) == ("saved_query_not_found", 404)
        try:
            # A release whose query space differs: every active version waits for revalidation.
            moved = saved_queries.mark_pending(conn, "f" * 64)
            assert moved == 18
            assert {q["status"] for q in saved_queries.list_queries(conn, status="pending_revalidation")} == \
                {"pending_revalidation"}
            with pytest.raises(saved_queries.SavedQueryError) as pending:
                saved_queries.runnable(conn, "examples", "relation_current", None, current)
            assert (pending.value.code, pending.value.status) == ("saved_query_revalidation_pending", 409)
        finally:
            outcome = saved_queries.revalidate(conn, current)
        assert set(outcome.values()) == {"active"} and len(outcome) == 18
        assert saved_queries.runnable(conn, "examples", "relation_current", None, current)["status"] == "active"


def test_seeding_after_a_release_revalidates_the_examples_and_leaves_other_queries_pending(corpus):
    current = query_manifest.manifest_hash()
    with psycopg.connect(corpus[0].dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO saved_queries (query_id, namespace, name, version, sql, status, origin, assurance,"
                     " query_hash, validated_surface_manifest_hash, author_principal, approver_principal)"
                     " VALUES (gen_random_uuid(), 'team', 'documents', 1, 'SELECT count(*) FROM documents_live',"
                     " 'active', 'human', 'customer_authored', 'h', %s, 'ana', 'ben')", ("e" * 64,))
        try:
            saved_queries.seed(conn, current)
            assert saved_queries.describe(conn, "team", "documents")["status"] == "pending_revalidation"
            assert saved_queries.describe(conn, "examples", "explain")["status"] == "active"
            with pytest.raises(saved_queries.SavedQueryError) as pending:
                saved_queries.runnable(conn, "team", "documents", None, current)
            assert pending.value.code == "saved_query_revalidation_pending"
            assert saved_queries.revalidate(conn, current) == {"team.documents v1": "active"}
            assert saved_queries.runnable(conn, "team", "documents", 1, current)["validated_surface_manifest_hash"] \
                == current
        finally:
            conn.execute("DELETE FROM saved_queries WHERE namespace = 'team'")


def test_seeding_never_reenables_a_disabled_example_nor_overwrites_a_user_query(corpus):
    current = query_manifest.manifest_hash()
    with psycopg.connect(corpus[0].dsn, autocommit=True) as conn:
        conn.execute("UPDATE saved_queries SET status = 'disabled' WHERE namespace = 'examples'"
                     " AND name = 'changed_since'")
        try:
            assert "changed_since" not in saved_queries.seed(conn, current)
            with pytest.raises(saved_queries.SavedQueryError) as disabled:
                saved_queries.runnable(conn, "examples", "changed_since", None, current)
            assert (disabled.value.code, disabled.value.status) == ("saved_query_disabled", 409)
            assert "changed_since" not in {q["name"] for q in saved_queries.list_queries(conn)}
        finally:
            conn.execute("UPDATE saved_queries SET status = 'active' WHERE namespace = 'examples'"
                         " AND name = 'changed_since'")
        conn.execute("UPDATE saved_queries SET origin = 'human', assurance = 'customer_authored',"
                     " sql = 'SELECT 1' WHERE namespace = 'examples' AND name = 'explain'")
        try:
            assert saved_queries.seed(conn, current) == []
            assert saved_queries.describe(conn, "examples", "explain")["sql"] == "SELECT 1"
        finally:
            shipped = next(e for e in saved_queries.examples() if e.name == "explain")
            conn.execute("UPDATE saved_queries SET origin = 'shipped_example', assurance = 'shipped_example',"
                         " sql = %s WHERE namespace = 'examples' AND name = 'explain'", (shipped.sql,))


def test_a_live_schema_that_differs_from_the_manifest_is_refused(corpus, embed):
    (comment,) = owner(corpus, "SELECT obj_description('memory_v1.documents_live'::regclass, 'pg_class')")[0]
    with psycopg.connect(corpus[0].dsn, autocommit=True) as conn:
        conn.execute("COMMENT ON VIEW memory_v1.documents_live IS 'changed by hand'")
        try:
            run = QueryRunner(corpus[0].dsn, corpus[1], embed)
            result = parsed(run.run("SELECT count(*) FROM documents_live"))
            run.close()
        finally:
            conn.execute(pgsql.SQL("COMMENT ON VIEW memory_v1.documents_live IS {}").format(pgsql.Literal(comment)))
    assert (result["termination_reason"], result["error_code"]) == ("rejected", "schema_version_mismatch")


def test_an_unreachable_database_is_pg_unavailable(tmp_path):
    run = QueryRunner(f"host={tmp_path} dbname=nowhere user=nobody", "00000000-0000-0000-0000-000000000001")
    try:
        result = parsed(run.run("SELECT count(*) FROM documents_live"))
    finally:
        run.close()
    assert (result["termination_reason"], result["error_code"]) == ("failed", "pg_unavailable")
    assert str(tmp_path) not in result["error_message"]


def test_admission_counts_the_deployment_across_callers():
    admission = Admission(STATEMENTS)
    holders = [admission.admit(f"credential:{n}") for n in range(8)]
    for held in holders:
        held.__enter__()
    try:
        with pytest.raises(NotAdmitted) as refused, admission.admit("credential:9"):
            pass
        assert refused.value.reason == "in_flight"
    finally:
        for held in holders:
            held.__exit__(None, None, None)
    with admission.admit("credential:9"):
        pass
