"""The `/query/*` routes: describe and search the query space, run or explain one statement, and
list, describe and run saved queries (seed: reference/http-api/query).

Statement outcomes, refusals included, are `200` + `QueryResult/v1`; only problems outside the
statement (an unknown saved query, a blank search) are HTTP errors, with the
`{"detail": {"code", "message"}}` body the `remember` client maps to its error codes.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

import anyio
import psycopg
from fastapi import APIRouter, HTTPException, Query, Request

from serve import operations
from serve import query_models as qm
from sql.query_space import query_catalog as catalog
from sql.query_space import query_manifest, saved_queries
from sql.query_space.query_runner import LIMITS, Caps, QueryRunner

RETRIEVAL_CHOICES = (
    ("Ask an assured operation (resolve_entity, facts_context, claims_and_sources_context, combined_context) "
    "first: it answers with a contract, typed negatives and complete contradictions."),
    ("Use search (semantic or BM25) to find testimony or passages by meaning or words when you do not know "
    "the entity yet."),
    ("Use SQL over memory_v1 to explore, count, join and audit what the operations do not answer; "
    "results are exploratory_tabular."),
)
HONESTY_WARNINGS = (
    "An empty SQL result is not proof that nothing exists: SQL results never carry a typed negative.",
    "Rows are in no guaranteed order unless the statement has a top-level ORDER BY.",
    "A join may not keep the meaning of the views it combines; read the grain of each view.",
    ("Claims are testimony, not truth: the newest claim is not the current fact. Answer truth questions "
    "from facts_current and follow fact_claim_evidence_live to see why."),
    "Results are capped by rows, bytes and time; a cut result says truncated with its reason.",
)
WORKED_EXAMPLES = (
    {"title": "Right: answer from facts, then follow the bridge to the testimony",
     "sql": "SELECT f.fact_label, f.valid_from, f.evidence_count, f.contradiction_group, e.stance, e.source_handle, "
            "e.asserted_at FROM facts_current AS f JOIN fact_claim_evidence_live AS e ON e.fact_kind = f.fact_kind "
            "AND e.fact_id = f.fact_id WHERE f.fact_label ~~* $1 ORDER BY f.evidence_count DESC, f.fact_id, "
            "e.stance, e.asserted_at DESC LIMIT 50",
     "parameters": ["%invoice exporter%"], "verdict": "right"},
    {"title": "Wrong: the newest testimony taken as truth (valid SQL, wrong layer)",
     "sql": "SELECT claim_text, source_handle, asserted_at FROM claims_live WHERE claim_text ~~* $1 "
            "ORDER BY asserted_at DESC LIMIT 20",
     "parameters": ["%invoice exporter%"], "verdict": "wrong"},
    {"title": "Facts whose newest testimony disagrees",
     "sql": "WITH ranked AS ( SELECT e.fact_kind, e.fact_id, e.claim_id, e.stance, c.claim_text, c.source_handle, "
            "c.asserted_at, row_number() OVER ( PARTITION BY e.fact_kind, e.fact_id ORDER BY c.asserted_at DESC "
            "NULLS LAST, c.claim_id ) AS testimony_rank FROM fact_claim_evidence_live AS e JOIN claims_live AS c "
            "ON c.claim_id = e.claim_id ) SELECT f.fact_label, f.evidence_count, f.contradict_count, "
            "r.claim_text AS newest_claim, r.source_handle, r.asserted_at FROM facts_current AS f JOIN ranked AS r "
            "ON r.fact_kind = f.fact_kind AND r.fact_id = f.fact_id WHERE r.testimony_rank = 1 AND "
            "r.stance = 'contradicts' ORDER BY r.asserted_at DESC LIMIT 50",
     "parameters": [], "verdict": "right"},
)
_WORD = re.compile(r"[a-z0-9]+")


def query_router(pools: Any, deployment: Any, embed: Callable[[str], Awaitable[Any]]) -> APIRouter:
    """The routes over one deployment; statements run on the runner's own sandbox connections,
    the saved-query registry is read through `pools.sync` (owner role). The runner is shared with
    the CLI and synchronous: these handlers run in FastAPI's thread pool, and a question the
    runner embeds is handed back to the event loop's `embed`."""
    router = APIRouter(tags=["query"])
    runner = QueryRunner(pools.sync.conninfo, deployment.deployment_id,
                         lambda text: anyio.from_thread.run(embed, text))
    surface_hash = runner.surface_manifest_hash
    with pools.sync.connection() as conn:
        saved_queries.seed(conn, surface_hash)
    corpus = _search_corpus()

    def caller(request: Request) -> str:
        return str(getattr(request.state, "caller", "open"))

    @router.get("/query/space")
    def describe_space(pattern: str | None = None, include_examples: bool = False) -> dict[str, Any]:
        return describe(pattern, include_examples, surface_hash)

    @router.get("/query/space/search", response_model=list[qm.DiscoveryHit])
    def search_space(query: Annotated[str, Query(min_length=1)],
                     k: Annotated[int, Query(ge=1, le=25)] = 10) -> list[dict[str, Any]]:
        words = _WORD.findall(query.lower())
        if not words:
            raise HTTPException(422, {"code": "invalid_parameter", "message": "query must be non-empty"})
        return search(corpus, words, k)

    @router.post("/query/sql", response_model=qm.QueryResult)
    def query_sql(body: qm.SqlRequest, request: Request) -> dict[str, Any]:
        return runner.run(body.sql, body.parameters, max_rows=body.max_rows, caller=caller(request))

    @router.post("/query/sql/explain", response_model=qm.QueryResult)
    def explain_sql(body: qm.ExplainRequest, request: Request) -> dict[str, Any]:
        return runner.explain(body.sql, body.parameters, caller=caller(request))

    @router.get("/query/saved", response_model=list[qm.SavedQuerySummary])
    def list_saved(namespace: str | None = None,
                   status: Literal["draft", "pending_revalidation", "active", "deprecated", "disabled",
                                   "broken"] | None = None) -> list[dict[str, Any]]:
        with registry() as conn:
            return saved_queries.list_queries(conn, namespace, status)

    @router.get("/query/saved/{namespace}/{name}", response_model=qm.SavedQueryDetail)
    def describe_saved(namespace: str, name: str,
                       version: Annotated[int | None, Query(ge=1, le=qm.PG_INT_MAX)] = None) -> dict[str, Any]:
        with registry() as conn:
            return saved_queries.describe(conn, namespace, name, version)

    @router.post("/query/saved/{namespace}/{name}/run", response_model=qm.QueryResult)
    def run_saved(namespace: str, name: str, body: qm.SavedRunRequest, request: Request) -> dict[str, Any]:
        with registry() as conn:
            saved = saved_queries.runnable(conn, namespace, name, body.version, surface_hash)
        defaults = saved.get("default_limits") or {}
        caps = Caps.interactive(body.max_rows if body.max_rows is not None else defaults.get("max_rows"),
                                byte_cap=defaults.get("max_bytes"),
                                statement_timeout_ms=defaults.get("statement_timeout_ms"))
        return runner.run(saved["sql"], body.parameters, caller=caller(request), caps=caps,
                          saved_query=saved_queries.saved_query_ref(saved))

    @contextmanager
    def registry() -> Iterator[psycopg.Connection]:
        """A registry connection whose failures are the seed's HTTP errors."""
        try:
            with pools.sync.connection() as conn:
                yield conn
        except saved_queries.SavedQueryError as err:
            raise HTTPException(err.status, {"code": err.code, "message": err.message}) from err
        except psycopg.Error as err:
            raise HTTPException(500, {"code": "execution_error",
                                      "message": "the saved-query registry could not be read"}) from err

    return router


