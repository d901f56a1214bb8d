"""What one replica of the read API is built from: its connection pools, the deployment's facts
and limits, and the question embedder.

Read handlers await a connection from the async psycopg pool of their kind, `general`,
`retrieval` or `graph`, whose sizes are the concurrency limits; each connection reads one
snapshot and writes nothing. Ingest, document deletion and the SQL query space share their code
with the import pipeline and the CLI, which are synchronous: they use the `sync` pool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from serve import admission, auth
from sql.store import authority as store

# `embed(text)`: the question's vector for the pin the server started with; `embed(text, pin)`:
# for another pin, once `corpusmem reembed` has switched it.
Embed = Callable[..., Awaitable[Any]]
PoolKind = Literal["general", "retrieval", "graph"]


@dataclass
class Pools:
    general: AsyncConnectionPool
    retrieval: AsyncConnectionPool
    graph: AsyncConnectionPool
    # ingest, deletion and the saved-query registry: code shared with the pipeline and the CLI;
    # open from the start, as the query routes seed the registry when the app is built
    sync: ConnectionPool

    async def open(self) -> None:
        for pool in (self.general, self.retrieval, self.graph):
            await pool.open(wait=True, timeout=30)

    async def close(self) -> None:
        for pool in (self.general, self.retrieval, self.graph):
            await pool.close()
        self.sync.close()

    def snapshot(self, kind: PoolKind = "general", *,
                 generic_plans: bool = False) -> AbstractAsyncContextManager[psycopg.AsyncConnection]:
        """`async with pools.snapshot(kind) as c`: one read snapshot on a connection of that pool
        (`generic_plans`: see `read_snapshot`)."""
        return read_snapshot(getattr(self, kind), generic_plans=generic_plans)


async def _configure(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)
    # every transaction of a read pool reads one snapshot and writes nothing
    await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
    await conn.set_read_only(True)
    await conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(store.HNSW_EF_SEARCH),))


# PostgreSQL's choice for the prepared statements of a snapshot asked for generic plans. By
# default it plans a statement anew at each execution (a custom plan) for as long as it rates the
# generic plan worse, which it does for every statement that asks the servability views about an
# array of ids; and planning those views cost more than running them. On `bench serve`'s memory
# (108,367 claims), PostgreSQL's CPU a facts_context fell from 11.0 to 9.9 ms, 15.0 to 4.7 ms when
# anchored on an entity (the graph expansion 6.5 → 0.8), a claims_and_sources_context's from 13.9
# to 13.1, a two-hop neighbourhood's from 16.6 to 1.9, a relation's hydration from 1.5 to 0.7, the
# answers the same bytes (docs/performance.md, "Plans the reads keep"). Only those reads ask for
# it: other routes' statements that match an optional argument (`%(s)s IS NULL OR f.subject_id =
# %(s)s`) need a plan made for the value, and searches gained nothing.
GENERIC_PLANS = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"


@asynccontextmanager
async def read_snapshot(pool: AsyncConnectionPool, *,
                        generic_plans: bool = False) -> AsyncIterator[psycopg.AsyncConnection]:
    """A connection of a read pool inside one REPEATABLE READ READ ONLY transaction: everything a
    route reads (totals, evidence, co-members) comes from one snapshot of the authority. With
    `generic_plans`, its prepared statements run on their generic plans (`GENERIC_PLANS`), for
    this transaction only."""
    async with pool.connection() as c, c.transaction():
        if generic_plans:
            await c.execute(GENERIC_PLANS)
        yield c


def open_pools(dsn: str, *, general: int = 4, retrieval: int = 4, graph: int = 2, sync: int = 2) -> Pools:
    """The pools of one replica; the async ones are opened by the app's lifespan, inside its loop."""
    def pool(size: int, name: str) -> AsyncConnectionPool:
        return AsyncConnectionPool(dsn, min_size=1, max_size=size, name=name, open=False,
                                   kwargs={"autocommit": True}, configure=_configure)
    return Pools(pool(general, "general"), pool(retrieval, "retrieval"), pool(graph, "graph"),
                 ConnectionPool(dsn, min_size=1, max_size=sync, name="sync", open=True, kwargs={"autocommit": True}))


@dataclass(frozen=True)
class DeploymentInfo:
    deployment_id: str
    build_revision: str
    embedding_model: str
    object_store: str = ""
    max_ingest_bytes: int = 64 * 1024 * 1024
    credentials: tuple[tuple[str, str], ...] = ()   # (sha256 of a secret, scope); empty: auth off
    limits: admission.Limits = admission.Limits()   # admission limits; all off by default
    signed_tokens: auth.SignedTokens = auth.SignedTokens()   # JWT keys; none: shared secrets only
    cors_origins: tuple[str, ...] = ()   # browser origins that may call the API; empty: none
    trusted_principal_source: bool = False   # believe X-Ingest-Principal-* (a gateway sets them)
