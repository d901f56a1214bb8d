"""The object store: original bytes and converted Markdown, content-addressed, on any `pyarrow.fs`.

Keys are derived from the SHA-256 of the bytes (`raw/ab/cd/<hash>`, `md/ab/cd/<hash>`), so a
write is idempotent and identical bytes are stored once however many documents hold them. A
local folder is the default; `s3://...` or `gs://...` make every Ray node see the same objects.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator

import pyarrow.fs as pafs


def content_key(kind: str, digest: str) -> str:
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a SHA-256 hex digest: {digest!r}")
    return f"{kind}/{digest[:2]}/{digest[2:4]}/{digest}"


class ObjectStore:
    def __init__(self, uri: str) -> None:
        if "://" in uri:
            self._fs, self._root = pafs.FileSystem.from_uri(uri)
            self._local = isinstance(self._fs, pafs.LocalFileSystem)
        else:
            self._fs, self._root, self._local = pafs.LocalFileSystem(), os.path.abspath(uri), True
        self._root = self._root.rstrip("/")
        self.uri = uri

    @property
    def shared(self) -> bool:
        """Whether every machine sees the same objects: a URI (`s3://`, `gs://`, or `file://` for
        a folder every node mounts) rather than a plain local path."""
        return "://" in self.uri

    def _path(self, key: str) -> str:
        return f"{self._root}/{key}"

    def exists(self, key: str) -> bool:
        return self._fs.get_file_info(self._path(key)).type == pafs.FileType.File

    def put(self, kind: str, data: bytes) -> tuple[str, str]:
        """Store `data` under its content key; return (sha256 hex, key). Existing objects are kept."""
        digest = hashlib.sha256(data).hexdigest()
        key = content_key(kind, digest)
        if self.exists(key):
            return digest, key
        self.write(key, data)
        return digest, key

    def write(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there."""
        path = self._path(key)
        if self._local:
            # an object store has no folders: on S3 this would cost four requests per object
            self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            # write-then-rename, so a crash never leaves a torn object under a valid key
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with self._fs.open_output_stream(tmp) as out:
                out.write(data)
            self._fs.move(tmp, path)
        else:
            with self._fs.open_output_stream(path) as out:
                out.write(data)

    def get(self, key: str) -> bytes:
        with self._fs.open_input_stream(self._path(key)) as src:
            return src.read()

    def keys(self) -> Iterator[str]:
        """Every object's key, leftovers of interrupted writes (`*.tmp`) included: one listing,
        not a request per key."""
        selector = pafs.FileSelector(self._root, recursive=True, allow_not_found=True)
        for info in self._fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                yield info.path[len(self._root):].lstrip("/")
