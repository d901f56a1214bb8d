"""`corpusmem costs` and `GET /ops/cost-export/v1` read the same cost ledger and agree with it and
with each other; the embedder's device seconds are in it; re-importing unchanged sources adds no
cost; `--since` filters; bad inputs are clear errors."""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from typing import Any

import pandas as pd
import psycopg
import pytest
from fastapi.testclient import TestClient

from serve import cost_export
from serve.app import build_app
from serve.replica import DeploymentInfo, open_pools
from tests.support.apps import no_embedder
from tests.support.cli import corpusmem
from tests.support.memory import do_import

pytestmark = pytest.mark.integration

READ, WRITE = "read-secret-for-the-cost-tests", "write-secret-for-the-cost-tests"
DEPLOYMENT = "00000000-0000-0000-0000-0000000000cc"


def _ledger(dsn: str, where: str = "true", *params: Any) -> dict[tuple[str, str, str], list[float]]:
    """(stage, backend, model) → [rows, calls, tokens_in, tokens_out, device_seconds], from the table."""
    with psycopg.connect(dsn) as conn:
        return {(s, b, m): [n, c, ti, to, d] for s, b, m, n, c, ti, to, d in conn.execute(
            "SELECT stage, backend, model, count(*), sum(calls), sum(tokens_in), sum(tokens_out),"
            f" sum(device_seconds) FROM cost_ledger WHERE {where} GROUP BY 1, 2, 3", params)}


def _csv(path) -> dict[tuple[str, str, str], list[float]]:
    frame = pd.read_csv(path)
    return {(r.stage, r.backend, r.model): [r.receipts, r.calls, r.tokens_in, r.tokens_out, r.device_seconds]
            for r in frame.itertuples()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k][:4] == b[k][:4] and abs(a[k][4] - b[k][4]) < 1e-9 for k in a)


@pytest.fixture
def api(example_memory_copy):
    pools = open_pools(example_memory_copy.dsn, general=2, retrieval=1, graph=1)
    credentials = tuple((hashlib.sha256(secret.encode()).hexdigest(), scope)
                        for secret, scope in ((READ, "read"), (WRITE, "write")))

    info = DeploymentInfo(DEPLOYMENT, "test", "all-MiniLM-L6-v2", example_memory_copy.object_store_uri, 1 << 20,
                          credentials)
    with TestClient(build_app(pools, info, no_embedder)) as client:
        yield client


def _get(api: TestClient, params: dict[str, Any] | None = None, secret: str | None = WRITE):
    time.sleep(cost_export.MIN_INTERVAL_S)   # one request per second
    return api.get("/ops/cost-export/v1", params=params or {},
                   headers={"Authorization": f"Bearer {secret}"} if secret else {})


