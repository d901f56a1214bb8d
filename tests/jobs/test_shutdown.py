"""SIGTERM or SIGINT to `corpusmem serve` or `corpusmem import`: gone within 10 s, with nothing
left running of what it started (Ray's processes, its dashboard, the embedded PostgreSQL), except
a PostgreSQL that another process still holds, and a Ray cluster it only joined (which loses the
Serve application, and keeps running).

Each command runs as a child in its own session and its own CORPUSMEM_HOME, so its processes are
told apart from the test session's own Ray and PostgreSQL by session id and by data folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from jobs import runtime
from tests.support.memory import SUITE_EXECUTION
from tests.support.paths import ROOT
from tests.support.ports import free_port

pytestmark = pytest.mark.integration
STOP_S = 10.0
START_S = 240.0

# Holds the embedded server of a home until its stdin closes, then exits the ordinary way (its
# exit hooks let go of the server).
_HOLDER = """
import sys
from sql.store import embedded
print(embedded.start(sys.argv[1]), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def home() -> Iterator[Path]:
    # Not under pytest's temp folder: a root-run server drops to its own user, which must be able
    # to reach the data folder.
    root = Path(tempfile.mkdtemp(prefix="corpusmem-test-stop-"))
    os.chmod(root, 0o755)
    yield root / "home"
    left = _processes(home=root / "home")  # what a failed test left behind
    for proc in left:
        try:
            proc.send_signal(signal.SIGINT if _is_postmaster(proc) else signal.SIGKILL)
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=10)
    shutil.rmtree(root, ignore_errors=True)


def _env(home: Path | None) -> dict[str, str]:
    # A Ray of its own (`RAY_ADDRESS=local`), never the one the session's `corpusmem serve` holds.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CORPUSMEM_"))} | {"RAY_ADDRESS": "local"}
    if home is not None:
        env["CORPUSMEM_HOME"] = str(home)
    return env


def _processes(*, session: int | None = None, home: Path, servers: bool = True) -> list[psutil.Process]:
    """Running processes of a command: those of its `session` (it and everything it started, Ray's
    included) or with its CORPUSMEM_HOME, and (with `servers`) the PostgreSQL of that home with its
    children; without `servers`, no PostgreSQL process at all."""
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        try:
            if proc.pid in (session, os.getpid()):
                continue
            if _is_postmaster(proc):
                if servers and str(home) in " ".join(proc.cmdline()):
                    found[proc.pid] = proc
                    found.update((child.pid, child) for child in proc.children(recursive=True))
            elif proc.name() == "postgres":
                continue
            elif (session is not None and os.getsid(proc.pid) == session) \
                    or proc.environ().get("CORPUSMEM_HOME") == str(home):
                found[proc.pid] = proc
        except (psutil.Error, ProcessLookupError):
            pass
    return [proc for proc in found.values() if _running(proc)]


def _names(procs: list[psutil.Process]) -> set[str]:
    """The names of those of `procs` still running: a short-lived child (the embedding
    calibration's, a Ray worker) may end between being listed and being asked its name."""
    names = set()
    for proc in procs:
        try:
            names.add(proc.name())
        except psutil.Error:
            pass
    return names


def _is_postmaster(proc: psutil.Process) -> bool:
    return proc.name() == "postgres" and "-D" in proc.cmdline()


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# Ray's workers exit on their own once their raylet is gone; they notice it within a second or two.
WORKER_EXIT_S = 5.0
# A PostgreSQL told to stop writes its checkpoint first. Once, in a full run of the suite on a
# loaded machine, an import's server still had its background writer 5 s after a forced exit.
POSTGRES_STOP_S = 30.0


