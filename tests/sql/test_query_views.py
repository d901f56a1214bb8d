"""The `memory_v1` views and functions over the example corpus, read as the sandbox role; the role's
refusals; the manifest's hash and its live check.

The example corpus is the session's one import (`example_memory`, read only); tests that change
data (deleting a document, altering a view) take their own clone (`example_memory_copy`).
"""

from __future__ import annotations

import json
import math
import os
import re
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import sql as pgsql

from serve.retrieval import facts as facts_retrieval
from sql.query_space import query_catalog, query_manifest
from sql.read import facts_queries
from sql.write import reconcile
from tests.support.memory import dsn_for
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration

SPACE = json.loads(query_manifest.space_text())
MIGRATIONS = ROOT / "sql" / "migrations"
COLUMNS = {v["name"]: [c["name"] for c in v["columns"]] for v in SPACE["views"]}


@pytest.fixture(scope="module")
def corpus(example_memory):
    """(owner DSN, deployment id) of the session's example import (read only)."""
    with psycopg.connect(example_memory.dsn) as conn:
        deployment_id = str(conn.execute("SELECT deployment_id FROM deployment").fetchone()[0])
    return example_memory.dsn, deployment_id


def sandbox(dsn: str) -> psycopg.Connection:
    return psycopg.connect(query_manifest.sandbox_dsn(dsn), autocommit=True)


def rows(dsn: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql, params).fetchall()


def entity(dsn: str, name: str) -> str:
    return str(rows(dsn, "SELECT entity_id FROM memory_v1.entities_current WHERE canonical_name = %s", name)[0][0])


# --- shape ---------------------------------------------------------------------------------------

def test_every_view_reads_as_the_sandbox_with_the_seed_columns_in_order(corpus):
    with sandbox(corpus[0]) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == query_catalog.SANDBOX_ROLE
        for view in query_catalog.VIEWS:
            cur = conn.execute(f"SELECT * FROM memory_v1.{view}")
            assert [d.name for d in cur.description] == COLUMNS[view], view
            found = cur.fetchall()
            assert {str(r[0]) for r in found} <= {corpus[1]}, view  # every row is this deployment's
        counts = {v: conn.execute(f"SELECT count(*) FROM memory_v1.{v}").fetchone()[0] for v in query_catalog.VIEWS}
    empty = {"document_crossrefs_live", "pages_live", "page_evidence_visible", "contradiction_members_current",
             "testimony_currency_events_visible"}
    assert {v for v, n in counts.items() if n == 0} <= empty
    assert counts["documents_live"] == 11 and counts["document_versions_visible"] == 11
    assert counts["claims_live"] == counts["claims_visible_history"] == counts["claims_canonical"]
    assert counts["facts_current"] < counts["facts_visible_history"]


def test_the_live_database_matches_the_manifest(corpus):
    with psycopg.connect(corpus[0]) as conn:
        assert query_manifest.check_live(conn) is None
    with sandbox(corpus[0]) as conn:  # the runner may check as either role
        assert query_manifest.check_live(conn) is None


# --- the sandbox role ------------------------------------------------------------------------------

REFUSED = [
    "SELECT * FROM facts",
    "SELECT * FROM public.facts",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT lo_import('/etc/passwd')",
    "COPY (SELECT * FROM public.claims) TO STDOUT",
    "COPY public.claims TO STDOUT",
    "CREATE TABLE memory_v1.x (a int)",
    "CREATE TABLE public.x (a int)",
    "SET ROLE postgres",
    "SELECT set_config('role', 'postgres', true)",
    "SELECT * FROM pg_catalog.pg_authid",
    "SELECT * FROM memory_v1_private.lineages",
    "SELECT memory_v1_private.search_k(3)",
    "DROP VIEW memory_v1.facts_current",
    "UPDATE memory_v1.documents_live SET title = 'x'",
]


@pytest.mark.parametrize("statement", REFUSED)
def test_the_sandbox_role_refuses(corpus, statement):
    with sandbox(corpus[0]) as conn:
        # even with its read-only default lifted, privileges alone stop each of these
        conn.execute("SET default_transaction_read_only = off")
        with pytest.raises((psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedTable,
                            psycopg.errors.InvalidSchemaName,
                            psycopg.errors.ObjectNotInPrerequisiteState)):  # a view is not updatable
            conn.execute(statement)
        assert conn.execute("SELECT current_user").fetchone()[0] == query_catalog.SANDBOX_ROLE
        assert conn.execute("SELECT count(*) FROM memory_v1.facts_current").fetchone()[0] > 0


