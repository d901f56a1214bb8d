"""Wire models of the `/query/*` routes: `QueryResult/v1` and the request bodies, field for field
as the seed's result types and the `remember` 0.17.2 client declare them (unknown fields refused)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

GraphBudget = Literal["depth_budget", "expansion_budget", "frontier_budget", "result_budget", "time_budget"]
SavedStatus = Literal["draft", "pending_revalidation", "active", "deprecated", "disabled", "broken"]

PG_INT_MAX = 2_147_483_647   # versions are PostgreSQL integers: a larger one is a 422, not a failed cast


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResultColumn(_Strict):
    name: str
    type: str = Field(description="The PostgreSQL type name (text, uuid, bigint, timestamp with time zone, ...)")
    nullable: bool = Field(description="Always true: PostgreSQL does not report nullability for computed columns")


class ResultLimits(_Strict):
    row_cap: int
    byte_cap: int
    statement_timeout_ms: int
    analytical_tier: bool


class SemanticInvocation(_Strict):
    function: str
    nominated: int
    confirmed: int
    dropped_stale: int
    dropped_filtered: int = 0
    dropped_ambiguous: int = 0
    dropped_absent: int = 0
    dropped_body_mismatch: int = 0
    dropped_absent_current: int = 0
    dropped_absent_projection: int = 0
    dropped_hash_mismatch: int = 0
    policy_generation: str | None = None
    embedder_generation: str | None = None
    generation: str | None = None
    pg_confirmed_at: datetime | None = None
    termination_reason: str | None = None


class GraphInvocation(_Strict):
    ordinal: int = Field(ge=0)
    function: Literal["graph_neighborhood", "graph_path", "graph_citation_path"]
    truncated: bool
    truncation_reason: GraphBudget | None = None
    examined_edges: int = Field(ge=0)
    returned_paths: int = Field(ge=0)
    effective_depth: int = Field(ge=1)
    effective_expansion_budget: int = Field(ge=1)
    effective_frontier_budget: int = Field(ge=1)
    effective_result_budget: int = Field(ge=1)
    effective_time_budget_ms: int = Field(ge=1)
    applied_valid_at: datetime | None = None
    applied_believed_at: datetime | None = None
    evaluated_at: datetime | None = None


class QueryResult(_Strict):
    """The result of every SQL statement route, whatever the outcome."""

    contract: Literal["QueryResult/v1"] = "QueryResult/v1"
    grade: Literal["exploratory_tabular"] = "exploratory_tabular"
    request_id: UUID
    deployment_id: UUID
    surface_manifest_hash: str
    query_space_schema: Literal["memory_v1"] = "memory_v1"
    query_hash: str
    query_language: Literal["sql"] = "sql"
    saved_query: dict[str, str] | None = None
    referenced_views: list[str] = []
    referenced_functions: list[str] = []
    source_grain_tags: list[str] = []
    columns: list[ResultColumn] = []
    rows: list[list[Any]] = []
    returned_row_count: int = Field(ge=0, default=0)
    returned_byte_count: int = Field(ge=0, default=0)
    limits: ResultLimits
    truncated: bool = False
    truncation_reason: str | None = None
    exact_total_known: Literal[False] = False
    exact_total: None = None
    ordered_result: bool = False
    empty_result: bool = False
    negative_kind: None = None
    execution_started_at: datetime
    evaluated_at: datetime | None = None
    pg_snapshot_at: datetime | None = None
    elapsed_ms: float = Field(ge=0)
    termination_reason: Literal["completed", "rejected", "failed"] = "completed"
    error_code: str | None = None
    error_message: str | None = None
    warnings: list[str] = []
    semantic_invocations: list[SemanticInvocation] = []
    graph_invocations: list[GraphInvocation] = []


class SqlRequest(_Strict):
    sql: str
    parameters: list[Any] = Field(default_factory=list)
    max_rows: int = Field(default=200, ge=0, description="Above 1,000 it is lowered to 1,000; 0 returns no rows")


class ExplainRequest(_Strict):
    sql: str
    parameters: list[Any] = Field(default_factory=list)


class SavedRunRequest(_Strict):
    version: int | None = Field(default=None, ge=1, le=PG_INT_MAX)
    parameters: list[Any] = Field(default_factory=list)
    max_rows: int | None = Field(default=None, ge=0)


class SavedQuerySummary(_Strict):
    query_id: UUID
    namespace: str
    name: str
    version: int = Field(ge=1, le=PG_INT_MAX)
    status: SavedStatus
    description: str | None
    origin: Literal["human", "agent", "import", "shipped_example"]
    assurance: Literal["customer_authored", "customer_reviewed", "shipped_example"] | None
    query_hash: str
    validated_surface_manifest_hash: str


class SavedQueryDetail(SavedQuerySummary):
    sql: str
    parameter_schema: dict[str, Any]
    declared_result_schema: dict[str, Any] | None
    declared_interpretation: str | None
    query_space_major: Literal["memory_v1"] = "memory_v1"
    default_limits: dict[str, int]
    validation_report: dict[str, Any]
    author_principal: str
    approver_principal: str | None


class DiscoveryHit(_Strict):
    kind: Literal["view", "function", "core_operation", "example"]
    name: str = Field(min_length=1)
    score: float
    purpose: str
    tags: list[str]
