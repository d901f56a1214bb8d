"""One corpus, one memory, whatever the shape of the import: the batch size and the number of
workers change which rows travel together, never what the memory holds. Compared by a hash of
every `memory_v1` view (`sql.read.digest_queries`); two nodes against one is in test_cluster.py.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from jobs.settings import Settings
from sql.read import digest_queries
from tests.support.memory import do_import

pytestmark = pytest.mark.integration


def differing(one: Settings, other: Settings) -> dict[str, dict]:
    with psycopg.connect(one.dsn) as a, psycopg.connect(other.dsn) as b:
        return digest_queries.differences(a, b)


def digests(memory: Settings) -> dict[str, tuple[int, str]]:
    with psycopg.connect(memory.dsn) as conn:
        return digest_queries.view_digests(conn)


def _generated(root: Path, count: int, seed: int, generator: str = "generate") -> Path:
    from jobs.bench import synthetic

    for doc in getattr(synthetic, generator)(count, seed=seed):
        path = root / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text)
    return root


@pytest.fixture
def two_memories(pg_admin_dsn, template_db, tmp_path):
    from jobs.settings import load_settings
    from sql.store import embedded
    from tests.support.memory import dsn_for, unique_name

    memories = []
    for name in ("first", "second"):
        db = unique_name(f"cm_shape_{name}")
        embedded.ensure_database(pg_admin_dsn, db, template=template_db)
        memories.append(load_settings({}, home=tmp_path / name, dsn=dsn_for(pg_admin_dsn, db),
                                      object_store=str(tmp_path / f"objects-{name}")))
    return memories


@pytest.mark.parametrize("seed", [3, 17])
def test_a_generated_corpus_gives_one_memory_at_any_batch_size_and_worker_count(ray_local, two_memories, tmp_path,
                                                                                   seed):
    corpus = _generated(tmp_path / "corpus", 18, seed)
    one, other = two_memories
    first = do_import(one, corpus, batch_size=1, workers=1, modified_at_from="path")
    second = do_import(other, corpus, batch_size=7, workers=4, modified_at_from="path")
    assert first.counts["failed"] == 0 and second.counts["failed"] == 0
    held = digests(one)
    assert held["claims_live"][0] > 20 and held["entities_current"][0] > 3 and held["facts_current"][0] > 3
    assert not differing(one, other)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_timelines_give_one_memory_at_any_batch_size_and_worker_count(ray_local, two_memories, tmp_path,
                                                                                   seed):
    """Moves between teams, dates relative to the note's own or without a year, a plan dated
    twice, roles: what each person and plan becomes is decided across documents, in whatever
    batches they arrive."""
    corpus = _generated(tmp_path / "corpus", 14, seed, "generate_timelines")
    one, other = two_memories
    first = do_import(one, corpus, batch_size=1, workers=1, modified_at_from="path")
    second = do_import(other, corpus, batch_size=5, workers=3, modified_at_from="path")
    assert first.counts["failed"] == 0 and second.counts["failed"] == 0
    held = digests(one)
    assert held["facts_current"][0] > 5 and held["facts_visible_history"][0] > held["facts_current"][0], held
    with psycopg.connect(one.dsn) as conn:   # the plans dated twice disagree, on record
        assert conn.execute("SELECT count(DISTINCT contradiction_group) FROM memory_v1.facts_visible_history"
                            " WHERE statement LIKE '%review is scheduled%'").fetchone()[0] > 0
    assert not differing(one, other)


def test_the_example_corpus_gives_one_memory_at_any_batch_size(ray_local, example_memory, memory, example_corpus):
    report = do_import(memory, example_corpus, batch_size=1, workers=3, modified_at_from="path")
    assert report.counts["failed"] == 0
    assert not differing(example_memory, memory)
