"""`corpusmem demo`: import the example corpus and print what the memory now holds."""

from __future__ import annotations

from datetime import datetime, timezone

from jobs import facts_cli, import_corpus, runtime
from jobs.settings import Settings
from serve.retrieval import facts as facts_retrieval
from sql.read import demo_queries, facts_queries
from sql.store import authority as store

EXAMPLES = runtime.PROJECT_ROOT / "examples" / "team"


def main(settings: Settings, *, port: int = 8000) -> int:
    options = import_corpus.import_options(settings, (str(EXAMPLES),), source={"modified_at_from": "path"},
                                           batch_size=4)
    # The demo serves its memory on Ray Serve after the import: its Ray is its own, never the one a
    # running `corpusmem serve` holds (see `runtime.init_ray`).
    runtime.init_ray(quiet=True, job_name=import_corpus.job_name(options), join=False,
                     dashboard=settings.ray_dashboard)
    report = import_corpus.run_import(options, settings)
    print(report.render())
    with store.connect(store.resolve_dsn(settings)) as conn:
        print("\ndocuments in the memory:")
        for ref, _mime, modified, status, sections, chunks in demo_queries.documents(conn):
            when = f"{modified:%Y-%m-%d}" if modified else "undated   "
            print(f"  {when}  {ref.removeprefix('examples/team/'):<50} {status:<6} "
                  f"{sections:>2} sections {chunks:>2} chunks")
        print("\nsections that are not body text:")
        for title, heading, role in demo_queries.non_body_sections(conn):
            print(f"  {title}: {heading!r} → {role}")
        print("\na few claims, with the characters they stand on and their dates:")
        for title, start, end, text, span, asserted, vfrom, vuntil, precision in demo_queries.sample_claims(conn):
            window = (f"{vfrom:%Y-%m-%d}..{vuntil:%Y-%m-%d}" if vfrom and vuntil else
                      f"{vfrom:%Y-%m-%d}..open" if vfrom else "no stated time")
            print(f"  {title} [{start}:{end}] said {asserted:%Y-%m-%d}: {text}")
            print(f"      source span {span!r}; world time {window} ({precision})")
        _show_facts(store.resolve_dsn(settings))
        query = "who leads the billing migration"
        print(f"\nnearest chunks to {query!r} (cosine distance, exact characters of document.md):")
        from actors.embedder import load_model

        model = load_model(runtime.embedding_model(settings, store.resolve_dsn(settings)), "cpu")
        vector = model.encode([query], normalize_embeddings=True)[0]
        for title, start, end, distance, text in demo_queries.nearest_chunks(conn, vector, 3):
            snippet = " ".join(text.split())[:110]
            print(f"  {distance:.3f}  {title} [{start}:{end}]  {snippet}")
    _ask_over_http(settings, port)
    return 0


def _show_facts(dsn: str) -> None:
    """Facts with their windows and evidence, a contradiction, and a question "as of" a date."""
    now = datetime.now(timezone.utc)

    async def ask(conn: facts_queries.Conn) -> tuple[facts_retrieval.FactsAnswer, ...]:
        billing = [c[0] for c in await facts_queries.find_entities(conn, "billing migration") if c[2] == "T0"]
        ravi = [c[0] for c in await facts_queries.find_entities(conn, "Ravi") if c[2] == "T0"]
        march = facts_retrieval.TimeQuery("at", at=datetime(2026, 3, 1, tzinfo=timezone.utc))
        return (await facts_retrieval.facts(conn, entity_ids=billing, now=now),
                await facts_retrieval.facts(conn, entity_ids=billing, now=now, time=march),
                await facts_retrieval.facts(conn, entity_ids=ravi, now=now, time=facts_retrieval.TimeQuery("history")))

    current, march, ravi = facts_queries.read(dsn, ask)
    print(f"\nwhat the memory holds true now about the billing migration (evaluated {now:%Y-%m-%d}):")
    for fact in current.facts:
        if fact.kind == "relation" or fact.contradiction or "scheduled" in fact.label:
            print("\n".join(facts_cli.render_fact(fact)))
    print("\nand as of 2026-03-01:")
    for fact in march.facts:
        if fact.kind == "relation" or "scheduled" in fact.label:
            print("\n".join(facts_cli.render_fact(fact)))
    print("\nRavi's history:")
    for fact in ravi.facts:
        if fact.kind == "relation":
            print("\n".join(facts_cli.render_fact(fact)))


def _ask_over_http(settings: Settings, port: int) -> None:
    """Start the read API on Ray Serve and ask it what an agent would, the way the `remember`
    client does."""
    import httpx
    from ray import serve

    from jobs import serve_cmd

    url = serve_cmd.start(settings, "127.0.0.1", port)
    print(f"\nthe read API is up at {url}; asking it over HTTP:")
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            who = http.post("/operations/facts_context", json={"query": "billing migration"}).json()
            print("  POST /operations/facts_context {\"query\": \"billing migration\"}")
            for fact in who["facts"][:4]:
                v = fact["validity"]
                print(f"    {fact['label']}  [{v['valid_from'] or '…'} → {v['valid_until'] or 'open'}]"
                      f" {fact['temporal_match']}, {fact['evidence_count']} document(s)"
                      + (", contradicted" if fact["contradiction"] else ""))
            march = http.post("/operations/facts_context", json={
                "query": "billing migration", "time": {"mode": "at", "at": "2026-03-01T00:00:00Z"}}).json()
            print("  ... as of 2026-03-01: " + "; ".join(f["label"] for f in march["facts"] if "leads" in f["label"]))
            dana = http.get("/resolve", params={"name": "Dana"}).json()
            print("  GET /resolve?name=Dana: " + ", ".join(f"{e['canonical_name']} ({e['tier']})" for e in dana["entities"]))
            said = http.get("/search/claims", params={"query": "cutover date", "k": 3, "channel": "bm25"}).json()
            for claim in said["evidence"]:
                print(f"  GET /search/claims: {claim['claim_text']}  (said {claim['asserted_at'][:10]})")
            sql = ("SELECT fact_label, evidence_count FROM facts_current ORDER BY evidence_count DESC, fact_label"
                   " LIMIT $1")
            table = http.post("/query/sql", json={"sql": sql, "parameters": [3]}).json()
            print(f"  POST /query/sql {sql!r} [3] → {table['termination_reason']}:")
            for label, evidence in table["rows"]:
                print(f"    {label}  (evidence {evidence})")
    finally:
        if not runtime.started_ray():
            serve.shutdown()   # a cluster's Ray outlives this process: take the application off it
        # A local Ray ends with this process and its Serve with it; Serve's own graceful shutdown
        # then has a controller killed under its retried task, which Ray reports as a failure.
