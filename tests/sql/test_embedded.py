"""The embedded PostgreSQL: started on demand, shared by concurrent processes, stopped by the last."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from sql.store import embedded

pytestmark = pytest.mark.integration

_HOLD = """
import sys, time
from sql.store import embedded
dsn = embedded.start(sys.argv[1])
print(dsn, flush=True)
time.sleep(float(sys.argv[2]))
"""


def _postmaster_running(pg_dir: Path) -> bool:
    return embedded.server_process(pg_dir) is not None


def test_a_second_process_reuses_the_server_and_the_last_one_out_stops_it():
    home = Path(tempfile.mkdtemp(prefix="corpusmem-embedded-"))
    os.chmod(home, 0o755)
    pg_dir = home / "pg"
    try:
        first = subprocess.Popen([sys.executable, "-c", _HOLD, str(pg_dir), "6"], stdout=subprocess.PIPE, text=True)
        dsn_first = first.stdout.readline().strip()
        pid_before = (pg_dir / "postmaster.pid").read_text().split()[0]
        second = subprocess.run([sys.executable, "-c", _HOLD, str(pg_dir), "0"], capture_output=True,
                                text=True, timeout=60)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == dsn_first
        # the second process left; the first still holds the same server
        assert (pg_dir / "postmaster.pid").read_text().split()[0] == pid_before
        with psycopg.connect(dsn_first) as conn:
            assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'plpgsql'").fetchone()
        first.wait(timeout=60)
        deadline = time.monotonic() + 20
        while _postmaster_running(pg_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _postmaster_running(pg_dir)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_database_server_is_the_process_its_data_folders_postmaster_pid_names(tmp_path: Path):
    assert embedded.server_process(tmp_path) is None                    # not started yet
    (tmp_path / "postmaster.pid").write_text(
        f"{os.getpid()}\n{tmp_path}\n1700000000\n5432\n{tmp_path}\n\n  5432001    32768\nready   \n")
    assert embedded.server_process(tmp_path).pid == os.getpid()
    (tmp_path / "postmaster.pid").write_text("\n")                       # being written
    assert embedded.server_process(tmp_path) is None
