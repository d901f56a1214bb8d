"""`corpusmem status` and the run records it shows: its counts are what the memory serves, read
through the `memory_v1` views every other read uses, and a run a signal stopped is `interrupted`."""

from __future__ import annotations

import re
import signal

import psycopg
import pytest

from jobs import facts_cli, import_corpus, shutdown, status
from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration

# What each count of `corpusmem status` means, as a `memory_v1` question.
SERVED = {
    "documents": "SELECT count(*) FROM memory_v1.documents_live",
    "versions": "SELECT count(*) FROM memory_v1.document_versions_visible",
    "sections": "SELECT count(*) FROM memory_v1.sections_live",
    "chunks": "SELECT count(*) FROM memory_v1.chunks_live",
    "claims": "SELECT count(*) FROM memory_v1.claims_live",
    "entities": "SELECT count(*) FROM memory_v1.entities_current",
    "facts": "SELECT count(*) FROM memory_v1.facts_visible_history WHERE invalidated_at IS NULL",
}


def _status_counts(dsn: str) -> dict[str, int]:
    [line] = [line for line in status.render(dsn).splitlines() if line.startswith("memory: ")]
    return {name: int(n) for n, name in re.findall(r"(\d+) (\w+)", line)}


def _served(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        return {name: conn.execute(sql).fetchone()[0] for name, sql in SERVED.items()}


def test_status_counts_agree_with_memory_v1_after_a_delete(example_memory_copy):
    dsn = example_memory_copy.dsn
    before = _served(dsn)

    facts_cli.delete(example_memory_copy, "2026-03-04-standup.md")

    after = _served(dsn)
    assert after["documents"] == before["documents"] - 1 and after["claims"] < before["claims"]
    shown = _status_counts(dsn)
    assert {name: shown.get(name) for name in SERVED} == after
    assert sorted(shown) == sorted(SERVED)   # no count from anywhere else


def test_an_import_stopped_by_a_signal_is_recorded_interrupted(memory, ray_local, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "note.md").write_text("# Note\n\nRavi leads the billing migration.\n")

    def stopped(*args, **kwargs):
        raise shutdown.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(import_corpus, "_wait_for_pipelines", stopped)
    with pytest.raises(shutdown.Interrupted):
        do_import(memory, corpus)

    assert rows(memory, "SELECT status, finished_at IS NOT NULL, report->>'status' FROM import_runs") == [
        ("interrupted", True, "interrupted")]
    assert re.search(r"\binterrupted\b", status.render(memory.dsn))
    # nothing of it is left claimed: a re-run takes the version up
    assert rows(memory, "SELECT count(*) FROM stage_work WHERE owner_run IS NOT NULL") == [(0,)]
