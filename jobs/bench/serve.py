"""`corpusmem bench serve`: read-API latency under 1 and 8 clients against a bare pgvector floor.

A generated memory of at least `--claims` claims (dated notes about a recurring cast, so entities
hold facts, plus longer team documents) is imported once; with `--keep DIR` a later run finds it
and skips the import. `corpusmem serve` is then started on it as a child process, and each read
operation is timed over HTTP with queries drawn from the memory's own entity names and claim texts,
as is an entity's two-hop neighbourhood (`/graph/neighborhood`) from the memory's own entities.
In the same run a bare nearest-neighbour query over the same claim vectors, through psycopg with
no API in between, gives the floor that the API's latency is compared with.

Also in the same run, with one client, the parts of a read that no change to its own work takes
away, each measured alone (`least_parts`): a request served through the same door that reads one
row (`GET /healthz`), the question's encoding by the memory's own execution on one thread, as the
replica encodes it, and the graph searches by meaning at the read's candidate counts. Their sum is
the least a read can cost on this machine; what the read spends beyond it is its own work.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs import runtime, shutdown
from jobs.bench import cpu_use, synthetic

OPERATIONS = ("facts_context", "claims_and_sources_context", "resolve_entity", "graph_neighborhood")
# The route of each operation that is not one of the assured `/operations/{name}`: an entity's
# two-hop neighbourhood, the walk an agent makes from a name it resolved.
_ROUTES = {"graph_neighborhood": "/graph/neighborhood"}
FLOOR = "bare_pgvector"
CLIENTS = (1, 8)
# the target: facts_context p95 at 8 clients within this multiple of the floor's p95
TARGET_RATIO = 5.0
# ... and a read's CPU, on the server, at one client
TARGET_CPU_MS = 15.0

# The least parts (module docstring): a request through the same door that reads one row, and
# each operation's graph searches by meaning, by table.
SERVED_ONE_ROW = "served_one_row"
GRAPH_SEARCHES = {"facts_context": ("facts",), "claims_and_sources_context": ("claims", "chunks")}

# Claims per generated document, as measured by `bench facts` and `bench import` on these
# generators (90,127 claims from 20,000 notes; 31,288 from 2,000 documents). They only size the
# corpus: the memory is checked against the target after the import.
_CLAIMS_PER_NOTE = 4.5
_CLAIMS_PER_DOC = 15.6
# Most claims come from the notes, whose cast recurs across documents and so gives entities with
# many facts (what facts_context and resolve_entity work on); the rest from longer documents.
_NOTES_SHARE = 0.85
_MARGIN = 1.08

_GENERATION_FILE = "generation.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench serve` (the `what` positional and `--keep`/`--json` are shared)."""
    parser.add_argument("--claims", type=int, default=100_000,
                        help="serve: claims the generated memory holds at least (default 100000)")
    parser.add_argument("--requests", type=int, default=200,
                        help="serve: requests per operation and client count (default 200)")
    parser.add_argument("--clients", type=int, default=8,
                        help="serve: concurrent clients of the loaded run, beside 1 (default 8)")
    parser.add_argument("--seed", type=int, default=5, help="serve, docs: seed of the query draw or of the entities drawn (default 5)")


def corpus_sizes(claims: int) -> tuple[int, int]:
    """Generated notes and documents expected to give at least `claims` claims."""
    notes = math.ceil(claims * _MARGIN * _NOTES_SHARE / _CLAIMS_PER_NOTE)
    docs = math.ceil(claims * _MARGIN * (1 - _NOTES_SHARE) / _CLAIMS_PER_DOC)
    return notes, docs


# --- the memory ---------------------------------------------------------------------------------

def _dsn(home: Path) -> str:
    from sql.store import embedded

    return embedded.start((home / "pg").resolve())


