"""The object store is content-addressed and idempotent."""

from __future__ import annotations

import hashlib

import pytest

from actors.object_store import ObjectStore, content_key


def test_put_is_content_addressed_and_idempotent(tmp_path):
    store = ObjectStore(str(tmp_path / "objects"))
    digest, key = store.put("raw", b"hello")
    assert digest == hashlib.sha256(b"hello").hexdigest()
    assert key == f"raw/{digest[:2]}/{digest[2:4]}/{digest}"
    assert store.put("raw", b"hello") == (digest, key)
    assert store.get(key) == b"hello"
    assert [p.name for p in (tmp_path / "objects").rglob("*") if p.is_file()] == [digest]


def test_file_uri_works_like_a_folder(tmp_path):
    store = ObjectStore(f"file://{tmp_path}/o")
    _, key = store.put("md", b"# x\n")
    assert (tmp_path / "o" / key).read_bytes() == b"# x\n"


def test_a_key_must_be_a_digest():
    with pytest.raises(ValueError, match="SHA-256"):
        content_key("raw", "../../etc/passwd")
