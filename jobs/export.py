"""`corpusmem export DEST [--format parquet|jsonl] [--as-of T] [--force]`: the memory's documents
(with their versions and converted text), claims with their spans, entities with their aliases,
facts with their windows and evidence, and contradictions, one file per `memory_v1` view.

Everything is read in one snapshot through the views (`sql/read/export_queries.py`), so a deleted
document is in no file. Rows stream from a server-side cursor in batches into a Parquet writer or
JSON lines, so memory stays flat however large the memory is. DEST is a folder or a `pyarrow.fs`
URI (`s3://bucket/prefix`), as `CORPUSMEM_OBJECT_STORE` is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from psycopg.types.string import TextLoader
from tqdm import tqdm

from actors.object_store import ObjectStore
from jobs import runtime
from jobs.settings import Settings
from sql.read import export_queries as q
from sql.store import authority as store

FORMATS = {"parquet": ".parquet", "jsonl": ".jsonl"}
MANIFEST = "manifest.json"
BATCH_ROWS = 5000
# Converted documents are read whole: a batch of them ends at this many bytes of text.
BATCH_TEXT_BYTES = 32 << 20

# PostgreSQL types the views use, as Arrow types a pandas or DuckDB user reads directly. uuid and
# jsonb arrive as their text (loaders below), so neither is parsed only to be printed again.
ARROW_TYPES = {
    "bool": pa.bool_(), "int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "float4": pa.float32(),
    "float8": pa.float64(), "text": pa.string(), "varchar": pa.string(), "bpchar": pa.string(), "name": pa.string(),
    "uuid": pa.string(), "jsonb": pa.string(), "json": pa.string(), "timestamptz": pa.timestamp("us", tz="UTC"),
    "timestamp": pa.timestamp("us"), "date": pa.date32(),
}


class ExportError(ValueError):
    """The export cannot be made as asked; the message says what to change."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dest", metavar="DEST", help="a folder (created if missing) or a pyarrow.fs URI (s3://...)")
    parser.add_argument("--format", choices=tuple(FORMATS), default="parquet", help="file format (default parquet)")
    parser.add_argument("--as-of", metavar="T", help="facts and contradictions as the memory held them at T "
                                                     "(YYYY-MM-DD or ISO 8601; UTC when no offset is given)")
    parser.add_argument("--force", action="store_true", help="overwrite the files of an earlier export in DEST")


def main(settings: Settings, args: argparse.Namespace) -> int:
    try:
        as_of = instant(args.as_of)
        target = Destination.open(args.dest, args.format, as_of, force=args.force)
    except ExportError as err:
        print(f"corpusmem export: {err}", file=sys.stderr)
        return 2
    try:
        manifest = export(store.resolve_dsn(settings), ObjectStore(settings.object_store_uri), target, as_of)
    except ExportError as err:
        print(f"corpusmem export: {err}", file=sys.stderr)
        return 2
    for name, entry in manifest["files"].items():
        print(f"{name}: {entry['rows']} rows")
    print(f"exported to {args.dest} ({args.format}), as the memory held it at {manifest['evaluated_at']}")
    return 0


