"""Stateful stage classes run as Ray tasks: one instance per worker process and set of arguments,
kept there between batches and between runs.

An actor is a process of its own: on a small machine starting one takes one to three seconds,
and an import that started one per database stage, one per facts step and a labeller paid that
again on every run, however few its documents (most of a small import's time, and all of it for
the processor's micro-batches). A task runs in one of the worker processes Ray keeps warm, so the
classes that only hold a connection, an object store or a model (`Ingest`, `Write`, `Extract`, the
facts shards) run as tasks and keep their instance in the process that built it: the connection
is opened once per process and run, not once per batch, and a worker that served the last run
serves the next one without starting anything.

Ray has no such reuse of its own for tasks (its actors are the stateful unit), so this small cache
is written here.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

# Instances a worker process keeps: the stages of a few runs in flight at once (concurrent
# imports, the processor), each holding one connection. The oldest is dropped beyond that, and its
# connection is closed when it is collected.
_KEPT = 16

_instances: OrderedDict[bytes, Any] = OrderedDict()
_lock = threading.Lock()   # a worker may run tasks on several threads


def instance(cls: type, kwargs: dict[str, Any]) -> Any:
    """This process's instance of `cls(**kwargs)`, built on first use."""
    key = pickle.dumps((cls.__module__, cls.__qualname__, sorted(kwargs.items())))
    with _lock:
        found = _instances.get(key)
        if found is not None:
            _instances.move_to_end(key)
            return found
    built = cls(**kwargs)
    with _lock:
        found = _instances.setdefault(key, built)
        _instances.move_to_end(key)
        while len(_instances) > _KEPT:
            _instances.popitem(last=False)
    return found


def batches(cls: type, kwargs: dict[str, Any]) -> Callable[[Any], Any]:
    """A Ray Data batch function that hands each batch to this process's `cls(**kwargs)`, named
    after `cls` (Ray Data names an operator after its function: `MapBatches(Ingest)`)."""
    def run(batch: Any) -> Any:
        return instance(cls, kwargs)(batch)

    run.__name__ = cls.__name__
    return run


def call(cls: type, kwargs: dict[str, Any], method: str, *args: Any) -> Any:
    """`method(*args)` of this process's `cls(**kwargs)`: the body of a Ray task (`ray.remote(call)`)."""
    return getattr(instance(cls, kwargs), method)(*args)
