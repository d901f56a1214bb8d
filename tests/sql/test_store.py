"""The authority's start-up: migrations once, the deployment pinned to one embedding model."""

from __future__ import annotations

import psycopg
import pytest

from sql.store import authority as store

pytestmark = pytest.mark.integration


def test_migrations_apply_once_and_a_second_start_changes_nothing(memory):
    with psycopg.connect(memory.dsn) as conn:
        before = conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()
        assert [name for _, name, _ in before] == [name for _, name, _ in store.migration_files()]
        assert store.migrate(conn) == []
        assert conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall() == before


def test_the_first_start_pins_the_model_and_another_model_is_refused(memory):
    first = store.open_store(memory, embedding_model="all-MiniLM-L6-v2", embedding_dim=384, build_revision="a")
    again = store.open_store(memory, embedding_model="all-MiniLM-L6-v2", embedding_dim=384, build_revision="b")
    assert again.deployment.deployment_id == first.deployment.deployment_id
    assert again.deployment.build_revision == "b"

    with pytest.raises(store.StoreError) as refused:
        store.open_store(memory, embedding_model="/models/bge-large", embedding_dim=1024, build_revision="b")
    message = str(refused.value)
    assert "all-MiniLM-L6-v2" in message and "/models/bge-large" in message
    with psycopg.connect(memory.dsn) as conn:
        assert conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
                            " WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'").fetchone() == (
            "vector(384)",)


def test_an_unreachable_server_is_a_clear_error(memory, tmp_path):
    bad = memory.model_copy(update={"dsn": f"postgresql://nobody@/nowhere?host={tmp_path}&connect_timeout=2"})
    with pytest.raises(store.StoreError, match="cannot connect to PostgreSQL"):
        store.open_store(bad, embedding_model="m", embedding_dim=3, build_revision="x")


def test_a_missing_embedding_model_names_the_setting(tmp_path):
    from actors.embedder import ModelNotFound, resolve_model

    with pytest.raises(ModelNotFound, match="CORPUSMEM_EMBEDDING_MODEL"):
        resolve_model(str(tmp_path / "no-such-model"))


def test_a_memory_keeps_the_execution_its_vectors_were_made_with(memory):
    from actors.embedder import DEFAULT_MODEL, resolve_model
    from jobs import runtime

    from actors import calibration

    memory = memory.model_copy(update={"embedding_execution": "auto"})
    assert store.pinned_model(memory.dsn) is None
    made = runtime.embedding_model(memory, memory.dsn)    # a new memory on a CPU: as this machine's calibration says
    assert made.execution == calibration.choose(made.calibration.per_chunk())
    store.open_store(memory, embedding_model=made.pin, embedding_dim=384, build_revision="a")
    assert store.pinned_model(memory.dsn) == made.pin
    assert runtime.embedding_model(memory, memory.dsn, gpu=True).pin == made.pin   # also where a GPU is lent
    other = resolve_model(DEFAULT_MODEL, "torch" if "@" in made.pin else "onnx-int8").pin
    with pytest.raises(store.StoreError, match="CORPUSMEM_EMBEDDING_EXECUTION=auto"):
        store.open_store(memory, embedding_model=other, embedding_dim=384, build_revision="a")


def test_a_step_merges_what_waits_in_the_gin_indexes_of_the_tables_it_filled(memory, monkeypatch):
    """New rows wait in a GIN index's pending list, which every search reads whole until it is
    merged: a step leaves none there, in a micro-batch too, and other tables' lists alone."""
    monkeypatch.setitem(store.FILLED_BY, "scratch_step", ("scratch_words",))
    with store.connect(memory.dsn, autocommit=True) as conn:
        for table in ("scratch_words", "scratch_other"):
            conn.execute(f"CREATE TABLE {table} (tsv tsvector)")
            conn.execute(f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv)")
        try:
            for table in ("scratch_words", "scratch_other"):
                conn.execute(f"INSERT INTO {table} SELECT to_tsvector('english', 'word' || n || ' team plan')"
                             " FROM generate_series(1, 600) n")
            assert store.refresh_statistics(conn, "scratch_step", changed=600) == []   # too few to analyse
            assert conn.execute("SELECT gin_clean_pending_list('scratch_words_tsv')").fetchone()[0] == 0
            assert conn.execute("SELECT gin_clean_pending_list('scratch_other_tsv')").fetchone()[0] > 0
            conn.execute("INSERT INTO scratch_words SELECT to_tsvector('english', 'more' || n)"
                         " FROM generate_series(1, 300) n")
            assert store.merge_pending_entries(conn, ["scratch_words"]) > 0
            assert store.merge_pending_entries(conn, ["scratch_words"]) == 0
        finally:
            conn.execute("DROP TABLE scratch_words, scratch_other")


def test_a_step_that_changed_enough_of_a_table_has_it_analysed_and_a_small_one_does_not(memory, monkeypatch):
    monkeypatch.setitem(store.FILLED_BY, "scratch_step", ("scratch_stats",))
    with store.connect(memory.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE scratch_stats (n int)")
        try:
            conn.execute("INSERT INTO scratch_stats SELECT generate_series(1, 600)")
            assert store.refresh_statistics(conn, "scratch_step", changed=600) == []   # a micro-batch
            conn.execute("INSERT INTO scratch_stats SELECT generate_series(1, 5000)")
            assert store.refresh_statistics(conn, "scratch_step", changed=5000) == ["scratch_stats"]
            assert conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'scratch_stats'").fetchone()[0] == 5600
            # analysed at 5,600 rows: 1,100 changed is under a tenth of them plus the floor (1,560)
            assert store.refresh_statistics(conn, "scratch_step", changed=1100) == []
        finally:
            conn.execute("DROP TABLE scratch_stats")


def test_a_row_keeps_its_vector_in_the_row(example_memory):
    """A chunk, its text, tsvector and 1.5 KB vector, is a row over PostgreSQL's 2 KB toast target:
    its vector went to the TOAST relation, and each read of it (every candidate's score, every row
    of a sequential scan) was a lookup there (0023). Rows that fit a page now stay whole."""
    with psycopg.connect(example_memory.dsn) as conn:
        widest = conn.execute("SELECT max(pg_column_size(c.*)) FROM chunks c").fetchone()[0]
        assert widest > 2032   # the corpus holds rows the default target would have cut
        toasted = conn.execute(
            "SELECT relname, pg_relation_size(reltoastrelid) FROM pg_class"
            " WHERE relname IN ('claims', 'chunks', 'facts', 'entities') ORDER BY 1").fetchall()
    assert toasted == [("chunks", 0), ("claims", 0), ("entities", 0), ("facts", 0)]