def memory_claims(home: Path) -> int | None:
    """Claims in the memory under `home` if its last import succeeded, else None."""
    if not (home / "pg").exists():
        return None
    from sql.read import bench_queries
    from sql.store import authority as store

    with store.connect(_dsn(home)) as conn:
        return bench_queries.claims_if_imported(conn)


def ensure_memory(work: Path, claims: int) -> dict[str, Any]:
    """A memory of at least `claims` claims under `work/home`: found, or generated and imported.

    Returns what the generation cost (read back from `work/generation.json` when reused)."""
    from jobs.bench import imports as bench

    home, record = work / "home", work / _GENERATION_FILE
    found = memory_claims(home)
    if found is not None and found >= claims:
        print(f"reusing the memory in {home}: {found} claims (target {claims})", file=sys.stderr, flush=True)
        earlier = json.loads(record.read_text()) if record.exists() else {"generation_seconds": None}
        return {**earlier, "claims": found, "reused": True}
    if home.exists():
        raise SystemExit(f"corpusmem bench serve: {home} holds a memory with {found} claims, short of {claims} "
                         "or from an unfinished import; remove it or pick another --keep folder")
    notes, docs = corpus_sizes(claims)
    corpus = work / f"corpus-{notes}-{docs}"
    started = time.perf_counter()
    if not corpus.exists():
        print(f"generating {notes} notes and {docs} documents in {corpus}", file=sys.stderr, flush=True)
        bench.write_corpus(corpus / "notes", notes, synthetic.generate_facts)
        bench.write_corpus(corpus / "docs", docs, synthetic.generate)
    written = time.perf_counter() - started
    print(f"importing {notes + docs} documents into {home} (progress below)", file=sys.stderr, flush=True)
    imported = time.perf_counter()
    import_into(home, corpus, dated_by="path")
    found = memory_claims(home) or 0
    result = {"notes": notes, "documents": docs, "claims": found, "write_seconds": round(written, 1),
              "import_seconds": round(time.perf_counter() - imported, 1),
              "generation_seconds": round(time.perf_counter() - started, 1), "reused": False}
    record.write_text(json.dumps(result, indent=2))
    if found < claims:
        raise SystemExit(f"corpusmem bench serve: the import gave {found} claims, short of {claims}")
    return result


def _memory_figures(dsn: str) -> dict[str, int]:
    from sql.read import bench_queries
    from sql.store import authority as store

    with store.connect(dsn) as conn:
        return bench_queries.memory_figures(conn)


@dataclass(frozen=True)
class Queries:
    """What the clients ask, drawn from the memory itself with a fixed seed."""

    names: list[str]           # entity names, for resolve_entity
    claim_texts: list[str]     # claim texts, for facts_context and claims_and_sources_context
    claim_vectors: list[Any]   # the stored vectors of those claim texts, for the floor
    entity_ids: list[str] = field(default_factory=list)   # those entities' ids, for graph_neighborhood

    def part(self, start: int, count: int) -> Queries:
        """`count` of them from `start`: each run asks its own questions."""
        return Queries(self.names[start:start + count], self.claim_texts[start:start + count],
                       self.claim_vectors[start:start + count], self.entity_ids[start:start + count])


def draw_queries(dsn: str, count: int, seed: int) -> Queries:
    """`count` entities (names and ids) and `count` claims with their vectors, in a seeded order of
    their ids (the same memory and seed give the same queries)."""
    from pgvector.psycopg import register_vector

    from sql.read import bench_queries
    from sql.store import authority as store

    with store.connect(dsn) as conn:
        register_vector(conn)
        names, claims = bench_queries.seeded_questions(conn, count, seed)
    if not names or not claims:
        raise SystemExit("corpusmem bench serve: the memory has no entities or no embedded claims to ask about")
    return Queries(names=_cycle([n for n, _ in names], count), claim_texts=_cycle([c[0] for c in claims], count),
                   claim_vectors=_cycle([c[1] for c in claims], count), entity_ids=_cycle([e for _, e in names], count))


