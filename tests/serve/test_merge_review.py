"""Merge review (`corpusmem entities`, `/entities/*`): proposals with their evidence, merges as
reversible redirects that every read follows, facts decided again for the merged entity, and an
unmerge after which every `memory_v1` view hashes as before the merge."""

from __future__ import annotations

import argparse
import json

import psycopg
import pytest
from fastapi.testclient import TestClient

from jobs import entities_cli
from jobs.settings import Settings
from serve import auth, graph, reads
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools
from serve.retrieval import facts as facts_retrieval
from sql.read import digest_queries, facts_queries
from tests.support.apps import no_embedder

pytestmark = pytest.mark.integration


def cli(settings: Settings, capsys, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="corpusmem entities")
    entities_cli.add_arguments(parser)
    status = entities_cli.main(settings, parser.parse_args(list(argv)))
    out = capsys.readouterr()
    return status, out.out, out.err


def digests(settings: Settings) -> dict[str, tuple[int, str]]:
    with psycopg.connect(settings.dsn) as conn:
        return digest_queries.view_digests(conn)


def entity_id(settings: Settings, name: str) -> str:
    with psycopg.connect(settings.dsn) as conn:
        return conn.execute("SELECT entity_id::text FROM entities WHERE canonical_name = %s", (name,)).fetchone()[0]


def current_entities(settings: Settings) -> set[str]:
    with psycopg.connect(settings.dsn) as conn:
        return {r[0] for r in conn.execute("SELECT entity_id::text FROM memory_v1.entities_current")}


def mention_counts(settings: Settings) -> dict[str, int]:
    with psycopg.connect(settings.dsn) as conn:
        return dict(conn.execute("SELECT entity_id::text, live_mention_count FROM memory_v1.entities_current"))


def resolved(settings: Settings, name: str) -> list[str]:
    envelope = facts_queries.read(settings.dsn, lambda c: reads.resolve_entity(c, name))
    return [str(e.entity_id) for e in envelope.entities]


def fact_labels(settings: Settings, entity: str) -> set[str]:
    envelope = facts_queries.read(settings.dsn, lambda c: reads.facts_context(
        c, "", time=facts_retrieval.TimeQuery("history"), k=30, entity_ids=[entity], hops=0))
    return {f.label for f in envelope.facts}


def neighbours(settings: Settings, entity: str) -> set[str]:
    envelope = facts_queries.read(settings.dsn, lambda c: graph.neighborhood(
        c, entity_id=entity, hops=1, predicates=[], valid_at=None, believed_at=None, limit=500,
        include_paths=False))
    assert envelope.negative is None, envelope.negative
    return {str(n.entity_id) for n in envelope.nodes}


def held(settings: Settings, entity: str) -> set[tuple]:
    """What memory_v1 holds (not retracted) with `entity` as subject: a relation by its predicate and
    object, an observation by its statement."""
    with psycopg.connect(settings.dsn) as conn:
        return set(conn.execute(
            "SELECT fact_kind, predicate, object_entity_id::text, CASE WHEN fact_kind = 'observation' THEN statement END"
            " FROM memory_v1.facts_visible_history WHERE subject_entity_id = %s AND invalidated_at IS NULL",
            (entity,)).fetchall())


def mapped(fact: tuple, merged: str, survivor: str) -> tuple:
    kind, predicate, obj, statement = fact
    return kind, predicate, survivor if obj == merged else obj, statement


def test_proposals_are_listed_with_their_evidence(example_memory_copy, capsys):
    status, out, _ = cli(example_memory_copy, capsys, "proposals", "--json")
    assert status == 0
    found = json.loads(out)
    pairs = {frozenset(e["name"] for e in p["entities"]): p for p in found}
    p = pairs[frozenset({"data validation", "data validation scripts"})]
    assert p["status"] == "proposed" and 0 < p["score"] <= 1 and p["reason"]
    assert p["proposal_id"] == ":".join(sorted(e["entity_id"] for e in p["entities"]))
    for e in p["entities"]:
        assert e["aliases"] == [e["name"]] and e["mentions"] >= 1 and e["documents"] >= 1
    assert isinstance(p["shared_documents"], list)
    status, text, _ = cli(example_memory_copy, capsys, "proposals")
    assert p["proposal_id"] in text and "data validation scripts" in text and "mentions in" in text


