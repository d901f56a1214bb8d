"""The parts `bench serve` measures alone, on the example memory: each is the read's own."""

from __future__ import annotations

from contextlib import ExitStack

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql as pgsql

from jobs.bench import serve as bench_serve
from sql.read.read_queries import Nomination
from sql.store import authority as store


@pytest.mark.parametrize("table", ["facts", "claims", "chunks"])
def test_a_graph_search_alone_nominates_as_many_as_the_read_and_the_nearest(example_memory, table):
    key = {"facts": "fact_id", "claims": "claim_id", "chunks": "chunk_id"}[table]
    with psycopg.connect(example_memory.dsn) as conn:
        register_vector(conn)
        held, vector = conn.execute(f"SELECT count(*) FILTER (WHERE embedding IS NOT NULL),"
                                    f" (array_agg(embedding ORDER BY {key}))[1] FROM {table}").fetchone()
        conn.execute("SET enable_indexscan = off")
        exact = [str(r[0]) for r in conn.execute(f"SELECT {key} FROM {table} ORDER BY embedding <=> %s, {key} LIMIT %s",
                                            (vector, bench_serve.read_candidates(table)))]
        conn.execute("RESET enable_indexscan")
        conn.execute("SET hnsw.ef_search = %s" % store.HNSW_EF_SEARCH)
        # the index searches it (a memory this small is read whole unless the planner is told)
        conn.execute("SET enable_seqscan = off")
        statement, params = Nomination(table, "semantic").statement(bench_serve.read_candidates(table))
        plan = "\n".join(r[0] for r in conn.execute(pgsql.SQL("EXPLAIN ") + statement, {"v": vector, **params}))
        found = [r[0] for r in conn.execute(statement, {"v": vector, **params})]
    assert bench_serve.read_candidates(table) == 200
    assert len(exact) == min(held, 200) > 0 and len(found) == len(exact)
    assert f"{table}_embedding_hnsw" in plan
    # the search is the index's (approximate); on a memory this small it finds nearly all
    assert len(set(found) & set(exact)) >= 0.9 * len(exact)
    with ExitStack() as stack:
        call = bench_serve.graph_search_client(example_memory.dsn, table)(stack)
        assert call(vector) is None


def test_a_question_is_encoded_alone_as_the_memory_encoded_its_claims(example_memory):
    with psycopg.connect(example_memory.dsn) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT claim_text, embedding FROM claims WHERE embedding IS NOT NULL"
                            " ORDER BY claim_id LIMIT 5").fetchall()
    model = bench_serve.question_model(example_memory.dsn)
    for text, stored in rows:
        vector = model.encode([text], normalize_embeddings=True, show_progress_bar=False, batch_size=1)[0]
        assert np.allclose(vector, stored.to_numpy(), atol=1e-5), text
    assert 0 < bench_serve.encoding_ms(model, [t for t, _ in rows]) < 1000