def _cycle(items: list[Any], count: int) -> list[Any]:
    return [items[i % len(items)] for i in range(count)]


def operation_bodies(name: str, queries: Queries) -> list[dict[str, Any]]:
    """Request bodies of one operation, as the remember client sends them."""
    if name == "resolve_entity":
        return [{"name": n} for n in queries.names]
    if name == "facts_context":
        return [{"query": q, "time": {"mode": "current"}, "hops": 1} for q in queries.claim_texts]
    if name == "claims_and_sources_context":
        return [{"query": q} for q in queries.claim_texts]
    if name == "graph_neighborhood":
        return [{"entity_id": e, "hops": 2, "limit": 50} for e in queries.entity_ids]
    raise ValueError(f"no benchmark for operation {name!r}; one of {', '.join(OPERATIONS)}")


# --- timing -------------------------------------------------------------------------------------

@dataclass
class Measurement:
    """Per-request latencies (seconds) of one operation at one client count."""

    name: str
    clients: int
    latencies: list[float] = field(default_factory=list)   # every request, failed ones included
    errors: list[str] = field(default_factory=list)         # one line per failed request
    wall_seconds: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    cpu_ms_per_request: dict[str, float] = field(default_factory=dict)   # by component, see jobs.cpu_use


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below it."""
    if not values:
        return math.nan
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is not in (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summarize(m: Measurement) -> dict[str, Any]:
    """The figures of one measurement. Percentiles are over every request, failed ones included,
    so a fast error cannot make a run look quick without also showing in `errors`."""
    n = len(m.latencies)
    return {"operation": m.name, "clients": m.clients, "requests": n, "errors": len(m.errors),
            "error_samples": sorted(set(m.errors))[:3],
            "p50_ms": round(1000 * percentile(m.latencies, 50), 2),
            "p95_ms": round(1000 * percentile(m.latencies, 95), 2),
            "p99_ms": round(1000 * percentile(m.latencies, 99), 2),
            "requests_per_s": round(n / m.wall_seconds, 1) if m.wall_seconds > 0 else math.nan,
            "load_before": [round(x, 2) for x in m.load_before], "load_after": [round(x, 2) for x in m.load_after],
            "cpu_ms_per_request": m.cpu_ms_per_request,
            "server_cpu_ms_per_request": server_cpu_ms(m.cpu_ms_per_request)}


def server_cpu_ms(cpu: dict[str, float]) -> float | None:
    """What a request cost the server: its process tree (the command, Ray's processes and Serve's)
    and PostgreSQL. Not the benchmark's own clients, which a deployment's callers pay on their
    machines, nor the machine's other processes."""
    return round(cpu["total"] - cpu.get(cpu_use.CLIENTS, 0.0) - cpu.get(cpu_use.NOT_THE_SERVER, 0.0), 1) if cpu else None


def ratio(rows: list[dict[str, Any]], clients: int, operation: str = "facts_context") -> float:
    """`operation`'s p95 over the floor's p95 at `clients` clients."""
    def p95(name: str) -> float:
        for row in rows:
            if row["operation"] == name and row["clients"] == clients:
                return row["p95_ms"]
        raise KeyError(f"no measurement of {name} at {clients} clients")

    return p95(operation) / p95(FLOOR)


# A client is opened once per simulated user (its own connection, closed with the stack) and then
# called once per request; it returns None on success or a one-line reason for the failure.
Client = Callable[[Any], str | None]
ClientFactory = Callable[[ExitStack], Client]