def test_merge_is_followed_by_every_read_and_unmerge_restores_the_memory(example_memory_copy, capsys):
    memory = example_memory_copy
    priya, ravi = entity_id(memory, "Priya"), entity_id(memory, "Ravi")
    before = digests(memory)
    ravi_labels, priya_labels = fact_labels(memory, ravi), fact_labels(memory, priya)
    ravi_held, priya_held = held(memory, ravi), held(memory, priya)
    ravi_neighbours = neighbours(memory, ravi) - {priya, ravi}
    mentions = mention_counts(memory)
    assert ravi_labels and priya_labels and ravi_neighbours

    status, out, err = cli(memory, capsys, "merge", "Priya", "Ravi", "--reason", "one person", "--by", "tester")
    assert status == 0, err
    assert "merged Ravi" in out and "into Priya" in out
    with psycopg.connect(memory.dsn) as conn:   # the merge's own facts are the ones served
        made, served = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE fact_id IN (SELECT fact_id FROM memory_v1.facts_visible_history))"
            " FROM facts WHERE redirect_id IS NOT NULL").fetchone()
    assert made == served > 0

    # the merged-away entity leaves memory_v1; its name resolves to the survivor
    live = current_entities(memory)
    assert priya in live and ravi not in live
    assert mention_counts(memory)[priya] == mentions[priya] + mentions[ravi]
    assert resolved(memory, "Ravi") == [priya] and resolved(memory, "Priya") == [priya]
    with psycopg.connect(memory.dsn) as conn:
        aliases = conn.execute("SELECT alias_text, source_entity_id::text FROM memory_v1.entity_aliases_current"
                               " WHERE entity_id = %s", (priya,)).fetchall()
        assert ("Ravi", ravi) in aliases and ("Priya", priya) in aliases
        assert conn.execute("SELECT count(*) FROM memory_v1.mentions_live WHERE resolved_entity_id = %s",
                            (ravi,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memory_v1.facts_visible_history"
                            " WHERE %s IN (subject_entity_id, object_entity_id)", (ravi,)).fetchone()[0] == 0
        event = conn.execute("SELECT related_entity_id::text, decided_by FROM memory_v1.identity_events_visible"
                             " WHERE object_kind = 'merge_event' AND entity_id = %s", (priya,)).fetchall()
        assert event == [(ravi, "tester")]
    # the survivor's facts, decided again, hold what each of the two said
    assert held(memory, priya) >= {mapped(f, ravi, priya) for f in ravi_held | priya_held}
    assert ravi_labels - priya_labels and (ravi_labels - priya_labels) & fact_labels(memory, priya)
    assert ravi_neighbours <= neighbours(memory, priya)
    assert ravi not in neighbours(memory, priya)

    status, out, err = cli(memory, capsys, "unmerge", "Ravi", "--by", "tester")
    assert status == 0, err
    assert digest_queries_equal(memory, before)
    assert resolved(memory, "Ravi") == [ravi]
    assert fact_labels(memory, ravi) == ravi_labels
    with psycopg.connect(memory.dsn) as conn:
        assert conn.execute("SELECT decided_by, undone_by, undone_at IS NOT NULL FROM entity_redirects").fetchall() \
            == [("tester", "tester", True)]


def digest_queries_equal(memory: Settings, before: dict[str, tuple[int, str]]) -> bool:
    after = digests(memory)
    assert {v for v in before if before[v] != after[v]} == set(), "views differ after unmerge"
    return True


def test_accept_and_reject_record_who_and_when(example_memory_copy, capsys):
    memory = example_memory_copy
    found = json.loads(cli(memory, capsys, "proposals", "--json")[1])
    by_names = {frozenset(e["name"] for e in p["entities"]): p for p in found}
    first = by_names[frozenset({"data validation", "data validation scripts"})]
    second = by_names[frozenset({"first validation script", "data validation scripts"})]

    status, out, err = cli(memory, capsys, "accept", first["proposal_id"], "--keep", "data validation", "--by", "alice")
    assert status == 0, err
    status, out, err = cli(memory, capsys, "reject", second["proposal_id"], "--by", "bob")
    assert status == 0, err
    assert "rejected by bob" in out
    states = {p["proposal_id"]: p for p in json.loads(cli(memory, capsys, "proposals", "--json")[1])}
    assert (states[first["proposal_id"]]["status"], states[first["proposal_id"]]["decided_by"]) == ("accepted", "alice")
    assert (states[second["proposal_id"]]["status"], states[second["proposal_id"]]["decided_by"]) == ("rejected", "bob")
    assert all(states[p["proposal_id"]]["decided_at"] for p in (first, second))
    assert entity_id(memory, "data validation scripts") not in current_entities(memory)
    assert resolved(memory, "data validation scripts") == [entity_id(memory, "data validation")]

    # a decided proposal is not decided again
    status, _, err = cli(memory, capsys, "reject", second["proposal_id"])
    assert status == 2 and err.startswith("corpusmem entities: ") and "already rejected by bob" in err
    # undoing the accepted merge opens its proposal again
    assert cli(memory, capsys, "unmerge", "data validation scripts")[0] == 0
    states = {p["proposal_id"]: p for p in json.loads(cli(memory, capsys, "proposals", "--json")[1])}
    assert states[first["proposal_id"]]["status"] == "proposed"


def test_bad_requests_are_clear_errors_and_change_nothing(example_memory_copy, capsys):
    memory = example_memory_copy
    before = digests(memory)
    cases = [
        (("merge", "Priya", "Nobody At All"), "no entity named 'Nobody At All'"),
        (("merge", "Priya", "Priya"), "into itself"),
        (("unmerge", "Ravi"), "is not merged"),
        (("accept", "not-a-proposal"), "is not a proposal id"),
        (("accept", "00000000-0000-0000-0000-000000000001:00000000-0000-0000-0000-000000000002"), "no merge proposal"),
    ]
    for argv, message in cases:
        status, out, err = cli(memory, capsys, *argv)
        assert (status, out) == (2, ""), argv
        assert err.startswith("corpusmem entities: ") and message in err, (argv, err)
    assert digests(memory) == before

    # a cycle A → B → A is refused, and so is undoing an earlier merge a later one was decided on
    assert cli(memory, capsys, "merge", "Priya", "Ravi")[0] == 0
    status, _, err = cli(memory, capsys, "merge", "Ravi", "Priya")
    assert status == 2 and "cycle" in err
    status, _, err = cli(memory, capsys, "merge", "Marco", "Ravi")
    assert status == 2 and "already merged into Priya" in err
    assert cli(memory, capsys, "merge", "Priya", "Dana")[0] == 0
    status, _, err = cli(memory, capsys, "unmerge", "Ravi")
    assert status == 2 and "unmerge Dana first" in err
    assert cli(memory, capsys, "unmerge", "Dana")[0] == 0
    assert cli(memory, capsys, "unmerge", "Ravi")[0] == 0
    assert digests(memory) == before


def test_http_merge_review_needs_the_write_scope(example_memory_copy):
    memory = example_memory_copy
    hashes = auth.parse_tokens("read:r-secret,write:w-secret", None)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)
    info = DeploymentInfo("00000000-0000-0000-0000-0000000000aa", "test", "all-MiniLM-L6-v2",
                          memory.object_store_uri, 1024, tuple(hashes.items()))

    read, write = ({"Authorization": f"Bearer {s}"} for s in ("r-secret", "w-secret"))
    priya, ravi = entity_id(memory, "Priya"), entity_id(memory, "Ravi")
    with TestClient(build_app(pools, info, no_embedder)) as api:
        assert api.get("/entities/proposals").status_code == 401
        assert api.get("/entities/proposals", headers=read).status_code == 403
        assert api.post("/entities/merge", json={"keep": "Priya", "merged": "Ravi"}, headers=read).status_code == 403
        assert api.post("/entities/unmerge", json={"merged": "Ravi"}, headers=read).status_code == 403
        listed = api.get("/entities/proposals", headers=write)
        assert listed.status_code == 200 and len(listed.json()["proposals"]) >= 1
        pid = listed.json()["proposals"][0]["proposal_id"]
        assert api.post(f"/entities/proposals/{pid}/reject", headers=read).status_code == 403

        merged = api.post("/entities/merge", json={"keep": priya, "merged": "Ravi"}, headers=write)
        assert merged.status_code == 200, merged.json()
        assert merged.json()["survivor"]["entity_id"] == priya and merged.json()["merged"]["entity_id"] == ravi
        found = api.get("/resolve", params={"name": "Ravi"}, headers=read).json()
        assert [e["entity_id"] for e in found["entities"]] == [priya]

        unknown = api.post("/entities/merge", json={"keep": "Priya", "merged": "Nobody"}, headers=write)
        assert unknown.status_code == 404 and unknown.json()["detail"]["code"] == "not_found"
        itself = api.post("/entities/merge", json={"keep": "Priya", "merged": "Priya"}, headers=write)
        assert itself.status_code == 422 and "itself" in itself.json()["detail"]["message"]
        cycle = api.post("/entities/merge", json={"keep": "Ravi", "merged": "Priya"}, headers=write)
        assert cycle.status_code == 409 and "cycle" in cycle.json()["detail"]["message"]

        undone = api.post("/entities/unmerge", json={"merged": "Ravi"}, headers=write)
        assert undone.status_code == 200 and undone.json()["merged"]["entity_id"] == ravi
        again = api.post("/entities/unmerge", json={"merged": "Ravi"}, headers=write)
        assert again.status_code == 409

        rejected = api.post(f"/entities/proposals/{pid}/reject", headers=write)
        assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
        assert rejected.json()["decided_by"].startswith("http:credential:")
        history = api.get("/entities/merges", params={"all": "true"}, headers=write).json()["merges"]
        assert [(h["merged_id"], h["decided_by"].startswith("http:credential:"), h["undone_at"] is not None)
                for h in history] == [(ravi, True, True)]
