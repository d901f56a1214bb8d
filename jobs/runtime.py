"""Process-wide setup for entry points: settings, Ray, the build revision.

Only `jobs/` touches the environment and global state (Ray's init, its DataContext, the signal
handlers of `jobs.shutdown`); everything below it gets explicit arguments.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path

from jobs import shutdown
from jobs.settings import Settings, load_settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent

_log = logging.getLogger(__name__)


def settings(**overrides: object) -> Settings:
    return load_settings(os.environ, **overrides)


@cache
def build_revision() -> str:
    """Package version plus the git commit when running from a checkout."""
    try:
        version = metadata.version("corpusmem")
    except metadata.PackageNotFoundError:
        version = "0+unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT,
                                capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+g{commit}"


def instant(text: str) -> datetime:
    """A date or an ISO 8601 instant given on the command line; one without an offset is UTC (a
    bare date is its first instant). Raises ValueError for anything else."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def embedding_model(settings: Settings, dsn: str | None, *, gpu: bool = False, ahead: CalibrationAhead | None = None):
    """The embedding model of the memory at `dsn` (None: a new memory), with the execution its
    vectors need (`CORPUSMEM_EMBEDDING_EXECUTION`); imports and reads take it from here alike.
    `auto` on a CPU chooses by this machine's calibration (`embedding_calibration`, or the one
    `ahead` started)."""
    from dataclasses import replace

    from actors.embedder import choose_execution, resolve_model
    from sql.store import authority as store

    base = resolve_model(settings.embedding_model, cache=settings.model_cache)
    pinned = store.pinned_model(dsn) if dsn else None
    calibrated = []

    def calibrate():
        calibrated.append(ahead.result() if ahead is not None else embedding_calibration(settings, base))
        return calibrated[-1]

    execution = choose_execution(settings.embedding_execution, pinned=pinned, gpu=gpu, model_path=base.path,
                                 calibrate=calibrate)
    ref = replace(resolve_model(settings.embedding_model, execution, settings.model_cache),
                  calibration=calibrated[0] if calibrated else None)
    if pinned is not None and ref.pin != pinned:
        # a question embedded by another model than the memory's would be compared with vectors of
        # another space (after `corpusmem reembed` moved the memory, the setting must follow)
        raise store.StoreError(
            f"this memory's vectors come from embedding model {pinned!r}; refusing {ref.pin!r} from the settings. "
            f"Set CORPUSMEM_EMBEDDING_MODEL={pinned.split('@')[0]} and CORPUSMEM_EMBEDDING_EXECUTION=auto")
    return ref


def embedding_calibration(settings: Settings, model, *, measure: bool = True):
    """This machine's calibration of `model` (`actors.calibration`) for one embedder with all the
    CPUs as its threads (an import's, at its default of one worker), and the settings' batch and
    chunk sizes. `measure=False`: only one kept from before, or None."""
    from actors import calibration

    shape = {"threads": os.cpu_count() or 1, "batch_size": settings.embed_batch(False),
             "chunk_chars": settings.chunk_target_chars}
    return calibration.calibrate(model, **shape) if measure else calibration.kept(model, **shape)


class CalibrationAhead:
    """This machine's calibration, measured in a thread from the command's start: on a machine's
    first import it runs while Ray starts instead of after (about 10 s on two cores). Started
    only where `auto` has no calibration kept for this model and settings yet; a run that then
    needs none (a GPU, a memory pinned to an execution) leaves the child to finish and keep it."""

    def __init__(self, settings: Settings) -> None:
        self._settings, self._done, self._result = settings, threading.Event(), None
        threading.Thread(target=self._run, name="calibration", daemon=True).start()

    @classmethod
    def start(cls, settings: Settings) -> CalibrationAhead | None:
        if settings.embedding_execution != "auto":
            return None
        from actors.embedder import resolve_model

        base = resolve_model(settings.embedding_model, cache=settings.model_cache)
        return None if embedding_calibration(settings, base, measure=False) is not None else cls(settings)

    def _run(self) -> None:
        from actors.embedder import resolve_model

        try:
            self._result = embedding_calibration(
                self._settings, resolve_model(self._settings.embedding_model, cache=self._settings.model_cache))
        except BaseException as err:   # handed to whoever asks for the result
            self._result = err
        finally:
            self._done.set()

    def result(self):
        self._done.wait()
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result