def run_load(name: str, open_client: ClientFactory, requests: Sequence[Any], clients: int,
             server: int | None = None) -> Measurement:
    """Send `requests` from `clients` threads at once, each request timed on its own; `server`: the
    pid at the root of the server's process tree, whose CPU is told from the machine's other."""
    m = Measurement(name=name, clients=clients)
    lock, cursor = threading.Lock(), iter(range(len(requests)))
    ready = threading.Barrier(clients + 1)

    def work(call: Client) -> None:
        ready.wait()
        while True:
            with lock:
                i = next(cursor, None)
            if i is None:
                return
            started = time.perf_counter()
            try:
                failure = call(requests[i])
            except Exception as err:  # a refused connection or a timeout is a failed request, not a crash
                failure = f"{type(err).__name__}: {err}"[:200]
            elapsed = time.perf_counter() - started
            with lock:
                m.latencies.append(elapsed)
                if failure is not None:
                    m.errors.append(failure)

    with ExitStack() as stack, ThreadPoolExecutor(clients) as pool:
        # connections are opened before the clock starts, as a real client keeps its own open
        done = [pool.submit(work, open_client(stack)) for _ in range(clients)]
        # read while every client's connection is open: a database session closed before the
        # second reading would take its CPU time with it
        cpu_before = cpu_use.snapshot(server)
        ready.wait()
        m.load_before = os.getloadavg()
        started = time.perf_counter()
        for future in done:
            future.result()
        m.wall_seconds = time.perf_counter() - started
        m.cpu_ms_per_request = cpu_use.per_request_ms(cpu_before, cpu_use.snapshot(server), len(requests))
    m.load_after = os.getloadavg()
    return m


def http_client(url: str, operation: str) -> ClientFactory:
    route = _ROUTES.get(operation, f"/operations/{operation}")
    return _http_client(url, lambda session, body: session.post(route, json=body))


def _http_client(url: str, send: Callable[[Any, Any], Any]) -> ClientFactory:
    """A client with an HTTP session of its own, each request `send(session, request)`; anything
    but a 200 is a failure."""
    def open_client(stack: ExitStack) -> Client:
        import httpx

        session = stack.enter_context(httpx.Client(base_url=url, timeout=120))

        def call(request: Any) -> str | None:
            response = send(session, request)
            return None if response.status_code == 200 else f"HTTP {response.status_code}: {response.text[:150]}"
        return call
    return open_client


def served_one_row_client(url: str) -> ClientFactory:
    """`GET /healthz`: the server's door, its middlewares and a pooled snapshot reading one row."""
    return _http_client(url, lambda session, _: session.get("/healthz"))


def graph_search_client(dsn: str, table: str) -> ClientFactory:
    """A nomination by meaning alone: the read's own statement for it (`read_queries.Nomination`)
    over `table`, as many as the read nominates, with the read's `hnsw.ef_search`."""
    def open_client(stack: ExitStack) -> Client:
        import psycopg
        from pgvector.psycopg import register_vector

        from sql.read.read_queries import Nomination
        from sql.store import authority as store

        conn = stack.enter_context(psycopg.connect(dsn, autocommit=True))
        register_vector(conn)
        conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(store.HNSW_EF_SEARCH),))
        statement, params = Nomination(table, "semantic").statement(read_candidates(table))

        def call(vector: Any) -> str | None:
            return None if conn.execute(statement, {"v": vector, **params}).fetchall() else "no rows"
        return call
    return open_client


def read_candidates(table: str) -> int:
    """How many candidates the reads nominate by meaning from `table`: facts_context's fixed count,
    claims_and_sources_context's `candidate_k` as a caller who leaves it out gets it."""
    from serve import operations
    from sql.read import facts_queries

    if table == "facts":
        return facts_queries.CANDIDATES
    return int(operations.SCHEMAS["claims_and_sources_context"]["properties"]["candidate_k"]["default"])


def question_model(dsn: str):
    """The model the replica encodes a question with (`serve.deployment.ReplicaEmbedder`): the
    memory's pin, run on one thread."""
    from actors.embedder import load_model, model_for_pin
    from sql.store import authority as store

    pin = store.pinned_model(dsn)
    if pin is None:
        raise SystemExit("corpusmem bench serve: the memory has no pinned embedding model")
    return load_model(model_for_pin(pin, gpu=False, cache=runtime.settings().model_cache), "cpu", threads=1)


