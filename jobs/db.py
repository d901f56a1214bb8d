"""`corpusmem db serve`: the embedded PostgreSQL on TCP, one authority for a small cluster."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from jobs.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="db_command", required=True)
    s = sub.add_parser("serve", help="run the embedded PostgreSQL of $CORPUSMEM_HOME listening on TCP, with a "
                                     "password, in the foreground; prints CORPUSMEM_DSN=... first")
    s.add_argument("--host", default="0.0.0.0",
                   help="address to listen on (default 0.0.0.0: every interface, password required)")
    s.add_argument("--port", type=int, default=5432, help="port (default 5432)")
    s.add_argument("--tls", action="store_true",
                   help="encrypted connections only; with a certificate generated once under $CORPUSMEM_HOME/tls "
                        "unless --cert and --key are given (the DSN then says sslmode=require)")
    s.add_argument("--cert", type=Path, help="the server's certificate (PEM); implies --tls")
    s.add_argument("--key", type=Path, help="the certificate's private key (PEM); implies --tls")
    s.add_argument("--ca", type=Path,
                   help="the CA certificate clients verify the server with: the DSN says sslmode=verify-full")


def main(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT, then stop PostgreSQL (fast shutdown) and exit 0."""
    from sql.store import served

    if (args.cert is None) != (args.key is None) or (args.ca is not None and args.cert is None):
        print("corpusmem: give --cert and --key together (and --ca only with them)", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        tls = (served.Tls(args.cert, args.key, args.ca) if args.cert else
               served.self_signed(settings.home, args.host) if args.tls else None)
        server = served.serve(settings.pg_dir, settings.home, host=args.host, port=args.port,
                              given_password=settings.db_password, tls=tls)
    except served.ServeError as err:
        print(f"corpusmem: {err}", file=sys.stderr)
        return 2
    print(f"CORPUSMEM_DSN={server.dsn}", flush=True)
    print(f"serving {settings.pg_dir} on {args.host}:{args.port}; set CORPUSMEM_DSN on every node and for "
          "`corpusmem serve`. Ctrl-C stops it.", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            if server.process.poll() is not None:
                print(f"corpusmem: PostgreSQL exited with status {server.process.returncode} "
                      f"(log: {settings.pg_dir / 'log-served'})", file=sys.stderr)
                return 1
    finally:
        server.stop()
    print("stopped", file=sys.stderr)
    return 0
