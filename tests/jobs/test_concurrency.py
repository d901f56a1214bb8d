"""Concurrency: imports, processors and facts phases on one authority end with the rows one of
them alone would have written. A version has one owner (the claim on its `convert` row), an
entity one decider at a time (advisory locks), and a batch landed twice changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest

from actors.db_writer import Ingest, Write
from actors.embedder import Embed, model_dimension
from actors.extractor import Extract, ExtractorConfig, build_extractor
from actors.object_store import ObjectStore
from jobs import process, runtime
from jobs.sources import ITEM_SCHEMA
from jobs.settings import Settings
from pipeline.documents import stages
from pipeline.documents.routes import Routes
from pipeline.documents.walk import list_sources, read_item
from serve.ingest import ingest as api_ingest
from sql.store import authority as store
from sql.store import runs
from tests.support.memory import do_import, rows
from tests.support.paths import ROOT
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

_COUNTED = ("documents", "versions", "chunks", "claims", "entities", "facts", "fact_decisions")


def _counts(settings: Settings, tables=_COUNTED) -> dict[str, int]:
    return {t: rows(settings, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def test_landing_a_write_batch_twice_changes_nothing(memory, tmp_path):
    """A Ray task retried after its commit lands its batch again, on another actor."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Billing\n\nDana Kim leads the billing migration since March.\n")
    (corpus / "b.md").write_text("# Search\n\nRavi moved to the search team on 1 June.\n")
    (corpus / "c.docx").write_bytes(b"PK\x03\x04 not a word document")
    model = runtime.embedding_model(memory, memory.dsn)
    authority = store.open_store(memory, embedding_model=model.pin, embedding_dim=model_dimension(model),
                                 build_revision="test")
    with psycopg.connect(authority.dsn) as conn:
        run_id = runs.start_run(conn, [str(corpus)], {})
    options = memory.source_options()
    batch = pa.concat_tables(stages.read(pa.Table.from_pylist(list(list_sources([str(corpus)], options)),
                                                               schema=ITEM_SCHEMA), options))
    batch = Ingest(authority.dsn, memory.object_store_uri, run_id, Routes())(batch)
    batch = stages.convert(batch)
    batch = stages.structure(batch, memory.chunk_target_chars)
    batch = stages.chunk(batch, memory.chunk_target_chars)
    batch = Extract(ExtractorConfig())(batch)
    batch = pa.concat_tables(Embed(model, "cpu", memory.embed_batch(False), 1)(batch))
    extractor = build_extractor(ExtractorConfig()).version
    tables = _COUNTED + ("representations", "sections", "claim_occurrences", "extraction_ledger", "import_run_items")
    work = "SELECT version_id, stage, status, attempts, last_error, owner_run FROM stage_work ORDER BY 1, 2"

    first = Write(authority.dsn, memory.object_store_uri, run_id, extractor)(batch)
    landed, landed_work = _counts(memory, tables), rows(memory, work)
    second = Write(authority.dsn, memory.object_store_uri, run_id, extractor)(batch)

    assert _counts(memory, tables) == landed and rows(memory, work) == landed_work
    assert landed["versions"] == 3 and landed["chunks"] >= 2 and landed["claims"] >= 2
    assert landed["import_run_items"] == 1  # the corrupt file, recorded once
    assert sorted(first.column("outcome").to_pylist()) == ["failed", "process", "process"]
    # the second landing found nothing of its own to write
    assert sorted(second.column("outcome").to_pylist()) == ["failed", "unchanged", "unchanged"]


def _queue_as_the_api_does(settings: Settings, path: Path) -> str:
    """`POST /ingest` of a file with the identity an import gives it (source_kind, source_ref,
    title, said-on time), so either may process it."""
    options = settings.source_options(modified_at_from="path")
    [item] = list(list_sources([str(path)], options))
    [row] = read_item(item, options)
    with psycopg.connect(settings.dsn, autocommit=True) as conn:
        got = api_ingest(conn, ObjectStore(settings.object_store_uri), "00000000-0000-0000-0000-0000000000cc",
                         row["content"], filename=row["filename"], mime=row["mime"], title=row["title"],
                         source_kind=row["source_kind"], source_ref=row["source_ref"],
                         source_modified_at=row["source_modified_at"], versioning_mode=row["versioning_mode"],
                         source_version_ref=row["source_version_ref"])
    return str(got.version_id)