def test_the_sandbox_role_is_read_only_by_default_and_holds_no_attributes(corpus):
    with sandbox(corpus[0]) as conn:
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        attrs = conn.execute("SELECT rolsuper, rolcreatedb, rolcreaterole, rolinherit, rolbypassrls, rolreplication"
                             " FROM pg_roles WHERE rolname = current_user").fetchone()
        assert attrs == (False, False, False, False, False, False)
        assert conn.execute("SELECT has_schema_privilege('public', 'USAGE')").fetchone()[0] is False


def test_sandbox_dsn_keeps_the_server_and_drops_the_owners_credentials():
    dsn = query_manifest.sandbox_dsn("postgresql://owner:secret@/corpusmem?host=/tmp/pg&port=5433")
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    assert info == {"user": "corpusmem_query", "dbname": "corpusmem", "host": "/tmp/pg", "port": "5433"}
    info = psycopg.conninfo.conninfo_to_dict(query_manifest.sandbox_dsn("host=db dbname=m user=o", password="p"))
    assert info == {"host": "db", "dbname": "m", "user": "corpusmem_query", "password": "p"}


# --- the views apply the memory's rules ---------------------------------------------------------

@pytest.mark.parametrize("name", ["Ravi", "billing migration", "search team"])
def test_facts_current_are_the_assured_reads_current_confirmed_facts(corpus, name):
    dsn = corpus[0]
    entity_id = entity(dsn, name)
    now = datetime.now(UTC)
    answer = facts_queries.read(dsn, lambda c: facts_retrieval.facts(c, entity_ids=[entity_id], k=500, now=now, hops=0,
                                                            time=facts_retrieval.TimeQuery("current")))
    assured = {(f.fact_id, f.evidence_count) for f in answer.facts if f.temporal_match == "confirmed"}
    with sandbox(dsn) as conn, conn.transaction():
        # SET LOCAL, as the runner does: the sandbox role may not call set_config (migration 0008)
        conn.execute(pgsql.SQL("SET LOCAL corpusmem.evaluated_at = {}").format(pgsql.Literal(now.isoformat())))
        viewed = {(str(r[0]), r[1]) for r in conn.execute(
            "SELECT fact_id, evidence_count FROM memory_v1.facts_current"
            " WHERE %s::uuid IN (subject_entity_id, object_entity_id)", (entity_id,))}
        stamps = {r[0] for r in conn.execute("SELECT evaluated_at FROM memory_v1.facts_current")}
    assert viewed == assured and viewed
    assert stamps == {now}  # one instant for the whole statement


def test_evidence_counts_are_distinct_current_lineages(corpus):
    with sandbox(corpus[0]) as conn:
        mismatched = conn.execute(
            "SELECT f.fact_id FROM memory_v1.facts_visible_history f WHERE"
            " f.evidence_count_current <> (SELECT count(*) FROM memory_v1.evidence_lineage e WHERE e.fact_id = f.fact_id"
            "                              AND e.stance = 'supports')"
            " OR f.contradict_count_current <> (SELECT count(*) FROM memory_v1.evidence_lineage e"
            "                                   WHERE e.fact_id = f.fact_id AND e.stance = 'contradicts')").fetchall()
        assert mismatched == []
        # several claims of one lineage are one unit of evidence
        assert conn.execute("SELECT count(*) FROM memory_v1.evidence_lineage WHERE claim_count > 1").fetchone()[0] >= 0
        assert conn.execute(
            "SELECT count(*) FROM memory_v1.fact_claim_evidence_live e"
            " WHERE NOT EXISTS (SELECT 1 FROM memory_v1.claims_live c WHERE c.claim_id = e.claim_id)").fetchone()[0] == 0
        # graph edges are current relations between visible entities, never dangling
        assert conn.execute(
            "SELECT count(*) FROM memory_v1.graph_edges_current g WHERE NOT EXISTS"
            " (SELECT 1 FROM memory_v1.facts_current f WHERE f.fact_id = g.relation_id AND f.fact_kind = 'relation')"
            " OR g.subject_entity_id NOT IN (SELECT entity_id FROM memory_v1.entities_current)"
            " OR g.object_entity_id NOT IN (SELECT entity_id FROM memory_v1.entities_current)").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memory_v1.contradiction_members_current m WHERE NOT EXISTS"
                            " (SELECT 1 FROM memory_v1.facts_current f WHERE f.fact_id = m.fact_id)").fetchone()[0] == 0
        # facts_current holds complete windows only: an unknown or partial one is only possible
        assert conn.execute("SELECT count(*) FROM memory_v1.facts_current WHERE valid_from IS NULL"
                            " OR (valid_until IS NULL AND valid_precision <> 'open')").fetchone()[0] == 0
        # the entity counts are its rows in mentions_live and entity_document_mentions
        assert conn.execute(
            "SELECT count(*) FROM memory_v1.entities_current e WHERE e.live_mention_count <>"
            " (SELECT count(*) FROM memory_v1.mentions_live m WHERE m.resolved_entity_id = e.entity_id)"
            " OR e.live_document_count <> (SELECT count(*) FROM memory_v1.entity_document_mentions d"
            "                              WHERE d.entity_id = e.entity_id)").fetchone()[0] == 0
        # the five resolution columns are set together or not at all
        assert conn.execute(
            "SELECT count(*) FROM memory_v1.mentions_live WHERE (resolved_entity_id IS NULL) <> (resolution_method IS NULL)"
            " OR (resolved_entity_id IS NULL) <> (resolution_is_new_entity IS NULL)"
            " OR (resolved_entity_id IS NULL) <> (resolved_at IS NULL)").fetchone()[0] == 0


