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
import re

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

CLIENTS = "benchmark clients"
SERVER_OTHER = "the server's other processes"
NOT_THE_SERVER = "other"


def component(process: psutil.Process, server: frozenset[int] = frozenset()) -> str:
    """What `process` is; `server`: the pids of the server's process tree, whose processes that are
    none of the named components are the server's own (its command), the rest not the server's."""
    if process.pid == os.getpid():
        return CLIENTS
    text = " ".join(process.cmdline()) or process.name()
    named = next((name for name, marker in _COMPONENTS if marker in text), None)
    return named or (SERVER_OTHER if process.pid in server else NOT_THE_SERVER)


def server_tree(pid: int | None) -> frozenset[int]:
    """The pids of the process `pid` and every process under it (none for None or an ended one)."""
    return frozenset(p.pid for _, p in tree(psutil.Process(pid))) if pid is not None and psutil.pid_exists(pid) \
        else frozenset()


def snapshot(server: int | None = None) -> Snapshot:
    """{pid: (component, user + system CPU seconds)} for every process that can be read; `server`:
    the pid at the root of the server's process tree, if one is measured."""
    out: Snapshot = {}
    pids = server_tree(server)
    for process in psutil.process_iter():
        try:
            times = process.cpu_times()
            out[process.pid] = (component(process, pids), times.user + times.system)
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


def tree(*roots: psutil.Process) -> list[tuple[psutil.Process, psutil.Process]]:
    """(root, process) for each root and every process under it; a root that ended gives none."""
    found = []
    for root in roots:
        try:
            found += [(root, process) for process in (root, *root.children(recursive=True))]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


class TreeCpu:
    """The CPU seconds of process trees, sampled while they run: the last reading of every process
    ever seen under a root, so a worker that ended between two samples keeps what it had spent by
    the last one (what it spent after that is lost: sample often). Each process is also given a
    component (`import_component`), so that the parts add up to the whole."""

    def __init__(self) -> None:
        self._seconds: dict[tuple[int, float], float] = {}   # by (pid, start time): a pid is reused
        self._labels: dict[tuple[int, float], str] = {}

    def sample(self, *roots: psutil.Process, names: dict[int, str] | None = None) -> None:
        """`names`: the components of PostgreSQL backends by pid (`postgres_components`)."""
        for root, process in tree(*roots):
            try:
                key, times = (process.pid, process.create_time()), process.cpu_times()
                label = import_component(process, root, names or {})
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            self._seconds[key] = max(self._seconds.get(key, 0.0), times.user + times.system)
            # a worker's title changes with its task; an actor's or a named backend's stays
            if self._labels.get(key, RAY_WORKERS) in (RAY_WORKERS, POSTGRES_UNNAMED):
                self._labels[key] = label

    @property
    def seconds(self) -> float:
        return sum(self._seconds.values())

    def by_component(self) -> dict[str, float]:
        """CPU seconds by component, largest first; they sum to `seconds`."""
        out: dict[str, float] = {}
        for key, seconds in self._seconds.items():
            out[self._labels[key]] = out.get(self._labels[key], 0.0) + seconds
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


DRIVER = "the driver (the import's own process: Ray Data's executor, the report)"
RAY_WORKERS = "Ray workers"   # split by `bench import` into the stages and what is around them
POSTGRES_UNNAMED = "PostgreSQL: connections that ended unnamed"
# Ray's own processes by what their command line carries, first match wins.
_RAY_PROCESSES = (
    ("Ray: raylet", "raylet/raylet"),
    ("Ray: GCS", "gcs_server"),
    ("Ray: log monitor", "log_monitor"),
    ("Ray: dashboard and its agents", "dashboard"),   # dashboard.py, its ray-dashboard-* heads, agent
    ("Ray: dashboard and its agents", "DashboardAgent"),
    ("Ray: runtime environments' agent", "runtime_env"),
    ("Ray: runtime environments' agent", "RuntimeEnvAgent"),
    ("Ray: autoscaler monitor", "autoscaler/_private/monitor"),
    ("Ray: Ray Data's actors", "_StatsActor"),
    ("Ray: Ray Data's actors", "_AutoscalingCoordinatorActor"),
)
# A backend's component by its connection's application name (`actors.db_writer.Link`), by prefix.
_POSTGRES_CONNECTIONS = (
    ("corpusmem ingest", "PostgreSQL: the pipeline's writes"),
    ("corpusmem write", "PostgreSQL: the pipeline's writes"),
    ("corpusmem load", "PostgreSQL: the pipeline's writes"),
    ("corpusmem normalize", "PostgreSQL: the facts phase"),
    ("corpusmem resolve", "PostgreSQL: the facts phase"),
    ("corpusmem adjudicate", "PostgreSQL: the facts phase"),
    ("corpusmem label", "PostgreSQL: the facts phase"),
    ("corpusmem facts", "PostgreSQL: the facts phase"),
    ("corpusmem run", "PostgreSQL: the run's own connection (claims, locks, vector indexes built)"),
    ("corpusmem bench", "the benchmark's own queries (who is who in PostgreSQL)"),
)
POSTGRES_BACKGROUND = "PostgreSQL: background (checkpoints, WAL, autovacuum)"
POSTGRES_OTHER = "PostgreSQL: other connections"


def import_component(process: psutil.Process, root: psutil.Process, names: dict[int, str]) -> str:
    """What `process`, under `root` (the import's process, or its PostgreSQL server), is."""
    if process.pid == root.pid:
        return POSTGRES_BACKGROUND if _is_postgres(root) else DRIVER
    text = " ".join(process.cmdline()) or process.name()
    if _is_postgres(root):
        if leader := _PARALLEL_WORKER.match(text):   # often gone before `pg_stat_activity` shows it
            return names.get(int(leader.group(1)), POSTGRES_UNNAMED)
        if process.pid in names:
            return names[process.pid]
        # a client backend's title names its user and database; the server's own processes' do not
        return POSTGRES_UNNAMED if _CLIENT_BACKEND.match(text) else POSTGRES_BACKGROUND
    found = next((name for name, marker in _RAY_PROCESSES if marker in text), None)
    if found is not None:
        return found
    if text.startswith("ray::") or "default_worker.py" in text:
        return RAY_WORKERS
    return "Ray: other" if "ray" in text else "other processes of the import"


_PARALLEL_WORKER = re.compile(r"postgres: parallel worker for PID (\d+)")
_CLIENT_BACKEND = re.compile(r"postgres: \S+ \S+ (\[local\]|\S+\(\d+\))")


def _is_postgres(process: psutil.Process) -> bool:
    return "postgres" in process.name()


def postgres_components(conn) -> dict[int, str]:
    """Each backend's component, from `pg_stat_activity`: a client's by its application name, a
    parallel worker's by its leader's, the server's own processes as background."""
    rows = conn.execute("SELECT pid, leader_pid, application_name, backend_type FROM pg_stat_activity").fetchall()
    apps = {pid: app for pid, _, app, _ in rows}
    out = {}
    for pid, leader, app, backend_type in rows:
        if backend_type not in ("client backend", "parallel worker"):
            out[pid] = POSTGRES_BACKGROUND
            continue
        app = apps.get(leader, app) if leader is not None else app
        out[pid] = next((name for prefix, name in _POSTGRES_CONNECTIONS if (app or "").startswith(prefix)),
                        POSTGRES_OTHER)
    return out
