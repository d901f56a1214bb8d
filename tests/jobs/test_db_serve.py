"""`corpusmem db serve`: the embedded PostgreSQL on TCP with a password, its DSN as the first line,
a clean stop on SIGTERM, and processes of this machine that join and leave it over the socket
never stopping it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import psycopg
import pytest

from jobs.runtime import PROJECT_ROOT
from tests.support.ports import free_port

pytestmark = pytest.mark.integration


def _serve(home, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORPUSMEM_")}
    return subprocess.Popen([sys.executable, "-m", "jobs.cli", "db", "serve", *args],
                            env={**env, "CORPUSMEM_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)},
                            cwd=PROJECT_ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_db_serve_prints_a_dsn_that_needs_its_password_and_stops_cleanly(tmp_path):
    port = free_port()
    proc = _serve(tmp_path, "--host", "127.0.0.1", "--port", str(port))
    try:
        first = proc.stdout.readline().strip()
        assert first.startswith("CORPUSMEM_DSN=postgresql://postgres:"), first or (proc.wait(60), proc.stderr.read())
        dsn = first.split("=", 1)[1]
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT current_database(), inet_server_port()").fetchone() == ("corpusmem", port)
            assert conn.execute("SELECT name FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        wrong = psycopg.conninfo.make_conninfo(dsn, password="not-the-password")
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(wrong)
        # the password was generated once and kept for the owner only
        secret = tmp_path / "db-password"
        assert psycopg.conninfo.conninfo_to_dict(dsn)["password"] == secret.read_text().strip()
        assert secret.stat().st_mode & 0o077 == 0

        # a process of this machine joins the server over its socket (no CORPUSMEM_DSN) and exits
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORPUSMEM_")}
        joined = subprocess.run([sys.executable, "-c", "from jobs import runtime; from sql.store import authority;"
                                 "print(authority.resolve_dsn(runtime.settings()))"],
                                env={**env, "CORPUSMEM_HOME": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT)},
                                cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
        assert joined.returncode == 0, joined.stderr
        with psycopg.connect(dsn) as conn:   # still served
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=3)


def test_db_serve_on_a_port_in_use_says_so(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = _serve(tmp_path, "--host", "127.0.0.1", "--port", str(busy.getsockname()[1]))
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and out == ""
    assert "PostgreSQL did not start" in err and "could not" in err.lower()
