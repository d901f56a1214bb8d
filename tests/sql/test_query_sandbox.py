"""Defence in depth of the SQL query space: what a statement the validator let through by mistake
still cannot do to the settings it runs under, and the search settings the runner gives it.

A statement runs as the sandbox role, which may not call set_config (migration 0008): it cannot
move its evaluation clock, raise its search budgets or rewrite the invocation records the runner
reports. The runner sets every one of those itself, with the read API's `hnsw.ef_search`, so a
search function nominates its whole k.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg
import pytest
from psycopg import sql as pgsql

from serve.query_models import QueryResult
from sql.query_space import query_catalog, query_manifest
from sql.query_space.query_runner import Caps, QueryRunner
from sql.query_space.validator import ValidatedStatement
from sql.store import authority
from tests.support.memory import clone_example, unique_name

pytestmark = pytest.mark.integration

SET_CONFIG = "pg_catalog.set_config(text, text, boolean)"


@pytest.fixture(scope="module")
def corpus(pg_admin_dsn, example_import, tmp_path_factory):
    """This module's clone of the imported example corpus: (dsn, database, deployment_id). A clone,
    since these tests change role defaults and privileges in it (and restore them)."""
    database = unique_name("cm_sandbox")
    memory = clone_example(pg_admin_dsn, example_import, database, tmp_path_factory.mktemp("sandbox-memory"))
    with psycopg.connect(memory.dsn) as conn:
        deployment_id = str(conn.execute("SELECT deployment_id FROM deployment").fetchone()[0])
    return memory.dsn, database, deployment_id


@pytest.fixture(scope="module")
def vector(corpus) -> list[float]:
    """A stored claim vector: the embedder of these runners answers every text with it, so no model
    is loaded (nomination counts do not depend on the query)."""
    with psycopg.connect(corpus[0]) as conn:
        text = conn.execute("SELECT embedding::text FROM claims WHERE embedding IS NOT NULL"
                            " ORDER BY claim_id LIMIT 1").fetchone()[0]
    return json.loads(text)


@contextmanager
def running(corpus, vector) -> Iterator[QueryRunner]:
    """A runner of its own: its pool connects after the test set the role's defaults."""
    runner = QueryRunner(corpus[0], corpus[2], lambda text: vector)
    try:
        yield runner
    finally:
        runner.close()


@contextmanager
def role_defaults(corpus, settings: dict[str, str]) -> Iterator[None]:
    """Defaults of the sandbox role in this database, as an operator or the role itself could leave
    them (a role may set its own defaults): every new sandbox connection starts with them."""
    database = pgsql.Identifier(corpus[1])
    with psycopg.connect(corpus[0], autocommit=True) as conn:
        for name, value in settings.items():
            conn.execute(pgsql.SQL("ALTER ROLE corpusmem_query IN DATABASE {} SET {} = {}").format(
                database, pgsql.Identifier(*name.split(".")), pgsql.Literal(value)))
        try:
            yield
        finally:
            conn.execute(pgsql.SQL("ALTER ROLE corpusmem_query IN DATABASE {} RESET ALL").format(database))


def sandbox(dsn: str) -> psycopg.Connection:
    return psycopg.connect(query_manifest.sandbox_dsn(dsn), autocommit=True)


def fooled(sql: str) -> ValidatedStatement:
    """A statement as if the validator had let it through."""
    return ValidatedStatement(sql=sql, query_hash="fooled", referenced_views=(), referenced_functions=(),
                              public_calls=(), ordered_result=False, placeholder_count=0)


def parsed(result: dict) -> dict:
    QueryResult.model_validate(result)
    return result


# -- PostgreSQL refuses set_config to the sandbox role ---------------------------------------------

TAMPERING = [
    "SELECT set_config('corpusmem.evaluated_at', '2000-01-01T00:00:00+00:00', true)",
    "SELECT count(*) FROM memory_v1.facts_current, set_config('corpusmem.evaluated_at', '2000-01-01', true)",
    "SELECT pg_catalog.set_config('corpusmem.search_candidates', '-1000000', true)",
    "SELECT set_config('corpusmem.chunk_body_bytes', '-1000000000', true)",
    "SELECT set_config('corpusmem.semantic_invocations', '[{\"function\": \"forged\"}]', true)",
    "SELECT set_config('corpusmem.graph_invocations', '[]', true)",
    "SELECT set_config('corpusmem.query_vectors', '{}', true)",
    "SELECT set_config('statement_timeout', '0', false)",
    "SELECT set_config('role', 'postgres', true)",
]