def encoding_ms(model, texts: Sequence[str]) -> float:
    """CPU milliseconds a question's encoding takes in this process, each of `texts` once, after
    one encoding that warms the model."""
    def encode(text: str) -> Any:
        return model.encode([text], normalize_embeddings=True, show_progress_bar=False, batch_size=1)[0]

    encode(texts[0])
    started = time.process_time()
    for text in texts:
        encode(text)
    return 1000 * (time.process_time() - started) / len(texts)


def least_parts(served: dict[str, Any], searches: dict[str, dict[str, Any]], encoding: float) -> dict[str, Any]:
    """The least each read can cost (CPU ms a request), from its parts measured alone: the served
    request's CPU on the server, the question's encoding, and PostgreSQL's CPU for each of the
    read's graph searches."""
    one_row = served["server_cpu_ms_per_request"]
    graph = {table: run["cpu_ms_per_request"].get("postgres", 0.0) for table, run in searches.items()}
    return {"served_one_row_ms": one_row, "encoding_ms": round(encoding, 2), "graph_search_ms": graph,
            "by_operation": {op: round(one_row + encoding + sum(graph[t] for t in tables), 1)
                             for op, tables in GRAPH_SEARCHES.items()}}


def bare_client(dsn: str) -> ClientFactory:
    def open_client(stack: ExitStack) -> Client:
        import psycopg
        from pgvector.psycopg import register_vector

        from sql.read import bench_queries

        conn = stack.enter_context(psycopg.connect(dsn, autocommit=True))
        register_vector(conn)

        def call(vector: Any) -> str | None:
            return None if conn.execute(bench_queries.BARE_NEAREST_CLAIMS, (vector,)).fetchall() else "no rows"
        return call
    return open_client


# --- the server ---------------------------------------------------------------------------------

def memory_env(home: Path, *, ray: bool = True) -> dict[str, str]:
    """The environment of a child process that works on the memory under `home` alone (its own
    embedded PostgreSQL and object store, whatever CORPUSMEM_DSN this shell sets); `ray=False`
    also drops RAY_* so a server starts its own Ray."""
    env = {k: v for k, v in os.environ.items() if k != "CORPUSMEM_DSN" and (ray or not k.startswith("RAY_"))}
    if ray:
        # measured on a Ray of its own, as a user without a running server waits for it
        env.setdefault("RAY_ADDRESS", "local")
    env.update(CORPUSMEM_HOME=str(home), CORPUSMEM_OBJECT_STORE="")
    return env


def import_into(home: Path, corpus: Path, *, dated_by: str) -> None:
    """`python -m jobs.import_corpus` of `corpus` into the memory under `home`, its report on stderr."""
    shutdown.run_command([sys.executable, "-m", "jobs.import_corpus", str(corpus), "--modified-at-from", dated_by],
                         env=memory_env(home), cwd=runtime.PROJECT_ROOT, stdout=sys.stderr)


def start_server(home: Path, log: Path, timeout: float = 600) -> tuple[subprocess.Popen, str]:
    """`corpusmem serve` on the memory under `home`, on a free port; waits for `/healthz`."""
    import httpx

    port = runtime.free_port()
    env = memory_env(home, ray=False)
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)],
                                  cwd=runtime.PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            raise SystemExit(f"corpusmem serve did not come up; its log ({log}) ends:\n{log.read_text()[-3000:]}")
        time.sleep(1)


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


# --- the benchmark ------------------------------------------------------------------------------

_WARM_UP = 10


