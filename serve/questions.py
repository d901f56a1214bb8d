"""A question's vector, in the embedding space of the pin the reading snapshot holds.

Questions are embedded before a connection is taken, so no connection waits on the model; the
pin is then checked inside the snapshot, and a question is embedded again when `corpusmem
reembed` switched the pin in between: a read never compares vectors of two models.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import psycopg
from fastapi import HTTPException

from serve.replica import Embed, Pools
from sql.store import authority as store


class Questions:
    """The pin questions are embedded for: the server's at start, the new one once a snapshot
    shows that `corpusmem reembed` switched it. One per app, shared by its routes."""

    def __init__(self, embed: Embed, pools: Pools, server_pin: str) -> None:
        self._embed = embed
        self._pools = pools
        self._server_pin = server_pin
        self.pin = server_pin

    async def vector(self, text: str, pin: str) -> Any:
        """`text`'s vector for `pin`; the embedder's failure is the seed's 503."""
        try:
            return await self._vector(text, pin)
        except Exception as err:  # the embedder is a separate deployment
            raise HTTPException(503, "model provider unavailable") from err

    async def in_space(self, c: psycopg.AsyncConnection, text: str, question: Any, pin: str) -> Any:
        """The question's vector in the space of the pin the snapshot `c` reads: a query never
        compares vectors of two models, even when a switch committed since it was embedded."""
        pinned = await _pin(c)
        if pinned == pin:
            return question
        self.pin = pinned
        return await self.vector(text, pinned)

    async def pinned(self, text: str) -> Any:
        """For the SQL query space, whose runner opens its snapshot after embedding: the pin is
        read just before (a switch between the two that changed the dimension is refused by
        memory_v1's own check of the query vector)."""
        async with self._pools.snapshot() as c:
            self.pin = await _pin(c)
        return await self._vector(text, self.pin)

    def _vector(self, text: str, pin: str) -> Awaitable[Any]:
        return self._embed(text) if pin == self._server_pin else self._embed(text, pin)


async def _pin(c: psycopg.AsyncConnection) -> str:
    """The embedding model the deployment is pinned to, as the snapshot `c` reads it."""
    return (await (await c.execute(store.PINNED_MODEL_SQL)).fetchone())[0]
