"""The import spine end to end: Ray Data pipeline into a fresh embedded-PostgreSQL memory."""

from __future__ import annotations

import io
import re
import shutil
import stat
import zipfile
from pathlib import Path

import numpy as np
import psycopg
import pytest

from actors.object_store import ObjectStore
from jobs.settings import Settings
from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration


def table_counts(memory: Settings) -> dict[str, int]:
    tables = ("documents", "versions", "content_objects", "representations", "sections", "chunks",
              "stage_work")
    return {t: rows(memory, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def test_example_corpus_lands_whole_with_exact_offsets(example_memory, example_report):
    memory, report = example_memory, example_report

    assert report.counts["failed"] == 0, report.failures
    # 8 files + 3 zip members (the zip itself is expanded, not a document)
    assert report.counts["documents_seen"] == 11
    assert report.counts["new_versions"] == 11
    assert report.counts["chunks"] > 11
    assert rows(memory, "SELECT status, count(*) FROM versions GROUP BY 1") == [("ready", 11)]
    refs = {r[0] for r in rows(memory, "SELECT source_ref FROM documents")}
    assert any(ref.endswith("2026-05-weekly-notes.zip!2026-05-08-weekly.md") for ref in refs)
    dated = dict(rows(memory, "SELECT d.filename, v.source_modified_at::date::text FROM versions v "
                              "JOIN documents d USING (doc_id)"))
    assert dated["2026-06-12-retro.pdf"] == "2026-06-12"
    assert dated["oncall-roster.md"] is None  # no date in the path: nothing is invented
    # every stage of every version succeeded
    from sql.write.writes import FACT_STAGES, WORK_STAGES

    assert rows(memory, "SELECT DISTINCT stage, status FROM stage_work ORDER BY 1") == sorted(
        (stage, "succeeded") for stage in WORK_STAGES + FACT_STAGES)
    # chunk text is exactly the characters of document.md it claims to span
    objects = ObjectStore(memory.object_store_uri)
    for key, char_count, chunks in rows(
            memory, "SELECT r.object_key, r.char_count, array_agg(array[c.char_start::text, c.char_end::text, c.text]"
                    " ORDER BY c.ord) FROM representations r JOIN chunks c USING (version_id) GROUP BY 1, 2"):
        markdown = objects.get(key).decode("utf-8")
        assert len(markdown) == char_count
        for start, end, text in chunks:
            assert markdown[int(start):int(end)] == text
    # one vector per chunk, of the pinned dimension, and a keyword index entry
    assert rows(memory, "SELECT count(*), count(embedding), min(vector_dims(embedding)), "
                        "count(*) FILTER (WHERE tsv IS NOT NULL) FROM chunks")[0] == (
        report.counts["chunks"],) * 2 + (384, report.counts["chunks"])
    assert rows(memory, "SELECT embedding_model, embedding_dim FROM deployment") == [("all-MiniLM-L6-v2@onnx-int8", 384)]
    assert rows(memory, "SELECT to_regclass('chunks_embedding_hnsw') IS NOT NULL")[0][0]
    run = rows(memory, "SELECT status, counts->>'new_versions', stage_seconds ? 'embed' FROM import_runs")
    assert run == [("succeeded", "11", True)]
    roles = {r[0] for r in rows(memory, "SELECT role FROM sections")}
    assert {"body", "appendix", "references"} <= roles


def test_reimport_of_unchanged_sources_creates_nothing_and_embeds_nothing(example_memory_copy, ray_local,
                                                                          example_corpus):
    memory = example_memory_copy  # the example corpus, imported once already
    before = table_counts(memory)

    again = do_import(memory, example_corpus, modified_at_from="path")

    assert again.counts["new_versions"] == 0
    assert again.counts["unchanged"] == 11
    assert again.counts["vectors_computed"] == 0 and again.counts["chunks"] == 0
    assert table_counts(memory) == before


def _long_doc(paragraphs: list[str]) -> str:
    return "# Billing notes\n\n" + "\n\n".join(paragraphs) + "\n"


def test_changed_document_gets_a_version_and_reuses_vectors_and_claims_of_unchanged_chunks(memory, ray_local,
                                                                                           tmp_path):
    paragraphs = [f"Paragraph {i}: " + ("Ravi reviewed the invoice system and wrote it down. " * 12)
                  for i in range(6)]
    doc = tmp_path / "corpus" / "notes.md"
    doc.parent.mkdir()
    doc.write_text(_long_doc(paragraphs))
    # a new memory on a CPU: the execution this machine's calibration chose, reported with its timings
    from jobs import runtime

    memory = memory.model_copy(update={"embedding_execution": "auto"})
    first = do_import(memory, doc.parent)
    assert first.counts["chunks"] >= 4

    chosen = runtime.embedding_model(memory, None)
    assert first.embedding["execution"] == chosen.execution and first.embedding["model"] == chosen.pin
    assert first.embedding["calibration"]["seconds_per_chunk"] == chosen.calibration.summary()["seconds_per_chunk"]

    paragraphs[-1] = "Paragraph 5 now says that Dana leads the billing migration. " * 10
    doc.write_text(_long_doc(paragraphs))
    second = do_import(memory, doc.parent)

    assert second.counts["new_versions"] == 1
    assert second.counts["vectors_reused"] >= first.counts["chunks"] - 2
    # chunk vectors computed: only for the changed chunks (claim vectors are counted too, apart)
    assert 1 <= second.counts["chunks"] - second.counts["vectors_reused"] <= 2
    versions = rows(memory, "SELECT seq, status FROM versions ORDER BY seq")
    assert versions == [(1, "ready"), (2, "ready")]
    # the reused vectors are the very vectors of the earlier version's identical chunks
    same = rows(memory, "SELECT count(*) FROM chunks a JOIN chunks b ON a.text_hash = b.text_hash"
                        " AND a.version_id <> b.version_id WHERE a.embedding = b.embedding AND b.embedding_reused")
    assert same[0][0] == second.counts["vectors_reused"]
    # unchanged passages keep their claims: occurrences in the new version, no second extraction
    assert second.counts["claims_reused"] >= 1
    assert second.counts["claims"] - second.counts["claims_reused"] >= 1
    v1, v2 = (r[0] for r in rows(memory, "SELECT version_id FROM versions ORDER BY seq"))
    kept = rows(memory, "SELECT count(*) FROM claim_occurrences a JOIN claim_occurrences b USING (claim_id)"
                        " WHERE a.version_id = %s AND b.version_id = %s", v1, v2)[0][0]
    assert kept == second.counts["claims_reused"]
    assert first.counts["claims"] == rows(memory, "SELECT count(*) FROM claim_occurrences WHERE version_id = %s",
                                          v1)[0][0]
    # the second version's ledger covers only the passage that changed
    changed = rows(memory, "SELECT min(c.char_start) FROM chunks c WHERE c.version_id = %s AND c.text LIKE"
                           " '%%Dana%%'", v2)[0][0]
    assert changed > 0 and rows(memory, "SELECT count(*) FROM extraction_ledger WHERE version_id = %s"
                                        " AND char_start < %s", v2, changed)[0][0] == 0

    # bytes equal to an older version: a revert is a new version, never a jump back
    doc.write_text(_long_doc([f"Paragraph {i}: " + ("Ravi reviewed the invoice system and wrote it down. " * 12)
                              for i in range(6)]))
    third = do_import(memory, doc.parent)
    assert third.counts["new_versions"] == 1
    assert [r[0] for r in rows(memory, "SELECT seq FROM versions ORDER BY seq")] == [1, 2, 3]
    assert rows(memory, "SELECT count(DISTINCT content_hash) FROM versions")[0][0] == 2


def _zip(members: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def test_bad_inputs_are_reported_per_item_and_everything_else_lands(memory, ray_local, tmp_path):
    corpus = tmp_path / "bad"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nDana leads the billing migration.\n")
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (corpus / "corrupt.docx").write_bytes(b"PK\x03\x04 this is not a word document")
    (corpus / "corrupt.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3 truncated")
    with open(corpus / "huge.txt", "wb") as huge:
        huge.truncate(5_000_000)  # sparse: over the cap below without writing 5 MB
    (corpus / "nul.txt").write_bytes(b"before\x00after")
    (corpus / "bomb.zip").write_bytes(_zip({"zeros.txt": b"0" * 3_000_000, "fine.md": b"# Fine\n\nPriya joined.\n"}))
    (corpus / "evil.zip").write_bytes(_zip({"../escape.md": b"# Escape\n", "/abs.md": b"# Abs\n",
                                            "ok.md": b"# Ok\n\nMarco joined.\n", "dup.md": b"# One\n"},
                                           symlink="link.md"))
    with zipfile.ZipFile(corpus / "evil.zip", "a") as zf:
        zf.writestr("dup.md", b"# Two\n")
    settings = memory.model_copy(update={"max_file_bytes": 4_000_000, "archive_max_ratio": 50})

    report = do_import(settings, corpus)

    failures = {f["item"].split("/bad/", 1)[1]: f for f in report.failures}
    expected = {
        "empty.md": ("convert", "empty"),
        "latin1.txt": ("convert", "UTF-8"),
        "corrupt.docx": ("convert", "markitdown"),
        "corrupt.pdf": ("convert", "markitdown"),
        "huge.txt": ("read", "CORPUSMEM_MAX_FILE_BYTES"),
        "nul.txt": ("convert", "NUL"),
        "bomb.zip!zeros.txt": ("read", "ratio"),
        "evil.zip!../escape.md": ("read", "unsafe"),
        "evil.zip!/abs.md": ("read", "unsafe"),
        "evil.zip!link.md": ("read", "link"),
        "evil.zip!dup.md": ("read", "duplicate"),
    }
    for name, (stage, reason) in expected.items():
        assert name in failures, f"{name} not reported; got {sorted(failures)}"
        assert failures[name]["stage"] == stage, failures[name]
        assert reason.lower() in failures[name]["error"].lower(), failures[name]
    assert len(report.failures) == len(expected)
    landed = {r[0].rsplit("/", 1)[-1] for r in rows(memory, "SELECT d.source_ref FROM documents d JOIN versions v"
                                                            " USING (doc_id) WHERE v.status = 'ready'")}
    assert landed == {"good.md", "bomb.zip!fine.md", "evil.zip!ok.md", "evil.zip!dup.md"}
    # versions that exist carry a failed stage with the reason; refused items never became versions
    failed_work = dict(rows(memory, "SELECT d.filename, w.stage FROM stage_work w JOIN versions v USING (version_id)"
                                    " JOIN documents d USING (doc_id) WHERE w.status = 'failed'"))
    assert failed_work == {"empty.md": "convert", "latin1.txt": "convert", "corrupt.docx": "convert",
                           "corrupt.pdf": "convert", "nul.txt": "convert"}
    assert rows(memory, "SELECT count(*) FROM import_run_items")[0][0] == len(expected)
    # nothing was written outside the object store
    assert not (tmp_path / "escape.md").exists() and not (corpus.parent / "escape.md").exists()
    assert not Path("/abs.md").exists()


def test_naive_sidecar_timestamp_is_a_clear_error(memory, ray_local, tmp_path):
    corpus = tmp_path / "sidecars"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nRavi leads billing.\n")
    (corpus / "a.md.meta.json").write_text('{"source_modified_at": "2026-01-15T10:00:00"}')
    (corpus / "b.md").write_text("# B\n\nDana leads billing.\n")
    (corpus / "b.md.meta.json").write_text('{"source_modified_at": "2026-06-12T16:00:00+02:00"}')

    report = do_import(memory, corpus, modified_at_from="sidecar")

    assert [(f["stage"], "naive" in f["error"]) for f in report.failures] == [("read", True)]
    assert rows(memory, "SELECT filename, source_modified_at::text FROM versions JOIN documents USING (doc_id)") == [
        ("b.md", "2026-06-12 14:00:00+00")]


def test_a_type_without_route_is_stored_and_parked_not_failed(memory, ray_local, tmp_path):
    corpus = tmp_path / "parked"
    corpus.mkdir()
    (corpus / "diagram.dwg").write_bytes(b"AC1032" + b"\x00" * 64)   # a CAD drawing: no converter reads it

    report = do_import(memory, corpus)
    assert report.counts["parked"] == 1 and report.counts["failed"] == 0
    assert rows(memory, "SELECT v.status, v.parked_reason, w.status, w.defer_reason FROM versions v"
                        " JOIN stage_work w USING (version_id) WHERE w.stage = 'convert'") == [
        ("converting", "no_route", "pending", "no_route")]
    assert rows(memory, "SELECT count(*) FROM content_objects")[0][0] == 1
    # parked reads as parked, with its reason, on every surface: never as converting
    assert rows(memory, "SELECT current_version_status, current_version_parked_reason, has_current_ready_content"
                        " FROM memory_v1.documents_live") == [("parked", "no_route", False)]
    assert rows(memory, "SELECT status, parked_reason FROM memory_v1.document_versions_visible") == [
        ("parked", "no_route")]
    from jobs import status

    assert "versions by status: 1 parked (no_route)" in status.render(memory.dsn)

    again = do_import(memory, corpus)
    assert again.counts["new_versions"] == 0 and again.counts["parked"] == 1


def test_one_worker_and_four_workers_write_the_same_rows(example_memory, example_memory_four_workers):
    # 1 worker and batches of 4 against 4 workers and batches of 2: neither may change a row.
    query = ("SELECT v.version_id, c.ord, c.char_start, c.char_end, c.text_hash, c.embedding::real[]"
             " FROM chunks c JOIN versions v USING (version_id) ORDER BY 1, 2")
    results = [rows(example_memory, query), rows(example_memory_four_workers, query)]
    assert [r[:5] for r in results[0]] == [r[:5] for r in results[1]]
    # Vectors agree to float rounding: batches of another size pad differently.
    for one, two in zip(results[0], results[1]):
        a, b = np.asarray(one[5]), np.asarray(two[5])
        assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.9999
    assert len(results[0]) > 11


def test_archive_in_a_folder_and_a_single_file_argument(memory, ray_local, tmp_path):
    corpus = tmp_path / "mixed"
    corpus.mkdir()
    (corpus / "notes.tar.gz").write_bytes(_targz({"2026-02-01-a.md": b"# A\n\nLena joined.\n"}))
    single = tmp_path / "single.txt"
    single.write_text("Owen owns the support portal.\n")

    report = do_import(memory, corpus, single, modified_at_from="path")

    assert report.counts["new_versions"] == 2, report.failures
    refs = sorted(r[0] for r in rows(memory, "SELECT source_ref FROM documents"))
    assert refs[0].endswith("notes.tar.gz!2026-02-01-a.md") and refs[1].endswith("single.txt")
    assert rows(memory, "SELECT source_modified_at::date::text FROM versions v JOIN documents d USING (doc_id)"
                        " WHERE d.filename = '2026-02-01-a.md'") == [("2026-02-01",)]


def _targz(members: dict[str, bytes]) -> bytes:
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_object_store_keeps_one_copy_per_content(memory, ray_local, tmp_path):
    corpus = tmp_path / "dupes"
    corpus.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (corpus / name).write_text("# Same\n\nIdentical bytes in three files.\n")
    do_import(memory, corpus)
    assert rows(memory, "SELECT count(*) FROM documents")[0][0] == 3
    assert rows(memory, "SELECT count(*) FROM content_objects")[0][0] == 1
    raw = [p for p in Path(memory.object_store_uri).rglob("*") if p.is_file() and "/raw/" in str(p)]
    assert len(raw) == 1
    shutil.rmtree(corpus)


def _write_generated(root: Path, count: int) -> None:
    from jobs.bench import synthetic

    for doc in synthetic.generate(count, seed=11):
        path = root / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text)


# Documents of the killed import: enough that the kill (at 10 ready versions) lands mid-flight,
# with versions ingested but not yet written (the embedder takes up to 128 documents a call, so
# all of these wait for the same call and are then written 2 at a time).
_KILLED_CORPUS = 48


def _landed(settings: Settings) -> dict[str, list[tuple]]:
    return {
        "versions": rows(settings, "SELECT d.source_ref, v.seq, v.content_hash, v.status FROM versions v"
                                   " JOIN documents d USING (doc_id) ORDER BY 1, 2"),
        "sections": rows(settings, "SELECT version_id, ord, char_start, char_end, role FROM sections ORDER BY 1, 2"),
        "chunks": rows(settings, "SELECT version_id, ord, char_start, char_end, text_hash, embedding IS NOT NULL"
                                 " FROM chunks ORDER BY 1, 2"),
        "representations": rows(settings, "SELECT version_id, object_key FROM representations ORDER BY 1"),
        "stage_work": rows(settings, "SELECT version_id, stage, status FROM stage_work ORDER BY 1, 2"),
    }


def test_a_killed_import_rerun_ends_with_exactly_the_rows_of_an_uninterrupted_one(
        pg_admin_dsn, template_db, ray_local, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from jobs.settings import load_settings
    from sql.store import embedded
    from tests.support.memory import dsn_for

    corpus = tmp_path / "corpus"
    _write_generated(corpus, _KILLED_CORPUS)
    memories = {}
    for name in ("killed", "whole"):
        db = f"cm_{name}_{os.getpid()}"
        embedded.ensure_database(pg_admin_dsn, db, template=template_db)
        memories[name] = load_settings({}, home=tmp_path / name, dsn=dsn_for(pg_admin_dsn, db),
                                       object_store=str(tmp_path / f"objects-{name}"))

    killed = memories["killed"]
    # It joins the session's Ray (as `corpusmem import` joins a running cluster): killing its group
    # kills the driver mid-flight, and Ray ends the workers of a job whose driver died, mid-write.
    env = {**os.environ, "CORPUSMEM_DSN": killed.dsn, "CORPUSMEM_OBJECT_STORE": killed.object_store_uri,
           "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address}
    child = subprocess.Popen([sys.executable, "-m", "jobs.import_corpus", str(corpus), "--batch-size", "2",
                              "--modified-at-from", "path", "--no-progress"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ready_at_kill = 0
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and child.poll() is None:
            try:
                ready_at_kill = rows(killed, "SELECT count(*) FROM versions WHERE status = 'ready'")[0][0]
            except psycopg.errors.UndefinedTable:
                pass
            if ready_at_kill >= 10:
                break
            time.sleep(0.1)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert 10 <= ready_at_kill < _KILLED_CORPUS, "the import must be killed part-way for this test to mean anything"
    assert rows(killed, "SELECT status FROM import_runs") == [("running",)]

    rerun = do_import(killed, corpus, batch_size=8, modified_at_from="path")
    whole = do_import(memories["whole"], corpus, batch_size=8, modified_at_from="path")

    assert rerun.counts["failed"] == 0 and whole.counts["failed"] == 0
    assert rerun.counts["new_versions"] + rerun.counts["resumed"] + rerun.counts["unchanged"] == _KILLED_CORPUS
    assert rerun.counts["unchanged"] >= 10
    assert _landed(killed) == _landed(memories["whole"])
    assert rows(killed, "SELECT count(*), count(DISTINCT (doc_id, seq)) FROM versions")[0] == (_KILLED_CORPUS,) * 2


def test_the_cli_imports_through_ray_address_into_a_running_cluster(memory, ray_local, example_corpus):
    import os
    import subprocess
    import sys

    env = {**os.environ, "RAY_ADDRESS": ray_local.get_runtime_context().gcs_address,
           "CORPUSMEM_DSN": memory.dsn, "CORPUSMEM_OBJECT_STORE": memory.object_store_uri}
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "import", str(example_corpus),
                           "--modified-at-from", "path", "--no-progress"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "new versions     11" in done.stdout and "failed           0" in done.stdout
    status = subprocess.run([sys.executable, "-m", "jobs.cli", "status"], env=env, capture_output=True,
                            text=True, timeout=120)
    assert re.search(r"embed_chunk +succeeded", status.stdout) and "11 ready" in status.stdout
