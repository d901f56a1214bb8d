"""Reciprocal rank fusion of ranked candidate lists (the seed's RRF, k = 60), weighted per channel."""

from __future__ import annotations

RRF_K = 60
# What one rank in a channel is worth, by the kind of text it ranks (1 where not named). Meaning is
# precise on a claim, one decontextualised sentence, and diluted over a chunk of several turns or
# paragraphs; rare words are the reverse: a chunk that holds the question's rare words is a strong
# hit, a short claim that shares one common word is a weak one. Measured on the LoCoMo development
# conversations with `corpusmem bench recall` (README, "Retrieval quality"), each weight kept only
# because it held on every conversation left out of its choice.
CHANNEL_WEIGHTS = {"claims_bm25": 0.5, "chunks_semantic": 0.5, "chunks_bm25": 1.5}


def fuse(channels: list[list[str]]) -> list[str]:
    """Ids best first: each channel that ranked an id adds 1 / (60 + rank), ranks from 1; ties by
    id, so the order never depends on arrival."""
    return list(signals(dict(enumerate(channels))))


def signals(channels: dict[str, list[str]], weights: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    """{id: {channel: weight / (60 + rank)}} for every id a named channel ranked, best fused score
    first (ties by id): the fused order with what each channel contributed to it. A channel absent
    from `weights` weighs 1."""
    weights = weights or {}
    found: dict[str, dict[str, float]] = {}
    for name, ids in channels.items():
        weight = weights.get(str(name), 1.0)
        for rank, item in enumerate(ids, start=1):
            found.setdefault(item, {})[str(name)] = weight / (RRF_K + rank)
    return _ordered(found)


def scaled(fused: dict[str, dict[str, float]], ids: set[str], signal: str, weight: float) -> dict[str, dict[str, float]]:
    """`fused` (as `signals` gives it) with each of `ids` brought to `weight` times its fused score
    by a signal of its own, `signal` (negative for a weight under 1), in fused order again."""
    return _ordered({i: {**found, signal: (weight - 1) * sum(found.values())} if i in ids else found
                     for i, found in fused.items()})


def _ordered(found: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return dict(sorted(found.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))
