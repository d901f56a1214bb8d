"""Process-wide setup for entry points: settings, Ray, the build revision.

Only `jobs/` touches the environment and global state (Ray's init, its DataContext, the signal
handlers of `jobs.shutdown`); everything below it gets explicit arguments.
"""

from __future__ import annotations

import logging
import os
import subprocess
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


def embedding_model(settings: Settings, dsn: str | None, *, gpu: bool = False):
    """The embedding model of the memory at `dsn` (None: a new memory), with the execution its
    vectors need (`CORPUSMEM_EMBEDDING_EXECUTION`); imports and reads take it from here alike."""
    from actors.embedder import choose_execution, resolve_model
    from sql.store import authority as store

    base = resolve_model(settings.embedding_model)
    execution = choose_execution(settings.embedding_execution, pinned=store.pinned_model(dsn) if dsn else None,
                                 gpu=gpu,
                                 model_path=base.path)
    return resolve_model(settings.embedding_model, execution, settings.model_cache)


def init_ray(*, num_cpus: int | None = None, quiet: bool = True) -> dict[str, float]:
    """Connect to `RAY_ADDRESS` (shipping this project as the job's working dir) or start Ray
    locally; return the cluster's resources."""
    import ray

    if quiet:
        # Ray Data reconfigures its loggers when a dataset first runs; this is the knob it reads.
        os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS") or None
        runtime_env = None
        if address and not os.environ.get("RAY_JOB_ID"):
            # A client outside the cluster: ship the packages so workers import the same code.
            runtime_env = {"working_dir": str(PROJECT_ROOT),
                           "excludes": [".venv", ".corpusmem", ".git", "examples", "bench-*"]}
        ray.init(address=address, num_cpus=None if address else num_cpus,
                 runtime_env=runtime_env, log_to_driver=not quiet, include_dashboard=None,
                 configure_logging=True, logging_level=logging.ERROR if quiet else logging.INFO)
        shutdown.keep_signals()
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = not quiet
    ctx.print_on_execution_start = not quiet
    return ray.cluster_resources()


def started_ray() -> bool:
    """Whether this process started the Ray it is connected to, rather than joining a cluster
    (a `ray start` or `RAY_ADDRESS` one): then the raylet is a child of this process."""
    import psutil
    import ray

    if not ray.is_initialized():
        return False
    for child in psutil.Process().children():
        try:
            if child.name() == "raylet":
                return True
        except psutil.Error:
            continue  # a child that just exited
    return False


def alive_nodes() -> int:
    import ray

    return sum(1 for node in ray.nodes() if node.get("Alive"))
