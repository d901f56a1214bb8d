"""Each read of the API sees one snapshot of the authority and cannot write."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from serve.replica import open_pools, read_snapshot

pytestmark = pytest.mark.integration


def test_a_read_sees_one_snapshot_and_writes_nothing(memory):
    from sql.store import authority as store

    with store.connect(memory.dsn) as conn:
        store.migrate(conn)
    pools = open_pools(memory.dsn, general=1, retrieval=1, graph=1)

    def add_document(conn: psycopg.Connection) -> None:
        conn.execute("INSERT INTO documents (doc_id, source_kind, source_ref, title, filename, versioning_mode)"
                     " VALUES (%s, 'file', %s, 't', 't.md', 'snapshot')", (uuid.uuid4(), f"{uuid.uuid4()}.md"))

    async def read_twice() -> tuple[int, int, str, str]:
        await pools.open()
        try:
            async with read_snapshot(pools.general) as c:
                first = (await (await c.execute("SELECT count(*) FROM documents")).fetchone())[0]
                # another process lands a document while this read is running
                with psycopg.connect(memory.dsn, autocommit=True) as other:
                    add_document(other)
                second = (await (await c.execute("SELECT count(*) FROM documents")).fetchone())[0]
                level = (await (await c.execute("SHOW transaction_isolation")).fetchone())[0]
                read_only = (await (await c.execute("SHOW transaction_read_only")).fetchone())[0]
            async with read_snapshot(pools.general) as c:
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                    await c.execute("DELETE FROM documents")
            return first, second, level, read_only
        finally:
            await pools.close()

    first, second, level, read_only = asyncio.run(read_twice())
    assert (first, second, level, read_only) == (0, 0, "repeatable read", "on")
    with psycopg.connect(memory.dsn) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1   # the write landed, unseen
