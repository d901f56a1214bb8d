"""`corpusmem backup DEST`: the memory's database and every object it references, as of one instant.

DEST is a folder or an object-store URI (`s3://bucket/prefix?...`, as `CORPUSMEM_OBJECT_STORE`
takes). It receives `memory.pgdump` (`pg_dump -Fc`, taken in an exported snapshot), the referenced
objects under `objects/<key>`, and last `manifest.json`: the dump's and every object's SHA-256, the
schema migration level, the embedding pin and the corpusmem version. A folder without a manifest
is no backup. With `--incremental PREVIOUS`, objects that PREVIOUS (or a backup it points to)
already holds with the same checksum are not copied: the manifest says where each one lives.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from tqdm import tqdm

from jobs.settings import Settings

FORMAT = "corpusmem.backup/1"
MANIFEST = "manifest.json"
DUMP = "memory.pgdump"
OBJECTS = "objects"
# Objects copied at once: an S3 request is mostly waiting, a local copy mostly disk.
COPY_THREADS = 8


class BackupFailed(RuntimeError):
    """A backup or restore stopped; the message names the object or step at fault."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dest", metavar="DEST",
                        help="a new folder, or an object-store URI such as s3://bucket/prefix?region=...")
    parser.add_argument("--incremental", metavar="PREVIOUS", default=None,
                        help="a previous backup (folder or URI): objects it holds are not copied again")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(settings: Settings, args: argparse.Namespace) -> int:
    from sql.store.authority import StoreError

    try:
        result = backup(settings, args.dest, previous=args.incremental, progress=not args.no_progress)
    except (BackupFailed, StoreError, OSError, ValueError) as err:
        print(f"corpusmem backup: {err}", file=sys.stderr)
        return 2
    print(result.render())
    return 0


@functools.lru_cache(maxsize=16)
def area(uri: str):
    """The backup (or object store) at `uri`, opened once per process: opening an S3 filesystem
    costs more than reading an object."""
    from actors.backup_area import BackupArea

    return BackupArea(uri)


def location(uri: str) -> str:
    """How a manifest names a backup: a URI as given, a folder by its absolute path."""
    return uri if "://" in uri else str(Path(uri).resolve())


def read_manifest(uri: str) -> dict[str, Any]:
    """The manifest of the backup at `uri`; a clear error when it is missing or unreadable."""
    place = area(uri)
    if not place.exists(MANIFEST):
        raise BackupFailed(f"{uri} is not a corpusmem backup: it has no {MANIFEST}")
    try:
        manifest = json.loads(place.get(MANIFEST))
    except ValueError as err:
        raise BackupFailed(f"the manifest of {uri} is not valid JSON: {err}") from None
    if manifest.get("format") != FORMAT:
        raise BackupFailed(f"{uri} is a backup of format {manifest.get('format')!r}; this corpusmem reads {FORMAT}")
    return manifest


def object_path(key: str) -> str:
    return f"{OBJECTS}/{key}"


@dataclass
class BackupResult:
    dest: str
    objects: int
    copied: int
    bytes_copied: int
    seconds: float
    manifest: dict[str, Any] = field(repr=False)

    def render(self) -> str:
        pin = self.manifest["deployment"]
        return (f"backed up to {self.dest}: schema level {self.manifest['schema']['level']}, "
                f"{self.objects} objects ({self.copied} copied, {self.bytes_copied} bytes), "
                f"embedding model {pin['embedding_model'] if pin else 'none yet'}, in {self.seconds:.1f}s")


