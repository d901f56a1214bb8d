"""corpusmem on a Ray cluster of two nodes on this machine (`tests/support/ray_cluster.py`): the authority
from `corpusmem db serve`, the objects in an S3-compatible server (moto's, over HTTP), imports
that end with the rows of a single-node import, a worker node lost in the middle of one, and
corpusmem's metrics on the nodes' export ports."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pyarrow.fs as pafs
import pytest

from jobs.runtime import PROJECT_ROOT
from sql.read import digest_queries
from sql.store import embedded
from tests.support.memory import SUITE_EXECUTION

pytestmark = pytest.mark.integration

CORPUSMEM = [sys.executable, "-m", "jobs.cli"]
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_EC2_METADATA_DISABLED": "true"}
# What two imports of the same corpus must agree on, row for row (ids are content-derived).
SAME_ROWS = {
    "documents": "SELECT doc_id, source_ref FROM documents ORDER BY 1",
    "versions": "SELECT version_id, content_hash, status FROM versions ORDER BY 1",
    "chunks": "SELECT version_id, ord, char_start, char_end, text_hash FROM chunks ORDER BY 1, 2",
    "claims": "SELECT version_id, char_start, char_end, claim_text FROM claims ORDER BY 1, 2, 3, 4",
    "facts": "SELECT kind, label, valid_from::text, valid_until::text FROM facts ORDER BY 1, 2, 3, 4",
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CORPUSMEM_", "RAY_"))}
    # embedded as the one-node example memory is, whatever `auto` would calibrate on this machine
    return {**env, **AWS, "PYTHONPATH": str(PROJECT_ROOT), "CORPUSMEM_EMBEDDING_EXECUTION": SUITE_EXECUTION, **extra}


@pytest.fixture(scope="module")
def s3_store() -> str:
    """An S3-compatible server with a bucket; the URI prefix of that bucket."""
    from moto.server import ThreadedMotoServer

    os.environ.update(AWS)   # this process reads the bucket too
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # one line per S3 request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    fs = pafs.S3FileSystem(endpoint_override=f"http://{host}:{port}", region="us-east-1",
                           allow_bucket_creation=True)
    fs.create_dir("corpusmem")
    yield f"s3://corpusmem/{{prefix}}?endpoint_override=http://{host}:{port}&region=us-east-1"
    server.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> str:
    """`corpusmem db serve` on a free port: its DSN, from its first line of output."""
    home = tmp_path_factory.mktemp("served-home")
    from tests.support.ports import free_port

    proc = subprocess.Popen([*CORPUSMEM, "db", "serve", "--host", "127.0.0.1", "--port", str(free_port())],
                            env=_env(CORPUSMEM_HOME=str(home)), cwd=PROJECT_ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline().strip()
    assert first.startswith("CORPUSMEM_DSN=postgresql://postgres:"), (first, proc.stderr.read() if proc.poll() else "")
    yield first.split("=", 1)[1]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0


class RayCluster:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.ray_cluster"], env=_env(), cwd=PROJECT_ROOT,
                                     text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        hello = json.loads(self.proc.stdout.readline())
        self.address, self.metrics_ports, self.dashboard = hello["address"], hello["metrics_ports"], hello["dashboard"]

    def command(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        self.metrics_ports = json.loads(self.proc.stdout.readline())["metrics_ports"]

    def close(self) -> None:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(60)


@pytest.fixture(scope="module")
def cluster(ray_local) -> RayCluster:
    # after the session's own Ray: a `ray.init()` without an address joins the latest cluster
    # started on this machine, which would otherwise be this one
    c = RayCluster()
    yield c
    c.close()


def _database(served: str, name: str) -> str:
    embedded.ensure_database(served, name)
    return psycopg.conninfo.make_conninfo(served, dbname=name)


def _import(cluster: RayCluster, dsn: str, store: str, corpus: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [*CORPUSMEM, "import", str(corpus), "--modified-at-from", "path", "--no-progress", "--batch-size", "4"],
        env=_env(RAY_ADDRESS=cluster.address, CORPUSMEM_DSN=dsn, CORPUSMEM_OBJECT_STORE=store,
                 CORPUSMEM_HOME=str(popen.pop("home"))),
        cwd=PROJECT_ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def _rows(dsn: str) -> dict[str, list[tuple]]:
    with psycopg.connect(dsn) as conn:
        return {name: conn.execute(q).fetchall() for name, q in SAME_ROWS.items()}


def _scrape(ports: dict[str, int]) -> dict[str, dict[str, float]]:
    """corpusmem's series on each node's metrics export port: node → series (with labels) → value."""
    out: dict[str, dict[str, float]] = {}
    for node, port in ports.items():
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        out[node] = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                     if line.startswith("ray_corpusmem_")}
    return out


def _total(scraped: dict[str, dict[str, float]], name: str, **labels: str) -> float:
    return sum(v for series in scraped.values() for k, v in series.items()
               if k.split("{")[0] == name and all(f'{l}="{v2}"' in k for l, v2 in labels.items()))


def test_a_submitted_job_keeps_its_name_and_reports_its_submission_id(cluster, monkeypatch):
    from ray.job_submission import JobStatus, JobSubmissionClient

    monkeypatch.delenv("RAY_ADDRESS")   # the client takes it over the address it is given
    client = JobSubmissionClient(cluster.dashboard)
    deadline = time.monotonic() + 120
    while True:
        try:
            submission = client.submit_job(
                entrypoint=f"{sys.executable} -c 'from jobs import runtime; runtime.init_ray(job_name=\"ignored\"); "
                           "print(runtime.job_info())'",
                runtime_env={"working_dir": str(PROJECT_ROOT), "excludes": [".venv", ".git", ".corpusmem", "examples"]},
                metadata={"job_name": "corpusmem import s3://bucket/notes"})
            break
        except RuntimeError as err:   # the head's job agent registers a few seconds after its node
            assert "No available agent" in str(err) and time.monotonic() < deadline, err
            time.sleep(2)
    while client.get_job_status(submission) not in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
        assert time.monotonic() < deadline, client.get_job_logs(submission)
        time.sleep(1)
    logs = client.get_job_logs(submission)
    assert client.get_job_status(submission) == JobStatus.SUCCEEDED, logs
    assert f"'submission_id': '{submission}'" in logs and "'job_name': 'corpusmem import s3://bucket/notes'" in logs
    assert client.get_job_info(submission).metadata["job_name"] == "corpusmem import s3://bucket/notes"


@dataclass(frozen=True)
class TwoNodeImport:
    dsn: str     # the memory it made, in the served authority
    store: str   # its object store, in the bucket
    out: str     # the command's report


@pytest.fixture(scope="module")
def two_node_import(cluster, served, s3_store, example_corpus, tmp_path_factory) -> TwoNodeImport:
    """The example corpus imported on the two nodes, once for the tests that check it and read it."""
    dsn = _database(served, "cluster_import")
    store = s3_store.format(prefix="objects")
    proc = _import(cluster, dsn, store, example_corpus, home=tmp_path_factory.mktemp("two-node-home"))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return TwoNodeImport(dsn, store, out)


def test_two_nodes_import_into_the_served_authority_and_s3_the_rows_of_one_node(
        cluster, two_node_import, example_memory, example_corpus):
    dsn, store, out = two_node_import.dsn, two_node_import.store, two_node_import.out
    assert "documents seen   11" in out and "failed           0" in out
    # the report names the job and says which node ran what; both nodes ran part of it
    assert re.search(rf"ray job +\w+ \('corpusmem import {re.escape(str(example_corpus))}'\)", out), out
    nodes = re.findall(r"^    node (\S+ \(\w+\)): (.*)$", out, re.M)
    assert len(nodes) == 2, out

    ours, single = _rows(dsn), _rows(example_memory.dsn)
    for table in SAME_ROWS:
        assert ours[table] == single[table], table
    assert len(ours["claims"]) > 20 and len(ours["facts"]) > 5
    with psycopg.connect(dsn) as two_nodes, psycopg.connect(example_memory.dsn) as one_node:
        assert not digest_queries.differences(two_nodes, one_node)   # every view of memory_v1

    # every object is in the bucket, none on this machine
    fs, root = pafs.FileSystem.from_uri(store)
    objects = [f.path for f in fs.get_file_info(pafs.FileSelector(root, recursive=True)) if f.type == pafs.FileType.File]
    with psycopg.connect(dsn) as conn:
        keys = {k for (k,) in conn.execute("SELECT object_key FROM content_objects")}
    assert keys and {f"{root}/{k}" for k in keys} <= set(objects)
    assert any("/md/" in p for p in objects)

    # corpusmem's own metrics, exported by the nodes (Ray's exporter adds its `ray_` namespace);
    # a node's agent exports what its workers recorded every few seconds
    deadline, scraped = time.monotonic() + 60, {}
    while time.monotonic() < deadline:
        scraped = _scrape(cluster.metrics_ports)
        if _total(scraped, "ray_corpusmem_documents_total", stage="write") >= 11 and \
                _total(scraped, "ray_corpusmem_facts_total") > 0:
            break
        time.sleep(2)
    assert _total(scraped, "ray_corpusmem_documents_total", stage="write") == 11, scraped
    assert _total(scraped, "ray_corpusmem_chunks_total") == len(ours["chunks"])
    assert _total(scraped, "ray_corpusmem_claims_total") == len(ours["claims"])
    assert _total(scraped, "ray_corpusmem_facts_total") >= len(ours["facts"])
    # (Ray exports a histogram's sum from its buckets' midpoints: counts are exact, sums are not)
    assert _total(scraped, "ray_corpusmem_embed_batch_size_count") >= 1
    assert _total(scraped, "ray_corpusmem_embed_batch_seconds_count") == _total(
        scraped, "ray_corpusmem_embed_batch_size_count")
    assert _total(scraped, "ray_corpusmem_extract_batch_size_count", extractor="RulesExtractor") >= 1
    assert _total(scraped, "ray_corpusmem_extract_batch_seconds_sum") > 0
    assert all(series for series in scraped.values()), "a node exported none of corpusmem's metrics"


def test_generated_timelines_give_the_same_memory_on_two_nodes_as_on_one(cluster, served, s3_store, tmp_path):
    """Moves between teams, dates relative to the note's own or without a year, plans dated twice,
    roles (`synthetic.generate_timelines`), two seeds: every view of memory_v1 hashes the same
    after an import on the two nodes as after one on a Ray of its own. Each seed holds the shape
    a held-out corpus lost a fact on: a person "has been on" a team "since yesterday" in one note
    and "moved from" it to another in a later one."""
    from jobs.bench import synthetic

    corpus = tmp_path / "corpus"
    for seed in (5, 7):
        joined, moved = {}, []
        for n, doc in enumerate(synthetic.generate_timelines(10, seed=seed)):
            path = corpus / f"seed-{seed}" / doc.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(doc.text)
            joined.update({m.groups(): n for m in re.finditer(r"(.+) has been on the (.+) since yesterday", doc.text)
                           if m.groups() not in joined})
            moved += [(m.groups(), n) for m in re.finditer(r"(.+) moved from the (.+?) to the", doc.text)]
        assert any(joined.get(who, n) < n for who, n in moved), seed
    two, one = _database(served, "timelines_two_nodes"), _database(served, "timelines_one_node")
    proc = _import(cluster, two, s3_store.format(prefix="timelines"), corpus, home=tmp_path / "two")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    single = subprocess.run([*CORPUSMEM, "import", str(corpus), "--modified-at-from", "path", "--no-progress"],
                            env=_env(RAY_ADDRESS="local", CORPUSMEM_DSN=one, CORPUSMEM_HOME=str(tmp_path / "one"),
                                     CORPUSMEM_OBJECT_STORE=str(tmp_path / "objects")),
                            cwd=PROJECT_ROOT, text=True, capture_output=True, timeout=600)
    assert single.returncode == 0, single.stderr[-3000:]
    with psycopg.connect(two) as two_nodes, psycopg.connect(one) as one_node:
        held = digest_queries.view_digests(one_node)
        assert held["facts_current"][0] > 5, held
        assert not digest_queries.differences(two_nodes, one_node)


def test_the_read_api_on_the_cluster_serves_the_shared_authority_and_counts_its_requests(
        cluster, two_node_import, tmp_path):
    """`corpusmem serve` joins the cluster with the served authority's DSN; its requests are counted
    by operation (`ray.serve.metrics`) on the nodes' export ports."""
    import httpx

    from tests.support.ports import free_port
    from tests.support.waiting import wait_until_serving

    port = free_port()
    proc = subprocess.Popen([*CORPUSMEM, "serve", "--port", str(port)], cwd=PROJECT_ROOT, text=True,
                            env=_env(RAY_ADDRESS=cluster.address, CORPUSMEM_DSN=two_node_import.dsn,
                                     CORPUSMEM_HOME=str(tmp_path), CORPUSMEM_OBJECT_STORE=two_node_import.store),
                            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "serve.log", "w"), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, proc, tmp_path / "serve.log", timeout_s=240)
        answer = httpx.post(f"{url}/operations/facts_context", json={"query": "billing migration"}, timeout=60)
        assert answer.status_code == 200 and answer.json()["facts"], answer.text[:3000]   # why, if it ever fails
        assert httpx.get(f"{url}/documents", timeout=60).status_code == 200
        assert httpx.get(f"{url}/no/such/route", timeout=60).status_code == 404
        deadline, scraped = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            scraped = _scrape(cluster.metrics_ports)
            if _total(scraped, "ray_corpusmem_read_requests_total", operation="facts_context") >= 1:
                break
            time.sleep(2)
        assert _total(scraped, "ray_corpusmem_read_requests_total", operation="facts_context", status="200") == 1
        assert _total(scraped, "ray_corpusmem_read_requests_total", operation="GET /documents") == 1
        assert _total(scraped, "ray_corpusmem_read_requests_total", operation="unmatched", status="404") == 1
        assert _total(scraped, "ray_corpusmem_read_latency_seconds_count", operation="facts_context") == 1
        assert _total(scraped, "ray_corpusmem_read_latency_seconds_sum", operation="facts_context") > 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def test_a_cluster_refuses_a_local_object_store_and_the_embedded_database(cluster, served, example_corpus, tmp_path):
    local = _import(cluster, served, str(tmp_path / "objects"), example_corpus, home=tmp_path)
    out, err = local.communicate(timeout=300)
    assert local.returncode == 2 and "needs a shared object store" in err and str(tmp_path / "objects") in err
    env = _env(RAY_ADDRESS=cluster.address, CORPUSMEM_HOME=str(tmp_path))
    embedded_db = subprocess.run([*CORPUSMEM, "import", str(example_corpus), "--no-progress"], env=env,
                                 cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert embedded_db.returncode == 2 and "needs a shared PostgreSQL" in embedded_db.stderr
    assert "corpusmem db serve" in embedded_db.stderr
    assert not (tmp_path / "objects").exists()


def test_a_worker_node_lost_mid_import_loses_and_duplicates_nothing(
        cluster, served, s3_store, example_memory, example_corpus, tmp_path):
    dsn = _database(served, "cluster_node_lost")
    store = s3_store.format(prefix="node-lost")
    proc = _import(cluster, dsn, store, example_corpus, home=tmp_path)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        with psycopg.connect(dsn) as conn:
            started = conn.execute("SELECT to_regclass('versions') IS NOT NULL").fetchone()[0] and \
                conn.execute("SELECT count(*) FROM versions").fetchone()[0] >= 2
        if started:
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the import ended before the node could be removed"
    cluster.command("remove-worker")
    out, err = proc.communicate(timeout=600)
    cluster.command("add-worker")
    if proc.returncode != 0 or "failed           0" not in out:
        # the run may fail with its node; a re-run resumes it
        again = _import(cluster, dsn, store, example_corpus, home=tmp_path)
        out, err = again.communicate(timeout=600)
        assert again.returncode == 0, err[-3000:]
    assert _rows(dsn) == _rows(example_memory.dsn)