@pytest.mark.parametrize("sql", TAMPERING, ids=[f"set_config{n}" for n in range(len(TAMPERING))])
def test_postgresql_refuses_set_config_to_a_statement_past_the_validator(corpus, vector, sql):
    with running(corpus, vector) as runner:
        assert parsed(runner.run(sql))["termination_reason"] == "rejected"   # the first layer holds
        result = parsed(runner.execute(fooled(sql), [], Caps()))
    assert (result["termination_reason"], result["error_code"]) == ("failed", "function_not_allowed")
    with sandbox(corpus[0]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege,
                                                   match="permission denied for function set_config"):
        conn.execute(sql)


@pytest.mark.parametrize("sql, code", [
    # a statement is one query (a cursor): PostgreSQL's parser refuses a command before it runs
    ("SET LOCAL corpusmem.evaluated_at = '2000-01-01T00:00:00+00:00'", "parse_error"),
    ("RESET ALL", "parse_error"),
    ("UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout'", "parse_error"),
    (("WITH u AS (UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout' RETURNING name)"
      " SELECT * FROM u"), "execution_error"),
])
def test_a_statement_cannot_set_or_reset_a_setting_by_command(corpus, vector, sql, code):
    with running(corpus, vector) as runner:
        result = parsed(runner.execute(fooled(sql), [], Caps()))
    assert (result["termination_reason"], result["error_code"]) == ("failed", code)


def test_pg_settings_update_rule_is_refused_to_the_sandbox_role(corpus):
    with sandbox(corpus[0]) as conn:
        conn.execute("SET default_transaction_read_only = off")   # so that only the privilege decides
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function set_config"):
            conn.execute("UPDATE pg_settings SET setting = '0' WHERE name = 'statement_timeout'")
        assert conn.execute("SELECT current_user").fetchone()[0] == query_catalog.SANDBOX_ROLE


# -- the runner's own settings -------------------------------------------------------------------

def test_the_runner_sets_its_clock_budgets_and_records_whatever_the_role_defaults_say(corpus, vector):
    defaults = {"corpusmem.evaluated_at": "2000-01-01T00:00:00+00:00", "corpusmem.search_candidates": "-1000000",
                "corpusmem.semantic_invocations": '[{"function": "forged"}]'}
    with role_defaults(corpus, defaults), running(corpus, vector) as runner:
        clock = parsed(runner.run("SELECT DISTINCT evaluated_at FROM facts_current"))
        searched = parsed(runner.run("SELECT claim_id FROM semantic_claims($1, 5)", ["who leads billing"]))
        over = parsed(runner.run("SELECT a.claim_id FROM semantic_claims($1, 100) AS a"
                                 " JOIN semantic_claims($1, 100) AS b ON b.claim_id = a.claim_id"
                                 " JOIN semantic_claims($1, 1) AS c ON c.claim_id = a.claim_id",
                                 ["who leads billing"]))
    assert clock["termination_reason"] == "completed", clock["error_message"]
    assert clock["rows"] == [[clock["evaluated_at"]]] == [[clock["pg_snapshot_at"]]]
    assert datetime.fromisoformat(clock["evaluated_at"]).year > 2000
    assert searched["termination_reason"] == "completed", searched["error_message"]
    assert [i["function"] for i in searched["semantic_invocations"]] == ["semantic_claims"]
    assert (over["termination_reason"], over["error_code"]) == ("failed", "quota_exceeded")