def bench(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile

    if args.claims < 1 or args.requests < 1 or args.clients < 2:
        raise SystemExit("corpusmem bench serve: --claims and --requests must be at least 1, --clients at least 2")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-serve-"))
    work.mkdir(parents=True, exist_ok=True)
    generation = ensure_memory(work, args.claims)
    home = work / "home"
    dsn = _dsn(home)
    settings = runtime.settings()
    results: dict[str, Any] = {
        "memory": {**_memory_figures(dsn), "generation": generation},
        "machine": {"cpus": os.cpu_count(), "load_at_start": [round(x, 2) for x in os.getloadavg()]},
        "serve": {"replicas": settings.serve_replicas, "pool_retrieval": settings.pool_retrieval},
        "requests": args.requests, "seed": args.seed, "runs": []}
    # Every run asks questions no earlier run asked: the server remembers the vectors of the
    # questions it was asked, and PostgreSQL's cache keeps what they read.
    runs = [FLOOR, *OPERATIONS]
    asked = _WARM_UP + 2 * args.requests
    queries = draw_queries(dsn, len(runs) * asked, args.seed)
    if len(set(queries.claim_texts)) < len(queries.claim_texts):
        print(f"note: the memory holds fewer than {len(queries.claim_texts)} distinct claim texts; some questions "
              "are asked twice", file=sys.stderr, flush=True)
    print(f"starting corpusmem serve on {home}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    server, url = start_server(home, work / "serve.log")
    results["serve"]["start_seconds"] = round(time.perf_counter() - started, 1)
    try:
        def requests(name: str, start: int, count: int) -> list[Any]:
            mine = queries.part(runs.index(name) * asked + start, count)
            return mine.claim_vectors if name == FLOOR else operation_bodies(name, mine)

        clients_of = {name: bare_client(dsn) if name == FLOOR else http_client(url, name) for name in runs}
        for name in runs:
            warm = run_load(name, clients_of[name], requests(name, 0, _WARM_UP), 1, server.pid)
            if warm.errors:
                raise SystemExit(f"corpusmem bench serve: {name} fails before any load: {warm.errors[0]}")
        # each client count measures the floor and every operation in turn, so a change in the
        # machine's background load falls on all of them alike
        for i, clients in enumerate((1, args.clients)):
            for name in runs:
                asking = requests(name, _WARM_UP + i * args.requests, args.requests)
                print(f"{name}: {len(asking)} requests from {clients} client(s)", file=sys.stderr, flush=True)
                results["runs"].append(summarize(run_load(name, clients_of[name], asking, clients, server.pid)))
        results["least"] = _measure_least(dsn, url, server.pid,
                                          queries.part(runs.index(FLOOR) * asked + _WARM_UP, args.requests))
    finally:
        stop_server(server)
    results["machine"]["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["ratio_facts_context_p95_over_floor_p95"] = round(ratio(results["runs"], args.clients), 2)
    results["target_ratio"] = TARGET_RATIO
    results["clients"] = args.clients
    return results


def _measure_least(dsn: str, url: str, server: int, mine: Queries) -> dict[str, Any]:
    """`least_parts`, each part over `mine` (questions no operation's run asked) with one client."""
    served = summarize(run_load(SERVED_ONE_ROW, served_one_row_client(url), mine.claim_vectors, 1, server))
    searches = {}
    for table in sorted({t for tables in GRAPH_SEARCHES.values() for t in tables}):
        print(f"{table}: {len(mine.claim_vectors)} graph searches alone", file=sys.stderr, flush=True)
        searches[table] = summarize(run_load(f"graph_search_{table}", graph_search_client(dsn, table),
                                             mine.claim_vectors, 1, server))
    print(f"encoding {len(mine.claim_texts)} questions alone", file=sys.stderr, flush=True)
    return {**least_parts(served, searches, encoding_ms(question_model(dsn), mine.claim_texts)),
            "runs": [served, *searches.values()]}


def render(results: dict[str, Any]) -> str:
    mem, gen = results["memory"], results["memory"]["generation"]
    machine, served = results["machine"], results["serve"]
    made = "generated earlier" if gen.get("reused") else "generated"
    if gen.get("generation_seconds") is not None:
        made += (f" in {gen['generation_seconds']:.0f} s ({gen['notes']} notes + {gen['documents']} documents; "
                 f"import {gen['import_seconds']:.0f} s)")
    lines = [
        (f"memory: {mem['documents']} documents, {mem['claims']} claims, {mem['entities']} entities, "
         f"{mem['facts']} facts; {made}"),
        *([f"memory note: {gen['interrupted']}"] if gen.get("interrupted") else []),
        (f"machine: {machine['cpus']} CPUs, load average (1/5/15 min) {_load(machine['load_at_start'])} at start, "
         f"{_load(machine['load_at_end'])} at end"),
        (f"serve: {served['replicas']} replica(s), retrieval pool {served['pool_retrieval']}, "
         f"up in {served['start_seconds']:.0f} s"),
        ""]
    header = (f"{'operation':<28} {'clients':>7} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} "
              f"{'p99 ms':>8} {'req/s':>7}  load 1m before→after")
    lines += [header, "-" * len(header)]
    for r in results["runs"]:
        lines.append(f"{r['operation']:<28} {r['clients']:>7} {r['requests']:>8} {r['errors']:>6} {r['p50_ms']:>8.1f} "
                     f"{r['p95_ms']:>8.1f} {r['p99_ms']:>8.1f} {r['requests_per_s']:>7.1f}  "
                     f"{r['load_before'][0]:.2f}→{r['load_after'][0]:.2f}")
        lines += [f"    error: {e}" for e in r["error_samples"]]
    lines += ["", ("CPU per request (ms; server: the server's process tree and PostgreSQL; total: every process "
                   "on the machine, the benchmark's clients included; ceiling = CPUs × 1000 / total):")]
    for r in results["runs"]:
        cpu = r.get("cpu_ms_per_request")
        if cpu:
            parts = ", ".join(f"{name} {ms:.1f}" for name, ms in cpu.items() if name != "total")
            ceiling = machine["cpus"] * 1000 / cpu["total"] if cpu["total"] else float("inf")
            server = r["server_cpu_ms_per_request"]
            lines.append(f"  {r['operation']:<28} {r['clients']:>2} clients: server {server:.1f}, "
                         f"total {cpu['total']:.1f} (ceiling {ceiling:.0f} req/s): {parts}")
    if least := results.get("least"):
        lines += ["", render_least(least, results["runs"])]
    ratio_, target = results["ratio_facts_context_p95_over_floor_p95"], results["target_ratio"]
    errors = sum(r["errors"] for r in results["runs"])
    lines += ["", (f"facts_context p95 / bare pgvector p95 at {results['clients']} clients: {ratio_:.2f} "
                   f"(target ≤ {target:.0f}: {'met' if ratio_ <= target else 'NOT met'}); errors: {errors}")]
    return "\n".join(lines)


def render_least(least: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """The least each read can cost beside what it cost, at one client."""
    spent = {r["operation"]: r["server_cpu_ms_per_request"] for r in runs if r["clients"] == 1}
    graph = least["graph_search_ms"]
    lines = [(f"the least a read costs here (CPU ms a request, one client, each part alone): a request that reads "
              f"one row {least['served_one_row_ms']:.1f} (GET /healthz, on the server), the question's encoding "
              f"{least['encoding_ms']:.1f}, a graph search by meaning " + ", ".join(
                  f"{table} {ms:.1f}" for table, ms in graph.items()) + " (PostgreSQL)")]
    for op, least_ms in least["by_operation"].items():
        if spent.get(op) is not None:
            lines.append(f"  {op:<28} least {least_ms:.1f}, spent {spent[op]:.1f} (target ≤ {TARGET_CPU_MS:.0f}): "
                         f"{spent[op] - least_ms:.1f} of its own work")
    return "\n".join(lines)


def _load(values: Sequence[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)