def test_two_imports_and_a_processor_end_with_the_rows_of_one_import(memory, ray_local, example_memory,
                                                                      example_corpus, tmp_path):
    files = sorted(example_corpus.iterdir())
    assert len(files) == 9
    first, second = files[:6], files[3:]   # three files in both
    queued = [_queue_as_the_api_does(memory, files[0]), _queue_as_the_api_does(memory, files[4])]

    # Every ingest waits on this lock until all three owners are running, so their work overlaps.
    gate = psycopg.connect(memory.dsn)
    gate.execute("LOCK TABLE content_objects IN EXCLUSIVE MODE")
    # Both imports join the session's Ray, where the processor runs too: three drivers on one
    # cluster, their resident stages sharing its two CPUs (as on a shared cluster).
    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address,
           "CORPUSMEM_DSN": memory.dsn, "CORPUSMEM_OBJECT_STORE": memory.object_store_uri,
           "CORPUSMEM_HOME": str(memory.home)}
    imports = [subprocess.Popen([sys.executable, "-m", "jobs.import_corpus", *map(str, part), "--modified-at-from",
                                 "path", "--batch-size", "4", "--no-progress"], cwd=ROOT, env=env,
                                stdout=open(tmp_path / f"import-{n}.log", "w"), stderr=subprocess.STDOUT)
               for n, part in enumerate((first, second))]
    stop = threading.Event()
    processor = threading.Thread(target=process.drain, args=(memory, stop), kwargs={"interval_s": 0.5})
    try:
        wait_for(lambda: rows(memory, "SELECT count(*) FROM import_runs WHERE status = 'running'")[0][0] == 2,
                  300, "both imports to start")
        processor.start()
        wait_for(lambda: rows(memory, "SELECT count(*) FROM stage_work w JOIN import_runs r ON r.run_id = w.owner_run"
                                       " WHERE w.stage = 'convert' AND r.sources = '[\"queued\"]'")[0][0] == 2,
                  300, "the processor to claim the queued versions")
        gate.rollback()
        for child in imports:
            child.wait(timeout=600)
    finally:
        gate.close()
        stop.set()
        processor.join(timeout=300)
        for child in imports:
            if child.poll() is None:
                child.kill()
    logs = [(tmp_path / f"import-{n}.log").read_text() for n in range(2)]
    assert [c.returncode for c in imports] == [0, 0], "\n".join(log[-3000:] for log in logs)
    assert all("failed           0" in log for log in logs), logs

    assert _counts(memory) == _counts(example_memory)
    assert rows(memory, "SELECT DISTINCT status FROM versions") == [("ready",)]
    assert rows(memory, "SELECT DISTINCT status FROM stage_work") == [("succeeded",)]
    # each version was processed once, by one owner, and its claim ended with it
    assert rows(memory, "SELECT max(attempts), count(owner_run) FROM stage_work WHERE stage = 'convert'") == [(1, 0)]
    processed = rows(memory, "SELECT r.sources, r.status, (r.counts->>'new_versions')::int"
                             " + (r.counts->>'resumed')::int FROM import_runs r ORDER BY r.started_at")
    assert {s for _, s, _ in processed} == {"succeeded"}
    assert sum(n for _, _, n in processed) == 11
    assert [n for src, _, n in processed if src == ["queued"]] == [2]
    assert set(queued) <= {v for (v,) in rows(memory, "SELECT version_id::text FROM versions")}
    # one facts phase decided everything: the others found nothing left
    phases = [r[0] for r in rows(memory, "SELECT report->'facts'->>'decisions' FROM import_runs")]
    assert sorted(int(p) for p in phases if p is not None and int(p) > 0) == [_counts(example_memory)["fact_decisions"]]


