"""A place that holds files by key, on any `pyarrow.fs`: a backup's folder or bucket, or the object
store a restore fills.

It opens a folder or URI exactly as the object store does (it is one), and adds what copying needs
that content-addressed writes do not: streaming a large file in and
out while hashing it, and deleting what a failed backup or restore wrote.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from actors.object_store import ObjectStore

_BLOCK = 1 << 20


class BackupArea(ObjectStore):
    def upload(self, key: str, source: Path) -> tuple[str, int]:
        """Copy a local file under `key`; returns its (sha256 hex, size)."""
        digest, size = hashlib.sha256(), 0
        if self._local:
            self._fs.create_dir(self._path(key).rsplit("/", 1)[0], recursive=True)
        with open(source, "rb") as src, self._fs.open_output_stream(self._path(key)) as out:
            while block := src.read(_BLOCK):
                digest.update(block)
                size += len(block)
                out.write(block)
        return digest.hexdigest(), size

    def download(self, key: str, target: Path) -> str:
        """Copy the file under `key` to a local file; returns its sha256 hex."""
        digest = hashlib.sha256()
        with self._fs.open_input_stream(self._path(key)) as src, open(target, "wb") as out:
            while block := src.read(_BLOCK):
                digest.update(block)
                out.write(block)
        return digest.hexdigest()

    def delete(self, key: str) -> None:
        try:
            self._fs.delete_file(self._path(key))
        except FileNotFoundError:
            pass
