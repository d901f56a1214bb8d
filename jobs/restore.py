"""`corpusmem restore SRC`: a backup (`corpusmem backup`) into an empty home or database.

The target is the memory the settings name: `CORPUSMEM_DSN`'s database, else the embedded
PostgreSQL of `CORPUSMEM_HOME`; objects go to `CORPUSMEM_OBJECT_STORE` (else `$CORPUSMEM_HOME/objects`).
Order: every object is read from the backup and its SHA-256 checked against the manifest before
anything is loaded; then the dump is loaded in one transaction; then the sandbox role and grants
are applied and the migrations this version adds run. Any failure undoes it all: the objects
written, the loaded schema, and a data folder (or home) the restore created.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from jobs.backup import (DUMP, BackupFailed, area, location, object_path, parallel, read_manifest, say)
from jobs.settings import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("src", metavar="SRC", help="a backup's folder or object-store URI")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(settings: Settings, args: argparse.Namespace) -> int:
    from sql.store.authority import StoreError

    try:
        result = restore(settings, args.src, progress=not args.no_progress)
    except (BackupFailed, StoreError, OSError, ValueError) as err:
        print(f"corpusmem restore: {err}", file=sys.stderr)
        return 2
    print(result.render())
    return 0


@dataclass
class RestoreResult:
    src: str
    target: str
    objects: int
    written: int
    migrated: list[str]
    seconds: float
    manifest: dict[str, Any]

    def render(self) -> str:
        pin = self.manifest["deployment"]
        upgraded = f", then migrated: {', '.join(self.migrated)}" if self.migrated else ""
        return (f"restored {self.src} into {self.target}: schema level {self.manifest['schema']['level']}{upgraded}; "
                f"{self.objects} objects verified ({self.written} written); embedding model "
                f"{pin['embedding_model'] if pin else 'none yet'}; in {self.seconds:.1f}s")


def _target(settings: Settings) -> str:
    if settings.dsn:
        info = psycopg.conninfo.conninfo_to_dict(settings.dsn)
        return f"database {info.get('dbname', '?')!r}"
    return f"home {settings.home}"


def restore(settings: Settings, src: str, *, progress: bool = True) -> RestoreResult:
    from actors.backup_area import BackupArea
    from sql.store import authority
    from sql.store import backup as backup_sql
    from sql.store import embedded

    started = time.perf_counter()
    manifest = read_manifest(src)
    ours = max(number for number, _, _ in authority.migration_files())
    if manifest["schema"]["level"] > ours:
        raise BackupFailed(f"{src} was made by a newer corpusmem ({manifest['corpusmem_version']}, schema level "
                           f"{manifest['schema']['level']}); this one knows schema level {ours}: upgrade corpusmem")
    embedded_home = not settings.dsn
    home_existed, pg_existed = settings.home.exists(), settings.pg_dir.exists()
    store = BackupArea(settings.object_store_uri)
    written: list[str] = []
    before, loaded = None, False
    try:
        dsn = authority.resolve_dsn(settings)
        with authority.connect(dsn, autocommit=True) as conn:
            before = backup_sql.check_empty(conn)
        with tempfile.TemporaryDirectory(prefix="corpusmem-restore-") as tmp:
            dump = Path(tmp) / DUMP
            try:
                digest = area(src).download(DUMP, dump)
            except FileNotFoundError:
                raise BackupFailed(f"the database dump {DUMP} is missing from the backup at {src}") from None
            if digest != manifest["database"]["sha256"]:
                raise BackupFailed(f"the database dump {DUMP} in the backup at {src} is corrupt: its SHA-256 is "
                                   f"{digest}, the manifest says {manifest['database']['sha256']}")
            entries = manifest["objects"]
            list(parallel(lambda entry: _restore_object(src, entry, store, written), entries, "restore objects",
                          progress))
            say(progress, "restore: loading the database")
            loaded = True
            backup_sql.restore_dump(dsn, dump)
        with authority.connect(dsn, autocommit=True) as conn:
            missing = sorted(set(backup_sql.object_keys(conn)) - {e["key"] for e in entries})
            if missing:
                raise BackupFailed(f"the backup at {src} does not hold objects its database references: "
                                   f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
            migrated = backup_sql.finish(conn)
    except BaseException:
        for key in written:
            store.delete(key)
        if before is not None and loaded:
            with authority.connect(dsn, autocommit=True) as conn:
                backup_sql.undo(conn, before)
        if embedded_home and not pg_existed:
            embedded.stop(settings.pg_dir)
            shutil.rmtree(settings.home if not home_existed else settings.pg_dir, ignore_errors=True)
        raise
    return RestoreResult(src, _target(settings), len(entries), len(written), migrated, time.perf_counter() - started,
                         manifest)


def _restore_object(src: str, entry: dict[str, Any], store, written: list[str]) -> None:
    """Read one object from the backup that holds it, check its SHA-256, and put it in the target
    store (unless an identical one is there already)."""
    key, want = entry["key"], entry["sha256"]
    where = entry.get("location") or src
    try:
        data = area(where).get(object_path(key))
    except FileNotFoundError:
        raise BackupFailed(f"object {key} is missing from the backup at {location(where)}") from None
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        raise BackupFailed(f"object {key} in the backup at {location(where)} is corrupt: its SHA-256 is {got}, "
                           f"the manifest says {want}")
    if store.exists(key) and hashlib.sha256(store.get(key)).hexdigest() == want:
        return
    written.append(key)
    store.write(key, data)