def instant(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return runtime.instant(text)
    except ValueError:
        raise ExportError(f"--as-of {text!r} is not a date or an instant (YYYY-MM-DD or ISO 8601)") from None


@dataclass(frozen=True)
class Destination:
    fs: pafs.FileSystem
    root: str
    suffix: str

    @classmethod
    def open(cls, dest: str, fmt: str, as_of: datetime | None, *, force: bool) -> Destination:
        """DEST made ready for this export's files; refuses one that already holds any of them
        (unless `force`), before anything is written."""
        try:
            fs, root = pafs.FileSystem.from_uri(dest) if "://" in dest else (pafs.LocalFileSystem(),
                                                                              os.path.abspath(dest))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
            raise ExportError(f"DEST {dest!r} is neither a folder nor a URI pyarrow.fs can open ({err})") from None
        target = cls(fs, root.rstrip("/"), FORMATS[fmt])
        try:
            kind = fs.get_file_info(target.root).type
            if kind == pafs.FileType.File:
                raise ExportError(f"DEST {dest!r} is a file; give a folder")
            existing = [n for n in target.names(as_of)
                        if fs.get_file_info(target.path(n)).type != pafs.FileType.NotFound]
            if existing and not force:
                raise ExportError(f"DEST {dest!r} already holds {', '.join(existing)}; give --force to overwrite")
            fs.create_dir(target.root, recursive=True)
        except OSError as err:
            raise ExportError(f"DEST {dest!r} cannot be written: {err}") from None
        return target

    def names(self, as_of: datetime | None) -> list[str]:
        return [v.name + self.suffix for v in q.views(as_of)] + [q.TEXTS + self.suffix, MANIFEST]

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"


def export(dsn: str, objects: ObjectStore, target: Destination, as_of: datetime | None) -> dict[str, Any]:
    """Write every file of the export into `target`, then its manifest; returns the manifest."""
    with store.connect(dsn) as conn:
        for name in ("uuid", "jsonb", "json"):
            conn.adapters.register_loader(name, TextLoader)
        snapshot = q.begin_snapshot(conn, as_of)
        files: dict[str, dict[str, Any]] = {}
        for view in q.views(as_of):
            statement = q.select(view, as_of)
            total = q.count(conn, statement)
            with conn.cursor(name=f"export_{view.name}") as cur, _bar(view.name, total) as bar:
                cur.execute(statement)
                schema = _schema(conn, cur, view.name)
                rows = _write(target, view.name, schema, _batches(cur, bar))
            files[view.name + target.suffix] = {"view": f"memory_v1.{view.name}", "key": list(view.key), "rows": rows}
        files[q.TEXTS + target.suffix] = {"view": "memory_v1.document_versions_visible (converted Markdown)",
                                          "key": ["version_id"], "rows": _write_texts(conn, objects, target)}
        manifest = {"format": target.suffix.lstrip("."), "snapshot_at": snapshot.astimezone(UTC).isoformat(),
                    "as_of": as_of.astimezone(UTC).isoformat() if as_of else None,
                    "evaluated_at": q.evaluated_at(conn).astimezone(UTC).isoformat(), **q.deployment(conn),
                    "vectors": "not exported", "files": files}
        conn.rollback()   # read only: nothing to keep
    with target.fs.open_output_stream(target.path(MANIFEST)) as out:
        out.write(json.dumps(manifest, indent=2).encode())
    return manifest


def _bar(name: str, total: int) -> tqdm:
    # disable=None: shown on a terminal, silent in a pipe or a log
    return tqdm(total=total, unit="row", desc=name, file=sys.stderr, disable=None, dynamic_ncols=True)


def _schema(conn: psycopg.Connection, cur: psycopg.ServerCursor, view: str) -> pa.Schema:
    fields = []
    for column in cur.description:
        info = conn.adapters.types.get(column.type_code)
        name = info.name if info else str(column.type_code)
        arrow = ARROW_TYPES.get(name)
        if arrow is None and info is not None and name.startswith("_") and name[1:] in ARROW_TYPES:
            arrow = pa.list_(ARROW_TYPES[name[1:]])
        if arrow is None:
            raise ExportError(f"memory_v1.{view}.{column.name} has type {name}, which the export cannot write")
        # the PostgreSQL type rides along: it tells a reader which strings are uuids or JSON
        fields.append(pa.field(column.name, arrow, metadata={"pg_type": name}))
    return pa.schema(fields)


def _batches(cur: psycopg.ServerCursor, bar: tqdm) -> Iterator[list[tuple]]:
    while rows := cur.fetchmany(BATCH_ROWS):
        bar.update(len(rows))
        yield rows


def _write(target: Destination, name: str, schema: pa.Schema, batches: Iterator[list[tuple]]) -> int:
    """Write the batches to `name` + suffix, through a temporary name so that a file under the
    final name is always whole; returns the rows written."""
    final = target.path(name + target.suffix)
    partial = final + ".partial"
    written = 0
    try:
        with target.fs.open_output_stream(partial) as out:
            if target.suffix == ".parquet":
                with pq.ParquetWriter(out, schema) as writer:
                    for rows in batches:
                        writer.write_batch(pa.RecordBatch.from_arrays(
                            [pa.array(column, type=f.type) for column, f in zip(zip(*rows), schema)], schema=schema))
                        written += len(rows)
            else:
                for rows in batches:
                    out.write(_json_lines(schema, rows))
                    written += len(rows)
    except BaseException:
        try:
            target.fs.delete_file(partial)
        except OSError:   # never opened: nothing to remove, and the first error is the one to show
            pass
        raise
    target.fs.move(partial, final)
    return written


def _json_lines(schema: pa.Schema, rows: list[tuple]) -> bytes:
    """JSON lines by the standard library (pyarrow reads JSON but does not write it): instants
    in ISO 8601 UTC, jsonb columns as JSON values, uuids as strings."""
    parsed = [(f.metadata or {}).get(b"pg_type") in (b"jsonb", b"json") for f in schema]
    lines = []
    for row in rows:
        record = {f.name: (json.loads(v) if p and v is not None else _plain(v)) for f, p, v in zip(schema, parsed, row)}
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat() if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _write_texts(conn: psycopg.Connection, objects: ObjectStore, target: Destination) -> int:
    """The converted Markdown of every visible version, read from the object store by the key its
    representation names, and checked against that key's digest before it is written."""
    statement = q.texts()
    total = q.count(conn, statement)
    schema = pa.schema([("doc_id", pa.string()), ("version_id", pa.string()), ("representation_id", pa.string()),
                        ("text", pa.string())])

    def batches(cur: psycopg.ServerCursor, bar: tqdm) -> Iterator[list[tuple]]:
        batch, size = [], 0
        for doc_id, version_id, representation_id, key in cur:
            data = objects.get(key)
            if hashlib.sha256(data).hexdigest() != key.rsplit("/", 1)[-1]:
                raise ExportError(f"the converted text of version {version_id} ({key}) does not match its digest; "
                                  "run `corpusmem check`")
            batch.append((doc_id, version_id, representation_id, data.decode("utf-8")))
            size += len(data)
            bar.update(1)
            if len(batch) >= BATCH_ROWS or size >= BATCH_TEXT_BYTES:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch

    with conn.cursor(name="export_texts") as cur, _bar(q.TEXTS, total) as bar:
        cur.itersize = 100
        cur.execute(statement)
        return _write(target, q.TEXTS, schema, batches(cur, bar))
