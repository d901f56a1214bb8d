"""The read API: a FastAPI application served by Ray Serve over the PostgreSQL authority.

`app.build_app` assembles it per replica from `replica` (connection pools, deployment facts, the
question embedder): middleware (`auth`, `admission`, `metrics`) and one router per family of
routes (`status_routes`, `operation_routes`, `read_routes`, `graph_routes`, `document_routes`,
`query_routes`, `identity_routes`). `deployment` is the Ray Serve application around it.
Ranking lives here (`reads`, `graph`, `retrieval/`); the response envelopes are `models` and
`query_models`. It reads through `sql/` and writes only what the seed's routes write (ingest,
deletion, merge review).
"""
