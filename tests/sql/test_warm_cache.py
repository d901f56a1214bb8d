"""The read path loaded into PostgreSQL's cache before a server's first question
(`authority.warm_cache`, pg_prewarm from migration 0025): the vector indexes first, nothing past
the share of shared_buffers it is given, and nothing at all where the module is missing."""

from __future__ import annotations

import psycopg
import pytest

from sql.store import authority as store

pytestmark = pytest.mark.integration

CACHED = ("SELECT count(*) FROM pg_buffercache b JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)"
          " WHERE c.relname = %s AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())")


def cached(conn: psycopg.Connection, relation: str) -> int:
    return conn.execute(CACHED, (relation,)).fetchone()[0]


def pages(conn: psycopg.Connection, relation: str) -> int:
    return conn.execute("SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int",
                        (relation,)).fetchone()[0]


def test_the_vector_indexes_are_loaded_first_and_within_the_share(example_memory_copy):
    indexes = [index for _, _, index in store.VECTOR_COLUMNS]
    with psycopg.connect(example_memory_copy.dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        assert conn.execute("SELECT to_regproc('pg_prewarm')").fetchone()[0] is not None   # migration 0025

        def evict() -> None:
            for relation in indexes + ["claims", "chunks"]:
                conn.execute("SELECT pg_buffercache_evict_relation(%s::regclass)", (relation,))
            assert all(cached(conn, r) == 0 for r in indexes)

        evict()
        assert store.warm_cache(conn, share=0) == (0, 0)   # CORPUSMEM_SERVE_CACHE_SHARE=0
        assert all(cached(conn, r) == 0 for r in indexes)
        relations, loaded = store.warm_cache(conn, 0.5)
        block = conn.execute("SELECT current_setting('block_size')::int").fetchone()[0]
        assert relations > len(indexes) and loaded > 0 and loaded % block == 0
        for index in indexes:
            assert cached(conn, index) == pages(conn, index) > 0

        # a share that holds the vector indexes alone loads them and skips the rest
        evict()
        buffers = conn.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'shared_buffers'").fetchone()[0]
        vector_pages = sum(pages(conn, i) for i in indexes)
        few, some = store.warm_cache(conn, share=(vector_pages + 0.5) / buffers)
        assert few == len(indexes) and some == vector_pages * block
        assert all(cached(conn, i) == pages(conn, i) for i in indexes)
        assert cached(conn, "claims") == 0

        # without the module the server serves from a cold cache, and says nothing is loaded
        conn.execute("DROP EXTENSION pg_prewarm")
        assert store.warm_cache(conn, 0.5) == (0, 0)