def describe(pattern: str | None, include_examples: bool, surface_hash: str) -> dict[str, Any]:
    """`GET /query/space`: the checked-in manifest, identical on every deployment of a release."""
    manifest = query_manifest.manifest()
    views = [v for v in manifest.get("views", []) if pattern is None or fnmatch.fnmatchcase(v["name"], pattern)]
    functions = manifest.get("functions", [])
    return {
        "schema": catalog.SCHEMA,
        "schema_major": catalog.SCHEMA_MAJOR_VERSION,
        "surface_manifest_hash": surface_hash,
        "headline": query_manifest.HEADLINE,
        "retrieval_choices": list(RETRIEVAL_CHOICES),
        "honesty_warnings": list(HONESTY_WARNINGS),
        "worked_examples": [dict(e) for e in WORKED_EXAMPLES],
        "views": [{"name": v["name"], "grain": v.get("grain_tag") or v.get("grain"), "row_key": v.get("row_key", []),
                   "comment": v.get("comment", ""),
                   "columns": [[c["name"], c["type"], bool(c.get("nullable", True))] for c in v.get("columns", [])]}
                  for v in views],
        "functions": [f["name"] for f in functions],
        "limits": {"interactive": dict(LIMITS), "analytical": None},
        "core_operation_descriptors": manifest.get("core_operation_descriptors") or {
            d.name: d.model_dump(mode="json", exclude={"result_schema"}) for d in operations.descriptors()},
        "function_signatures": {f["name"]: {k: v for k, v in f.items() if k != "name"} for f in functions},
        "sql_grammar": manifest.get("sql_grammar") or {
            "functions": catalog.BUILTIN_FUNCTIONS, "cast_types": list(catalog.CAST_TYPES),
            "public_functions": list(catalog.FUNCTIONS), "srf_categories": dict(catalog.FUNCTIONS),
            "srf_invocations_max_per_category": catalog.SRF_INVOCATIONS_MAX_PER_CATEGORY,
            "recursion_depth_max": LIMITS["recursion_depth"]},
        "examples": [f"{saved_queries.NAMESPACE}.{e.name}" for e in saved_queries.examples()] if include_examples else [],
    }


