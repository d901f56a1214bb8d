"""`jobs/runtime.py`: the ports named for servers started beside a Ray, and the workers a Ray it
starts keeps."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from jobs import runtime
from tests.support.paths import ROOT


def test_a_named_port_is_free_outside_the_kernels_own_picks_and_never_named_twice():
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = [runtime.free_port() for _ in range(100)]
    assert len(set(ports)) == len(ports)
    assert not [p for p in ports if low <= p <= high], "a port the kernel may hand out for bind(0)"
    assert not [p for p in ports if 10002 <= p <= 19999], "a port Ray may give a worker"
    with socket.socket() as s:   # each one can be bound now
        s.bind(("127.0.0.1", ports[-1]))


def test_a_port_in_use_is_skipped_and_a_full_range_is_a_clear_error(monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))   # a port something listens on, made the range's first
        held.listen()
        busy = held.getsockname()[1]
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        spare = probe.getsockname()[1]
        probe.close()
        monkeypatch.setattr(runtime, "_SERVER_PORTS", [busy, spare])
        monkeypatch.setattr(runtime, "_ports_named", set())
        assert runtime.free_port() == spare
        with pytest.raises(RuntimeError, match="no free TCP port"):
            runtime.free_port()   # the busy one is in use, the spare one named already


def test_a_started_ray_keeps_the_workers_of_the_last_run_after_they_fall_idle(ray_local, tmp_path):
    """Six stage tasks at once run in six worker processes; a second after they fall idle Ray would
    end all but one per CPU (two here), and the next run would start them again."""
    @ray_local.remote(num_cpus=0.25)
    def stage_task(meeting: str) -> int:
        # Each waits until all six run at once, so that six workers serve them.
        Path(meeting, str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(os.listdir(meeting)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        return os.getpid()

    def run(name: str) -> set[int]:
        (tmp_path / name).mkdir()
        return set(ray_local.get([stage_task.remote(str(tmp_path / name)) for _ in range(6)]))

    first = run("first")
    assert len(first) == 6
    time.sleep(3)   # idle for longer than Ray's one second
    again = run("again")
    assert again == first, f"{len(first - again)} of the run's 6 workers were ended while idle"


def test_a_gcs_answers_when_it_speaks_grpc_and_not_when_it_is_gone_or_hung():
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    server = grpc.server(ThreadPoolExecutor(1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        assert runtime.gcs_answers(f"127.0.0.1:{port}", timeout=5)
    finally:
        server.stop(None)
    # gone: the port refuses; hung: it accepts and never answers the handshake
    hung = socket.create_server(("127.0.0.1", 0))
    try:
        for address in (f"127.0.0.1:{port}", f"127.0.0.1:{hung.getsockname()[1]}"):
            started = time.monotonic()
            assert not runtime.gcs_answers(address, timeout=1.0)
            assert time.monotonic() - started < 3
    finally:
        hung.close()


def _import_named(address: str, tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("Ada works on the ledger team.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CORPUSMEM_"))}
    return subprocess.Popen([sys.executable, "-m", "jobs.cli", "import", "--no-progress", str(tmp_path / "corpus")],
                            cwd=ROOT, env=env | {"RAY_ADDRESS": address, "CORPUSMEM_HOME": str(tmp_path / "home")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.integration
def test_a_command_given_the_address_of_a_ray_that_does_not_answer_stops_with_a_clear_error(tmp_path):
    hung = socket.create_server(("127.0.0.1", 0))   # accepts, and never answers gRPC's handshake
    try:
        address = f"127.0.0.1:{hung.getsockname()[1]}"
        started = time.monotonic()
        out, err = _import_named(address, tmp_path).communicate(timeout=120)
        took = time.monotonic() - started
    finally:
        hung.close()
    assert f"the Ray at RAY_ADDRESS={address} does not answer" in err, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert took < runtime.NAMED_GCS_ANSWER_S + 60, took


@pytest.mark.integration
def test_a_signal_while_a_command_waits_on_a_named_ray_stops_it_at_once(tmp_path):
    hung = socket.create_server(("127.0.0.1", 0))
    try:
        command = _import_named(f"127.0.0.1:{hung.getsockname()[1]}", tmp_path)
        deadline = time.monotonic() + 60
        # the command is at the handshake once it holds a connection to the port
        while not any(c.raddr and c.raddr[1] == hung.getsockname()[1] for c in psutil.Process(command.pid).net_connections()):
            assert command.poll() is None and time.monotonic() < deadline, command.communicate()[1][-2000:]
            time.sleep(0.05)
        started = time.monotonic()
        command.send_signal(signal.SIGTERM)
        code = command.wait(timeout=10)
        took = time.monotonic() - started
    finally:
        hung.close()
    assert code == 128 + signal.SIGTERM, command.communicate()[1][-2000:]
    assert took < 5, took


_MONITOR_AND_ANOTHER = """
import subprocess, sys
from jobs import runtime
wait = [sys.executable, "-c", "import time; time.sleep(60)"]
monitor = subprocess.Popen([*wait, sys.argv[1] + "/ray/autoscaler/_private/monitor.py"])
other = subprocess.Popen([*wait, sys.argv[1] + "/monitor.py"])
runtime.end_own_monitor()
print(monitor.wait(timeout=5), other.poll())
other.kill()
"""


def test_the_stop_kills_the_autoscaler_monitor_of_its_own_ray_and_nothing_else(tmp_path):
    # In a process of its own, so that the test session's own Ray keeps its monitor: a child whose
    # command line names Ray's monitor module, as the one `ray.init` starts does, and one that does not.
    done = subprocess.run([sys.executable, "-c", _MONITOR_AND_ANOTHER, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(-signal.SIGKILL), "None"]


# A stand-in raylet that starts a worker the way Ray's does (RAY_RAYLET_PID names it) after the
# watch's look, and a process that names another raylet; the stand-in is then killed.
_WORKER_AFTER_THE_LOOK = """
import os, subprocess, sys, psutil
from jobs import runtime
wait = [sys.executable, "-c", "import time; time.sleep(60)"]
raylet = subprocess.Popen([sys.executable, "-c", f'''
import os, subprocess, sys
sys.stdin.readline()
subprocess.Popen({wait!r}, env={{**os.environ, "RAY_RAYLET_PID": str(os.getpid())}})
print(flush=True)
sys.stdin.read()
'''], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
runtime._note_ray_processes(psutil.Process(raylet.pid))
raylet.stdin.write("\\n")
raylet.stdin.flush()
raylet.stdout.readline()   # the worker now runs, started after the look
other = subprocess.Popen(wait, env={**os.environ, "RAY_RAYLET_PID": "1"})
worker, = psutil.Process(raylet.pid).children()
raylet.kill()
raylet.wait()
seen = runtime.ray_processes_seen()
print(worker.pid in [p.pid for p in seen], other.pid in [p.pid for p in seen])
worker.kill()
other.kill()
"""


def test_the_stop_finds_the_workers_a_killed_raylet_started_after_the_watch_looked():
    # Ray's workers still connecting to a raylet that is killed live on for seconds after it,
    # out of this process's tree, and the watch's last list predates them.
    done = subprocess.run([sys.executable, "-c", _WORKER_AFTER_THE_LOOK], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


_WITHOUT_DASHBOARD = """
import psutil
from jobs import runtime
runtime.init_ray(num_cpus=1, join=False, dashboard=runtime.settings().ray_dashboard)
heads = [p.cmdline() for p in psutil.Process().children(recursive=True) if "dashboard/dashboard.py" in " ".join(p.cmdline())]
print(runtime.job_info()["dashboard"], len(heads), sum("--disable-frontend" in head for head in heads))
"""


@pytest.mark.integration
def test_a_ray_a_command_starts_runs_no_dashboard_when_the_setting_turns_it_off():
    """Ray then keeps a head of its usage statistics alone, which serves no page. (With the
    dashboard, as by default, the served Ray of tests/serve/test_dashboard.py lists its jobs.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CORPUSMEM_"))}
    done = subprocess.run([sys.executable, "-c", _WITHOUT_DASHBOARD], cwd=ROOT, capture_output=True, text=True,
                          env=env | {"RAY_ADDRESS": "local", "CORPUSMEM_RAY_DASHBOARD": "false"}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["None", "1", "1"], done.stdout


def test_a_ray_kept_for_the_next_command_is_started_without_the_dashboard_when_the_setting_says_so(monkeypatch):
    started = []
    monkeypatch.setattr(runtime.subprocess, "run", lambda command, **_: started.append(command) or
                        subprocess.CompletedProcess(command, 0, "", ""))
    runtime._start_kept(2, dashboard=True)
    runtime._start_kept(2, dashboard=False)
    assert [c[2:] for c in started] == [["--head", "--disable-usage-stats", "--num-cpus=2"],
                                        ["--head", "--disable-usage-stats", "--num-cpus=2", "--include-dashboard=false"]]
