"""Failures: transient ones are retried with backoff and end `dead_letter` after exactly
`CORPUSMEM_RETRY_ATTEMPTS`; permanent ones are `failed` once; `corpusmem retry` and importing the
same bytes again replay them; readiness makes the real `remember` client stop at a dead letter.

The failures are real, injected where they happen: a stored object moved out of the object store
(and back), and a writer's PostgreSQL connection terminated by the server (`pg_terminate_backend`)
while its COPY waits on a lock the test holds.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from actors.object_store import ObjectStore
from jobs import process, status
from jobs.settings import Settings
from serve.ingest import ingest as api_ingest
from tests.support import fake_openai, remember_venv
from tests.support.cli import corpusmem
from tests.support.memory import do_import, rows
from tests.support.ports import free_port
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

_DEPLOYMENT = "00000000-0000-0000-0000-0000000000cc"
_NOTE = b"# Billing notes\n\nDana Kim leads the billing migration.\n"


def _queue(settings: Settings, body: bytes, filename: str) -> str:
    """A version queued as `POST /ingest` queues it; its version_id."""
    with psycopg.connect(settings.dsn, autocommit=True) as conn:
        got = api_ingest(conn, ObjectStore(settings.object_store_uri), _DEPLOYMENT, body, filename=filename,
                         mime="text/markdown", title=None, source_kind="test", source_ref=filename,
                         source_modified_at=None, versioning_mode="snapshot", source_version_ref=None)
    return str(got.version_id)


def _stage(settings: Settings, version_id: str, stage: str) -> tuple:
    [found] = rows(settings, "SELECT status, defer_reason, attempts, last_error, owner_run FROM stage_work"
                             " WHERE version_id = %s AND stage = %s", version_id, stage)
    return found


def test_a_flaky_object_store_is_retried_and_the_version_lands(memory, ray_local):
    settings = memory.model_copy(update={"retry_attempts": 3, "retry_backoff_s": 2.0})
    version_id = _queue(settings, _NOTE, "flaky.md")
    [(key,)] = rows(settings, "SELECT o.object_key FROM versions v JOIN content_objects o USING (content_hash)"
                              " WHERE v.version_id = %s", version_id)
    stored = Path(settings.object_store_uri) / key
    away = stored.with_name(stored.name + ".away")
    stored.rename(away)  # the store cannot produce the bytes...
    seen: dict[str, tuple] = {}

    def failed_once() -> tuple | None:
        found = _stage(settings, version_id, "convert")
        return found if found[0] == "failed" else None

    def heal() -> None:  # ...until the first failed attempt is on record: then it can again
        seen["failed"] = wait_for(failed_once, what="the first failed attempt")
        away.rename(stored)

    healer = threading.Thread(target=heal)
    healer.start()
    try:
        assert process.process_once(settings) == 1
    finally:
        healer.join(timeout=180)
        if away.exists():
            away.rename(stored)

    status_, defer, attempts, error, owner = seen["failed"]
    assert (status_, defer, attempts) == ("failed", "retry_backoff", 1) and owner is not None
    assert "stored bytes unreadable" in error and "FileNotFoundError" in error
    assert _stage(settings, version_id, "convert")[:3] == ("succeeded", None, 2)
    assert rows(settings, "SELECT status FROM versions WHERE version_id = %s", version_id) == [("ready",)]
    assert rows(settings, "SELECT count(*) FROM stage_work WHERE status IN ('failed', 'dead_letter')") == [(0,)]


@contextlib.contextmanager
def _dropping_writer_connections(settings: Settings, limit: int) -> Iterator[list[int]]:
    """Hold a lock that the write stage's COPY into `sections` waits on, and terminate the
    backend of every COPY found waiting (at most `limit`); yields the terminated pids."""
    killed: list[int] = []
    stop = threading.Event()
    holder = psycopg.connect(settings.dsn)
    holder.execute("LOCK TABLE sections IN SHARE MODE")

    def drop() -> None:
        with psycopg.connect(settings.dsn, autocommit=True) as conn:
            while not stop.is_set() and len(killed) < limit:
                for (pid,) in conn.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock' AND query LIKE 'COPY \"sections\"%%'").fetchall():
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    killed.append(pid)
                time.sleep(0.05)

    dropper = threading.Thread(target=drop)
    dropper.start()
    try:
        yield killed
    finally:
        stop.set()
        dropper.join(timeout=30)
        holder.rollback()
        holder.close()


def _app(settings: Settings):
    from serve.app import build_app
    from serve.replica import DeploymentInfo, open_pools

    async def no_query_embedding(text: str, _pin: str | None = None):
        raise RuntimeError("readiness needs no query vector")

    return build_app(open_pools(settings.dsn, general=1, retrieval=1, graph=1, sync=1),
                     DeploymentInfo(deployment_id=_DEPLOYMENT, build_revision="test",
                                    embedding_model="all-MiniLM-L6-v2", object_store=settings.object_store_uri),
                     no_query_embedding)


@contextlib.contextmanager
def _read_api(settings: Settings) -> Iterator[str]:
    """The read API app over this memory on a local port (uvicorn in a thread, no Ray Serve)."""
    import uvicorn

    app = _app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, timeout=60, what="the read API to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


_WAIT_FOR_READINESS = """
import json, sys, time
from remember import Client, PipelineDeadLettered
started = time.monotonic()
try:
    Client(base_url=sys.argv[1], api_key="unused").wait_for_readiness([sys.argv[2]], timeout=120, poll_interval=1)
    print(json.dumps({"raised": None}))
