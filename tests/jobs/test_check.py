"""`corpusmem check`: a clean memory passes; each fault injected into a copy of the example
memory (an object removed from the store, a vector of another dimension after a bad restore, a
dropped HNSW index, an index marked invalid, a hand-flipped currency flag) is named, in text and
in JSON, with a non-zero exit; `--repair` fixes what is safe (currency and facts, indexes, a
version whose bytes came back, queued again and then processed) and leaves everything else as
it found it."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from actors.object_store import ObjectStore
from jobs import check, process
from jobs.settings import Settings
from serve.ingest import ingest as api_ingest
from tests.support.cli import corpusmem

pytestmark = pytest.mark.integration

_DEPLOYMENT = "00000000-0000-0000-0000-0000000000cc"
_NOTE = b"# Billing notes\n\nDana Kim leads the billing migration.\n"


def _check(settings: Settings, monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """`corpusmem check ARGV...` in this process with this memory's settings: (exit, out, err)."""
    capsys.readouterr()
    status = corpusmem(settings, monkeypatch, "check", "--no-progress", *argv)
    out, err = capsys.readouterr()
    return status, out, err


def _sql(settings: Settings, query: str, *params: object) -> list[tuple]:
    with psycopg.connect(settings.dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def _named(out: str) -> dict[str, str]:
    """{finding key: its line} of the text report."""
    return {line.split()[1].rstrip(":"): line for line in out.splitlines()
            if line.startswith(("ERROR ", "WARNING "))}


def _found(report: dict) -> dict[str, dict]:
    return {k: f for k, f in report["findings"].items() if f["count"]}


# --- faults, each as it would happen -----------------------------------------------------------

def _remove_an_object(settings: Settings) -> dict[str, str]:
    [(key, version)] = _sql(settings, "SELECT o.object_key, min(v.version_id::text) FROM versions v"
                                      " JOIN content_objects o USING (content_hash) GROUP BY 1 ORDER BY 1 LIMIT 1")
    (Path(settings.object_store_uri) / key).unlink()
    return {"objects_missing": key}


def _restore_a_vector_of_another_dimension(settings: Settings) -> dict[str, str]:
    # a bad manual restore: the column came back untyped (so its HNSW index could not come back),
    # and one row holds a vector of another model
    [(claim,)] = _sql(settings, "SELECT min(claim_id::text) FROM claims WHERE embedding IS NOT NULL")
    _sql(settings, "DROP INDEX claims_embedding_hnsw")
    _sql(settings, "ALTER TABLE claims ALTER COLUMN embedding TYPE vector")
    _sql(settings, "UPDATE claims SET embedding = '[0.1, 0.2, 0.3]' WHERE claim_id = %s", claim)
    return {"vectors_wrong_dimension": claim, "vector_columns_untyped": "claims.embedding",
            "indexes_missing": "claims_embedding_hnsw"}


def _drop_an_hnsw_index(settings: Settings) -> dict[str, str]:
    _sql(settings, "DROP INDEX chunks_embedding_hnsw")
    return {"indexes_missing": "chunks_embedding_hnsw"}


def _invalidate_an_index(settings: Settings) -> dict[str, str]:
    # what a CREATE INDEX CONCURRENTLY that failed half-way leaves
    _sql(settings, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'facts_tsv'::regclass")
    return {"indexes_invalid": "facts_tsv"}


def _flip_a_claim(settings: Settings) -> dict[str, str]:
    """A current claim that is its document's only support of a fact others support too: by hand
    it stops being current (no currency event), so the fact's stored count is one too many."""
    claim, fact = _sql(settings, (
        "SELECT e.claim_id::text, e.fact_id::text FROM fact_evidence e JOIN facts f USING (fact_id)"
        " JOIN claims c USING (claim_id) WHERE e.stance = 'supports' AND c.is_current_testimony"
        " AND f.evidence_count >= 2 AND NOT EXISTS (SELECT 1 FROM fact_evidence o JOIN claims oc USING (claim_id)"
        "   WHERE o.fact_id = e.fact_id AND o.doc_id = e.doc_id AND o.claim_id <> e.claim_id"
        "   AND oc.is_current_testimony)"
        " ORDER BY 1, 2 LIMIT 1"))[0]
    _sql(settings, "UPDATE claims SET is_current_testimony = false WHERE claim_id = %s", claim)
    return {"currency_mismatch": claim, "evidence_count_mismatch": fact}


FAULTS = {"deleted object": _remove_an_object, "vector of another dimension": _restore_a_vector_of_another_dimension,
          "dropped HNSW index": _drop_an_hnsw_index, "invalid index": _invalidate_an_index,
          "flipped currency": _flip_a_claim}


def test_a_clean_memory_passes(example_memory, monkeypatch, capsys):
    status, out, err = _check(example_memory, monkeypatch, capsys)
    assert status == 0, out
    assert "ok: no integrity problem found" in out and _named(out) == {}
    assert "extract_claims           succeeded" in out   # the per-stage counts of `corpusmem status`

    status, out, _ = _check(example_memory, monkeypatch, capsys, "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True
    assert list(report["findings"]) == [key for key, *_ in check.FINDINGS]   # every key, always
    assert _found(report) == {}
    assert report["pinned_dim"] == 384 and report["objects_listed"] > 0
    assert {s["stage"] for s in report["stages"]} >= {"convert", "extract_claims", "reconcile"}


@pytest.mark.parametrize("fault", FAULTS)
def test_check_names_each_injected_fault(example_memory_copy, monkeypatch, capsys, fault):
    expected = FAULTS[fault](example_memory_copy)

    status, out, _ = _check(example_memory_copy, monkeypatch, capsys)
    assert status == 1 and "not ok" in out
    named = _named(out)
    assert set(named) == set(expected), out
    for key, example in expected.items():
        assert example in named[key], named[key]

    status, out, _ = _check(example_memory_copy, monkeypatch, capsys, "--json")
    report = json.loads(out)
    assert status == 1 and report["ok"] is False
    found = _found(report)
    assert set(found) == set(expected)
    for key, example in expected.items():
        assert any(example in e for e in found[key]["examples"]) and found[key]["severity"] == "error"


def test_repair_fixes_what_is_safe_and_requeues_the_version_whose_bytes_came_back(
        example_memory_copy, ray_local, monkeypatch, capsys):
    settings = example_memory_copy.model_copy(update={"retry_attempts": 1, "retry_backoff_s": 0.05})
    store = Path(settings.object_store_uri)
    # a version whose stored bytes were missing when it was processed: dead-lettered for real
    with psycopg.connect(settings.dsn, autocommit=True) as conn:
        version = str(api_ingest(conn, ObjectStore(settings.object_store_uri), _DEPLOYMENT, _NOTE,
                                 filename="billing.md", mime="text/markdown", title=None, source_kind="test",
                                 source_ref="billing.md", source_modified_at=None, versioning_mode="snapshot",
                                 source_version_ref=None).version_id)
    [(key,)] = _sql(settings, "SELECT o.object_key FROM versions v JOIN content_objects o USING (content_hash)"
                              " WHERE v.version_id = %s", version)
    away = (store / key).rename(store / "away")
    assert process.process_once(settings) == 1
    [(status_, error)] = _sql(settings, "SELECT status, last_error FROM stage_work WHERE version_id = %s"
                                        " AND stage = 'convert'", version)
    assert status_ == "dead_letter" and error.startswith("stored bytes unreadable")
    away.rename(store / key)   # ...and the bytes come back (restored from a backup)

    flipped = _flip_a_claim(settings)
    [(count_before,)] = _sql(settings, "SELECT evidence_count FROM facts WHERE fact_id = %s",
                             flipped["evidence_count_mismatch"])
    _drop_an_hnsw_index(settings)
    _invalidate_an_index(settings)
    (store / "raw" / "left-by-a-crash.tmp").write_bytes(b"half an object")

    status, out, _ = _check(settings, monkeypatch, capsys)
    assert status == 1
    assert set(_named(out)) == {"work_dead_letter", "currency_mismatch", "evidence_count_mismatch",
                                "indexes_missing", "indexes_invalid", "objects_unreferenced"}
    assert version in _named(out)["work_dead_letter"]

    status, out, _ = _check(settings, monkeypatch, capsys, "--repair", "--json")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True, report
    done = report["repair"]["done"]
    assert done["versions_requeued"] == [version]
    assert done["claims_restored"] == 1 and done["reconcile"]["recounted"] >= 1
    assert done["indexes_rebuilt"] == ["facts_tsv"] and done["indexes_built"] == ["chunks_embedding_hnsw"]
    assert report["repair"]["before"]["currency_mismatch"] == 1
    # what it fixed, it fixed in the rows: the claim is current testimony again, with an event saying so
    assert _sql(settings, "SELECT c.is_current_testimony, e.reason FROM claims c JOIN testimony_currency_events e"
                          " USING (claim_id) WHERE claim_id = %s", flipped["currency_mismatch"]) == [
        (True, "review_restored")]
    assert _sql(settings, "SELECT evidence_count FROM facts WHERE fact_id = %s",
                flipped["evidence_count_mismatch"]) == [(count_before,)]
    assert _sql(settings, "SELECT indisvalid FROM pg_index WHERE indexrelid = 'facts_tsv'::regclass") == [(True,)]
    # an object it was not sure of is still there, and still reported
    assert (store / "raw" / "left-by-a-crash.tmp").read_bytes() == b"half an object"
    assert _found(report) == {"objects_unreferenced": report["findings"]["objects_unreferenced"]}

    # queued again, the version lands through the same pipeline
    assert _sql(settings, "SELECT status FROM stage_work WHERE version_id = %s AND stage = 'convert'",
                version) == [("pending",)]
    assert process.process_once(settings) == 1
    assert _sql(settings, "SELECT status FROM versions WHERE version_id = %s", version) == [("ready",)]
    status, out, _ = _check(settings, monkeypatch, capsys)
    assert status == 0 and set(_named(out)) == {"objects_unreferenced"}


def test_repair_leaves_vectors_of_another_dimension_and_missing_objects(example_memory_copy, monkeypatch, capsys):
    expected = _restore_a_vector_of_another_dimension(example_memory_copy) | _remove_an_object(example_memory_copy)
    vectors = _sql(example_memory_copy, "SELECT claim_id, embedding::text FROM claims ORDER BY 1")

    status, out, _ = _check(example_memory_copy, monkeypatch, capsys, "--repair", "--json")
    report = json.loads(out)
    assert status == 1 and set(_found(report)) == set(expected)
    assert any("another dimension" in why for why in report["repair"]["done"]["refused"])
    assert _sql(example_memory_copy, "SELECT claim_id, embedding::text FROM claims ORDER BY 1") == vectors


def test_an_object_store_that_cannot_be_listed_is_a_clear_error(example_memory_copy, monkeypatch, capsys, tmp_path):
    not_a_folder = tmp_path / "objects.txt"
    not_a_folder.write_text("not an object store")
    settings = example_memory_copy.model_copy(update={"object_store": str(not_a_folder)})
    status, out, err = _check(settings, monkeypatch, capsys, "--repair")
    assert status == 2 and out == ""
    assert err.startswith("corpusmem check: cannot list the object store") and "CORPUSMEM_OBJECT_STORE" in err