def test_claims_live_is_the_current_part_of_history_and_canonical_bounds_agree(corpus):
    with sandbox(corpus[0]) as conn:
        history = conn.execute("SELECT claim_id FROM memory_v1.claims_visible_history WHERE is_current_testimony"
                               " ORDER BY 1").fetchall()
        assert conn.execute("SELECT claim_id FROM memory_v1.claims_live ORDER BY 1").fetchall() == history
        assert conn.execute(
            "SELECT count(*) FROM memory_v1.claims_canonical c"
            " CROSS JOIN LATERAL memory_v1.canonical_bounds(c.claim_valid_from, c.claim_valid_until,"
            "                                                c.claim_valid_precision) b"
            " WHERE b.canon_start IS DISTINCT FROM c.canon_start OR b.canon_end IS DISTINCT FROM c.canon_end"
        ).fetchone()[0] == 0
        year = conn.execute("SELECT claim_valid_from, claim_valid_until, canon_start, canon_end"
                            " FROM memory_v1.claims_canonical WHERE claim_valid_precision = 'day' LIMIT 1").fetchone()
        if year is not None:
            assert year[2] == year[0] and (year[3] - year[1]).days == 1


BOUNDS = [
    ("2025-01-01", "2025-12-31", "year", "2025-01-01 00:00:00+00", "2026-01-01 00:00:00+00"),
    ("2025-03-04 00:00+00", "2025-03-04 00:00+00", "day", "2025-03-04 00:00:00+00", "2025-03-05 00:00:00+00"),
    ("2025-03-04 23:30+05", "2025-03-04 23:30+05", "day", "2025-03-04 00:00:00+00", "2025-03-05 00:00:00+00"),
    ("2025-02-01", "2025-02-28", "month", "2025-02-01 00:00:00+00", "2025-03-01 00:00:00+00"),
    ("2025-04-01", "2025-06-30", "quarter", "2025-04-01 00:00:00+00", "2025-07-01 00:00:00+00"),
    ("2025-04-01 10:00", "2025-04-01 10:00", "instant", "2025-04-01 10:00:00+00", "2025-04-01 10:00:00.000001+00"),
    ("2025-04-01", None, "open", "2025-04-01 00:00:00+00", None),
    ("2025-04-01", "2025-05-01", "unknown", None, None),
    (None, "2025-12-31", "year", None, "2026-01-01 00:00:00+00"),
]


def test_canonical_bounds(corpus):
    with sandbox(corpus[0]) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        for start, end, precision, canon_start, canon_end in BOUNDS:
            got = conn.execute("SELECT canon_start::text, canon_end::text FROM memory_v1.canonical_bounds("
                               "%s::timestamptz, %s::timestamptz, %s)", (start, end, precision)).fetchone()
            assert got == (canon_start, canon_end), (start, end, precision)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="^invalid_parameter: "):
            conn.execute("SELECT * FROM memory_v1.canonical_bounds(now(), now(), 'week')")


# --- functions -------------------------------------------------------------------------------------

