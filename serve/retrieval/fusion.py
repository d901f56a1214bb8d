"""Reciprocal rank fusion of ranked candidate lists (the seed's RRF, k = 60)."""

from __future__ import annotations

RRF_K = 60


def fuse(channels: list[list[str]]) -> list[str]:
    """Ids best first: each channel that ranked an id adds 1 / (60 + rank), ranks from 1; ties by
    id, so the order never depends on arrival."""
    scores: dict[str, float] = {}
    for ids in channels:
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))
