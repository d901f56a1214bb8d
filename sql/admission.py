"""Admission: how much work a caller, and the deployment as a whole, may have in flight, start
per minute, and spend in seconds per minute. One controller for every surface that admits work
on the authority: the read API's requests (`serve.admission`), the query space's statements
(`sql.query_space.query_runner`) and the cost export's one request a second
(`serve.cost_export`), each with its own `Policy` and its own counters.

Counters live in the process: each replica (and each CLI process) admits its own share. A
refusal counts against nothing. Surfaces name the refusals in their own words; the controller
says which limit refused and after how many whole seconds asking again can succeed.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

Reason = Literal["in_flight", "rate", "seconds"]
WINDOW_S = 60.0   # the minute that rates and seconds are counted over


@dataclass(frozen=True)
class Policy:
    """The limits of one surface, per caller and per deployment; a limit that is not positive is off.

    `*_in_flight`: work running at once. `*_per_minute`: work started, a token bucket refilling
    continuously that holds `burst` tokens (not positive: a quarter of the rate, at least one).
    `*_seconds`: seconds of work that finished within the last minute; a run is counted when it
    ends, so the work running at the moment the budget is spent still finishes.
    """

    caller_in_flight: int = 0
    deployment_in_flight: int = 0
    caller_per_minute: int = 0
    deployment_per_minute: int = 0
    caller_seconds: float = 0
    deployment_seconds: float = 0
    burst: float = 0


class NotAdmitted(Exception):
    """Not admitted, by the limit `reason`; asking again after `retry_after` seconds can succeed."""

    def __init__(self, reason: Reason, retry_after: int) -> None:
        super().__init__(f"{reason}: retry after {retry_after} s")
        self.reason = reason
        self.retry_after = retry_after


@dataclass
class _Counter:
    """What one caller, or the deployment, has running and has used."""

    in_flight: int = 0
    tokens: float | None = None   # the rate's bucket, full when first used
    stamp: float = 0.0
    spent: deque[tuple[float, float]] = field(default_factory=deque)   # (finished at, seconds)

    def refill(self, per_minute: int, burst: float, now: float) -> None:
        refilled = burst if self.tokens is None else self.tokens + (now - self.stamp) * per_minute / WINDOW_S
        self.tokens = min(burst, refilled)
        self.stamp = now

    def rate_wait(self, per_minute: int) -> int:
        """Whole seconds until the bucket holds one token (0 when it does)."""
        return 0 if self.tokens >= 1 else max(1, math.ceil((1 - self.tokens) * WINDOW_S / per_minute))

    def seconds_wait(self, budget: float, now: float) -> int:
        """Whole seconds until less than `budget` seconds finished within the last minute (0: now)."""
        while self.spent and self.spent[0][0] < now - WINDOW_S:
            self.spent.popleft()
        total = sum(seconds for _, seconds in self.spent)
        if total < budget:
            return 0
        wait = 0.0
        for finished, seconds in self.spent:   # oldest first: the budget frees as they leave the minute
            if total < budget:
                break
            total -= seconds
            wait = finished + WINDOW_S - now
        return max(1, math.ceil(wait))


@dataclass(frozen=True)
class Ticket:
    """An admitted piece of work, handed back to `Admission.leave` when it ends."""

    counters: tuple[_Counter, ...]   # every counter it counts against
    timed: tuple[_Counter, ...]      # those with a seconds budget, which its duration is added to
    started: float


class Admission:
    """Counts work against one `Policy`; safe to share between threads and an event loop (no
    call blocks on anything but a short lock)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._lock = threading.Lock()
        self._deployment = _Counter()
        self._callers: dict[str, _Counter] = {}

    def enter(self, caller: str | None) -> Ticket:
        """Admit one piece of work of `caller` (None: counted against the deployment only), or
        raise `NotAdmitted`. In-flight limits are checked first, then rates, then seconds."""
        p = self.policy
        with self._lock:
            now = time.monotonic()
            scopes = [(self._deployment, p.deployment_in_flight, p.deployment_per_minute, p.deployment_seconds)]
            if caller is not None:
                mine = self._callers.setdefault(caller, _Counter())
                scopes.append((mine, p.caller_in_flight, p.caller_per_minute, p.caller_seconds))
            for counter, in_flight, _, _ in scopes:
                if in_flight > 0 and counter.in_flight >= in_flight:
                    raise NotAdmitted("in_flight", 1)   # a slot may free at any moment
            for counter, _, per_minute, _ in scopes:
                if per_minute > 0:
                    counter.refill(per_minute, p.burst if p.burst > 0 else max(1.0, per_minute / 4), now)
                    if wait := counter.rate_wait(per_minute):
                        raise NotAdmitted("rate", wait)
            for counter, _, _, seconds in scopes:
                if seconds > 0 and (wait := counter.seconds_wait(seconds, now)):
                    raise NotAdmitted("seconds", wait)
            for counter, _, per_minute, _ in scopes:   # admitted: only now does it count
                if per_minute > 0:
                    counter.tokens -= 1
                counter.in_flight += 1
            return Ticket(tuple(counter for counter, *_ in scopes),
                          tuple(counter for counter, _, _, seconds in scopes if seconds > 0), now)

    def leave(self, ticket: Ticket) -> None:
        with self._lock:
            finished = time.monotonic()
            for counter in ticket.counters:
                counter.in_flight -= 1
            for counter in ticket.timed:
                counter.spent.append((finished, finished - ticket.started))

    @contextmanager
    def admit(self, caller: str | None) -> Iterator[None]:
        """`enter` and `leave` around a block."""
        ticket = self.enter(caller)
        try:
            yield
        finally:
            self.leave(ticket)