def test_costs_and_the_cost_export_agree_with_the_ledger(example_memory_copy, api, tmp_path, monkeypatch, capsys):
    settings = example_memory_copy
    ledger = _ledger(settings.dsn)
    with psycopg.connect(settings.dsn) as conn:
        [run] = [r[0] for r in conn.execute("SELECT run_id::text FROM import_runs")]
        pin = conn.execute("SELECT embedding_model FROM deployment").fetchone()[0]
    # the embedder's seconds are recorded, under the pinned model, for every document it encoded
    [embed] = [k for k in ledger if k[0] == "embed"]
    assert embed[2] == pin and 0 < ledger[embed][0] <= 11 and ledger[embed][1] > 0 and ledger[embed][4] > 0

    out = tmp_path / "costs.csv"
    assert corpusmem(settings, monkeypatch, "costs", "--csv", str(out)) == 0
    shown = capsys.readouterr().out
    assert f"{run[:8]}" in shown and "embed" in shown and pin[-32:] in shown
    frame = pd.read_csv(out)
    assert set(frame["run_id"]) == {run}   # every cost of the import is its run's
    assert _same(_csv(out), ledger)

    # the export answers only for receipts older than its horizon, a minute before the clock
    first = _get(api)
    assert first.status_code == 200, first.text
    page = first.json()
    assert page["contract"] == "rememberstack.cost_export.v1" and page["deployment_id"] == DEPLOYMENT
    with psycopg.connect(settings.dsn) as conn:
        older = conn.execute("SELECT count(*) FROM cost_ledger WHERE occurred_at < %s",
                             (pd.Timestamp(page["horizon"]).to_pydatetime(),)).fetchone()[0]
        assert len(page["receipts"]) == older
        # an hour later, for the ledger and the run alike
        conn.execute("UPDATE cost_ledger SET occurred_at = occurred_at - interval '1 hour'")
        conn.execute("UPDATE import_runs SET started_at = started_at - interval '1 hour',"
                     " finished_at = finished_at - interval '1 hour'")

    receipts, cursor, pages = [], None, 0
    size = max(1, sum(v[0] for v in ledger.values()) // 3)
    while True:
        page = _get(api, {"limit": size} | ({"cursor": cursor} if cursor else {})).json()
        assert page["cursor"] == (cursor or cost_export.encode_cursor(0))
        if not page["receipts"]:
            assert page["next_cursor"] == cursor   # polled later, it goes on from here
            break
        receipts += page["receipts"]
        cursor, pages = page["next_cursor"], pages + 1
    assert pages >= 3 and len({r["cost_id"] for r in receipts}) == len(receipts)
    sums: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for r in receipts:
        assert r["source"] == "worker" and r["run_id"] == run and r["deployment_id"] == DEPLOYMENT
        assert r["cost_usd"] is None and r["surface"] is None
        for i, v in enumerate((1, r["calls"], r["tokens_in"], r["tokens_out"], r["device_seconds"])):
            sums[(r["stage"], r["backend"], r["model_name"])][i] += v
    assert _same(dict(sums), ledger)
    assert _same(_csv(out), dict(sums))


def test_the_cost_export_refuses_what_it_should(example_memory_copy, api):
    assert _get(api, secret=None).status_code == 401
    assert _get(api, secret=READ).status_code == 403   # an operator's route: `write` scope
    for bad in ("not-a-cursor", cost_export.encode_cursor(-1), "eyJhZnRlciI6ICJ4In0"):
        answer = _get(api, {"cursor": bad})
        assert answer.status_code == 422 and answer.json() == {"detail": "malformed cursor"}, bad
    assert _get(api, {"limit": 501}).status_code == 422
    time.sleep(cost_export.MIN_INTERVAL_S)
    answers = [api.get("/ops/cost-export/v1", headers={"Authorization": f"Bearer {WRITE}"}).status_code
               for _ in range(2)]
    assert answers == [200, 429]


def test_since_filters_and_a_bad_since_is_refused(example_memory_copy, tmp_path, monkeypatch, capsys):
    settings = example_memory_copy
    with psycopg.connect(settings.dsn) as conn:
        # spread the receipts over two days, so that a day splits them
        conn.execute("UPDATE cost_ledger SET occurred_at = '2026-03-01T12:00:00Z'::timestamptz"
                     " + (cost_id % 2) * interval '1 day'")
    out = tmp_path / "since.csv"
    assert corpusmem(settings, monkeypatch, "costs", "--since", "2026-03-02", "--csv", str(out)) == 0
    later = _ledger(settings.dsn, "occurred_at >= '2026-03-02T00:00:00Z'")
    assert later and later != _ledger(settings.dsn)
    assert _same(_csv(out), later)
    capsys.readouterr()

    assert corpusmem(settings, monkeypatch, "costs", "--since", "2026-03-02T12:00:01+00:00") == 0
    assert "no costs recorded since 2026-03-02T12:00:01+00:00" in capsys.readouterr().out

    assert corpusmem(settings, monkeypatch, "costs", "--since", "yesterday", "--csv", str(tmp_path / "no.csv")) == 2
    assert "corpusmem costs: --since 'yesterday' is not a date" in capsys.readouterr().err
    assert not (tmp_path / "no.csv").exists()
    assert corpusmem(settings, monkeypatch, "costs", "--csv", str(tmp_path / "missing" / "c.csv")) == 2
    assert "does not exist" in capsys.readouterr().err


def test_reimporting_unchanged_sources_adds_no_cost(example_memory_copy, ray_local, example_corpus):
    before = _ledger(example_memory_copy.dsn)
    report = do_import(example_memory_copy, example_corpus, modified_at_from="path")
    assert report.counts["new_versions"] == 0
    assert _ledger(example_memory_copy.dsn) == before
