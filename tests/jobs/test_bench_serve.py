"""The figures of `corpusmem bench serve` from synthetic timings: no server, database or Ray."""

from __future__ import annotations

import math
import os
import threading
import time
from contextlib import ExitStack

import pytest

from jobs.bench import serve as bench_serve
from jobs.bench.serve import FLOOR, Measurement, percentile, ratio, run_load, summarize


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(100, 0, -1)]  # 1..100, unordered
    assert percentile(values, 50) == 50.0
    assert percentile(values, 95) == 95.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([0.3, 0.1, 0.2], 50) == 0.2
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(values, 0)


def test_summarize_counts_errors_and_keeps_them_in_the_percentiles():
    # 95 quick successes and 5 slow failures: the failures must weigh on p99 and be counted
    m = Measurement(name="facts_context", clients=8, latencies=[0.010] * 95 + [2.0] * 5,
                    errors=["HTTP 500: boom"] * 4 + ["ReadTimeout: timed out"], wall_seconds=4.0,
                    load_before=(1.5, 1.0, 0.5), load_after=(2.25, 1.1, 0.6))
    row = summarize(m)
    assert row["requests"] == 100 and row["errors"] == 5
    assert row["error_samples"] == ["HTTP 500: boom", "ReadTimeout: timed out"]
    assert row["p50_ms"] == 10.0 and row["p95_ms"] == 10.0 and row["p99_ms"] == 2000.0
    assert row["requests_per_s"] == 25.0
    assert row["load_before"] == [1.5, 1.0, 0.5] and row["load_after"] == [2.25, 1.1, 0.6]


def test_ratio_is_facts_p95_over_the_floor_p95_at_the_given_clients():
    rows = [{"operation": FLOOR, "clients": 1, "p95_ms": 1.0},
            {"operation": "facts_context", "clients": 1, "p95_ms": 50.0},
            {"operation": FLOOR, "clients": 8, "p95_ms": 4.0},
            {"operation": "facts_context", "clients": 8, "p95_ms": 18.0}]
    assert ratio(rows, 8) == 4.5
    assert ratio(rows, 1) == 50.0
    with pytest.raises(KeyError):
        ratio(rows, 4)


def test_run_load_times_every_request_runs_clients_at_once_and_counts_failures():
    active, peak, lock = 0, 0, threading.Lock()
    opened: list[int] = []

    def open_client(stack: ExitStack):
        opened.append(1)
        stack.callback(opened.pop)  # closed when the run ends

        def call(request: int) -> str | None:
            nonlocal active, peak
            with lock:
                active += 1
                peak = max(peak, active)
            time.sleep(0.045)
            busy = time.perf_counter()
            while time.perf_counter() - busy < 0.005:   # some CPU for the accounting to see
                pass
            with lock:
                active -= 1
            if request % 10 == 0:
                return f"HTTP 503: request {request}"
            if request % 10 == 1:
                raise ConnectionError("refused")
            return None
        return call

    m = run_load("resolve_entity", open_client, list(range(40)), clients=4)
    assert len(m.latencies) == 40 and all(t >= 0.05 for t in m.latencies)
    assert len(m.errors) == 8
    assert sum(e.startswith("ConnectionError") for e in m.errors) == 4
    assert peak == 4
    assert opened == []
    # 40 requests of 50 ms over 4 clients take about 0.5 s, not the 2 s of one client
    assert 0.5 <= m.wall_seconds < 1.5
    # about 5 ms of CPU a request, read at the clock's grain (10 ms ticks over the run)
    assert m.cpu_ms_per_request["total"] >= m.cpu_ms_per_request["benchmark clients"] >= 2.0


def test_corpus_sizes_reach_the_target_from_both_generators():
    notes, docs = bench_serve.corpus_sizes(100_000)
    expected = notes * bench_serve._CLAIMS_PER_NOTE + docs * bench_serve._CLAIMS_PER_DOC
    assert expected >= 100_000 and notes > 0 and docs > 0
    assert notes * bench_serve._CLAIMS_PER_NOTE > docs * bench_serve._CLAIMS_PER_DOC