def _left(before: list[psutil.Process], *, session: int, home: Path,
          postgres_stops: bool = True) -> list[psutil.Process]:
    """What is still running of `before` and of the session, once the workers had their moment to
    notice that the raylet is gone and, where `postgres_stops`, a PostgreSQL told to stop had."""
    started = time.monotonic()
    while True:
        left = [proc for proc in before if _running(proc)] + _processes(session=session, home=home)
        waited = time.monotonic() - started
        stopping = postgres_stops and not _names(left) - {"postgres", "pg_ctl"}
        if not left or waited > (POSTGRES_STOP_S if stopping else WORKER_EXIT_S):
            return left
        time.sleep(0.2)


def _describe(procs: list[psutil.Process]) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:120] or proc.name()}")
        except psutil.Error:
            out.append(f"{proc.pid} (gone)")
    return out


def _stop(command: subprocess.Popen, signum: int, *, group: bool = False,
          second: int | None = None) -> tuple[int | None, float]:
    """Send `signum` (to the process group, as a terminal's Ctrl-C does, with `group`) and, with
    `second`, that signal half a second later; return the exit code and how long it took."""
    started = time.monotonic()
    (os.killpg if group else os.kill)(command.pid, signum)
    if second is not None:
        time.sleep(0.5)
        command.send_signal(second)
    try:
        code = command.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        code = None
    return code, time.monotonic() - started


def _log_tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:]


def _wait_until_serving(server: subprocess.Popen, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + START_S
    while "corpusmem read API at" not in log_path.read_text(errors="replace"):
        assert server.poll() is None and time.monotonic() < deadline, \
            f"corpusmem serve did not come up:\n{_log_tail(log_path)}"
        time.sleep(0.5)
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200


def _serve(home: Path) -> tuple[subprocess.Popen, int, Path]:
    port = free_port()
    home.parent.mkdir(parents=True, exist_ok=True)
    log_path = home.parent / "serve.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)], cwd=ROOT,
                                  env=_env(home), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_until_serving(server, port, log_path)
    return server, port, log_path


def test_serve_refuses_a_port_in_use_before_it_starts_anything(home: Path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)], cwd=ROOT,
                             env=_env(home), capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr[-3000:]
    assert f"corpusmem: cannot serve on 127.0.0.1:{port}: Address already in use" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert not _processes(home=home)   # neither Ray nor PostgreSQL was started


@dataclass(frozen=True)
class Cluster:
    address: str
    env: dict[str, str]   # what reaches it
    temp: Path            # its temp folder, named in the command line of each of its processes


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A Ray cluster started with `ray start`, in its own temp folder so that no other
    `ray.init()` on this machine finds it."""
    temp = Path(tempfile.mkdtemp(prefix="cm-ray-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CORPUSMEM_"))}
    # Token authentication, where a token file exists, would otherwise refuse the second client.
    env["RAY_AUTH_MODE"] = "disabled"
    port = free_port()
    subprocess.run([str(Path(sys.executable).parent / "ray"), "start", "--head", f"--port={port}", "--num-cpus=2",
                    f"--temp-dir={temp}", "--include-dashboard=false", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True, timeout=120, start_new_session=True)
    try:
        yield Cluster(f"127.0.0.1:{port}", env, temp)
    finally:
        _end_ray_in(temp)


def _end_ray_in(temp: Path) -> None:
    """Kill the Ray whose temp folder is `temp`, and remove the folder. Not `ray stop`: it stops
    every Ray on the machine, the test session's included."""
    procs = _cluster_processes(temp)
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)
    shutil.rmtree(temp, ignore_errors=True)


def _cluster_processes(temp: Path) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        try:
            if str(temp) in " ".join(proc.cmdline()):
                found[proc.pid] = proc
                found.update((child.pid, child) for child in proc.children(recursive=True))
        except psutil.Error:
            pass
    return [proc for proc in found.values() if _running(proc)]


