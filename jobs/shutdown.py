"""How a `corpusmem` command stops: the first SIGINT or SIGTERM stops what the process started
within `GRACE_S`; a second one, or a stop that overruns, ends it at once.

What a stop undoes, in order: this process's hold on the embedded PostgreSQL (the server stops
if no other process holds it), then Ray (`ray.shutdown()` stops a local Ray this process started
and only disconnects from a cluster it joined), then whatever is left of this process's tree
(Ray's workers, its dashboard). The database goes first because Ray may end the process on the
spot while it shuts down (when another thread still calls into it), and what has to reach the
database (an import's run record) is written before the stop begins. A forced stop kills the
tree instead of asking it to exit.

Only the entry points in `jobs/` call `install`; code below them learns of a stop through the
`threading.Event` it is handed, or through `Interrupted` unwinding the main thread.
"""

from __future__ import annotations

import _thread
import atexit
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import psutil

# The commands promise to be gone 10 s after the first signal; this leaves the rest for a forced end,
# which waits up to `_FORCE_WAIT_S` for what it killed to be gone.
GRACE_S = 7.0
_FORCE_WAIT_S = 2.5
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(SystemExit):
    """The first signal, raised in the main thread of a command at work.

    A `SystemExit` with the shell's code for death by signal (128 + its number), so the
    `except Exception` handlers on the way up let it through while `finally` blocks still run."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


@dataclass
class _State:
    installed: bool = False
    interrupt: bool = True
    signum: int | None = None
    exit_code: int | None = None
    since: float | None = None
    reason: tuple[str, int] | None = None   # why a `request` of another thread stops a command at work
    requested: threading.Event = field(default_factory=threading.Event)


_state = _State()


def install(*, interrupt: bool = True) -> threading.Event:
    """Take SIGINT and SIGTERM for this process and return the event the first of them sets.

    With `interrupt`, the first signal also raises `Interrupted` in the main thread (a command at
    work stops where it is); without, it only sets the event (a command waiting on it). Call
    again to change `interrupt`. Main thread only, as Python's signal handlers are."""
    _state.interrupt = interrupt
    _take_signals()
    if not _state.installed:
        atexit.register(finish)
    _state.installed = True
    return _state.requested


def keep_signals() -> None:
    """Take the signals back after `ray.init`, which replaces the SIGTERM handler: its core worker
    answers SIGTERM by aborting the process, which leaves Ray's dashboard and PostgreSQL behind."""
    if _state.installed and threading.current_thread() is threading.main_thread():
        _take_signals()


def wait() -> int:
    """Block until the first signal, or a `request`; return the signal's number (0 for a request)."""
    # A poll rather than `Event.wait`: the handler sets that event, and it would deadlock on the
    # event's lock if the signal arrived while this same thread held it.
    while not _state.requested.is_set():
        time.sleep(0.2)
    return _state.signum or 0


def request(why: str, code: int) -> None:
    """Stop as a signal would, for a reason of this process's own (what it serves with has
    failed), and end with `code`: a thread's way to end a command waiting in `wait`."""
    if not _state.installed:   # a library call (a notebook's import): no process of ours to stop
        print(f"corpusmem: {why}", file=sys.stderr, flush=True)
        return
    if _state.requested.is_set():
        return
    if _state.interrupt and threading.current_thread() is not threading.main_thread():
        # a command at work unwinds as after a signal (`Interrupted`), its run recorded as such
        _state.reason = (why, code)
        _thread.interrupt_main(signal.SIGTERM)
        return
    _begin(code, f"{why}: stopping", forced=code)


def run_command(args: list[str], **popen: object) -> None:
    """Run a child command to its end, as `subprocess.run(check=True)` would. A stop of this
    process is passed on at once: the child is sent SIGTERM and stops its own way (its Ray, its
    hold on the database) while this process waits out what is left of its grace; what the child
    left then goes with this process's tree. Without this, a signal to this process alone (`kill`,
    a supervisor) left the child running, with its Ray, after this process had ended."""
    child = subprocess.Popen(args, **popen)  # type: ignore[call-overload]
    try:
        code = child.wait()
    except BaseException:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=max(0.5, remaining() - 1.0))
            except subprocess.TimeoutExpired:
                pass   # ended with this process's tree
        raise
    if code:
        raise subprocess.CalledProcessError(code, args)


def remaining() -> float:
    """Seconds left of the graceful stop (all of `GRACE_S` before any signal)."""
    if _state.since is None:
        return GRACE_S
    return max(0.0, GRACE_S - (time.monotonic() - _state.since))


