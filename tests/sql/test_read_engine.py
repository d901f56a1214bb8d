"""One read engine: the read API and the `memory_v1` query space ask the same questions of one
memory and get the same answers (graph walks, facts as of two clocks, nominations), because each
rule of reading is one SQL function both call (migration 0016).

The memory is written here row by row, so that it holds what tells the rules apart: relations whose
validity bounds are unknown or partial, one that ended, one retracted since.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from psycopg import sql as pgsql

from serve import graph
from sql.read import analysis_queries, facts_queries, read_queries

pytestmark = pytest.mark.integration

_NS = uuid.UUID("6f1f7b0e-9d55-4c1e-8d2a-1b0c3e5a7d90")
NOW = datetime.now(UTC)
T2019, T2020, T2021, T2022 = (datetime(y, 1, 1, tzinfo=UTC) for y in (2019, 2020, 2021, 2022))
MID_2020 = datetime(2020, 6, 1, tzinfo=UTC)


def uid(name: str) -> str:
    return str(uuid.uuid5(_NS, name))


ENTITIES = {"A": [1, 0, 0], "B": [0.9, 0.1, 0], "C": [0, 1, 0], "D": [0, 0.8, 0.2], "E": [0, 0, 1], "F": [0.5, 0.5, 0]}
# (name, subject, object, valid_from, valid_until, precision, invalidated_at, claim text, claim vector)
RELATIONS = [
    ("ab", "A", "B", T2020, None, "open", None, "A works with B in Berlin", [1, 0.1, 0]),
    ("bc", "B", "C", None, None, "unknown", None, "B once met C", [0, 1, 0.1]),            # unknown window
    ("ad", "A", "D", T2020, None, "year", None, "A moved to D in 2020", [0.2, 0.8, 0]),    # partial window
    ("ae", "A", "E", T2020, T2021, "day", None, "A led E during 2020", [0, 0.1, 1]),      # ended
    ("bf", "B", "F", T2019, None, "open", T2022, "B reports to F in Berlin", [0.7, 0.7, 0]),  # retracted since
]
OBSERVATIONS = [("oa", "A", T2020, None, "year", "A is a Berlin engineer", [0.9, 0, 0.4])]


def build(conn: psycopg.Connection) -> str:
    """Writes the memory; returns its deployment id."""
    deployment = conn.execute("SELECT deployment_id FROM deployment").fetchone()
    if deployment is None:
        deployment = (uid("deployment"),)
        conn.execute("INSERT INTO deployment (deployment_id, build_revision, embedding_model, embedding_dim)"
                     " VALUES (%s, 'test', 'test-model', 3)", deployment)
    content = "0" * 64
    doc, version, section = uid("doc"), uid("version"), uid("section")
    conn.execute("INSERT INTO content_objects (content_hash, size_bytes, mime, object_key)"
                 " VALUES (%s, 1, 'text/plain', 'k')", (content,))
    conn.execute("INSERT INTO documents (doc_id, source_kind, source_ref, title, filename, versioning_mode)"
                 " VALUES (%s, 'file', 'notes.md', 'Notes', 'notes.md', 'snapshot')", (doc,))
    conn.execute("INSERT INTO versions (version_id, doc_id, seq, content_hash, mime, status)"
                 " VALUES (%s, %s, 1, %s, 'text/plain', 'ready')", (version, doc, content))
    conn.execute("INSERT INTO representations (version_id, converter, converter_version, derivation, object_key,"
                 " char_count) VALUES (%s, 'none', '0', 'passthrough', 'k.md', 1000)", (version,))
    conn.execute("INSERT INTO sections (section_id, version_id, ord, level, role, char_start, char_end)"
                 " VALUES (%s, %s, 0, 0, 'body', 0, 1000)", (section, version))
    for name, vector in ENTITIES.items():
        conn.execute("INSERT INTO entities (entity_id, canonical_name, profile, profile_embedding)"
                     " VALUES (%s, %s, %s, %s::vector)", (uid(name), name, f"{name} profile", str(vector)))
    facts = [(n, "relation", s, o, vf, vu, p, inv, text, vec) for n, s, o, vf, vu, p, inv, text, vec in RELATIONS]
    facts += [(n, "observation", s, None, vf, vu, p, None, text, vec) for n, s, vf, vu, p, text, vec in OBSERVATIONS]
    for ord_, (name, kind, subject, obj, valid_from, valid_until, precision, invalidated, text, vector) in \
            enumerate(facts):
        chunk, claim, assertion, fact = uid(f"chunk {name}"), uid(f"claim {name}"), uid(f"as {name}"), uid(name)
        start = ord_ * 100
        conn.execute("INSERT INTO chunks (chunk_id, version_id, doc_id, section_id, ord, char_start, char_end, text,"
                     " text_hash, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector)",
                     (chunk, version, doc, section, ord_, start, start + 50, text, f"h{ord_}", str(vector)))
        conn.execute("INSERT INTO claims (claim_id, doc_id, version_id, chunk_id, claim_text, source_span, char_start,"
                     " char_end, evidence_spans, is_attributed, claim_valid_from, claim_valid_until,"
                     " claim_valid_precision, extractor, embedding)"
                     " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, '[]', false, %s, %s, %s, 'rules', %s::vector)",
                     (claim, doc, version, chunk, text, text, start, start + 50, valid_from, valid_until, precision,
                      str(vector)))
        conn.execute("INSERT INTO claim_occurrences (claim_id, version_id, chunk_id, char_start, char_end,"
                     " evidence_spans) VALUES (%s, %s, %s, %s, %s, '[]')", (claim, version, chunk, start, start + 50))
        for end in filter(None, (subject, obj)):
            conn.execute("INSERT INTO mentions (doc_id, mention_key, surface, claim_id, entity_id)"
                         " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                         (doc, end.lower(), end, claim, uid(end)))
        conn.execute("INSERT INTO assertions (assertion_id, claim_id, doc_id, ord, kind, subject_key, predicate,"
                     " object_key, statement, valid_from, valid_until, valid_precision, window_source, normalizer,"
                     " subject_id, object_id, anchor_id, status) VALUES (%s, %s, %s, 0, %s, %s, %s, %s, %s, %s, %s,"
                     " %s, 'stated', 'rules', %s, %s, %s, 'adjudicated')",
                     (assertion, claim, doc, kind, subject.lower(), "relates_to" if obj else None,
                      obj.lower() if obj else None, text, valid_from, valid_until, precision, uid(subject),
                      uid(obj) if obj else None, uid(subject)))
        conn.execute("INSERT INTO facts (fact_id, kind, anchor_id, subject_id, predicate, object_id, label, valid_from,"
                     " valid_until, valid_precision, window_source, ingested_at, invalidated_at, evidence_count,"
                     " embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'stated', %s, %s, 1, %s::vector)",
                     (fact, kind, uid(subject), uid(subject), "relates_to" if obj else None,
                      uid(obj) if obj else None, text, valid_from, valid_until, precision, T2019 + (T2020 - T2019) / 2,
                      invalidated, str(vector)))
        conn.execute("INSERT INTO fact_evidence (fact_id, assertion_id, claim_id, doc_id, stance)"
                     " VALUES (%s, %s, %s, %s, 'supports')", (fact, assertion, claim, doc))
    return str(deployment[0])


@pytest.fixture
def engine(memory) -> tuple[str, str]:
    """(owner DSN, deployment id) of a fresh memory holding the relations above."""
    with psycopg.connect(memory.dsn) as conn:
        deployment = build(conn)
    return memory.dsn, deployment


def _names(ids) -> set[str]:
    by_id = {uid(n): n for n in ENTITIES} | {uid(n): n for n, *_ in RELATIONS + OBSERVATIONS}
    return {by_id[str(i)] for i in ids}


# --- graph -----------------------------------------------------------------------------------------

def _http_walk(dsn: str, valid_at: datetime | None, believed_at: datetime | None) -> dict[str, tuple[int, tuple]]:
    """{entity: (hops, relations of its path)} as POST /graph/neighborhood answers."""
    envelope = facts_queries.read(dsn, lambda c: graph.neighborhood(
        c, entity_id=uid("A"), hops=2, predicates=[], valid_at=valid_at, believed_at=believed_at, limit=500,
        include_paths=True))
    return {_names([p.nodes[-1].entity_id]).pop(): (p.length, tuple(sorted(_names(e.relation_id for e in p.edges))))
            for p in envelope.paths}


def _sql_walk(dsn: str, deployment: str, valid_at: datetime | None,
              believed_at: datetime | None) -> dict[str, tuple[int, tuple]]:
    """The same question through memory_v1.graph_neighborhood."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT hops, relation_ids, node_ids FROM memory_v1.graph_neighborhood(%s, %s, 2, NULL,"
                            " %s, %s) WHERE row_kind = 'path'",
                            (deployment, uid("A"), valid_at, believed_at)).fetchall()
    return {_names([nodes[-1]]).pop(): (hops, tuple(sorted(_names(relations)))) for hops, relations, nodes in rows}


