"""The engine watch (`actors/engine_watch.py`) on real processes: a worker whose engine ended and
that waits on is ended after the grace; one that stops by itself, or starts another engine, is
left alone."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from actors.engine_watch import ENGINE_TITLE, Reaper

# A stand-in for a Ray worker holding a vLLM engine: it starts a child whose command line names
# vLLM's engine process (spelt in pieces, so that its own command line does not), then waits;
# given "exit", it stops when the engine ends; given "again", it starts another.
_WORKER = """
import subprocess, sys, time
engine = [sys.executable, "-c", "import time; time.sleep(600)", "VLLM::" + "Engine" + "Core"]
child = subprocess.Popen(engine)
print(child.pid, flush=True)
if sys.argv[1] == "exit":
    child.wait(); time.sleep(0.5); sys.exit(0)
if sys.argv[1] == "again":
    child.wait(); print(subprocess.Popen(engine).pid, flush=True)
time.sleep(600)
"""


def _worker(mode: str) -> tuple[subprocess.Popen, psutil.Process]:
    """The worker and its engine, once the engine's command line is its own: between the fork and
    the exec a child still shows its parent's, and a look then would not see an engine."""
    worker = subprocess.Popen([sys.executable, "-c", _WORKER, mode], stdout=subprocess.PIPE, text=True)
    engine = psutil.Process(int(worker.stdout.readline()))
    deadline = time.monotonic() + 10
    while ENGINE_TITLE not in " ".join(engine.cmdline()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return worker, engine


def _looks_until(reaper: Reaper, done, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        reaper.look(psutil.process_iter(), time.monotonic())
        time.sleep(0.1)


@pytest.fixture
def workers():
    started: list[subprocess.Popen] = []

    def start(mode: str) -> tuple[subprocess.Popen, psutil.Process]:
        worker, engine = _worker(mode)
        started.append(worker)
        return worker, engine
    yield start
    for worker in started:
        for proc in psutil.Process(worker.pid).children(recursive=True) if worker.poll() is None else ():
            proc.kill()
        worker.kill()
        worker.wait()


def test_a_worker_that_waits_on_after_its_engine_ended_is_ended_after_the_grace(workers):
    reaper = Reaper(grace_s=1.0)
    worker, engine = workers("wait")
    reaper.look(psutil.process_iter(), time.monotonic())
    assert reaper.engines == {engine.pid: psutil.Process(worker.pid)}

    engine.kill()   # left a zombie: the worker does not wait on it, as vLLM's client does not
    started = time.monotonic()
    _looks_until(reaper, lambda: worker.poll() is not None)
    assert worker.poll() == -9, "the worker was not ended"
    assert 1.0 <= time.monotonic() - started < 5.0
    assert [e["worker"] for e in reaper.ended] == [worker.pid] and reaper.ended[0]["waited_s"] >= 1.0


def test_a_worker_that_stops_with_its_engine_or_starts_another_is_left_alone(workers):
    reaper = Reaper(grace_s=2.0)
    stopping, first = workers("exit")
    restarting, second = workers("again")
    reaper.look(psutil.process_iter(), time.monotonic())
    assert set(reaper.engines) == {first.pid, second.pid}

    first.kill()
    second.kill()
    _looks_until(reaper, lambda: False, seconds=3.5)
    assert stopping.wait(5) == 0                  # it stopped by itself
    assert restarting.poll() is None              # its new engine is watched instead
    assert reaper.ended == [] and not reaper.orphaned
    assert len(reaper.engines) == 1 and next(iter(reaper.engines.values())).pid == restarting.pid