def test_graph_functions_answer_paths_and_one_status_row(corpus):
    dsn, deployment_id = corpus[0], corpus[1]
    ravi, search, billing = entity(dsn, "Ravi"), entity(dsn, "search team"), entity(dsn, "billing migration")
    with sandbox(dsn) as conn:
        # the longest time budget the function allows: on a machine busy with other work the default
        # second was once spent before this small walk ended (truncated, one path of two)
        found = conn.execute("SELECT row_kind, hops, node_ids, truncated, examined_edges, returned_paths"
                             " FROM memory_v1.graph_neighborhood(%s, %s, time_budget_ms => 5000)",
                             (deployment_id, ravi)).fetchall()
        assert [r[0] for r in found].count("status") == 1 and found[-1][0] == "status"
        paths = [r for r in found if r[0] == "path"]
        assert str(paths[0][2][0]) == ravi
        assert search in {str(r[2][-1]) for r in paths}  # Ravi is on the search team now
        assert found[-1][5] == len(paths) and found[-1][4] >= len(paths) and found[-1][3] is False
        now_path = conn.execute("SELECT row_kind, hops, node_ids FROM memory_v1.graph_path(%s, %s, %s)",
                                (deployment_id, ravi, search)).fetchall()
        assert now_path[0][0] == "path" and [str(n) for n in now_path[0][2]] == [ravi, search]
        # before his move he was on the billing migration: the as-of walk finds that edge
        before = conn.execute("SELECT row_kind, hops, node_ids, applied_valid_at FROM memory_v1.graph_path("
                              "%s, %s, %s, valid_at => '2026-03-01'::timestamptz, believed_at => now())",
                              (deployment_id, ravi, billing)).fetchall()
        assert before[0][0] == "path" and before[0][1] == 1 and before[-1][0] == "status"
        assert before[-1][3] == datetime(2026, 3, 1, tzinfo=UTC)
        capped = conn.execute("SELECT truncated, truncation_reason, effective_depth FROM memory_v1.graph_neighborhood("
                              "%s, %s, 9) WHERE row_kind = 'status'", (deployment_id, ravi)).fetchone()
        assert capped == (True, "depth_budget", 4)
        cited = conn.execute("SELECT row_kind, returned_paths FROM memory_v1.graph_citation_path(%s, %s, %s)",
                             (deployment_id, ravi, search)).fetchall()
        assert cited == [("status", 0)]
        with conn.transaction():
            conn.execute("SELECT * FROM memory_v1.graph_neighborhood(%s, %s)", (deployment_id, ravi))
            calls = json.loads(conn.execute("SELECT current_setting('corpusmem.graph_invocations')").fetchone()[0])
            assert [c["function"] for c in calls] == ["graph_neighborhood"] and calls[0]["ordinal"] == 0
        for args in [("00000000-0000-0000-0000-000000000000", ravi, None, None), (deployment_id, ravi, "2026-03-01", None)]:
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="^invalid_parameter: "):
                conn.execute("SELECT * FROM memory_v1.graph_neighborhood(%s::uuid, %s::uuid, valid_at => %s::timestamptz,"
                             " believed_at => %s::timestamptz)", args)


def test_facts_as_of_answers_both_clocks(corpus):
    with sandbox(corpus[0]) as conn:
        got = conn.execute("SELECT temporal_match, count(*) FROM memory_v1.facts_as_of(now(), now(), 1000)"
                           " GROUP BY 1").fetchall()
        current = conn.execute("SELECT count(*) FROM memory_v1.facts_current").fetchone()[0]
        assert dict(got).get("confirmed") == current
        assert conn.execute("SELECT count(*) FROM memory_v1.facts_as_of(now(), '2000-01-01'::timestamptz)"
                            ).fetchone()[0] == 0  # nothing was believed then
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="^invalid_parameter: "):
            conn.execute("SELECT * FROM memory_v1.facts_as_of(now(), NULL)")


def invocations(conn: psycopg.Connection) -> list[dict]:
    return json.loads(conn.execute("SELECT current_setting('corpusmem.semantic_invocations', true)").fetchone()[0]
                      or "[]")