def _search_corpus() -> list[dict[str, Any]]:
    """Entries of the manifest's own text: views, functions, operations, shipped examples."""
    manifest = query_manifest.manifest()
    entries = []
    for view in manifest.get("views", []):
        text = " ".join([view.get("comment", "")] + [c.get("comment", "") for c in view.get("columns", [])])
        entries.append({"kind": "view", "name": view["name"], "purpose": view.get("comment", ""), "text": text,
                        "tags": [t for t in [view.get("grain_tag")] + list(view.get("row_key", [])) if t]})
    for function in manifest.get("functions", []):
        purpose = function.get("summary") or function.get("description") or ""
        channel = "semantic" if function["name"].startswith("semantic_") else \
            "bm25" if function["name"].startswith("lexical_") else function.get("category", "")
        target = function["name"].split("_", 1)[-1]
        entries.append({"kind": "function", "name": function["name"], "purpose": purpose,
                        "text": purpose + " " + function.get("description", ""), "tags": [channel, target]})
    for descriptor in operations.descriptors():
        entries.append({"kind": "core_operation", "name": descriptor.name, "purpose": descriptor.description,
                        "text": descriptor.description, "tags": []})
    for example in saved_queries.examples():
        entries.append({"kind": "example", "name": f"{saved_queries.NAMESPACE}.{example.name}",
                        "purpose": example.description, "text": example.description, "tags": [saved_queries.NAMESPACE]})
    for entry in entries:
        entry["name_words"] = set(_WORD.findall(entry["name"].lower()))
        entry["text_words"] = set(_WORD.findall(entry["text"].lower()))
    return entries


def search(corpus: list[dict[str, Any]], words: list[str], k: int) -> list[dict[str, Any]]:
    """Term overlap, best first: a word in the name counts three times a word in the text."""
    hits = []
    for entry in corpus:
        score = sum(3.0 * (w in entry["name_words"]) + 1.0 * (w in entry["text_words"]) for w in set(words))
        if score > 0:
            hits.append((score, entry))
    hits.sort(key=lambda h: (-h[0], h[1]["kind"], h[1]["name"]))
    return [{"kind": e["kind"], "name": e["name"], "score": s, "purpose": e["purpose"], "tags": list(e["tags"])}
            for s, e in hits[:k]]
