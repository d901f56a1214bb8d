"""Bounded retries against transient failures, the one rule every call out of a process follows:
PostgreSQL, the object store, and the model (an OpenAI-compatible endpoint, a vLLM engine).

A unit of work gets `RetryPolicy.attempts` attempts in all, with waits of `backoff_s` doubling up to
`backoff_max_s` between them (`CORPUSMEM_RETRY_*`). One that fails transiently every time ends as
`GaveUp`, which its caller records as `dead_letter` with the reason; anything else (bad data, a
bug, a request the other side refuses for good) fails once, as it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import psycopg

_log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """`CORPUSMEM_RETRY_ATTEMPTS` attempts in all; waits of `backoff_s`, doubling, at most
    `backoff_max_s`, between them."""

    attempts: int = 3
    backoff_s: float = 2.0
    backoff_max_s: float = 60.0

    def delay(self, attempt: int) -> float:
        return min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1))


class GaveUp(Exception):
    """A transient failure outlived its attempts: the unit is dead-lettered with this reason.

    `error` is the last failure, or what another process said of it (`reason`, sent back)."""

    def __init__(self, attempts: int, error: BaseException | str) -> None:
        self.reason = error if isinstance(error, str) else describe(error)
        super().__init__(f"{self.reason} (gave up after {attempts} attempts)")
        self.attempts = attempts


def describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".strip()


def is_transient(err: BaseException) -> bool:
    """psycopg's `OperationalError` covers a dropped or refused connection, a server shutting
    down, a serialization failure or deadlock; `OSError` covers object-store and network errors.
    Another attempt may get through. Anything else (bad data, a bug) would fail the same way."""
    return isinstance(err, (psycopg.OperationalError, OSError))


def with_retries(policy: RetryPolicy, attempt: Callable[[], T], on_retry: Callable[[BaseException], None],
                 transient: Callable[[BaseException], bool] = is_transient) -> T:
    """`attempt()` until it succeeds, fails permanently (raised as it is) or has failed
    transiently `policy.attempts` times (`GaveUp`). `on_retry(error)` runs before each wait;
    `transient` tells the failures worth another attempt (`is_transient`: the database's and the
    network's) from the rest."""
    for n in range(1, policy.attempts + 1):
        try:
            return attempt()
        except Exception as err:
            if not transient(err):
                raise
            if n == policy.attempts:
                raise GaveUp(n, err) from err
            _log.warning("transient failure, attempt %d of %d, next in %.1f s: %s", n, policy.attempts,
                         policy.delay(n), describe(err))
            on_retry(err)
            time.sleep(policy.delay(n))
    raise AssertionError("unreachable: policy.attempts >= 1")