def test_a_search_function_nominates_its_full_k_past_pgvectors_default_ef_search(corpus, vector):
    query = "SELECT count(*) FROM memory_v1.semantic_claims('q', 200)"
    with psycopg.connect(corpus[0]) as conn, conn.transaction():
        live = conn.execute("SELECT count(*) FROM memory_v1.claims_live").fetchone()[0]
        # what a transaction without the runner's setting gets: pgvector's default caps the scan
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL hnsw.ef_search = 40")
        conn.execute("SELECT set_config('corpusmem.query_vectors', %s, true)", (json.dumps({"q": vector}),))
        capped = conn.execute(query).fetchone()[0]
    # an HNSW element holds every claim of one vector (repeated claims): 40 elements, a few more rows
    assert live > 100 and capped < 60
    # The example memory is small enough that the planner would rather sort every claim; on a
    # memory of real size it reads the HNSW index, as it must here.
    with role_defaults(corpus, {"enable_seqscan": "off"}), running(corpus, vector) as runner:
        result = parsed(runner.run("SELECT s.claim_id FROM semantic_claims($1, 200) AS s", ["who leads billing"]))
    assert result["termination_reason"] == "completed", result["error_message"]
    assert result["returned_row_count"] == 100   # k is capped at 100 a call
    [call] = result["semantic_invocations"]
    assert (call["nominated"], call["confirmed"]) == (100, 100)


def test_the_runner_warns_when_the_sandbox_may_call_set_config(corpus, vector, caplog):
    with psycopg.connect(corpus[0], autocommit=True) as conn:
        conn.execute(f"GRANT EXECUTE ON FUNCTION {SET_CONFIG} TO corpusmem_query")
        try:
            with running(corpus, vector) as runner, caplog.at_level(logging.WARNING, "sql.query_space.query_runner"):
                assert parsed(runner.run("SELECT count(*) FROM documents_live"))["termination_reason"] == "completed"
        finally:
            conn.execute(f"REVOKE EXECUTE ON FUNCTION {SET_CONFIG} FROM corpusmem_query")
    assert any("can call set_config" in r.getMessage() for r in caplog.records)


# -- the migration, with and without a superuser ---------------------------------------------------

def _migration_0008() -> str:
    [text] = [text for number, _, text in authority.migration_files() if number == 8]
    return text


def _may_set_config(conn: psycopg.Connection, role: str) -> bool:
    return conn.execute("SELECT has_function_privilege(%s, %s, 'EXECUTE')", (role, SET_CONFIG)).fetchone()[0]


def test_the_migration_leaves_set_config_to_the_owners_of_the_memory(memory):
    owner = unique_name("cm_function_owner")
    with psycopg.connect(memory.dsn) as conn:
        assert not _may_set_config(conn, query_catalog.SANDBOX_ROLE)
        # as before the migration, with one search function owned by a role that is no superuser
        conn.execute(f"GRANT EXECUTE ON FUNCTION {SET_CONFIG} TO PUBLIC")
        conn.execute(pgsql.SQL("CREATE ROLE {} NOSUPERUSER").format(pgsql.Identifier(owner)))
        conn.execute(pgsql.SQL("ALTER FUNCTION memory_v1.semantic_claims(text, integer, jsonb, text, text) OWNER TO {}")
                     .format(pgsql.Identifier(owner)))
        conn.execute(_migration_0008())
        assert not _may_set_config(conn, query_catalog.SANDBOX_ROLE) and _may_set_config(conn, owner)
        conn.rollback()


def test_without_a_superuser_the_migration_warns_and_changes_nothing(memory):
    migrator = unique_name("cm_managed_owner")
    notices: list[tuple[str | None, str | None, str | None]] = []
    with psycopg.connect(memory.dsn) as conn:
        # a notice's fields are readable only while its handler runs
        conn.add_notice_handler(lambda n: notices.append((n.severity_nonlocalized, n.message_primary, n.message_hint)))
        conn.execute(f"GRANT EXECUTE ON FUNCTION {SET_CONFIG} TO PUBLIC")   # a managed server as it comes
        conn.execute(pgsql.SQL("CREATE ROLE {} NOSUPERUSER").format(pgsql.Identifier(migrator)))
        conn.execute(pgsql.SQL("SET LOCAL ROLE {}").format(pgsql.Identifier(migrator)))
        conn.execute(_migration_0008())
        conn.execute("RESET ROLE")
        assert _may_set_config(conn, query_catalog.SANDBOX_ROLE)
        conn.rollback()
    [(primary, hint)] = [(primary, hint) for severity, primary, hint in notices if severity == "WARNING"]
    assert "corpusmem_query can still call set_config" in primary
    assert f"REVOKE EXECUTE ON FUNCTION {SET_CONFIG} FROM PUBLIC" in hint