def test_two_facts_phases_at_once_decide_each_mention_and_assertion_once(example_memory_copy, ray_local, tmp_path,
                                                                        monkeypatch):
    from jobs import facts

    corpus = tmp_path / "more"
    corpus.mkdir()
    (corpus / "2026-07-02-handover.md").write_text(
        "# Handover\n\nZora Lind leads the billing migration since July.\n\nDana Kim moved to the search team.\n")
    (corpus / "2026-07-03-roster.md").write_text(
        "# On-call roster\n\nZora Lind is the on-call engineer for billing incidents.\n\nRavi owns the search team.\n")
    (corpus / "2026-07-04-notes.md").write_text("# Notes\n\nMarco owns the vendor sign-off.\n\nZora Lind joined.\n")
    run_facts = facts.run_facts
    with monkeypatch.context() as patch:  # land the documents, leave their facts pending
        patch.setattr(facts, "run_facts", lambda *a, **k: facts.FactsReport())
        landed = do_import(example_memory_copy, corpus, modified_at_from="path")
    assert landed.counts["new_versions"] == 3
    pending = rows(example_memory_copy, "SELECT count(*) FROM claim_normalizations WHERE normalized_by IS NULL")[0][0]
    assert pending >= 5

    memory = example_memory_copy
    model = runtime.embedding_model(memory, memory.dsn)
    phase_runs = [str(uuid.uuid4()), str(uuid.uuid4())]
    reports, errors = {}, []

    def phase(run_id: str) -> None:
        try:
            reports[run_id] = run_facts(memory.dsn, run_id=run_id, workers=1, model=model, device="cpu",
                                        embed_batch_size=64, threads=1)
        except Exception as err:  # reported below, with the other phase's outcome
            errors.append(err)

    # The first decider to record a decision waits on this lock (a relation lock) until the other
    # phase's decider has reached the same entity too and waits on that entity's lock (advisory):
    # without it, both would have read its pending assertions and both would decide them. Each
    # phase runs a shard per CPU, so other deciders may wait beside these two.
    gate = psycopg.connect(memory.dsn)
    gate.execute("LOCK TABLE fact_decisions IN SHARE MODE")
    threads = [threading.Thread(target=phase, args=(r,)) for r in phase_runs]
    try:
        for t in threads:
            t.start()
        wait_for(lambda: rows(memory, "SELECT count(*) FILTER (WHERE wait_event = 'relation') > 0 AND"
                                       " count(*) FILTER (WHERE wait_event = 'advisory') > 0 FROM pg_stat_activity"
                                       " WHERE datname = current_database() AND wait_event_type = 'Lock'")[0][0],
                  300, "both phases' deciders to reach the first entity")
    finally:
        gate.rollback()
        gate.close()
        for t in threads:
            t.join(timeout=600)
    assert not errors, errors

    assert rows(memory, "SELECT count(*) FROM claim_normalizations WHERE normalized_by IS NULL")[0][0] == 0
    assert rows(memory, "SELECT count(*) FROM assertions WHERE status = 'pending'")[0][0] == 0
    # no name of a document was resolved twice, no assertion adjudicated by both phases
    assert rows(memory, "SELECT count(*) FROM (SELECT 1 FROM identity_events GROUP BY doc_id, mention_key"
                        " HAVING count(*) > 1) twice")[0][0] == 0
    assert rows(memory, "SELECT count(*) FROM (SELECT 1 FROM fact_decisions WHERE assertion_id IS NOT NULL"
                        " GROUP BY assertion_id HAVING count(DISTINCT run_id) > 1) twice")[0][0] == 0
    decided = rows(memory, "SELECT count(DISTINCT assertion_id) FROM fact_decisions WHERE run_id = ANY(%s::uuid[])",
                   phase_runs)[0][0]
    assert decided == sum(r.adjudicated for r in reports.values()) > 0
    assert rows(memory, "SELECT count(*) FROM entities WHERE canonical_name = 'Zora Lind'") == [(1,)]