def test_serve_on_a_cluster_it_joined_takes_its_application_off_and_leaves_the_cluster_running(
        home: Path, cluster: Cluster):
    port = free_port()
    log_path = home.parent / "serve.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)], cwd=ROOT,
                                  env={**cluster.env, "RAY_ADDRESS": cluster.address, "CORPUSMEM_HOME": str(home)},
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_until_serving(server, port, log_path)
    names = {proc.name() for proc in _cluster_processes(cluster.temp)}
    assert {"raylet", "gcs_server", "ray::ServeController"} <= names, names

    code, took = _stop(server, signal.SIGTERM)
    print(f"serve on a joined cluster: SIGTERM to exit {took:.1f} s")

    assert code == 0, f"exit {code} after {took:.1f} s:\n{_log_tail(log_path)}"
    assert took < STOP_S
    names = {proc.name() for proc in _cluster_processes(cluster.temp)}
    assert {"raylet", "gcs_server"} <= names, "the cluster it only joined must keep running"
    assert not {name for name in names if name.startswith(("ray::Serve", "ray::ProxyActor"))}, names
    assert not _processes(session=server.pid, home=home), _describe(_processes(session=server.pid, home=home))


def _corpus(root: Path, count: int) -> Path:
    from jobs.bench import synthetic

    corpus = root / "corpus"
    for doc in synthetic.generate(count):
        path = corpus / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc.text, encoding="utf-8")
    return corpus


def _start_import(home: Path, corpus: Path, log_path: Path) -> subprocess.Popen:
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "jobs.cli", "import", "--no-progress", str(corpus)],
                                cwd=ROOT, env=_env(home), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _embedded_dsn(pg_dir: Path) -> Callable[[], str | None]:
    """The DSN of the embedded server in `pg_dir` once it has written where it listens."""
    def dsn() -> str | None:
        try:
            lines = (pg_dir / "postmaster.pid").read_text().splitlines()
        except FileNotFoundError:
            return None
        return f"postgresql://postgres@/corpusmem?host={lines[4]}" if len(lines) > 4 else None
    return dsn


def _wait_for_versions(dsn: str | Callable[[], str | None], command: subprocess.Popen, log_path: Path) -> int:
    """Wait until the import has written its first versions (its pipeline is running)."""
    deadline = time.monotonic() + START_S
    while True:
        assert command.poll() is None and time.monotonic() < deadline, \
            f"the import ended or never got going:\n{_log_tail(log_path)}"
        where = dsn() if callable(dsn) else dsn
        versions = 0
        try:
            if where is not None:
                with psycopg.connect(where, connect_timeout=5) as conn:
                    versions = conn.execute("SELECT count(*) FROM versions").fetchone()[0]
        except (psycopg.OperationalError, psycopg.errors.UndefinedTable):
            pass  # database or tables not made yet
        if versions:
            return versions
        time.sleep(0.3)


def test_import_stops_on_ctrl_c_and_a_second_holder_keeps_the_database(home: Path):
    corpus = _corpus(home.parent, 300)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(home / "pg")], cwd=ROOT, env=_env(None),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        dsn = holder.stdout.readline().strip()
        assert dsn.startswith("postgresql://"), "the holder did not start the embedded server"
        log_path = home.parent / "import.log"
        importer = _start_import(home, corpus, log_path)
        _wait_for_versions(dsn, importer, log_path)

        before = _processes(session=importer.pid, home=home, servers=False) + [psutil.Process(importer.pid)]
        assert {"raylet", "gcs_server"} <= _names(before)
        code, took = _stop(importer, signal.SIGINT, group=True)
        print(f"import: Ctrl-C to exit {took:.1f} s")

        assert code == 130, f"exit {code} after {took:.1f} s:\n{_log_tail(log_path)}"
        assert took < STOP_S
        left = [proc for proc in before if _running(proc)] \
            + _processes(session=importer.pid, home=home, servers=False)
        assert not left, _describe(left)
        # The holder still has its server, and the stopped run is on record as interrupted, not
        # left running and not failed.
        with psycopg.connect(dsn) as conn:
            runs = conn.execute("SELECT status, counts IS NOT NULL FROM import_runs").fetchall()
        assert runs == [("interrupted", True)]
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    # The import let go of the server too: the holder, last out, stopped it.
    assert not _processes(home=home), _describe(_processes(home=home))


