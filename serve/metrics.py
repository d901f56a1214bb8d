"""The read API's own metrics (`ray.serve.metrics`: tagged with the deployment and replica):
requests by operation and status, and latency by operation. Recorded only inside a Ray process;
the app under a plain test client records nothing."""

from __future__ import annotations

import time
from functools import cache
from collections.abc import Collection
from typing import Any

from fastapi import Request

from serve.middleware import Call

_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]


@cache
def _metrics() -> tuple[Any, Any]:
    from ray.serve import metrics

    return (metrics.Counter("corpusmem_read_requests_total", "read API requests by operation and status",
                            tag_keys=("operation", "status")),
            metrics.Histogram("corpusmem_read_latency_seconds", "read API latency by operation",
                              boundaries=_SECONDS, tag_keys=("operation",)))


def operation(request: Request, known: Collection[str]) -> str:
    """`/operations/{name}` by the operation's name, every other route by its path template (so
    `/documents/{doc_id}` is one series, not one per document); unknown paths as `unmatched`,
    an unknown operation's name as `unknown_operation` (a caller's words are never a series)."""
    route = request.scope.get("route")
    if route is None:
        return "unmatched"
    if route.path == "/operations/{name}":
        name = request.path_params.get("name")
        return name if name in known else "unknown_operation"
    return f"{request.method} {route.path}"


def middleware(operations: Collection[str]):
    """Run by `serve.middleware.Around`. `operations`: the names `/operations/{name}` serves."""
    import ray

    async def measure(request: Request, call: Call) -> None:
        started = time.perf_counter()
        status = await call()
        if ray.is_initialized():
            requests, latency = _metrics()
            op = operation(request, operations)
            requests.inc(tags={"operation": op, "status": str(status)})
            latency.observe(time.perf_counter() - started, tags={"operation": op})
    return measure