def test_search_functions_confirm_against_the_views_and_report_each_call(corpus):
    dsn = corpus[0]
    vector, own_claim = rows(dsn, "SELECT embedding::text, claim_id FROM claims WHERE embedding IS NOT NULL"
                                  " ORDER BY claim_id LIMIT 1")[0]
    with sandbox(dsn) as conn:
        live = {r[0] for r in conn.execute("SELECT claim_id FROM memory_v1.claims_live")}
        with conn.transaction():
            found = conn.execute("SELECT claim_id, channel FROM memory_v1.lexical_claims('billing migration', 500)"
                                 ).fetchall()
            assert found and {r[0] for r in found} <= live and {r[1] for r in found} == {"bm25"}
            [call] = invocations(conn)
            assert call["function"] == "lexical_claims" and call["nominated"] <= 100
            assert call["confirmed"] == len(found) == call["nominated"] - call["dropped_stale"] - call["dropped_filtered"]
        with conn.transaction():
            conn.execute(pgsql.SQL("SET LOCAL corpusmem.query_vectors = {}").format(
                pgsql.Literal(json.dumps({"the claim itself": json.loads(vector)}))))
            top = conn.execute("SELECT rank, claim_id, score FROM memory_v1.semantic_claims('the claim itself', 3)"
                               ).fetchall()
            assert top[0][:2] == (1, own_claim) and top[0][2] == pytest.approx(1.0, abs=1e-5)
            conn.execute("SELECT * FROM memory_v1.semantic_chunks('the claim itself', 5,"
                         " '{\"section_role\": \"body\"}')").fetchall()
            assert [c["function"] for c in invocations(conn)] == ["semantic_claims", "semantic_chunks"]
            assert invocations(conn)[0]["embedder_generation"]
        with conn.transaction():
            chunks = [r[0] for r in conn.execute("SELECT chunk_id FROM memory_v1.chunks_live LIMIT 3")]
            bodies = conn.execute("SELECT input_ordinal, chunk_id, source_text FROM memory_v1.fetch_chunk_bodies(%s)",
                                  (chunks,)).fetchall()
            assert [(r[0], r[1]) for r in bodies] == [(1, chunks[0]), (2, chunks[1]), (3, chunks[2])]
            assert all(r[2] for r in bodies) and invocations(conn)[0]["confirmed"] == 3
        refusals = [
            ("SELECT * FROM memory_v1.semantic_claims('no vector for me', 5)", "p1_unavailable: "),
            ("SELECT * FROM memory_v1.lexical_claims('billing', 5, '{\"colour\": \"red\"}')", "invalid_parameter: "),
            ("SELECT * FROM memory_v1.lexical_claims('billing', 5, '{\"doc_id\": [1]}')", "invalid_parameter: "),
            ("SELECT * FROM memory_v1.lexical_chunks('billing', 5, '{\"section_role\": \"poetry\"}')",
             "invalid_parameter: "),
            ("SELECT * FROM memory_v1.lexical_claims('billing', 0)", "invalid_parameter: "),
            # every call finds rows, so the executor runs all three (an empty side would stop the join)
            (("SELECT * FROM memory_v1.lexical_claims('Ravi', 100) a, memory_v1.lexical_claims('billing', 100) b,"
              " memory_v1.lexical_claims('team', 100) c"), "quota_exceeded: "),
        ]
        for statement, prefix in refusals:
            with pytest.raises(psycopg.Error, match="^" + re.escape(prefix)), conn.transaction():
                conn.execute(statement).fetchall()
                pytest.fail(f"not refused: {statement}")