@pytest.mark.parametrize("valid_at, believed_at, reached", [
    (None, None, {"B": (1, ("ab",))}),
    (MID_2020, T2021, {"B": (1, ("ab",)), "E": (1, ("ae",)), "F": (2, ("ab", "bf"))}),
    (MID_2020, NOW, {"B": (1, ("ab",)), "E": (1, ("ae",))}),
    (T2022, T2021, {"B": (1, ("ab",)), "F": (2, ("ab", "bf"))}),
])
def test_both_surfaces_walk_the_same_edges(engine, valid_at, believed_at, reached):
    dsn, deployment = engine
    http, sql = _http_walk(dsn, valid_at, believed_at), _sql_walk(dsn, deployment, valid_at, believed_at)
    assert http == sql == reached
    # an unknown (B–C) or partial (A–D) window is never walked: such a relation is only possible
    assert not {"C", "D"} & set(http)


def test_the_edges_of_one_hop_are_the_same_on_both_surfaces(engine):
    dsn, _ = engine
    frontier = [uid(n) for n in ENTITIES]
    for valid_at, believed_at in ((NOW, None), (MID_2020, T2021), (T2022, T2021)):
        http = facts_queries.read(dsn, lambda c: read_queries.graph_edges(
            c, frontier, valid_at=valid_at, believed_at=believed_at, predicates=[], limit=100))
        with psycopg.connect(dsn) as conn:
            walked = conn.execute("SELECT relation_id FROM memory_v1_private.graph_edges(%s, %s, NULL, %s)",
                                  (valid_at, believed_at or NOW, frontier)).fetchall()
        assert _names(r[0] for r in http) == _names(r[0] for r in walked)