def test_a_second_signal_ends_an_import_at_once_and_leaves_nothing_running(home: Path):
    corpus = _corpus(home.parent, 300)
    log_path = home.parent / "import.log"
    importer = _start_import(home, corpus, log_path)
    _wait_for_versions(_embedded_dsn(home / "pg"), importer, log_path)

    before = _processes(session=importer.pid, home=home) + [psutil.Process(importer.pid)]
    assert {"raylet", "gcs_server", "postgres"} <= _names(before)
    code, took = _stop(importer, signal.SIGINT, second=signal.SIGTERM)
    print(f"import: SIGINT then SIGTERM to exit {took:.1f} s")

    assert code == 143, f"exit {code} after {took:.1f} s:\n{_log_tail(log_path)}"
    assert "stopping now" in log_path.read_text()
    left = _left(before, session=importer.pid, home=home)
    assert not left, _describe(left)


def _last_holder_out_stops_it(home: Path) -> None:
    """A holder that starts the embedded server of `home` (dropping the holders no longer running)
    and exits the ordinary way: the last live holder out, it stops the server."""
    passing = subprocess.run([sys.executable, "-c", _HOLDER, str(home / "pg")], cwd=ROOT, env=_env(None),
                             input="", capture_output=True, text=True, timeout=120)
    assert passing.returncode == 0, passing.stderr
    deadline = time.monotonic() + 20
    while _processes(home=home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes(home=home), _describe(_processes(home=home))


def test_a_holder_killed_without_letting_go_does_not_keep_the_database_running(home: Path):
    pg_dir = home / "pg"
    killed = subprocess.Popen([sys.executable, "-c", _HOLDER, str(pg_dir)], cwd=ROOT, env=_env(None),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().startswith("postgresql://")
    killed.kill()  # no exit hooks: it stays on the server's list of holders
    killed.wait()

    _last_holder_out_stops_it(home)


def test_an_import_with_keep_ray_leaves_its_ray_to_the_next_command_which_joins_it(home: Path):
    """`--keep-ray`: the Ray an import starts outlives it (started by `ray start`), and the next
    command, with no RAY_ADDRESS, joins that Ray instead of starting and stopping one of its own."""
    temp = Path(tempfile.mkdtemp(prefix="cm-ray-kept-"))
    # Ray's temp folder of its own: `ray start` records its address there, and only the commands
    # of this test look there (not the test session's, nor another `ray.init` on this machine).
    env = {k: v for k, v in _env(home).items() if k != "RAY_ADDRESS"} | {
        "RAY_TMPDIR": str(temp), "CORPUSMEM_EMBEDDING_EXECUTION": SUITE_EXECUTION}
    first, second = _corpus(home.parent / "first", 3), _corpus(home.parent / "second", 4)

    def run_import(corpus: Path, *flags: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "jobs.cli", "import", "--no-progress", *flags, str(corpus)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_S)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done

    def raylets() -> set[int]:
        return {proc.pid for proc in _cluster_processes(temp) if _names([proc]) == {"raylet"}}

    try:
        kept = run_import(first, "--keep-ray")
        assert "kept running after this command" in kept.stderr, kept.stderr
        left = raylets()
        assert len(left) == 1, _describe(_cluster_processes(temp))   # running after the import exited

        joined = run_import(second)
        assert "kept running" not in joined.stderr and "new versions     4" in joined.stdout, joined.stdout
        assert raylets() == left   # joined: it neither started a Ray of its own nor stopped the kept one
    finally:
        _end_ray_in(temp)


def test_serve_stops_on_sigterm_within_10_s_leaves_nothing_running_and_interrupts_an_import_that_joined_it(
        home: Path):
    """SIGTERM ends `corpusmem serve` within 10 s with nothing of it left running: Ray's processes,
    the dashboard's, the embedded PostgreSQL. An import that joined its Ray (of another memory)
    is stopped first, as a Ctrl-C would: it says why, exits 130 with its run recorded interrupted,
    and a re-run (on a Ray of its own) ends with every document."""
    server, _, serve_log = _serve(home / "served")

    imported, corpus = home / "imported", _corpus(home.parent, 120)
    joining = {k: v for k, v in _env(imported).items() if k != "RAY_ADDRESS"}   # finds the server's Ray
    import_log = home.parent / "import.log"
    with open(import_log, "w") as log:
        importer = subprocess.Popen([sys.executable, "-m", "jobs.cli", "import", "--no-progress", str(corpus)],
                                    cwd=ROOT, env=joining, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    _wait_for_versions(_embedded_dsn(imported / "pg"), importer, import_log)
    assert "joined the Ray of the running `corpusmem serve`" in import_log.read_text()

    before = _processes(session=server.pid, home=home / "served") + [psutil.Process(server.pid)]
    assert {"raylet", "gcs_server", "postgres"} <= _names(before), _names(before)   # what must be seen to go
    code, took = _stop(server, signal.SIGTERM)
    print(f"serve with a joined import: SIGTERM to exit {took:.1f} s")
    assert code == 0 and took < STOP_S, f"exit {code} after {took:.1f} s:\n{_log_tail(serve_log)}"
    assert importer.wait(timeout=STOP_S) == 130, _log_tail(import_log)
    assert "whose Ray this import joined is stopping" in import_log.read_text(), _log_tail(import_log)
    left = _left(before, session=server.pid, home=home / "served") + _processes(session=importer.pid, home=imported)
    assert not left, _describe(left)
    assert not (home / "served" / "pg" / "postmaster.pid").exists()

    rerun = subprocess.run([sys.executable, "-m", "jobs.cli", "import", "--no-progress", str(corpus)], cwd=ROOT,
                           env=_env(imported), capture_output=True, text=True, timeout=START_S)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-3000:]
    assert _runs_and_documents(imported / "pg") == ([("interrupted",), ("succeeded",)], 120)


def _kill_one(server: subprocess.Popen, home: Path, name: str) -> None:
    """SIGKILL, as the OOM killer would, the first of the server's processes named `name`…"""
    found = [proc for proc in _processes(session=server.pid, home=home) if _names([proc]) and
             next(iter(_names([proc]))).startswith(name)]
    assert found, (name, sorted(_names(_processes(session=server.pid, home=home))))
    found[0].kill()


def _answers_again(server: subprocess.Popen, port: int, log_path: Path, within: float) -> float:
    """Seconds until the read API answers /healthz again."""
    started = time.monotonic()
    while True:
        assert server.poll() is None, f"the server ended:\n{_log_tail(log_path)}"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass   # the proxy or the replica is being replaced
        assert time.monotonic() - started < within, f"no answer for {within:.0f} s:\n{_log_tail(log_path)}"
        time.sleep(0.5)


def test_a_server_answers_again_when_a_replica_or_its_proxy_ends_and_while_its_gcs_is_gone(home: Path):
    """…Serve replaces a replica or a proxy; a GCS that is gone leaves the requests answered; and
    SIGTERM then still stops the server within 10 s with nothing of it left running."""
    server, port, log_path = _serve(home)
    for name in ("ray::ServeReplica", "ray::ProxyActor"):
        _kill_one(server, home, name)
        print(f"serve: {name} killed, answering again after {_answers_again(server, port, log_path, 30):.1f} s")
    _kill_one(server, home, "gcs_server")
    time.sleep(3)
    assert _answers_again(server, port, log_path, 5) < 5

    before = _processes(session=server.pid, home=home) + [psutil.Process(server.pid)]
    code, took = _stop(server, signal.SIGTERM)
    print(f"serve without its GCS: SIGTERM to exit {took:.1f} s")
    assert code == 0 and took < STOP_S, f"exit {code} after {took:.1f} s:\n{_log_tail(log_path)}"
    left = _left(before, session=server.pid, home=home)
    assert not left, _describe(left)
    assert not (home / "pg" / "postmaster.pid").exists()


def test_a_server_whose_raylet_ends_stops_with_a_clear_error_and_leaves_nothing_running(home: Path):
    server, port, log_path = _serve(home)
    before = _processes(session=server.pid, home=home) + [psutil.Process(server.pid)]
    _kill_one(server, home, "raylet")
    try:
        code = server.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        code = None
    assert code == 1, f"exit {code}:\n{_log_tail(log_path)}"
    assert "Ray's raylet" in log_path.read_text() and "cannot go on without it" in log_path.read_text()
    left = _left(before, session=server.pid, home=home)
    assert not left, _describe(left)
    assert not (home / "pg" / "postmaster.pid").exists()


def _runs_and_documents(pg_dir: Path) -> tuple[list[tuple[str]], int]:
    """The import runs on record, oldest first, and the documents held, read through a holder."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(pg_dir)], cwd=ROOT, env=_env(None),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        with psycopg.connect(holder.stdout.readline().strip()) as conn:
            return (conn.execute("SELECT status FROM import_runs ORDER BY started_at").fetchall(),
                    conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.parametrize("ray_process", ["gcs_server", "raylet"])
def test_an_import_whose_ray_breaks_stops_with_a_clear_error_and_its_run_is_left_to_resume(home: Path, ray_process: str):
    """Killed as the OOM killer would, mid-import: the GCS (Ray's calls would wait on it for a
    minute and more) or the raylet. The import says what it lost and exits 1 within its bound,
    with nothing of it left running, its run recorded interrupted, which a re-run resumes (a run
    interrupted by a stop is re-run to the end in the test of an import that joined a server).
    (A raylet's end can also reach Ray's core worker first, which ends the process.)"""
    corpus, log_path = _corpus(home.parent, 120), home.parent / "import.log"
    importer = _start_import(home, corpus, log_path)
    _wait_for_versions(_embedded_dsn(home / "pg"), importer, log_path)
    before = _processes(session=importer.pid, home=home) + [psutil.Process(importer.pid)]
    next(proc for proc in before if _names([proc]) == {ray_process}).kill()

    started = time.monotonic()
    # the GCS is missed GCS_MISSES times in a row, each look taking up to two waits of 2 s
    bound = runtime.GCS_MISSES * 2 * runtime.WATCH_EVERY_S + STOP_S
    try:
        code = importer.wait(timeout=bound)
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - started
    print(f"import without its {ray_process}: exit {code} after {took:.1f} s")
    assert code == 1, f"exit {code} after {took:.1f} s:\n{_log_tail(log_path)}"
    if "and this command cannot go on without it" in log_path.read_text():
        left = _left(before, session=importer.pid, home=home)
        assert not left, _describe(left)
    else:
        # Ray's core worker ends a driver whose raylet is gone (exit 1, in C++, no exit hooks), and
        # at times it does so before the watch looks: only the embedded server may then be left,
        # and the next command on the memory stops it, as with any holder that was killed
        assert ray_process == "raylet", _log_tail(log_path)
        # Ray's processes left without a raylet (its dashboard agent, say) notice it within seconds
        deadline = time.monotonic() + 30
        while True:
            left = [p for p in _left(before, session=importer.pid, home=home, postgres_stops=False)
                    if _names([p]) - {"postgres"}]
            if not left or time.monotonic() > deadline:
                break
        assert not left, _describe(left)
        _last_holder_out_stops_it(home)

    if ray_process == "gcs_server":   # the raylet's end may take the driver before it records anything
        assert _runs_and_documents(home / "pg")[0] == [("interrupted",)]