# What `ray job submit` hands its entrypoint: the job's metadata, with its submission id and name.
_SUBMITTED_JOB = "RAY_JOB_CONFIG_JSON_ENV_VAR"
_dashboard_url: str | None = None
_job_name: str | None = None   # the name this process gave its job


def init_ray(*, num_cpus: int | None = None, quiet: bool = True, job_name: str | None = None,
             join: bool = True, serves: bool = False, keep: bool = False,
             dashboard: bool = True) -> dict[str, float]:
    """Connect to `RAY_ADDRESS` (shipping this project as the job's working dir), else join the Ray
    of a running `corpusmem serve` of this user (`served_ray`), else do what `ray.init` does (join
    a Ray that `ray start` left running, or start one for this process; `RAY_ADDRESS=local`
    always starts one); name the job `job_name` in the dashboard's Jobs table (a job from `ray job
    submit` keeps the name it was submitted with); return the cluster's resources.

    `join=False`: never join a server's Ray (a process that runs Serve itself: Serve holds one
    application of a name and one HTTP port per Ray). `serves`: this process is `corpusmem serve`,
    which does not join either, and marks the Ray it starts as a server's, for the commands run
    while it serves to join. `keep`: a Ray this process would start is started
    by `ray start` instead, so that it outlives the process and the next command joins it.
    `dashboard=False` (`CORPUSMEM_RAY_DASHBOARD=false`): a Ray this process starts runs without the
    dashboard's modules (Ray keeps only its usage head): for a Ray nobody watches, such as a test
    session's, whose dashboard processes would poll all the while."""
    global _dashboard_url, _job_name
    import ray

    if not ray.is_initialized():
        # A memory engine that runs offline reports nothing to Ray's usage-stats service (nor
        # starts Ray Data's actor that gathers those reports in every job).
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        # A Ray this process starts (the raylet reads it) keeps its idle workers, and with them the
        # stages' resident instances (`actors/resident.py`).
        os.environ.setdefault("RAY_num_workers_soft_limit", str(warm_workers(num_cpus)))
        address = os.environ.get("RAY_ADDRESS") or None
        submitted = _SUBMITTED_JOB in os.environ or bool(os.environ.get("RAY_JOB_ID"))
        joined = served_ray() if join and not serves and address is None and not submitted else None
        if joined:
            # Ray turns token authentication on by itself only for a Ray it finds on its own, not
            # for an address it is given: the server's Ray tells how it authenticates, and Ray's
            # configuration, read when it was imported, is read again.
            os.environ.update(joined.auth)
            ray._raylet.Config.initialize("")
        runtime_env = None
        if address not in (None, "local") and not submitted:
            # A client outside the cluster: ship the packages so workers import the same code.
            runtime_env = {"working_dir": str(PROJECT_ROOT),
                           "excludes": [".venv", ".corpusmem", ".git", "examples", "bench-*", "notebooks"]}
        job_config = None
        if job_name and not submitted:
            job_config = ray.job_config.JobConfig(metadata={"job_name": job_name})
            _job_name = job_name
        if address not in (None, "local", "auto") and "://" not in address and not submitted \
                and not gcs_answers(address, timeout=NAMED_GCS_ANSWER_S):
            # `ray.init` would wait minutes on it, deaf to signals while it does
            raise RayUnreachable(f"the Ray at RAY_ADDRESS={address} does not answer (no GCS completed a "
                                 f"connection within {NAMED_GCS_ANSWER_S:.0f} s): start it, or unset RAY_ADDRESS "
                                 "to use a Ray on this machine")
        address = address or (joined.address if joined else None)
        if serves:
            os.environ[_SERVER_MARK] = "1"   # inherited by the raylet this process may start
        if keep and address is None:
            address = _start_kept(num_cpus, dashboard)
        context = ray.init(address=address, num_cpus=num_cpus if address in (None, "local") else None,
                           runtime_env=runtime_env, job_config=job_config, log_to_driver=not quiet,
                           include_dashboard=None if dashboard else False, configure_logging=True,
                           logging_level=logging.ERROR if quiet else logging.INFO)
        _dashboard_url = context.dashboard_url or None
        shutdown.keep_signals()
        if joined:
            print(f"ray: joined the Ray of the running `corpusmem serve` at {joined.address} (RAY_ADDRESS=local starts "
                  "a new one; stopping that server interrupts this command, and a re-run resumes it)",
                  file=sys.stderr, flush=True)
        if quiet:
            logs = Path(context.address_info.get("session_dir") or "/tmp/ray/session_latest") / "logs"
            print(f"ray: logs in {logs} (--verbose shows them here)", file=sys.stderr, flush=True)
    if quiet:
        quiet_console()
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = not quiet
    ctx.print_on_execution_start = not quiet
    ctx.max_consecutive_actor_init_deaths = ACTOR_START_DEATHS
    return ray.cluster_resources()


