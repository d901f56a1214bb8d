"""`corpusmem backup` and `corpusmem restore`: a memory backed up (to a folder or an S3-compatible
bucket) and restored into an empty home or database holds the same `memory_v1` views; a backup taken
while an import writes restores to a consistent memory; a bad backup or a non-empty target is refused
and leaves the target as it was; an incremental backup copies only the objects that are new.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from jobs import backup as backup_job
from jobs import restore as restore_job
from jobs.cli import build_parser
from jobs.settings import Settings, load_settings
from sql.query_space import query_manifest
from sql.read import digest_queries
from tests.support.memory import do_import

pytestmark = pytest.mark.integration

AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def run_cli(settings: Settings, *argv: str) -> int:
    """`corpusmem ARGV` in this process against `settings` (what `jobs.cli` hands the command)."""
    args = build_parser().parse_args([*argv, "--no-progress"])
    module = restore_job if argv[0] == "restore" else backup_job
    return module.main(settings, args)


def differing(one: Settings, other: Settings) -> dict[str, dict]:
    with psycopg.connect(dsn_of(one)) as a, psycopg.connect(dsn_of(other)) as b:
        return digest_queries.differences(a, b)


def dsn_of(settings: Settings) -> str:
    from sql.store import authority

    return authority.resolve_dsn(settings)


def rows(settings: Settings, query: str, *params: object) -> list[tuple]:
    with psycopg.connect(dsn_of(settings)) as conn:
        return conn.execute(query, params).fetchall()


def user_relations(settings: Settings) -> int:
    return rows(settings, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                          " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'")[0][0]


def stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def assert_objects_verified(settings: Settings) -> int:
    """Every object the memory references is in its object store with the bytes its key names."""
    from actors.object_store import ObjectStore
    from sql.store import backup as backup_sql

    store = ObjectStore(settings.object_store_uri)
    with psycopg.connect(dsn_of(settings)) as conn:
        keys = backup_sql.object_keys(conn)
    for key in keys:
        assert hashlib.sha256(store.get(key)).hexdigest() == key.rsplit("/", 1)[-1], key
    return len(keys)


@pytest.fixture
def empty_target(pg_admin_dsn: str, tmp_path: Path) -> Settings:
    """An empty database (not even migrated) and an empty object-store folder to restore into."""
    from sql.store import embedded
    from tests.support.memory import dsn_for, unique_name

    name = unique_name("cm_restore")
    embedded.ensure_database(pg_admin_dsn, name)
    return load_settings({}, home=tmp_path / "target-home", dsn=dsn_for(pg_admin_dsn, name),
                         object_store=str(tmp_path / "target-objects"))


@pytest.fixture
def new_home() -> Path:
    """Where a new home may go. Not under pytest's temp folder: a root-run server drops to its own
    user, which must be able to reach the data folder (as in conftest's `pg_admin_dsn`)."""
    parent = Path(tempfile.mkdtemp(prefix="corpusmem-test-restore-"))
    parent.chmod(0o755)
    yield parent / "home"
    shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture(scope="module")
def example_backup(example_memory: Settings, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backup of the shared example memory in a folder: READ ONLY (copy it to change it)."""
    dest = tmp_path_factory.mktemp("example-backup") / "backup"
    assert run_cli(example_memory, "backup", str(dest)) == 0
    return dest


@pytest.fixture(scope="module")
def s3_bucket() -> str:
    """An S3-compatible server (moto's, over HTTP) with a bucket; a URI template with `{prefix}`."""
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    os.environ.update(AWS)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    pafs.S3FileSystem(endpoint_override=f"http://{host}:{port}", region="us-east-1",
                      allow_bucket_creation=True).create_dir("backups")
    yield f"s3://backups/{{prefix}}?endpoint_override=http://{host}:{port}&region=us-east-1"
    server.stop()


def test_a_folder_backup_restores_into_an_empty_home_with_identical_views(example_memory, example_backup, new_home):
    from sql.store import embedded

    manifest = json.loads((example_backup / "manifest.json").read_text())
    with psycopg.connect(example_memory.dsn) as conn:
        level = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        model, dim = conn.execute("SELECT embedding_model, embedding_dim FROM deployment").fetchone()
        keys = conn.execute("SELECT object_key FROM content_objects UNION SELECT object_key FROM representations"
                            ).fetchall()
    assert manifest["schema"]["level"] == level
    assert (manifest["deployment"]["embedding_model"], manifest["deployment"]["embedding_dim"]) == (model, dim)
    assert sorted(e["key"] for e in manifest["objects"]) == sorted(k for (k,) in keys)
    for entry in manifest["objects"]:
        data = (example_backup / "objects" / entry["key"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["size"]

    restored = load_settings({}, home=new_home)   # the embedded PostgreSQL of a home that does not exist yet
    try:
        assert run_cli(restored, "restore", str(example_backup)) == 0
        assert not differing(example_memory, restored)
        assert assert_objects_verified(restored) == len(keys)
        # the sandbox role reads the restored query space and nothing else
        with psycopg.connect(query_manifest.sandbox_dsn(dsn_of(restored)), autocommit=True) as sandbox:
            assert sandbox.execute("SELECT count(*) FROM memory_v1.documents_live").fetchone()[0] == 11
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                sandbox.execute("SELECT count(*) FROM public.documents")
    finally:
        embedded.stop(restored.pg_dir)


def test_an_s3_backup_restores_into_an_empty_database_with_identical_views(example_memory, empty_target, s3_bucket):
    dest = s3_bucket.format(prefix="full")
    assert run_cli(example_memory, "backup", dest) == 0
    assert run_cli(empty_target, "restore", dest) == 0
    assert not differing(example_memory, empty_target)
    assert assert_objects_verified(empty_target) > 11
    # a second backup into the same place is refused: it would mix two instants
    assert run_cli(example_memory, "backup", dest) == 2


def test_restore_refuses_a_non_empty_target_and_leaves_it_alone(example_backup, memory, capsys):
    before = user_relations(memory)
    assert run_cli(memory, "restore", str(example_backup)) == 2
    err = capsys.readouterr().err
    assert err.startswith("corpusmem restore: ") and "is not empty" in err, err
    assert user_relations(memory) == before
    assert rows(memory, "SELECT count(*) FROM documents") == [(0,)]
    assert stored_files(Path(memory.object_store_uri)) == []


def _damage(backup: Path, how: str) -> str:
    manifest = json.loads((backup / "manifest.json").read_text())
    key = sorted(e["key"] for e in manifest["objects"])[len(manifest["objects"]) // 2]
    path = backup / "objects" / key
    if how == "deleted":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(data))
    return key


@pytest.mark.parametrize("how", ["deleted", "corrupted"])
def test_a_damaged_object_is_named_and_the_empty_target_stays_empty(example_backup, empty_target, tmp_path, how,
                                                                   capsys):
    backup = tmp_path / "damaged"
    shutil.copytree(example_backup, backup)
    key = _damage(backup, how)

    assert run_cli(empty_target, "restore", str(backup)) == 2
    err = capsys.readouterr().err
    assert key in err and ("missing" if how == "deleted" else "corrupt") in err, err
    assert user_relations(empty_target) == 0
    assert stored_files(Path(empty_target.object_store_uri)) == []
    # the target is still a valid restore target: the intact backup restores into it
    assert run_cli(empty_target, "restore", str(example_backup)) == 0


def test_a_failed_restore_into_a_new_home_removes_the_home(example_backup, tmp_path, new_home, capsys):
    backup = tmp_path / "damaged"
    shutil.copytree(example_backup, backup)
    key = _damage(backup, "corrupted")
    assert run_cli(load_settings({}, home=new_home), "restore", str(backup)) == 2
    assert key in capsys.readouterr().err
    assert not new_home.exists()


def test_a_backup_taken_during_an_import_restores_to_a_consistent_memory(ray_local, memory, empty_target, tmp_path):
    from jobs.bench import synthetic

    corpus = tmp_path / "corpus"
    for doc in synthetic.generate(24, seed=5):
        (corpus / doc.path).parent.mkdir(parents=True, exist_ok=True)
        (corpus / doc.path).write_text(doc.text)
    done: dict[str, object] = {}
    importer = threading.Thread(target=lambda: done.update(report=do_import(memory, corpus, batch_size=2)))
    importer.start()
    deadline = time.monotonic() + 300
    while rows(memory, "SELECT count(*) FROM versions")[0][0] == 0:   # the first batch has landed
        assert time.monotonic() < deadline and importer.is_alive(), "the import wrote nothing"
        time.sleep(0.2)
    dest = tmp_path / "mid-import"
    assert run_cli(memory, "backup", str(dest)) == 0
    mid_import = importer.is_alive()
    importer.join()
    assert done["report"].counts["failed"] == 0

    assert run_cli(empty_target, "restore", str(dest)) == 0
    assert mid_import, "the import ended before the backup: nothing was tested mid-way"
    restored_versions = rows(empty_target, "SELECT count(*) FROM versions")[0][0]
    assert 0 < restored_versions
    # every referenced object is there with its own bytes; every version's stage rows belong to it
    assert assert_objects_verified(empty_target) >= restored_versions
    assert rows(empty_target, "SELECT count(*) FROM versions v WHERE NOT EXISTS"
                              " (SELECT FROM content_objects o WHERE o.content_hash = v.content_hash)") == [(0,)]
    assert rows(empty_target, "SELECT count(*) FROM representations r JOIN versions v USING (version_id)"
                              " WHERE v.status NOT IN ('ingesting', 'converting')") == \
        rows(empty_target, "SELECT count(*) FROM versions WHERE status NOT IN ('ingesting', 'converting', 'failed')")
    assert rows(empty_target, "SELECT count(*) FROM stage_work s WHERE NOT EXISTS"
                              " (SELECT FROM versions v WHERE v.version_id = s.version_id)") == [(0,)]
    assert rows(empty_target, "SELECT count(*) FROM chunks c JOIN representations r USING (version_id)"
                              " WHERE c.char_end > r.char_count") == [(0,)]
    assert differing(memory, empty_target), "the backup holds the finished import, not a moment of it"
    # the import, run again on the restored memory, finishes the work the backup caught mid-way
    again = do_import(empty_target, corpus, batch_size=2)
    assert again.counts["failed"] == 0
    assert rows(empty_target, "SELECT status, count(*) FROM versions GROUP BY 1") == [("ready", 24)]
    assert not differing(memory, empty_target)


def test_an_incremental_backup_copies_only_new_objects(ray_local, example_memory_copy, empty_target, tmp_path):
    full = tmp_path / "full"
    assert run_cli(example_memory_copy, "backup", str(full)) == 0
    before = {e["key"] for e in json.loads((full / "manifest.json").read_text())["objects"]}

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "new-note.md").write_text("# A new note\n\nAda Lovelace leads the Atlas project since 2026-02-01.\n")
    (extra / "other-note.md").write_text("# Another note\n\nGrace Hopper joined the Beacon team in March 2026.\n")
    assert do_import(example_memory_copy, extra).counts["failed"] == 0
    with psycopg.connect(example_memory_copy.dsn) as conn:
        now = {k for (k,) in conn.execute("SELECT object_key FROM content_objects"
                                          " UNION SELECT object_key FROM representations")}
    new = now - before
    assert len(new) == 4   # two originals and their two document.md

    incremental = tmp_path / "incremental"
    result = backup_job.backup(example_memory_copy, str(incremental), previous=str(full), progress=False)
    assert result.copied == len(new)
    assert {str(p.relative_to(incremental / "objects")) for p in stored_files(incremental / "objects")} == new
    manifest = json.loads((incremental / "manifest.json").read_text())
    assert {e["key"] for e in manifest["objects"] if e.get("location") == str(full)} == before
    assert manifest["incremental_from"] == str(full)

    assert run_cli(empty_target, "restore", str(incremental)) == 0
    assert not differing(example_memory_copy, empty_target)
    assert assert_objects_verified(empty_target) == len(now)


def test_the_dump_and_the_object_list_are_one_instant(memory, empty_target, tmp_path):
    """A row committed after the snapshot is in neither the object list nor the dump."""
    from sql.store import backup as backup_sql

    def add_object(digest: str) -> None:
        with psycopg.connect(memory.dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO content_objects (content_hash, size_bytes, mime, object_key)"
                         " VALUES (%s, 1, 'text/plain', %s)", (digest, f"raw/{digest[:2]}/{digest[2:4]}/{digest}"))

    early, late = hashlib.sha256(b"early").hexdigest(), hashlib.sha256(b"late").hexdigest()
    add_object(early)
    with backup_sql.snapshot(memory.dsn) as snap:
        add_object(late)
        backup_sql.dump(memory.dsn, snap.snapshot_id, tmp_path / "memory.pgdump")
    assert [k.rsplit("/", 1)[-1] for k in snap.object_keys] == [early]
    backup_sql.restore_dump(empty_target.dsn, tmp_path / "memory.pgdump")
    assert rows(empty_target, "SELECT content_hash FROM content_objects") == [(early,)]
