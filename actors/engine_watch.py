"""A watch over the vLLM engines of a run, one on each node: a Ray worker whose engine process
(vLLM's `EngineCore`) has ended, and that is still alive a while later, is ended too, so that Ray
starts its actor again and sends its batches again.

Why: vLLM 0.29's client marks an engine that died as dead, but the requests already sent to it
get no error, and the actor that holds them waits for ever; an engine lost during its start is
waited on for `VLLM_ENGINE_READY_TIMEOUT_S` (600 s). When the engine takes its worker with it,
Ray already does the right thing: it starts the actor again and the batch is sent again
(docs/claims.md). The watch makes every engine death that case. Neither vLLM nor Ray Data offers
a hook for it, and the actor that holds the engine is Ray Data's own, so the watch looks at the
processes themselves (psutil), as `jobs.runtime` does for Ray's.

An engine that ends because its worker is stopping (the end of a run, an actor pool scaling in)
is followed by its worker within a second or two; `GRACE_S` leaves that time.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psutil

_log = logging.getLogger(__name__)

ENGINE_TITLE = "EngineCore"   # vLLM names its engine processes VLLM::EngineCore (setproctitle)
LOOK_S = 1.0
GRACE_S = 10.0


def is_engine(proc: psutil.Process) -> bool:
    try:
        return ENGINE_TITLE in " ".join(proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class Reaper:
    """What one look at a node's processes decides: engines are noted with the worker that started
    them; a worker that outlives all its engines by `grace_s` is ended with SIGKILL."""

    grace_s: float = GRACE_S
    engines: dict[int, psutil.Process] = field(default_factory=dict)    # engine pid → its worker
    orphaned: dict[int, float] = field(default_factory=dict)            # worker pid → when its engine went
    ended: list[dict[str, Any]] = field(default_factory=list)           # the workers ended, and why

    def look(self, processes: Iterable[psutil.Process], now: float) -> None:
        running = {p.pid: p for p in processes if is_engine(p)}
        for pid, proc in running.items():
            if pid not in self.engines:
                try:
                    parent = proc.parent()
                except psutil.Error:
                    parent = None
                if parent is not None and not is_engine(parent):
                    self.engines[pid] = parent
        workers_with_engines = {w.pid for pid, w in self.engines.items() if pid in running}
        for pid in [pid for pid in self.engines if pid not in running]:
            worker = self.engines.pop(pid)
            if worker.pid not in workers_with_engines and _alive(worker):
                self.orphaned.setdefault(worker.pid, now)
        for worker_pid, since in list(self.orphaned.items()):
            if worker_pid in workers_with_engines:   # it started another engine
                del self.orphaned[worker_pid]
            elif now - since >= self.grace_s:
                del self.orphaned[worker_pid]
                self._end(worker_pid, now - since)

    def _end(self, pid: int, waited: float) -> None:
        try:
            proc = psutil.Process(pid)
            if not _alive(proc):
                return
            title = " ".join(proc.cmdline()).strip()[:120]
            os.kill(pid, signal.SIGKILL)
        except (psutil.Error, ProcessLookupError):
            return
        _log.warning("the vLLM engine of Ray worker %s (%s) ended %.0f s ago and the worker waited on: ended it, "
                     "so that Ray starts its actor again and sends its batches again", pid, title, waited)
        self.ended.append({"worker": pid, "title": title, "waited_s": round(waited, 1)})


def _watch(reaper: Reaper, stop: threading.Event, look_s: float) -> None:
    while not stop.wait(look_s):
        try:
            reaper.look(psutil.process_iter(), time.monotonic())
        except Exception:   # a look that fails is retried at the next; the watch must not die
            _log.debug("engine watch: a look failed", exc_info=True)


class NodeWatch:
    """The watch of one node, as a Ray actor pinned to it (`watching`)."""

    def __init__(self, look_s: float = LOOK_S, grace_s: float = GRACE_S) -> None:
        self._reaper, self._stop = Reaper(grace_s), threading.Event()
        self._thread = threading.Thread(target=_watch, args=(self._reaper, self._stop, look_s),
                                        name="engine-watch", daemon=True)
        self._thread.start()

    def ended(self) -> list[dict[str, Any]]:
        return list(self._reaper.ended)


@contextmanager
def watching(*, look_s: float = LOOK_S, grace_s: float = GRACE_S) -> Iterator[list[dict[str, Any]]]:
    """Watch the engines on every node of the cluster while the block runs; the list it yields is
    filled, when the block ends, with the workers the watch ended (node, pid, what they were)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(num_cpus=0, max_restarts=0)(NodeWatch)
    watches = {node["NodeID"]: remote.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(look_s, grace_s)
        for node in ray.nodes() if node.get("Alive")}
    ended: list[dict[str, Any]] = []
    try:
        yield ended
    finally:
        for node, watch in watches.items():
            try:
                ended += [{"node": node, **e} for e in ray.get(watch.ended.remote(), timeout=10)]
            except Exception:   # a node lost under the run took its watch with it
                pass
            ray.kill(watch)