def _version() -> str:
    try:
        return metadata.version("corpusmem")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def backup(settings: Settings, dest: str, *, previous: str | None = None, progress: bool = True) -> BackupResult:
    """Back the memory of `settings` up to `dest` (see the module's text)."""
    from actors.object_store import ObjectStore
    from jobs import runtime
    from sql.store import authority
    from sql.store import backup as backup_sql

    started = time.perf_counter()
    target = area(dest)
    if target.exists(MANIFEST):
        raise BackupFailed(f"{dest} already holds a backup ({MANIFEST}); give a new folder or prefix")
    known: dict[str, dict[str, Any]] = {}
    if previous is not None:
        older = read_manifest(previous)
        for entry in older["objects"]:
            known[entry["key"]] = {**entry, "location": entry.get("location") or location(previous)}
    source = ObjectStore(settings.object_store_uri)
    dsn = authority.resolve_dsn(settings)
    written: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="corpusmem-backup-") as tmp:
            say(progress, "backup: dumping the database in one snapshot")
            with backup_sql.snapshot(dsn) as snap:
                pg_dump = backup_sql.dump(dsn, snap.snapshot_id, Path(tmp) / DUMP)
            written.append(DUMP)
            dump_sha256, dump_size = target.upload(DUMP, Path(tmp) / DUMP)
        entries, copied, copied_bytes = _copy_objects(source, target, snap.object_keys, known, written, progress)
        manifest = {
            "format": FORMAT,
            "corpusmem_version": _version(),
            "build_revision": runtime.build_revision(),
            "created_at": datetime.now(UTC).isoformat(),
            "schema": {"level": max((m[0] for m in snap.migrations), default=0),
                       "migrations": [{"version": v, "name": n, "checksum": c} for v, n, c in snap.migrations]},
            "deployment": snap.deployment,
            "database": {"file": DUMP, "format": "pg_dump custom (-Fc)", "pg_dump": pg_dump,
                         "sha256": dump_sha256, "size": dump_size},
            "incremental_from": location(previous) if previous else None,
            "objects": entries,
        }
        target.write(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
    except BaseException:
        for key in written:   # without its manifest the rest is no backup: leave nothing half-made
            target.delete(key)
        raise
    return BackupResult(dest, len(entries), copied, copied_bytes, time.perf_counter() - started, manifest)


def _copy_objects(source, target, keys: tuple[str, ...], known: dict[str, dict[str, Any]],
                  written: list[str], progress: bool) -> tuple[list[dict[str, Any]], int, int]:
    """Copy each referenced object not in `known` (a previous backup's), hashing it as it goes;
    return the manifest's entries, how many were copied and their bytes."""
    import hashlib

    def copy(key: str) -> dict[str, Any]:
        if (old := known.get(key)) is not None:
            # Objects are content-addressed and never change under their key: the previous copy serves.
            if area(old["location"]).exists(object_path(key)):
                return {"key": key, "sha256": old["sha256"], "size": old["size"], "location": old["location"]}
        try:
            data = source.get(key)
        except FileNotFoundError:
            raise BackupFailed(f"object {key} is referenced by the memory but missing from its object store "
                               f"({source.uri})") from None
        digest = hashlib.sha256(data).hexdigest()
        if key.rsplit("/", 1)[-1] != digest and len(key.rsplit("/", 1)[-1]) == 64:
            raise BackupFailed(f"object {key} in the object store ({source.uri}) is corrupt: its bytes hash to "
                               f"{digest}")
        written.append(object_path(key))
        target.write(object_path(key), data)
        return {"key": key, "sha256": digest, "size": len(data)}

    entries = list(parallel(copy, keys, "backup objects", progress))
    fresh = [e for e in entries if "location" not in e]
    return entries, len(fresh), sum(e["size"] for e in fresh)


def parallel(work, items, desc: str, progress: bool):
    """`work` over `items` on COPY_THREADS threads, results in order, with a progress bar. The
    first error stops it: the work not yet started is cancelled, and the error raised."""
    pool = ThreadPoolExecutor(COPY_THREADS)
    try:
        with tqdm(total=len(items), unit="obj", desc=desc, disable=not progress, file=sys.stderr,
                  dynamic_ncols=True) as bar:
            for future in [pool.submit(work, item) for item in items]:
                yield future.result()
                bar.update()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)