# --- facts as of ---------------------------------------------------------------------------------------

INSTANTS = [(MID_2020, T2021), (MID_2020, NOW), (datetime(2018, 1, 1, tzinfo=UTC), NOW),
            (NOW, datetime(2019, 6, 1, tzinfo=UTC)), (NOW, NOW), (T2022, T2021)]


@pytest.mark.parametrize("valid_at, believed_at", INSTANTS)
def test_facts_as_of_agree_across_the_read_side_and_memory_v1(engine, valid_at, believed_at):
    dsn, _ = engine
    with psycopg.connect(dsn) as conn:
        _, analysed = analysis_queries.believed(conn, believed_at, valid_at)
        space = conn.execute("SELECT fact_id, temporal_match, fact_kind FROM memory_v1.facts_as_of(%s, %s, 1000)",
                             (valid_at, believed_at)).fetchall()
    assert {(r[0], "confirmed" if r[-1] == "true" else "possible") for r in analysed} == \
        {(str(f), m) for f, m, _ in space}
    if believed_at == NOW:  # the read API's lookups believe now
        looked_up = facts_queries.read(dsn, lambda c: read_queries.lookup_relations(
            c, subject=None, predicate=None, obj=None, at=valid_at, k=100))
        assert {r[0] for r in looked_up} == {str(f) for f, _, kind in space if kind == "relation"}


def test_facts_as_of_tells_confirmed_from_possible(engine):
    dsn, _ = engine
    with psycopg.connect(dsn) as conn:
        got = conn.execute("SELECT fact_id, temporal_match FROM memory_v1.facts_as_of(%s, %s, 1000)",
                           (MID_2020, T2021)).fetchall()
    assert {(_names([f]).pop(), m) for f, m in got} == {
        ("ab", "confirmed"), ("ae", "confirmed"), ("bf", "confirmed"), ("bc", "possible"), ("ad", "possible"),
        ("oa", "possible")}


# --- nomination ------------------------------------------------------------------------------------------

QUERY, VECTOR = "who is in Berlin", [1.0, 0.05, 0.0]


def _space(dsn: str, sql: str, *params) -> list[str]:
    with psycopg.connect(dsn) as conn, conn.transaction():
        conn.execute(pgsql.SQL("SET LOCAL corpusmem.query_vectors = {}").format(
            pgsql.Literal(json.dumps({QUERY: VECTOR}))))
        return [str(r[0]) for r in conn.execute(sql, params).fetchall()]


@pytest.mark.parametrize("table, channel, function", [
    ("claims", "semantic", "semantic_claims"), ("claims", "bm25", "lexical_claims"),
    ("chunks", "semantic", "semantic_chunks"), ("chunks", "bm25", "lexical_chunks")])
def test_both_surfaces_nominate_alike(engine, table, channel, function):
    dsn, _ = engine
    vector = np.array(VECTOR, dtype=np.float32)
    http = facts_queries.read(dsn, lambda c: read_queries.nominate(c, table, channel, QUERY, vector, 3))
    key = "claim_id" if table == "claims" else "chunk_id"
    space = _space(dsn, f"SELECT {key} FROM memory_v1.{function}(%s, 3) ORDER BY rank", QUERY)
    assert http == space and http


def test_both_surfaces_nominate_entities_alike(engine):
    dsn, _ = engine
    http = facts_queries.read(dsn, lambda c: facts_queries.best_profiles(c, np.array(VECTOR, dtype=np.float32)))
    space = _space(dsn, "SELECT entity_id FROM memory_v1.semantic_entities(%s, 20) ORDER BY rank", QUERY)
    assert http == space and _names(http[:2]) == {"A", "B"}