def test_deleting_a_document_removes_it_from_every_live_view(example_memory_copy):
    dsn = example_memory_copy.dsn
    doc_id, title = rows(dsn, "SELECT doc_id, title FROM documents WHERE filename = '2026-03-04-standup.md'")[0]
    per_doc = ["documents_live", "document_versions_visible", "sections_live", "chunks_live", "claims_live",
               "claims_visible_history", "claims_canonical", "claim_occurrences_live", "mentions_live",
               "entity_document_mentions", "evidence_lineage", "fact_claim_evidence_live"]
    count = "SELECT count(*) FROM memory_v1.{} WHERE doc_id = %s"
    before = {v: rows(dsn, count.format(v), doc_id)[0][0] for v in per_doc}
    assert all(before.values()), before
    supported = dict(rows(dsn, "SELECT fact_id, count(*) FROM memory_v1.evidence_lineage WHERE stance = 'supports'"
                               " GROUP BY 1"))
    only_here = {r[0] for r in rows(dsn, "SELECT fact_id FROM memory_v1.evidence_lineage GROUP BY fact_id"
                                         " HAVING bool_and(doc_id = %s) AND count(*) = 1", doc_id)}
    elsewhere = {r[0] for r in rows(dsn, "SELECT fact_id FROM memory_v1.evidence_lineage GROUP BY fact_id"
                                         " HAVING bool_or(doc_id = %s) AND bool_or(doc_id <> %s)", doc_id, doc_id)}
    with psycopg.connect(dsn) as conn:
        reconcile.delete_document(conn, str(doc_id))
    after = {v: rows(dsn, count.format(v), doc_id)[0][0] for v in per_doc}
    assert after == dict.fromkeys(per_doc, 0)
    # a fact only this document supported has lost its provenance; one supported elsewhere stays,
    # its live count one lineage lower
    facts_left = {r[0]: r[1] for r in rows(dsn, "SELECT fact_id, evidence_count_current FROM memory_v1.facts_visible_history")}
    assert only_here and not only_here & set(facts_left)
    assert not only_here & {r[0] for r in rows(dsn, "SELECT fact_id FROM memory_v1.facts_current")}
    for fact_id in elsewhere:
        assert facts_left[fact_id] == supported.get(fact_id, 1) - 1 or fact_id not in supported
    # no event names what was forgotten, and the currency transitions of a forgotten lineage are gone
    assert rows(dsn, "SELECT count(*) FROM memory_v1.changes_visible WHERE label = %s", title)[0][0] == 0
    assert rows(dsn, "SELECT count(*) FROM testimony_currency_events")[0][0] > 0
    assert rows(dsn, "SELECT count(*) FROM memory_v1.testimony_currency_events_visible WHERE doc_id = %s", doc_id) \
        == [(0,)]
    # a search that nominates the deleted document's claims drops them instead of serving them
    with sandbox(dsn) as conn, conn.transaction():
        words = rows(dsn, "SELECT claim_text FROM claims WHERE doc_id = %s ORDER BY claim_id LIMIT 1", doc_id)[0][0]
        served = {r[0] for r in conn.execute("SELECT doc_id FROM memory_v1.lexical_claims(%s, 100)", (words,))}
        assert doc_id not in served
        assert invocations(conn)[0]["dropped_stale"] >= 1


def test_check_live_reports_a_changed_view_comment_or_function(example_memory_copy):
    dsn = example_memory_copy.dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert query_manifest.check_live(conn) is None
        same_columns = ("CREATE OR REPLACE VIEW memory_v1.document_crossrefs_live AS"
                        " SELECT dep.deployment_id, NULL::uuid AS crossref_id, NULL::uuid AS from_doc_id,"
                        " NULL::uuid AS to_doc_id, NULL::text AS kind, NULL::text AS context,"
                        " NULL::timestamptz AS created_at FROM deployment dep WHERE ")
        conn.execute(same_columns + "1 = 0")  # same columns, types and comments; another body
        assert query_manifest.check_live(conn) == \
            "memory_v1.document_crossrefs_live: its definition differs from the manifest"
        conn.execute(same_columns + "false")
        assert query_manifest.check_live(conn) is None  # the same definition again
        conn.execute("COMMENT ON COLUMN memory_v1.facts_current.evidence_count IS 'how many'")
        assert query_manifest.check_live(conn) == \
            "memory_v1.facts_current.evidence_count: its comment differs from the manifest"
        conn.execute(pgsql.SQL("COMMENT ON COLUMN memory_v1.facts_current.evidence_count IS {}").format(
            column_comment("facts_current", "evidence_count")))
        assert query_manifest.check_live(conn) is None
        conn.execute("CREATE OR REPLACE FUNCTION memory_v1.canonical_bounds(valid_from timestamptz,"
                     " valid_until timestamptz, valid_precision text)"
                     " RETURNS TABLE (canon_start timestamptz, canon_end timestamptz)"
                     " LANGUAGE sql SECURITY DEFINER AS $$ SELECT valid_from, valid_until $$")
        assert query_manifest.check_live(conn) == "memory_v1.canonical_bounds(): its body differs from the manifest"


def column_comment(view: str, column: str) -> str:
    return next(c["comment"] for v in SPACE["views"] if v["name"] == view for c in v["columns"] if c["name"] == column)


# --- the manifest ----------------------------------------------------------------------------------

