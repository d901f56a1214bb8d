"""The fused ranking of the read API: reciprocal rank fusion, weighted per channel."""

from __future__ import annotations

from serve.retrieval import fusion


def test_rrf_adds_one_over_sixty_plus_rank_per_channel_and_breaks_ties_by_id() -> None:
    fused = fusion.signals({"a": ["x", "y"], "b": ["y", "z"]})
    assert list(fused) == ["y", "x", "z"]
    assert fused["y"] == {"a": 1 / 62, "b": 1 / 61}
    assert fusion.fuse([["b", "a"], ["a", "b"]]) == ["a", "b"]   # a tie, decided by id


def test_a_channel_weighs_what_its_weight_says() -> None:
    # the same ranks: a chunk first by rare words outranks a chunk first by meaning
    channels = {"chunks_semantic": ["m"], "chunks_bm25": ["w"]}
    fused = fusion.signals(channels, fusion.CHANNEL_WEIGHTS)
    assert list(fused) == ["w", "m"]
    assert fused["w"]["chunks_bm25"] == fusion.CHANNEL_WEIGHTS["chunks_bm25"] / 61
    # a channel without a weight counts 1, and the weights never reorder one channel
    assert fusion.signals({"claims_named": ["p", "q"]}, fusion.CHANNEL_WEIGHTS) == {
        "p": {"claims_named": 1 / 61}, "q": {"claims_named": 1 / 62}}