def test_render_states_the_target_and_errors():
    runs = [summarize(Measurement(name=name, clients=c, latencies=[lat] * 10, wall_seconds=1.0))
            for c in (1, 8) for name, lat in ((FLOOR, 0.002), ("facts_context", 0.030),
                                              ("claims_and_sources_context", 0.020), ("resolve_entity", 0.005))]
    results = {"memory": {"documents": 10, "claims": 100, "entities": 5, "facts": 7,
                          "generation": {"generation_seconds": 12.0, "notes": 8, "documents": 2,
                                         "import_seconds": 11.0, "reused": True,
                                         "interrupted": "stopped at 100 claims"}},
               "machine": {"cpus": 2, "load_at_start": [1.0, 1.0, 1.0], "load_at_end": [2.0, 1.0, 1.0]},
               "serve": {"replicas": 1, "pool_retrieval": 4, "start_seconds": 30.0},
               "runs": runs, "clients": 8, "target_ratio": 5.0,
               "ratio_facts_context_p95_over_floor_p95": round(ratio(runs, 8), 2)}
    text = bench_serve.render(results)
    assert "facts_context p95 / bare pgvector p95 at 8 clients: 15.00 (target ≤ 5: NOT met)" in text
    assert "errors: 0" in text and "generated earlier in 12 s" in text
    assert "memory note: stopped at 100 claims" in text


def test_server_cpu_is_the_servers_processes_and_postgresql():
    cpu = {"postgres": 11.3, "api replica": 9.3, "ray (other)": 1.8, "benchmark clients": 1.1,
           "the server's other processes": 0.2, "other": 0.4, "total": 24.1}
    m = Measurement(name="facts_context", clients=1, latencies=[0.02] * 4, wall_seconds=1.0, cpu_ms_per_request=cpu)
    row = summarize(m)
    assert row["server_cpu_ms_per_request"] == 22.6
    assert summarize(Measurement(name="facts_context", clients=1))["server_cpu_ms_per_request"] is None
    results = {"memory": {"documents": 1, "claims": 1, "entities": 1, "facts": 1, "generation": {"reused": True}},
               "machine": {"cpus": 2, "load_at_start": [0, 0, 0], "load_at_end": [0, 0, 0]},
               "serve": {"replicas": 1, "pool_retrieval": 4, "start_seconds": 1.0},
               "runs": [row], "clients": 8, "target_ratio": 5.0, "ratio_facts_context_p95_over_floor_p95": 1.0}
    assert "facts_context                 1 clients: server 22.6, total 24.1" in bench_serve.render(results)


def test_operation_bodies_follow_the_client_wire_shapes():
    q = bench_serve.Queries(names=["Ravi Shah"], claim_texts=["Ravi Shah leads the billing migration 1."],
                            claim_vectors=[[0.1]], entity_ids=["6f1c0c1e-0000-5000-8000-000000000001"])
    assert bench_serve.operation_bodies("resolve_entity", q) == [{"name": "Ravi Shah"}]
    assert bench_serve.operation_bodies("graph_neighborhood", q) == [
        {"entity_id": "6f1c0c1e-0000-5000-8000-000000000001", "hops": 2, "limit": 50}]
    # a part keeps each entity's name and id together
    assert bench_serve.Queries(["a", "b"], ["x", "y"], [[0], [1]], ["ida", "idb"]).part(1, 1) == \
        bench_serve.Queries(["b"], ["y"], [[1]], ["idb"])
    assert bench_serve.operation_bodies("claims_and_sources_context", q) == [
        {"query": "Ravi Shah leads the billing migration 1."}]
    assert bench_serve.operation_bodies("facts_context", q)[0]["time"] == {"mode": "current"}
    with pytest.raises(ValueError):
        bench_serve.operation_bodies("combined_context", q)