def test_manifest_hash_is_data_independent_and_follows_every_input(pg_admin_dsn, template_db):
    from sql.store import embedded

    first = query_manifest.manifest_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert query_manifest.manifest_hash(query_manifest.manifest()) == first
    # two fresh memories of this release: both match the one manifest
    for n in range(2):
        name = f"cm_views_fresh_{os.getpid()}_{n}"
        embedded.ensure_database(pg_admin_dsn, name, template=template_db)
        with psycopg.connect(dsn_for(pg_admin_dsn, name)) as conn:
            assert query_manifest.check_live(conn) is None
    space, migration = query_manifest.space_text(), query_manifest.migration_text()
    changed_comment = json.loads(space)
    changed_comment["views"][0]["comment"] += " Changed."
    assert query_manifest.manifest_hash(query_manifest.manifest(json.dumps(changed_comment), migration)) != first
    changed_column = json.loads(space)
    changed_column["views"][0]["columns"][1]["comment"] = "Changed."
    assert query_manifest.manifest_hash(query_manifest.manifest(json.dumps(changed_column), migration)) != first
    changed_view = migration.replace("WHERE is_current_testimony;", "WHERE is_current_testimony IS TRUE;")
    assert changed_view != migration
    assert query_manifest.manifest_hash(query_manifest.manifest(space, changed_view)) != first
    # the live fingerprints are a check, not part of the contract
    refreshed = json.loads(space)
    refreshed["fingerprints"] = {}
    assert query_manifest.manifest_hash(query_manifest.manifest(json.dumps(refreshed), migration)) == first


def test_manifest_describes_the_whole_space():
    value = query_manifest.manifest()
    assert value["contract"] == "memory_v1.manifest/2" and value["schema"] == "memory_v1"
    assert [v["name"] for v in value["views"]] == sorted(query_catalog.VIEWS)
    assert {f["name"] for f in value["functions"]} == set(query_catalog.FUNCTIONS)
    assert value["limits"]["interactive"] == query_catalog.INTERACTIVE_LIMITS
    assert value["headline"].startswith("RememberStack has two deliberately separate truth layers.")
    assert "\u201cwhat was asserted, by whom, when\u201d" in value["headline"]
    for view in value["views"]:
        assert view["columns"][0]["name"] == "deployment_id" and view["comment"] and view["definition"]
        assert all(c["comment"] and c["type"] for c in view["columns"])
    semantic = next(f for f in value["functions"] if f["name"] == "semantic_claims")
    assert semantic["signature"] == ("semantic_claims(query text, k integer, filters jsonb,"
                                     " embedding_input_policy_version text, embedder_generation text)")
    # the generated COMMENT statements of 0004, as later migrations re-word some, are the description's
    applied = comment_statements(query_manifest.sections(query_manifest.migration_text())["comments"][""])
    for later in sorted(MIGRATIONS.glob("*.sql")):
        if later.name > query_manifest.MIGRATION_FILE:
            applied |= comment_statements(query_manifest.sections(later.read_text())["comments"].get("", ""))
    assert applied == comment_statements(query_manifest.comments_sql())


def comment_statements(text: str) -> dict[str, str]:
    """`COMMENT ON` statements by their target."""
    return dict(re.findall(r"^COMMENT ON (.+?) IS ('(?:[^']|'')*');$", text, re.MULTILINE))