except PipelineDeadLettered as err:
    print(json.dumps({"raised": "PipelineDeadLettered", "dead_lettered": [[str(v), s, st] for v, s, st in err.dead_lettered],
                      "seconds": time.monotonic() - started}))
"""


def test_a_connection_that_keeps_dropping_is_dead_lettered_and_retry_replays_it(
        memory, ray_local, tmp_path, remember_python, monkeypatch, capsys):
    settings = memory.model_copy(update={"retry_attempts": 3, "retry_backoff_s": 0.2})
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "billing.md").write_bytes(_NOTE)

    with _dropping_writer_connections(settings, limit=10) as killed:
        report = do_import(settings, corpus)

    # exactly three attempts, each a connection the server terminated, then the dead letter
    assert len(killed) == 3
    [failure] = report.failures
    assert failure["stage"] == "write" and "gave up after 3 attempts" in failure["error"]
    [(version_id, version_status)] = rows(settings, "SELECT version_id::text, status FROM versions")
    assert version_status == "failed"
    dead = _stage(settings, version_id, "embed_claim")
    assert dead[:3] == ("dead_letter", None, 3) and "connection" in dead[3]
    assert _stage(settings, version_id, "convert")[4] is None  # the claim ended with the dead letter
    assert {s for (s,) in rows(settings, "SELECT status FROM stage_work WHERE stage <> 'embed_claim'"
                                         " AND stage NOT IN ('normalize_relations', 'adjudicate_observations',"
                                         " 'adjudicate_supersession', 'reconcile', 'label_relation')")} == {"succeeded"}
    shown = status.render(settings.dsn)
    assert "failures (1 dead_letter stages" in shown
    assert re.search(r"dead_letter +embed_claim +3 attempts .*billing\.md.*gave up after 3 attempts", shown), shown

    # the real client stops at the dead letter instead of waiting out its timeout
    with _read_api(settings) as url:
        run = remember_venv.run(remember_python, ["-c", _WAIT_FOR_READINESS, url, version_id],
                           tmp_path / "remember-config", timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    waited = json.loads(run.stdout)
    assert waited["raised"] == "PipelineDeadLettered" and waited["seconds"] < 30
    assert waited["dead_lettered"] == [[version_id, "embed_claim", "dead_letter"]]

    # once the cause is gone, `corpusmem retry` lands it through the same pipeline
    capsys.readouterr()
    assert corpusmem(settings, monkeypatch, "retry", "--all") == 0
    assert "every retried stage succeeded" in capsys.readouterr().out
    assert rows(settings, "SELECT status FROM versions") == [("ready",)]
    assert _stage(settings, version_id, "embed_claim")[:3] == ("succeeded", None, 4)
    assert rows(settings, "SELECT count(*) FROM chunks")[0][0] >= 1


def test_a_corrupt_file_fails_once_and_retry_or_the_same_bytes_replay_it(memory, ray_local, tmp_path, monkeypatch,
                                                                       capsys):
    settings = memory.model_copy(update={"retry_attempts": 3, "retry_backoff_s": 0.2})
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_bytes(_NOTE)
    (corpus / "corrupt.docx").write_bytes(b"PK\x03\x04 this is not a word document")

    report = do_import(settings, corpus)
    assert report.counts["failed"] == 1 and report.counts["new_versions"] == 2
    [(version_id,)] = rows(settings, "SELECT v.version_id::text FROM versions v JOIN documents d USING (doc_id)"
                                     " WHERE d.filename = 'corrupt.docx'")
    failed = _stage(settings, version_id, "convert")
    assert failed[:3] == ("failed", None, 1) and "markitdown" in failed[3].lower()
    assert rows(settings, "SELECT status FROM versions WHERE version_id = %s", version_id) == [("failed",)]
    shown = status.render(settings.dsn)
    assert "failures (1 failed stages" in shown
    assert re.search(r"failed +convert +1 attempt .*corrupt\.docx.*markitdown", shown, re.IGNORECASE), shown

    # readiness says a failure nothing will retry is a dead letter: a client stops waiting
    from fastapi.testclient import TestClient

    with TestClient(_app(settings)) as api:
        got = api.post("/readiness", json={"version_ids": [version_id], "require": {
            "pipeline": True, "p1": True, "live_graph": True, "p3": False}}).json()
    stages = {s["stage"]: s["status"] for s in got["versions"][0]["stages"]}
    assert got["ready"] is False and stages["convert"] == "dead_letter"

    # `corpusmem retry --all` replays it; the bytes are still corrupt, so it stays failed
    capsys.readouterr()
    assert corpusmem(settings, monkeypatch, "retry", "--all") == 1
    out = capsys.readouterr().out
    assert "still failing:" in out and "convert failed after 2 attempts" in out
    again = _stage(settings, version_id, "convert")
    assert again[:3] == ("failed", None, 2) and "markitdown" in again[3].lower()

    # importing the same bytes again retries the failed version too (the good one is unchanged)
    third = do_import(settings, corpus)
    assert third.counts["unchanged"] == 1 and third.counts["failed"] == 1 and third.counts["new_versions"] == 0
    assert _stage(settings, version_id, "convert")[:3] == ("failed", None, 3)
    assert rows(settings, "SELECT count(*) FROM versions") == [(2,)]


# --- the facts phase and the model ---------------------------------------------------------------

_FACTS_NOTES = {
    "2026-03-01-billing.md": "# Billing migration notes\n\nRavi leads the billing migration.\n\n"
                             "Dana Kim works on the invoice system.\n",
    "2026-03-02-search.md": "# Search team notes\n\nPriya leads the search team.\n",
}


def _notes(root: Path) -> Path:
    corpus = root / "notes"
    corpus.mkdir()
    for name, text in _FACTS_NOTES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


def _facts_phase_finished(settings: Settings) -> None:
    """Every claim read, every assertion decided, every fact stage succeeded: nothing half done."""
    assert rows(settings, "SELECT count(*) FROM claim_normalizations JOIN claims USING (claim_id)"
                          " WHERE normalized_by IS NULL AND is_current_testimony") == [(0,)]
    assert rows(settings, "SELECT count(*) FROM assertions WHERE status = 'pending'") == [(0,)]
    assert rows(settings, "SELECT DISTINCT status FROM stage_work WHERE stage IN ('normalize_relations',"
                          " 'adjudicate_observations', 'adjudicate_supersession', 'reconcile', 'label_relation')"
                ) == [("succeeded",)]
    assert rows(settings, "SELECT count(*) > 0, count(*) = count(embedding) FROM facts") == [(True, True)]


def test_the_facts_phase_connection_killed_mid_phase_is_retried_and_the_import_ends_whole(memory, ray_local, tmp_path):
    settings = memory.model_copy(update={"retry_attempts": 3, "retry_backoff_s": 0.2})
    seen: list[int] = []    # the facts phase's own connections, in the order they appeared
    stop = threading.Event()

    def kill_the_first() -> None:
        """Terminate the facts phase's own connection the first time it is seen, from another one,
        and watch for the one it opens again."""
        with psycopg.connect(settings.dsn, autocommit=True) as conn:
            while not stop.is_set():
                for (pid,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                                           " AND application_name LIKE 'corpusmem facts %%'").fetchall():
                    if pid not in seen:
                        seen.append(pid)
                        if len(seen) == 1:
                            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                time.sleep(0.02)

    watcher = threading.Thread(target=kill_the_first)
    watcher.start()
    try:
        report = do_import(settings, _notes(tmp_path))
    finally:
        stop.set()
        watcher.join(timeout=30)

    assert len(seen) == 2    # killed once, then connected again by the step's retry
    assert report.status == "succeeded" and report.facts.gave_up is None and report.facts.dead_letter == 0
    _facts_phase_finished(settings)


def test_a_facts_step_that_keeps_failing_is_dead_lettered_and_retry_finishes_it(
        memory, ray_local, tmp_path, monkeypatch, capsys):
    from sql.write import reconcile

    settings = memory.model_copy(update={"retry_attempts": 2, "retry_backoff_s": 0.1})
    attempts: list[int] = []
    reconcile_facts = reconcile.reconcile_facts

    def server_gone(conn, run_id):
        attempts.append(1)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(reconcile, "reconcile_facts", server_gone)
    report = do_import(settings, _notes(tmp_path))

    # the import ends, with the phase's step dead-lettered and its reason, not a crash
    assert report.status == "succeeded" and len(attempts) == 2
    assert report.facts.gave_up.startswith("reconcile: OperationalError: server closed the connection")
    assert report.facts.gave_up.endswith("(gave up after 2 attempts)") and report.facts.dead_letter == 2
    dead = rows(settings, "SELECT status, attempts, last_error FROM stage_work WHERE stage = 'reconcile'")
    assert len(dead) == 2 and {(s, n) for s, n, _ in dead} == {("dead_letter", 2)}
    assert all("server closed the connection" in e and "gave up after 2 attempts" in e for *_, e in dead)
    assert re.search(r"dead_letter +reconcile +2 attempts .*gave up after 2 attempts", status.render(settings.dsn))

    # once the database answers again, `corpusmem retry` finishes the phase
    monkeypatch.setattr(reconcile, "reconcile_facts", reconcile_facts)
    capsys.readouterr()
    assert corpusmem(settings, monkeypatch, "retry", "--all") == 0
    assert "every retried stage succeeded" in capsys.readouterr().out
    _facts_phase_finished(settings)


def _restarting(_request: dict) -> fake_openai.Reply:
    return 503, fake_openai.JSON, b'{"error": {"message": "engine is restarting"}}'


@pytest.fixture
def dead_model() -> Iterator[fake_openai.FakeServer]:
    """An OpenAI-compatible endpoint that answers every request 503, recording them."""
    with fake_openai.serving(fake_openai.FakeServer(default=_restarting)) as model:
        yield model


def test_an_extractor_endpoint_that_never_answers_dead_letters_extraction_with_its_reason(
        memory, ray_local, tmp_path, dead_model):
    settings = memory.model_copy(update={"retry_attempts": 2, "retry_backoff_s": 0.05, "extractor": "openai",
                                         "llm_model": "m", "llm_base_url": dead_model.base_url})
    report = do_import(settings, _notes(tmp_path))

    assert report.counts["failed"] == 2 and len(dead_model.requests) == 2 * 2   # one chunk each, two attempts
    assert {f["stage"] for f in report.failures} == {"extract"}
    dead = rows(settings, "SELECT status, last_error FROM stage_work WHERE stage = 'extract_claims'")
    assert {s for s, _ in dead} == {"dead_letter"}
    assert all(dead_model.base_url in e and "503" in e and "gave up after 2 attempts" in e for _, e in dead)
    assert rows(settings, "SELECT count(*) FROM claims") == [(0,)]


def test_a_normalizer_endpoint_that_never_answers_dead_letters_the_version_with_its_reason(
        example_memory_copy, dead_model):
    from actors.extractor import ExtractorConfig
    from actors.facts_shards import Normalizer
    from actors.retries import RetryPolicy

    settings = example_memory_copy
    [(version_id,)] = rows(settings, "SELECT v.version_id::text FROM versions v JOIN documents d USING (doc_id)"
                                     " WHERE d.source_ref LIKE '%%2026-03-04-standup.md'")
    with psycopg.connect(settings.dsn, autocommit=True) as conn:   # its claims wait to be read again
        conn.execute("UPDATE claim_normalizations SET normalized_by = NULL WHERE version_id = %s", (version_id,))

    normalizer = Normalizer(settings.dsn, ExtractorConfig(backend="openai", llm_model="m",
                                                          llm_base_url=dead_model.base_url),
                            RetryPolicy(attempts=2, backoff_s=0.05))
    got = normalizer.normalize([version_id])

    assert (got["claims"], got["assertions"], got["dead_letter"]) == (0, 0, 1)
    [(stage_status, error)] = rows(settings, "SELECT status, last_error FROM stage_work"
                                             " WHERE version_id = %s AND stage = 'normalize_relations'", version_id)
    assert stage_status == "dead_letter"
    assert dead_model.base_url in error and "engine is restarting" in error and "gave up after 2 attempts" in error
    # none of its claims is marked read: the next facts phase takes all of them up again
    assert rows(settings, "SELECT count(*) = count(*) FILTER (WHERE normalized_by IS NULL) FROM claim_normalizations"
                          " WHERE version_id = %s", version_id) == [(True,)]