def test_cpu_per_request_counts_what_each_process_spent():
    import subprocess
    import sys

    from jobs.bench import cpu_use

    before = cpu_use.snapshot(server=os.getpid())
    # a live process that burns 0.4 s of CPU, then waits to be read; and this process, 0.3 s
    # (read back in clock ticks, so the checks leave a margin)
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.4: pass\nprint('done', flush=True)\n"
                              "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "done\n"
        spin = time.process_time()
        while time.process_time() - spin < 0.3:
            pass
        cost = cpu_use.per_request_ms(before, cpu_use.snapshot(server=os.getpid()), requests=10)
        outside = cpu_use.per_request_ms(before, cpu_use.snapshot(), requests=10)
    finally:
        child.communicate("")
    # the child: 0.4 s over 10 requests, the server's when under the server's root, else not
    assert cost[cpu_use.SERVER_OTHER] >= 30.0 and outside[cpu_use.NOT_THE_SERVER] >= 30.0
    assert cost["benchmark clients"] >= 20.0      # this process: 0.3 s over 10 requests
    assert cost["total"] >= cost[cpu_use.SERVER_OTHER] + cost["benchmark clients"] - 0.2
    assert list(cost)[-1] == "total"


def test_cpu_components_are_named_from_the_command_line():
    from jobs.bench import cpu_use

    class Fake:
        def __init__(self, pid: int, cmdline: list[str], name: str = "python") -> None:
            self.pid, self._cmdline, self._name = pid, cmdline, name

        def cmdline(self) -> list[str]:
            return self._cmdline

        def name(self) -> str:
            return self._name

    assert cpu_use.component(Fake(1, ["ray::ServeReplica:corpusmem:Api"])) == "api replica"
    assert cpu_use.component(Fake(1, ["ray::ServeReplica:corpusmem:QueryEmbedder"])) == "query embedder"
    assert cpu_use.component(Fake(1, ["ray::ProxyActor"])) == "serve proxy"
    assert cpu_use.component(Fake(1, ["postgres: postgres corpusmem [local] idle"])) == "postgres"
    assert cpu_use.component(Fake(1, [], name="bash")) == "other"
    assert cpu_use.component(Fake(7, ["python", "-m", "jobs.cli", "serve"]), frozenset({7})) == \
        "the server's other processes"


def test_the_least_a_read_costs_is_its_parts_measured_alone():
    def run(name: str, cpu: dict[str, float]) -> dict:
        return summarize(Measurement(name=name, clients=1, latencies=[0.01] * 4, wall_seconds=1.0,
                                     cpu_ms_per_request=cpu))

    served = run(bench_serve.SERVED_ONE_ROW, {"api replica": 1.5, "postgres": 0.4, "benchmark clients": 0.9,
                                              "total": 2.8})
    searches = {"facts": run("graph_search_facts", {"postgres": 2.5, "benchmark clients": 0.5, "total": 3.0}),
                "claims": run("graph_search_claims", {"postgres": 2.0, "ray (other)": 0.2, "total": 2.2}),
                "chunks": run("graph_search_chunks", {"postgres": 3.0, "total": 3.0})}
    least = bench_serve.least_parts(served, searches, 2.25)
    # the served request counts on the server (its clients apart); a search counts PostgreSQL alone
    assert least["served_one_row_ms"] == 1.9 and least["graph_search_ms"] == {"facts": 2.5, "claims": 2.0, "chunks": 3.0}
    assert least["by_operation"] == {"facts_context": 6.7, "claims_and_sources_context": 9.2}
    spent = [{"operation": "facts_context", "clients": 1, "server_cpu_ms_per_request": 18.0},
             {"operation": "facts_context", "clients": 8, "server_cpu_ms_per_request": 30.0},
             {"operation": "claims_and_sources_context", "clients": 1, "server_cpu_ms_per_request": 24.0}]
    text = bench_serve.render_least(least, spent)
    assert "facts_context                least 6.7, spent 18.0 (target ≤ 15): 11.3 of its own work" in text
    assert "claims_and_sources_context   least 9.2, spent 24.0 (target ≤ 15): 14.8 of its own work" in text
    assert "graph search by meaning facts 2.5, claims 2.0, chunks 3.0" in text
