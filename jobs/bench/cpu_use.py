"""CPU time spent by each part of a running deployment over a stretch of work.

`bench serve` reads every process's CPU time before and after a timed run and divides the
difference by the requests sent: what one request costs PostgreSQL, the API replica, the query
embedder, the Serve proxy and the benchmark's own clients. On a machine the run saturates, the
sum bounds the throughput (cores × 1000 / CPU ms per request), whatever the code path does.
`bench import` samples the CPU time of an import's process tree (`TreeCpu`) to divide it by the
documents imported.
"""

from __future__ import annotations

import os

import psutil

# (component, text a process's command line carries), first match wins
_COMPONENTS = (
    ("api replica", "ServeReplica:corpusmem:Api"),
    ("query embedder", "ServeReplica:corpusmem:QueryEmbedder"),
    ("serve proxy", "ProxyActor"),
    ("postgres", "postgres"),
    ("ray (other)", "ray"),
)

Snapshot = dict[int, tuple[str, float]]


def component(process: psutil.Process) -> str:
    if process.pid == os.getpid():
        return "benchmark clients"
    text = " ".join(process.cmdline()) or process.name()
    return next((name for name, marker in _COMPONENTS if marker in text), "other")


def snapshot() -> Snapshot:
    """{pid: (component, user + system CPU seconds)} for every process that can be read."""
    out: Snapshot = {}
    for process in psutil.process_iter():
        try:
            times = process.cpu_times()
            out[process.pid] = (component(process), times.user + times.system)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def per_request_ms(before: Snapshot, after: Snapshot, requests: int) -> dict[str, float]:
    """CPU milliseconds per request by component, largest first, with their `total`. A process
    started during the run counts from zero; one that ended is missing (its share is lost)."""
    spent: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        start = before.get(pid, (name, 0.0))[1]
        spent[name] = spent.get(name, 0.0) + max(seconds - start, 0.0)
    out = {name: round(seconds * 1000 / requests, 1)
           for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]) if seconds > 0}
    out["total"] = round(sum(spent.values()) * 1000 / requests, 1)
    return out


class TreeCpu:
    """The CPU seconds of process trees, sampled while they run: the last reading of every process
    ever seen under a root, so a worker that ended between two samples keeps what it had spent by
    the last one (what it spent after that is lost: sample often)."""

    def __init__(self) -> None:
        self._seconds: dict[tuple[int, float], float] = {}   # by (pid, start time): a pid is reused

    def sample(self, *roots: psutil.Process) -> None:
        for root in roots:
            try:
                processes = [root, *root.children(recursive=True)]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            for process in processes:
                try:
                    key, times = (process.pid, process.create_time()), process.cpu_times()
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                self._seconds[key] = max(self._seconds.get(key, 0.0), times.user + times.system)

    @property
    def seconds(self) -> float:
        return sum(self._seconds.values())