# An actor of a stage that dies while it starts (its process killed, a vLLM engine lost during its
# start: "Engine core initialization failed") is replaced by a fresh one this many times in a row
# before the run fails; Ray Data's default, 0, failed the whole run at the first. A start that
# always fails (a model that cannot load) still fails the run, after this many more tries.
ACTOR_START_DEATHS = 2


# In the environment of `corpusmem serve`, and so of the raylet of the Ray it starts.
_SERVER_MARK = "CORPUSMEM_SERVES_READ_API"


# Idle workers a Ray keeps, at least. Ray's own default is one per CPU, and it ends the others a
# second after they fall idle; an import runs a task of each of its eight or so stages at once, so
# on a small machine the driver's next run (the server's next processor micro-batch, the next
# import of a notebook or a test session) started those worker processes again and rebuilt their
# resident instances (an embedding model, a connection). A worker serves one job (driver): another
# command starts its own either way. On 2 CPUs an 18-note import in a process that had just run one
# took 7.6-9.9 s against 4.2-6.4 s with them kept. The cost is their memory: after such imports 8
# idle workers held 1.2 GB of their own (2 by Ray's default).
_WARM_WORKERS = 16


def warm_workers(num_cpus: int | None) -> int:
    """How many idle workers a Ray started for `num_cpus` CPUs (None: this machine's) keeps."""
    return max(_WARM_WORKERS, num_cpus or os.cpu_count() or 1)


