"""corpusmem's own metrics, exported by every Ray node next to Ray's (`ray.util.metrics`).

Each process makes its metric objects once, on first use; a process without Ray (a unit test, a
command that never starts Ray) records nothing. Ray's metrics agent exports them on each node's
metrics export port with Ray's `ray_` namespace in front, so `corpusmem_documents_total` is
scraped as `ray_corpusmem_documents_total`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

# Seconds: a batch of an embedder or an extractor takes milliseconds on a GPU, minutes on a CPU.
_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
_SIZES = [1, 4, 16, 32, 64, 128, 256, 512, 1024, 4096]

_SPECS: dict[str, tuple[str, str, tuple[str, ...], list[float] | None]] = {
    # name: (kind, description, tag keys, histogram boundaries)
    "corpusmem_documents_total": ("counter", "documents that left a stage, by outcome", ("stage", "outcome"), None),
    "corpusmem_chunks_total": ("counter", "chunks landed in the authority", (), None),
    "corpusmem_claims_total": ("counter", "claims landed in the authority", ("stage",), None),
    "corpusmem_facts_total": ("counter", "facts written by adjudication, by decision", ("decision",), None),
    "corpusmem_failures_total": ("counter", "documents that failed, by stage and reason", ("stage", "reason"), None),
    "corpusmem_items_in_flight": ("gauge", "documents of the running import not yet landed", ("run_id",), None),
    "corpusmem_embed_batch_size": ("histogram", "texts per embedding batch", (), _SIZES),
    "corpusmem_embed_batch_seconds": ("histogram", "seconds per embedding batch", (), _SECONDS),
    "corpusmem_extract_batch_size": ("histogram", "documents per extraction batch", ("extractor",), _SIZES),
    "corpusmem_extract_batch_seconds": ("histogram", "seconds per extraction batch", ("extractor",), _SECONDS),
}


@cache
def _metric(name: str) -> Any:
    from ray.util import metrics

    kind, description, tags, boundaries = _SPECS[name]
    if kind == "counter":
        return metrics.Counter(name, description, tag_keys=tags)
    if kind == "gauge":
        return metrics.Gauge(name, description, tag_keys=tags)
    return metrics.Histogram(name, description, boundaries=boundaries, tag_keys=tags)


def _live() -> bool:
    import ray

    return ray.is_initialized()


def inc(name: str, value: float = 1, **tags: str) -> None:
    if value > 0 and _live():
        _metric(name).inc(value, tags=tags or None)


def observe(name: str, value: float, **tags: str) -> None:
    if _live():
        _metric(name).observe(value, tags=tags or None)


def set_gauge(name: str, value: float, **tags: str) -> None:
    if _live():
        _metric(name).set(value, tags=tags or None)


def reason(error: str | None) -> str:
    """A failure's reason as a metric tag: its first words, before the detail (low cardinality)."""
    if not error:
        return "unknown"
    head = error.split(":", 1)[0].strip()
    return " ".join(head.split()[:4])[:60] or "unknown"
