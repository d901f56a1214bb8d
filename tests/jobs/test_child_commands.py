"""A command that runs another (`corpusmem bench` runs `python -m jobs.import_corpus`) passes its
stop on: SIGTERM to the parent alone reaches the child, which stops its own way, and nothing of
either is left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from jobs import shutdown
from tests.support.paths import ROOT

# A child that stops its own way on SIGTERM (as an import lets go of its Ray and its database),
# and says so.
_CHILD = """
import pathlib, signal, sys, time
said = pathlib.Path(sys.argv[1])
def stop(signum, frame):
    said.write_text("stopped on SIGTERM")
    sys.exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
said.write_text("running")
time.sleep(120)
"""
_PARENT = """
import sys
from jobs import shutdown
shutdown.install(interrupt=True)
shutdown.run_command([sys.executable, "-c", sys.argv[1], sys.argv[2]])
"""


def test_a_signal_to_a_command_alone_stops_the_command_it_runs(tmp_path: Path):
    said = tmp_path / "child"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(said)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    deadline = time.monotonic() + 60
    while not said.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert said.read_text() == "running"

    os.kill(parent.pid, signal.SIGTERM)   # the parent alone, as `kill` or a supervisor would
    stopped = time.monotonic()
    assert parent.wait(timeout=10) == 128 + signal.SIGTERM
    assert time.monotonic() - stopped < 10
    assert said.read_text() == "stopped on SIGTERM"
    left = [p for p in psutil.process_iter() if _in_session(p, parent.pid)]
    assert left == []


def test_a_child_command_that_fails_fails_its_parent():
    with pytest.raises(subprocess.CalledProcessError) as failed:
        shutdown.run_command([sys.executable, "-c", "raise SystemExit(3)"])
    assert failed.value.returncode == 3


def _in_session(proc: psutil.Process, session: int) -> bool:
    try:
        return os.getsid(proc.pid) == session and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ProcessLookupError):
        return False
