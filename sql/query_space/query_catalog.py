"""The names and limits of the `memory_v1` query space, shared by its views, validator and runner.

One list, so that the migration, the statement validator, the manifest and the HTTP routes can
never disagree on what the query space holds. Values are the seed's (reference/query-space).
"""

from __future__ import annotations

SCHEMA = "memory_v1"
SCHEMA_MAJOR_VERSION = 1
MANIFEST_CONTRACT = "memory_v1.manifest/2"
# The role every statement runs as: it can read memory_v1 and nothing else.
SANDBOX_ROLE = "corpusmem_query"
# Our own reserved prefix, refused in statements like the seed's `__rememberstack_`.
RESERVED_PREFIXES = ("__rememberstack_", "__corpusmem_")

VIEWS: tuple[str, ...] = (
    "changes_visible",
    "chunks_live",
    "claim_occurrences_live",
    "claims_canonical",
    "claims_live",
    "claims_visible_history",
    "contradiction_members_current",
    "document_crossrefs_live",
    "document_versions_visible",
    "documents_live",
    "entities_current",
    "entity_aliases_current",
    "entity_document_mentions",
    "evidence_lineage",
    "fact_claim_evidence_live",
    "facts_current",
    "facts_visible_history",
    "graph_edges_current",
    "graph_edges_visible_history",
    "identity_events_visible",
    "mentions_live",
    "page_evidence_visible",
    "pages_live",
    "sections_live",
    "testimony_currency_events_visible",
)

# Public set-returning functions by category (`sql_grammar.srf_categories`).
FUNCTIONS: dict[str, str] = {
    "semantic_claims": "nomination",
    "lexical_claims": "nomination",
    "semantic_chunks": "nomination",
    "lexical_chunks": "nomination",
    "semantic_facts": "nomination",
    "semantic_entities": "nomination",
    "fetch_chunk_bodies": "body_fetch",
    "facts_as_of": "bitemporal",
    "canonical_bounds": "temporal",
    "graph_neighborhood": "graph",
    "graph_path": "graph",
    "graph_citation_path": "graph",
}
SRF_INVOCATIONS_MAX_PER_CATEGORY = 3
GRAPH_FUNCTIONS = tuple(name for name, category in FUNCTIONS.items() if category == "graph")
SEARCH_FUNCTIONS = tuple(name for name in FUNCTIONS if name.startswith(("semantic_", "lexical_")))

# Built-in functions a statement may call (a `pg_catalog.` prefix is allowed).
BUILTIN_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "aggregates": ("count", "sum", "avg", "min", "max", "bool_and", "bool_or", "array_agg", "string_agg",
                   "jsonb_agg", "jsonb_object_agg"),
    "conditionals": ("coalesce", "nullif", "greatest", "least"),
    "text": ("lower", "upper", "trim", "btrim", "length", "octet_length", "substring", "replace",
             "regexp_replace"),
    "numbers": ("abs", "ceil", "floor", "round"),
    "time": ("date_trunc", "extract", "make_interval"),
    "arrays_and_json": ("array_length", "cardinality", "jsonb_typeof", "jsonb_array_length", "jsonb_build_object"),
    "window": ("row_number", "rank", "dense_rank", "lag", "lead", "first_value", "last_value"),
}

CAST_TYPES = ("uuid", "text", "varchar", "bpchar", "bool", "boolean", "int2", "int4", "int8", "integer", "bigint",
              "smallint", "numeric", "float4", "float8", "timestamptz", "timestamp", "date", "interval", "jsonb")

# Views and functions that answer at one instant: a result reading only these has `evaluated_at`.
EVALUATED_AT_SOURCES = ("facts_current", "graph_edges_current", "contradiction_members_current", "facts_as_of")

# The interactive tier: every statement over HTTP runs under these (reference/query-space, Limits).
INTERACTIVE_LIMITS: dict[str, int] = {
    "statement_timeout_ms_default": 5_000,
    "statement_timeout_ms_cap": 15_000,
    "statement_timeout_ms_graph": 5_000,
    "lock_timeout_ms": 250,
    "idle_in_transaction_timeout_ms": 5_000,
    "rows_default": 200,
    "rows_cap": 1_000,
    "bytes_default": 1_048_576,
    "bytes_cap": 8_388_608,
    "work_mem_kib": 16_384,
    "temp_file_limit_kib": 65_536,
    "sql_text_bytes": 65_536,
    "parameters_count": 64,
    "parameters_bytes": 262_144,
    "recursive_ctes": 1,
    "recursion_depth": 6,
    "concurrent_per_caller": 2,
    "concurrent_per_deployment": 8,
    "statement_seconds_per_caller_minute": 30,
    "statement_seconds_per_deployment_minute": 120,
    "search_k_default": 20,
    "search_k_cap": 100,
    "search_candidates_per_statement": 200,
    "chunk_bodies_per_call": 50,
    "chunk_body_bytes_per_call": 524_288,
    "chunk_body_bytes_per_statement": 4_194_304,
}