def test_lexical_weights_pass_over_common_words_at_the_cap_where_the_statistics_read_every_row(example_memory_copy):
    """Where ANALYZE read a sample of the claims, a lexeme it shows in between the cap and twice
    the cap is counted (a sample's share may be high); where it read every row (the tsv column's
    own statistics target decides how many), that lexeme is passed over without a scan. Its weight
    is the same both ways: it reaches the cap, and nominates nothing."""
    with psycopg.connect(example_memory_copy.dsn, autocommit=True) as conn:
        # more claims than a statistics target of 1 samples (300 rows): each one three times more
        columns = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'claims'::regclass AND attnum > 0"
            " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum")]
        conn.execute(pgsql.SQL("INSERT INTO claims ({}) SELECT {} FROM claims c, generate_series(1, 3)").format(
            pgsql.SQL(", ").join(map(pgsql.Identifier, columns)),
            pgsql.SQL(", ").join(pgsql.SQL("gen_random_uuid()") if c == "claim_id" else pgsql.Identifier("c", c)
                                 for c in columns)))
        rows_n = conn.execute("SELECT count(*) FROM claims").fetchone()[0]
        assert rows_n > 300, rows_n
        conn.execute("ALTER TABLE claims ALTER COLUMN tsv SET STATISTICS 1")
        conn.execute("ANALYZE claims")
        common, shares = conn.execute("SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
                                      " WHERE schemaname = 'public' AND tablename = 'claims' AND attname = 'tsv'"
                                      ).fetchone()
        shown = {w: round(share * rows_n) for w, share in zip(common, shares) if w.isalpha()}
        word = max((w for w, n in shown.items() if n >= 4 and conn.execute(
            "SELECT tsvector_to_array(to_tsvector('english', %s)) = ARRAY[%s]", (w, w)).fetchone()[0]),
            key=lambda w: (shown[w], w))
        cap = shown[word] // 2 + 1   # shown in [cap, 2 × cap)
        conn.execute("CREATE OR REPLACE FUNCTION memory_v1_private.lexical_df_cap() RETURNS integer"
                     f" LANGUAGE sql IMMUTABLE AS $$ SELECT {cap} $$")

    def terms_and_scans() -> tuple[dict[str, float], int]:
        with psycopg.connect(example_memory_copy.dsn) as conn:   # one transaction: its own scans count
            got = dict(conn.execute("SELECT term::text, weight FROM memory_v1_private.lexical_terms('claims', %s)",
                                    (word,)).fetchall())
            return got, conn.execute("SELECT seq_scan + idx_scan FROM pg_stat_xact_user_tables"
                                     " WHERE relname = 'claims'").fetchone()[0]

    assert terms_and_scans() == ({}, 1)   # a 300-row sample's share: counted, and it reaches the cap
    with psycopg.connect(example_memory_copy.dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE claims ALTER COLUMN tsv SET STATISTICS 1000")
        conn.execute("ANALYZE claims")
        assert conn.execute("SELECT count(*) FROM claims WHERE tsv @@ %s::tsquery", (f"'{word}'",)).fetchone()[0] >= cap
    assert terms_and_scans() == ({}, 0)   # every row read: passed over


def test_lexical_weights_pass_over_words_the_statistics_know_to_be_common(example_memory_copy):
    """A lexeme that ANALYZE already counts in `lexical_df_cap()` rows or more nominates nothing and
    is not counted (no scan of the table); every other lexeme keeps its exact BM25 weight."""
    cap = 3
    with psycopg.connect(example_memory_copy.dsn, autocommit=True) as conn:
        conn.execute("ANALYZE claims")
        conn.execute("CREATE OR REPLACE FUNCTION memory_v1_private.lexical_df_cap() RETURNS integer"
                     f" LANGUAGE sql IMMUTABLE AS $$ SELECT {cap} $$")
        rows_n = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'public.claims'::regclass").fetchone()[0]
        common, shares = conn.execute("SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
                                      " WHERE schemaname = 'public' AND tablename = 'claims' AND attname = 'tsv'"
                                      ).fetchone()
        known = {w for w, share in zip(common, shares) if round(share * rows_n) >= cap}

        def words(candidates: list[str]) -> list[str]:   # words that are their own lexeme
            return [w for w in candidates if w.isalpha() and conn.execute(
                "SELECT tsvector_to_array(to_tsvector('english', %s)) = ARRAY[%s]", (w, w)).fetchone()[0]][:3]
        frequent = words(sorted(known))
        rare = words([r[0] for r in conn.execute(
            "SELECT word FROM ts_stat('SELECT tsv FROM claims') WHERE ndoc < %s ORDER BY word", (cap,))])
        assert len(frequent) == 3 and len(rare) == 3, (frequent, rare)
        query = " ".join(frequent + rare + ["nonexistentword"])
    with psycopg.connect(example_memory_copy.dsn) as conn:   # one transaction: its own scan counts
        got = {t.strip("'"): w for t, w in conn.execute(
            "SELECT term::text, weight FROM memory_v1_private.lexical_terms('claims', %s)", (query,))}
        scans = conn.execute("SELECT seq_scan + idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'claims'"
                             ).fetchone()[0]
        asked = [r[0] for r in conn.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query,))]
        counts = {w: conn.execute("SELECT count(*) FROM claims WHERE tsv @@ %s::tsquery", (f"'{w}'",)).fetchone()[0]
                  for w in asked}
    expected = {w: math.log(1 + (rows_n - df + 0.5) / (df + 0.5)) for w, df in counts.items() if 0 < df < cap}
    assert set(rare) <= got.keys() == expected.keys(), (got, expected)
    assert all(abs(got[w] - expected[w]) < 1e-9 for w in got)
    assert scans == len(asked) - len(frequent), (scans, asked, frequent)
