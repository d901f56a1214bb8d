"""Reciprocal rank fusion of ranked candidate lists (the seed's RRF, k = 60)."""

from __future__ import annotations

RRF_K = 60


def fuse(channels: list[list[str]]) -> list[str]:
    """Ids best first: each channel that ranked an id adds 1 / (60 + rank), ranks from 1; ties by
    id, so the order never depends on arrival."""
    return list(signals(dict(enumerate(channels))))


def signals(channels: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """{id: {channel: 1 / (60 + rank)}} for every id a named channel ranked, best fused score
    first (ties by id): the fused order with what each channel contributed to it."""
    found: dict[str, dict[str, float]] = {}
    for name, ids in channels.items():
        for rank, item in enumerate(ids, start=1):
            found.setdefault(item, {})[str(name)] = 1.0 / (RRF_K + rank)
    return dict(sorted(found.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))
