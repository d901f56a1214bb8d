"""Admission limits of the read API: requests per minute and requests in flight, per credential
and per deployment, as the seed's self-hosted perimeter (optional, off by default).

Each limit is active only when positive. Rates are token buckets refilling continuously at the
per-minute rate with a burst of a quarter of it; a refused request counts against nothing. A
credential counts against its own limits and the deployment's; an open deployment (no
credentials) only against the deployment's. Counters live in the process: each replica admits
its own share. Refusals are `429` with whole-second `Retry-After` and a `{code, message}` body.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

from fastapi import Request
from fastapi.responses import JSONResponse

from serve.auth import OPEN


@dataclass(frozen=True)
class Limits:
    key_per_minute: int = 0
    key_in_flight: int = 0
    deployment_per_minute: int = 0
    deployment_in_flight: int = 0

    @property
    def active(self) -> bool:
        return any(v > 0 for v in (self.key_per_minute, self.key_in_flight, self.deployment_per_minute,
                                   self.deployment_in_flight))


@dataclass
class Bucket:
    per_minute: int
    tokens: float = field(default=-1.0)
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.burst = max(1.0, self.per_minute / 4)
        if self.tokens < 0:
            self.tokens = self.burst

    def refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_minute / 60.0)
        self.stamp = now

    def wait(self) -> int:
        """Whole seconds until one token is there (0 when one is)."""
        return 0 if self.tokens >= 1 else max(1, math.ceil((1 - self.tokens) * 60.0 / self.per_minute))


class Admission:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.buckets: dict[str, Bucket] = {}
        self.in_flight: dict[str, int] = {}
        self.lock = asyncio.Lock()

    def _scopes(self, caller: str) -> list[tuple[str, int, int]]:
        """(counter key, per-minute, in-flight) the caller is counted against."""
        scopes = [("deployment", self.limits.deployment_per_minute, self.limits.deployment_in_flight)]
        if caller != OPEN:
            scopes.append((caller, self.limits.key_per_minute, self.limits.key_in_flight))
        return scopes

    async def enter(self, caller: str) -> JSONResponse | None:
        """None when admitted (the caller must `leave` afterwards), else the refusal."""
        async with self.lock:
            now = time.monotonic()
            scopes = self._scopes(caller)
            for key, _, in_flight in scopes:
                if in_flight > 0 and self.in_flight.get(key, 0) >= in_flight:
                    return _refuse("concurrency_limited", "too many requests in flight; retry after Retry-After "
                                   "seconds", 1)
            for key, per_minute, _ in scopes:
                if per_minute > 0:
                    bucket = self.buckets.setdefault(key, Bucket(per_minute))
                    bucket.refill(now)
                    if bucket.wait():
                        return _refuse("rate_limited", "request rate limit reached; retry after Retry-After "
                                       "seconds", bucket.wait())
            for key, per_minute, _ in scopes:  # admitted: only now does it count
                if per_minute > 0:
                    self.buckets[key].tokens -= 1
                self.in_flight[key] = self.in_flight.get(key, 0) + 1
            return None

    async def leave(self, caller: str) -> None:
        async with self.lock:
            for key, _, _ in self._scopes(caller):
                self.in_flight[key] -= 1


def _refuse(code: str, message: str, retry_after: int) -> JSONResponse:
    return JSONResponse({"detail": {"code": code, "message": message}}, status_code=429,
                        headers={"Retry-After": str(retry_after)})


def middleware(limits: Limits):
    """Counted after the credential check and before routing (unknown paths count); never on
    `GET /healthz`."""
    admission = Admission(limits)

    async def admit(request: Request, call_next):
        if not limits.active or request.url.path == "/healthz":
            return await call_next(request)
        caller = getattr(request.state, "caller", OPEN)
        refusal = await admission.enter(caller)
        if refusal is not None:
            return refusal
        try:
            return await call_next(request)
        finally:
            await admission.leave(caller)
    return admit