def finish() -> None:
    """Everything a stop undoes (see the module's docstring); safe to call more than once.

    After a signal the process then ends here, with 128 + the signal's number if it was at work
    (`interrupt`), 0 if it was waiting to be stopped: what is left (other exit hooks, the
    interpreter's teardown of Ray's, torch's and the pools' objects) took seconds more, and can
    wait on a lock other processes hold, with nothing of this process's left to clean up."""
    from sql.store import embedded

    embedded.release_all()
    # Taken first: once the raylet is gone its workers are no longer in this process's tree.
    started = _tree()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        from jobs.runtime import end_own_monitor, ray_answers, ray_processes_seen

        started += ray_processes_seen()   # a raylet killed before now left its own to init
        if ray_answers():
            end_own_monitor()
            _shutdown_ray(ray.shutdown)
        else:   # `ray.shutdown` would wait on it past the grace: what this process started is ended below
            print("corpusmem: Ray's GCS does not answer: ending its processes", file=sys.stderr, flush=True)
    _reap(list({proc.pid: proc for proc in started + _tree()}.values()))
    if _state.exit_code is not None:
        _exit(_state.exit_code)


def end_now(why: str) -> NoReturn:
    """A forced stop, for when a graceful one cannot be had in time (Ray's shutdown would end
    the process under a thread still calling into Ray): exits as `finish` would."""
    _force(_state.exit_code if _state.exit_code is not None else 1, why)


def _shutdown_ray(shutdown: Callable[[], None]) -> None:
    if not (_state.installed and threading.current_thread() is threading.main_thread()):
        shutdown()
        return
    # Ray's core worker, as it shuts down, sets SIGTERM back to the default action (death, without
    # any of this cleanup), and Ray then spends seconds stopping its processes. Run off the main
    # thread, so that the main thread takes the signal back at once, not after those seconds.
    stopper = threading.Thread(target=shutdown, name="ray-shutdown", daemon=True)
    stopper.start()
    while stopper.is_alive():
        # Between Ray's reset and the next take, a SIGTERM kills the process uncleaned: keep the
        # gap to a few milliseconds (at 50 ms, a second signal 0.5 s after the first hit it).
        stopper.join(0.005)
        _take_signals()


def _take_signals() -> None:
    for signum in _SIGNALS:
        signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: object) -> None:
    if _state.reason is not None and not _state.requested.is_set():   # `request`, from another thread
        why, code = _state.reason
        _begin(code, f"{why}: stopping", forced=code)
        raise Interrupted(signum)
    if _state.requested.is_set():   # after a first signal, or a stop this process asked for
        _force(128 + signum, "a second signal")
    _state.signum = signum
    _begin(128 + signum if _state.interrupt else 0,
           f"{signal.Signals(signum).name}: stopping (a second signal stops at once)", forced=128 + signum)
    if _state.interrupt:
        raise Interrupted(signum)


def _begin(code: int, message: str, *, forced: int) -> None:
    """What the first signal or `request` starts: the grace's clock, and at its end a stop forced
    with exit code `forced`."""
    _state.exit_code = code
    _state.since = time.monotonic()
    _state.requested.set()
    print(f"corpusmem: {message}", file=sys.stderr, flush=True)
    watchdog = threading.Timer(GRACE_S, _force, args=(forced, f"still stopping after {GRACE_S:.0f} s"))
    watchdog.daemon = True
    watchdog.start()
    # Exit hooks run last registered first; Ray's and the embedded server's came after `install`,
    # and this process's own stop must run before them, while the database is still up.
    atexit.unregister(finish)
    atexit.register(finish)


def _force(code: int, why: str) -> NoReturn:
    print(f"corpusmem: {why}: stopping now", file=sys.stderr, flush=True)
    try:
        from sql.store import embedded

        embedded.release_all()
    finally:
        procs = _tree()
        for proc in procs:
            try:
                # A `pg_ctl stop` under way is the stop this one cut short letting go of the
                # server: killed, it would leave the server half-stopped.
                if proc.name() != "pg_ctl":
                    proc.kill()
            except psutil.Error:
                pass  # already gone
        _wait_gone(procs, _FORCE_WAIT_S)
        _exit(code)


def _exit(code: int) -> NoReturn:
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: nothing more can be written to it
    os._exit(code)


def _tree() -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _reap(procs: list[psutil.Process]) -> None:
    """Give `procs` a moment to exit on their own, then ask them to, then kill them."""
    alive = _wait_gone(procs, 1.0)
    for ask in (psutil.Process.terminate, psutil.Process.kill):
        for proc in alive:
            try:
                ask(proc)
            except psutil.Error:
                pass  # exited meanwhile
        alive = _wait_gone(alive, 1.0)


def _wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still running after up to `timeout` seconds. A zombie counts as gone: it
    has exited, and its parent, if not this process, is the one to collect it."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [proc for proc in procs if running(proc)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def running(proc: psutil.Process) -> bool:
    try:
        if not proc.is_running():  # also false for a pid since taken by another process
            return False
        if proc.status() != psutil.STATUS_ZOMBIE:
            return True
        if proc.ppid() == os.getpid():
            os.waitpid(proc.pid, os.WNOHANG)
        return False
    except (psutil.Error, ChildProcessError):
        return False