# Ports for servers started beside a Ray: below the kernel's ephemeral range (32768–60999 on Linux)
# and above the range Ray gives its workers (10002–19999 by default). A port the kernel hands out
# for `bind(0)` is never one of these, so a port named here and bound a moment later cannot have
# been taken in between by a Ray component asking the kernel for one ("Ray component
# metrics_export is trying to use a port number … used by other components" was seen once).
_SERVER_PORTS = range(20000, 32768)
_ports_named: set[int] = set()   # named by this process, perhaps not bound yet


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now, in `_SERVER_PORTS`, and not named
    before by this process."""
    import random
    import socket

    for port in random.sample(_SERVER_PORTS, min(200, len(_SERVER_PORTS))):
        if port in _ports_named:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ports_named.add(port)
        return port
    raise RuntimeError(f"no free TCP port in {min(_SERVER_PORTS)}–{max(_SERVER_PORTS)}")


def _start_kept(num_cpus: int | None, dashboard: bool) -> str:
    """`ray start --head` on this machine (a Ray no process owns, which `ray.init` then joins, and
    so does every later command, as Ray's own rule is); its address."""
    ray_cli = Path(sys.executable).with_name("ray")
    command = [str(ray_cli), "start", "--head", "--disable-usage-stats",
               *([f"--num-cpus={num_cpus}"] if num_cpus is not None else []),
               *([] if dashboard else ["--include-dashboard=false"])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed: {(done.stderr or done.stdout).strip()[-500:]}")
    print("ray: started with `ray start` and kept running after this command, for the next one to join "
          "(`ray stop` ends it)", file=sys.stderr, flush=True)
    return "auto"


@dataclass(frozen=True)
class ServedRay:
    address: str
    auth: dict[str, str]   # how its raylet authenticates (RAY_AUTH_MODE and where the token is)


_AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN")


def served_ray() -> ServedRay | None:
    """The newest Ray that a `corpusmem serve` of this user runs on this machine with this Python,
    or None.

    Joining it saves starting and stopping a Ray (seconds each), and two Rays on one machine
    would each take every core for its own. Only a server's Ray is joined: the Ray another
    command started ends with that command. Another user's Ray is never joined (its workers run
    as that user), nor one whose workers run another Python (they would import other code). Read
    from the raylets' command lines and environments: Ray records only the clusters `ray start`
    made (and `ray.init` joins those by itself)."""
    import psutil

    found: list[tuple[float, ServedRay]] = []
    for proc in psutil.process_iter(["name", "uids", "cmdline", "create_time"]):
        info = proc.info
        if info["name"] != "raylet" or not info["uids"] or info["uids"].real != os.getuid():
            continue
        flags = dict(arg.split("=", 1) for arg in info["cmdline"] or () if arg.startswith("--") and "=" in arg)
        python = flags.get("--python_worker_command", "").split(" ")[0]
        if not (flags.get("--gcs-address") and python and os.path.abspath(python) == os.path.abspath(sys.executable)):
            continue
        try:
            environ = proc.environ()
        except psutil.Error:
            continue   # gone, or not ours to read after all
        if environ.get(_SERVER_MARK) == "1":
            auth = {k: environ[k] for k in _AUTH_VARIABLES if k in environ}
            found.append((info["create_time"], ServedRay(flags["--gcs-address"], auth)))
    for _, served in sorted(found, key=lambda f: -f[0]):
        if gcs_answers(served.address):
            return served
        # `ray.init` would wait minutes on it, deaf to signals while it does
        print(f"ray: the Ray of a running `corpusmem serve` at {served.address} does not answer (its GCS is "
              f"gone or hung); this command starts a Ray of its own", file=sys.stderr, flush=True)
    return None


# How long a server's Ray may take to answer before a command starts a Ray of its own, and a Ray
# named by RAY_ADDRESS (perhaps across a network) before a command stops with `RayUnreachable`.
GCS_ANSWER_S = 2.0
NAMED_GCS_ANSWER_S = 10.0


class RayUnreachable(RuntimeError):
    """The Ray that RAY_ADDRESS names does not answer."""


def gcs_answers(address: str, timeout: float = GCS_ANSWER_S) -> bool:
    """Whether the GCS at `address` (host:port) completes a gRPC connection within `timeout`: a
    killed GCS refuses it, a hung one never answers the handshake."""
    import grpc

    channel = grpc.insecure_channel(address)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def quiet_console() -> None:
    """Ray Data's and Serve's messages stay in their log files (`ray-data.log`, `serve/`), off the
    console, where the progress bar, warnings and the report go: their loggers keep every level,
    their console handlers show only errors."""
    import warnings

    import ray.data  # noqa: F401  (its import sets up its loggers and their handlers)

    # Ray Data's advice when a small corpus has fewer blocks than `--workers` embedders: the run
    # is right, it only uses fewer of them.
    warnings.filterwarnings("ignore", message="The maximum number of concurrent tasks for", category=UserWarning)

    for name in ("ray.data", "ray.serve"):
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                handler.setLevel(logging.ERROR)


def job_info() -> dict[str, str | None]:
    """The Ray job this process drives: its id, the submission id and name `ray job submit` gave
    it (if it was submitted), and the dashboard's address (if this process started or found one)."""
    import json

    import ray

    metadata = {}
    if _SUBMITTED_JOB in os.environ:
        try:
            metadata = json.loads(os.environ[_SUBMITTED_JOB]).get("metadata") or {}
        except ValueError:
            metadata = {}
    job_id = ray.get_runtime_context().get_job_id() if ray.is_initialized() else None
    dashboard = _dashboard_url
    if dashboard and "://" not in dashboard:
        dashboard = f"http://{dashboard}"
    return {"job_id": job_id, "submission_id": metadata.get("job_submission_id"),
            "job_name": metadata.get("job_name") or _job_name, "dashboard": dashboard,
            "dashboard_token": DASHBOARD_TOKEN_COMMAND if dashboard and token_auth() else None}


# Ray's dashboard asks for the cluster's token before it shows anything; this prints it.
DASHBOARD_TOKEN_COMMAND = "ray get-auth-token"


def token_auth() -> bool:
    """Whether the Ray this process drives asks for a token (`RAY_AUTH_MODE=token`, which Ray sets
    in the driver's environment when it starts or joins such a cluster)."""
    return os.environ.get("RAY_AUTH_MODE", "").lower() == "token"


def dashboard_text(info: dict[str, str | None]) -> str | None:
    """Where the dashboard of `job_info()` is and how to open it, or None without a dashboard."""
    if not info.get("dashboard"):
        return None
    token = info.get("dashboard_token")
    return info["dashboard"] + (f" (its token: `{token}`)" if token else "")


def placements(since: float) -> dict[str, dict[str, int]]:
    """Which node ran what of this job since `since` (epoch seconds): "address (node id)" → Ray
    Data operator (its actors and tasks) → how many. Asked only of a cluster of several nodes
    (on one, everything ran on it); from Ray's state API, and empty where it is unavailable."""
    import re

    import ray

    if not ray_answers() or alive_nodes() <= 1:
        return {}
    try:
        from ray.util.state import list_tasks

        address = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
        tasks = list_tasks(filters=[("job_id", "=", ray.get_runtime_context().get_job_id())], limit=10_000,
                           detail=True, raise_on_missing_output=False)
    except Exception as err:   # the state API needs the dashboard; its absence only loses these lines
        _log.debug("no placements: %s", err)
        return {}
    out: dict[str, dict[str, int]] = {}
    for t in tasks:
        if not t.node_id or not t.name or (t.creation_time_ms or 0) < since * 1000:
            continue
        # "MapWorker(MapBatches(Embed)).__init__" → "Embed"; "ReadRange->MapBatches(read)" → "read"
        inner = re.findall(r"\(([^()]+)\)", t.name)
        label = inner[-1] if inner else t.name.split("->")[-1].split(".")[0]
        if label.startswith("_"):
            continue
        # nodes of one machine share an address: the node id tells them apart
        per = out.setdefault(f"{address.get(t.node_id, '?')} ({t.node_id[:8]})", {})
        per[label] = per.get(label, 0) + 1
    return out


def interrupt_joined(timeout: float) -> list[int]:
    """SIGINT to the other drivers on this machine of the Ray this process started (the commands
    that joined a server's Ray, `served_ray`), and wait up to `timeout` seconds for them to exit;
    the pids of those that were asked.

    Without it, a command that joined dies with the Ray under it, its core worker ending the
    process without a word or a run record. Asked first, it stops as after a Ctrl-C: its run is
    recorded interrupted, a re-run resumes it; `server_stopping` tells it why."""
    import psutil
    from ray._private import state
    from ray.experimental import internal_kv

    try:
        if not ray_answers():
            return []
        drivers = state.jobs()
        internal_kv._internal_kv_put(_SERVER_STOPPING, b"1", overwrite=True)
    except Exception:   # a Ray already broken: there is nothing to ask it, nor anyone to warn through it
        return []
    asked = []
    for job in drivers:
        pid = int(job.get("DriverPid") or 0)
        if job.get("IsDead") or pid in (0, os.getpid()):
            continue
        try:
            proc = psutil.Process(pid)
            if proc.uids().real != os.getuid():
                continue
            proc.send_signal(signal.SIGINT)
            asked.append(proc)
        except psutil.Error:
            continue   # gone, or not this user's
    if asked:
        print(f"ray: stopping {len(asked)} command(s) that joined this server's Ray: "
              f"{', '.join(str(p.pid) for p in asked)}", file=sys.stderr, flush=True)
        psutil.wait_procs(asked, timeout=timeout)
    return [proc.pid for proc in asked]


def ray_answers(timeout: float = 1.0) -> bool:
    """Whether the GCS of the Ray this process is connected to answers within `timeout`: asked
    of a GCS that is gone, Ray's own calls retry for a minute."""
    import ray

    if _lost.is_set():   # seen gone by `watch_ray`: not asked again, at a second a time
        return False
    try:
        return ray.is_initialized() and gcs_answers(ray.get_runtime_context().gcs_address, timeout=timeout)
    except Exception:   # no runtime context left to ask
        return False


_lost = threading.Event()   # the Ray under this process broke (`watch_ray`)

# How often the Ray under a command is looked at, and how many looks in a row its GCS may miss
# (each waits up to 2 s) before the command stops: a GCS busy on a loaded machine still answers.
WATCH_EVERY_S = 2.0
GCS_MISSES = 4


def watch_ray(done: threading.Event, *, gcs: bool) -> threading.Thread:
    """A thread that stops this command (`shutdown.request`, exit 1, with what was lost) once the
    raylet it started ends or, with `gcs`, once the GCS of its Ray stops answering, until `done`
    is set. Without it a command whose Ray broke waits on it: a server would take requests and
    never answer them; an import's stages would wait on Ray for ever."""
    import ray

    raylet = own_raylet()
    if raylet is not None:
        _note_ray_processes(raylet)
    address = ray.get_runtime_context().gcs_address

    def watch() -> None:
        missed = 0
        while not done.wait(WATCH_EVERY_S):
            if raylet is not None:
                _note_ray_processes(raylet)
                if not shutdown.running(raylet):
                    _lost.set()
                    shutdown.request(f"Ray's raylet (pid {raylet.pid}) ended, and this command cannot go on "
                                     "without it", code=1)
                    return
            if gcs:
                missed = 0 if gcs_answers(address, timeout=2.0) else missed + 1
                if missed >= GCS_MISSES:
                    _lost.set()
                    shutdown.request(f"Ray's GCS at {address} does not answer, and this command cannot go on "
                                     "without it", code=1)
                    return

    thread = threading.Thread(target=watch, name="ray-watch", daemon=True)
    thread.start()
    return thread


# The raylet this command started, and the processes it ran at the watch's last look: a raylet that
# is killed leaves them to init, out of this process's tree (its runtime-env agent outlived an import
# whose raylet was killed), and the stop ends them by this list (`shutdown.finish`).
_raylet = None
_ray_processes: list = []


def _note_ray_processes(raylet) -> None:
    import psutil

    global _raylet, _ray_processes
    _raylet = raylet
    try:
        _ray_processes = raylet.children(recursive=True)
    except psutil.Error:
        pass   # the raylet ended between two looks: the list of the look before stands


def ray_processes_seen() -> list:
    """What the raylet this command started ran when its watch last looked (psutil.Process
    objects, which know a reused pid from the process they named) and, once that raylet has
    ended, the workers it started after that look."""
    seen = list(_ray_processes)
    if _raylet is not None and not shutdown.running(_raylet):
        seen += _workers_of(_raylet.pid)
    return seen


def _workers_of(raylet_pid: int) -> list:
    """This user's processes that name `raylet_pid` as their raylet: a raylet passes its pid to
    the workers it starts (RAY_RAYLET_PID), and a worker still connecting to a raylet that was
    killed outlived the import by seconds."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.uids().real == os.getuid() and proc.environ().get("RAY_RAYLET_PID") == str(raylet_pid):
                found.append(proc)
        except psutil.Error:
            continue   # gone, or not this user's to read
    return found


# Set in the Ray of a `corpusmem serve` that is stopping, before it interrupts the commands that joined it.
_SERVER_STOPPING = b"corpusmem:server-stopping"


def server_stopping() -> bool:
    """Whether the Ray this process joined belongs to a `corpusmem serve` that is stopping."""
    from ray.experimental import internal_kv

    try:
        return ray_answers() and internal_kv._internal_kv_get(_SERVER_STOPPING) == b"1"
    except Exception:   # that Ray is already gone
        return False


def started_ray() -> bool:
    """Whether this process started the Ray it is connected to, rather than joining a cluster
    (a `ray start` or `RAY_ADDRESS` one): then the raylet is a child of this process."""
    import ray

    return ray.is_initialized() and own_raylet() is not None


def own_raylet():
    """The raylet this process started (a psutil.Process), or None."""
    return next(_own_children(lambda child: child.name() == "raylet"), None)


def _own_children(matches):
    """This process's children (psutil.Process) for which `matches` holds, skipping one that exits
    while it is asked."""
    import psutil

    for child in psutil.Process().children():
        try:
            if matches(child):
                yield child
        except psutil.Error:
            continue  # a child that just exited


def end_own_monitor() -> None:
    """Kill the autoscaler monitor of the Ray this process started, before `ray.shutdown`.

    Ray's shutdown stops the GCS before the monitor, whose SIGTERM handler then waits on the
    gone GCS to publish its own end, until Ray kills it a second later: 1.0 s of every exit. The
    monitor of a Ray started here holds nothing a kill could lose (it has no nodes to launch)."""
    import psutil

    monitor = os.path.join("autoscaler", "_private", "monitor.py")
    for child in _own_children(lambda child: any(arg.endswith(monitor) for arg in child.cmdline())):
        try:
            child.kill()
        except psutil.Error:
            pass  # it exited meanwhile


def alive_nodes() -> int:
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))


def check_shared(settings: Settings) -> None:
    """On a cluster of several nodes, every node must reach the same authority and objects."""
    from actors.object_store import ObjectStore
    from sql.store.authority import StoreError

    nodes = alive_nodes()
    if nodes <= 1:
        return
    if not settings.dsn:
        raise StoreError(f"a Ray cluster of {nodes} nodes needs a shared PostgreSQL: set CORPUSMEM_DSN (the "
                         "embedded server listens on a local socket only; `corpusmem db serve` serves it on TCP)")
    if not ObjectStore(settings.object_store_uri).shared:
        raise StoreError(f"a Ray cluster of {nodes} nodes needs a shared object store: set CORPUSMEM_OBJECT_STORE "
                         f"to s3://bucket/prefix or gs://… (or file:///… for a folder every node mounts); "
                         f"{settings.object_store_uri} is on this machine only")
