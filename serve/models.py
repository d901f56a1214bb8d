"""Response envelopes of the read API, field for field as the seed's result types and the
`remember` 0.17.2 client expect them.

Every model forbids unknown fields, as the client's do: a field we add by mistake fails here, in
our own tests, before a client sees it. Keys the client requires even when null are declared
without defaults. Instants are serialised in UTC with an explicit offset.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import Header, Response
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic_core import PydanticCustomError


def _utc(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError(f"naive instant {value.isoformat()} in a response")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


UTC = Annotated[datetime, PlainSerializer(_utc, return_type=str)]

# The error type of an instant a caller gave that is not UTC; the app answers it with the seed's
# one-line detail, `{name} must be UTC (Z or +00:00)` (`utc_required`).
NOT_UTC = "not_utc"


def _utc_only(value: datetime) -> datetime:
    offset = value.utcoffset()
    if offset is None or offset.total_seconds() != 0:
        raise PydanticCustomError(NOT_UTC, "must be UTC (Z or +00:00)")
    return value


# An instant a caller gives (a parameter or a body field): naive or another offset is refused.
UtcInstant = Annotated[datetime, AfterValidator(_utc_only)]


def utc_required(name: str) -> str:
    """The detail of a refused instant, naming its parameter."""
    return f"{name} must be UTC (Z or +00:00)"


# The `Prefer` preference (RFC 7240) that asks for each claim's `ocr_citation`. It is asked for,
# never sent unasked: the `remember` client's models forbid unknown keys, so one extra key on one
# claim would make it refuse the whole answer.
PREFER_OCR_CITATIONS = "ocr-citations"
_OCR_CITATIONS = "ocr_citations"   # the serialisation context's key

Prefer = Annotated[list[str] | None, Header(
    description=f"RFC 7240 preferences; `{PREFER_OCR_CITATIONS}` adds each claim's `ocr_citation` "
                "(page and lines of an OCR'd page, null for other text).")]


def preferences(prefer: list[str] | None) -> set[str]:
    """The preference tokens of `Prefer` headers (`a, b=1; x` → {"a", "b"}), lower case."""
    return {p.split(";")[0].split("=")[0].strip().lower() for h in prefer or () for p in h.split(",")} - {""}


def envelope(result: BaseModel, prefer: list[str] | None = None) -> Response:
    """A result as its route's JSON response: by alias (`from`), instants as strings, each
    claim's `ocr_citation` only when `prefer` asks for it. The model was validated when it was
    built, so it is serialized straight to JSON by pydantic's own serializer, not dumped to a dict
    for FastAPI to walk and encode again."""
    return Response(result.model_dump_json(by_alias=True,
                                           context={_OCR_CITATIONS: PREFER_OCR_CITATIONS in preferences(prefer)}),
                    media_type="application/json")


Precision = Literal["unknown", "instant", "day", "month", "quarter", "year", "open"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ScopeCurrent(_Model):
    mode: Literal["current"] = "current"
    evaluated_at: UTC
    believed_at: UTC
    identity_regime: Literal["current", "as_of"] = "current"


class ScopeAt(_Model):
    mode: Literal["at"] = "at"
    at: UTC
    evaluated_at: UTC
    believed_at: UTC
    identity_regime: Literal["current", "as_of"] = "current"


class ScopeOverlap(_Model):
    mode: Literal["overlap"] = "overlap"
    from_: UTC = Field(alias="from")
    to: UTC
    evaluated_at: UTC
    believed_at: UTC
    identity_regime: Literal["current", "as_of"] = "current"


class ScopeHistory(_Model):
    mode: Literal["history"] = "history"
    evaluated_at: UTC
    believed_at: UTC
    identity_regime: Literal["current", "as_of"] = "current"


class ScopeAsOf(_Model):
    mode: Literal["as_of"] = "as_of"
    valid_at: UTC
    evaluated_at: UTC
    believed_at: UTC
    identity_regime: Literal["current", "as_of"] = "as_of"


TemporalScope = ScopeCurrent | ScopeAt | ScopeOverlap | ScopeHistory | ScopeAsOf


class Freshness(_Model):
    pg_live_ts: UTC
    p1_written_inline: bool = True
    p1_believed_at_horizon: UTC | None = None
    k: dict[str, Any] | None = None


class EntityCandidate(_Model):
    entity_id: UUID
    canonical_name: str
    tier: str
    context_hits: int = 0


class Validity(_Model):
    valid_from: UTC | None
    valid_until: UTC | None
    valid_precision: Precision = "unknown"
    ingested_at: UTC
    invalidated_at: UTC | None


class CoMember(_Model):
    fact_id: UUID
    label: str
    evidence_count: int
    validity: Validity


class Contradiction(_Model):
    group_id: UUID
    co_members: tuple[CoMember, ...] = ()
    returned: int = Field(ge=0)
    total: int = Field(ge=0)
    continuation: str | None = None


class FactResult(_Model):
    fact_id: UUID
    kind: Literal["relation", "observation"]
    label: str
    evidence_count: int
    validity: Validity
    temporal_match: Literal["confirmed", "possible"] = "possible"
    contradiction_group: UUID | None = None
    contradiction: Contradiction | None = None
    support: Literal["current", "withdrawn"] = "current"


class EvidenceSpan(_Model):
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)


class OcrCitation(_Model):
    """Where a claim's span lies on an OCR'd page: "page 3, lines 4–6"."""

    page: int = Field(ge=1)
    first_line: int = Field(ge=1)
    last_line: int = Field(ge=1)


class EvidenceResult(_Model):
    claim_id: UUID
    doc_id: UUID
    chunk_id: UUID
    claim_text: str
    source_span: str
    char_start: int
    char_end: int
    is_attributed: bool
    is_current_testimony: bool
    evidence_spans: tuple[EvidenceSpan, ...] = ()
    asserted_at: UTC | None = None
    claim_valid_from: UTC | None = None
    claim_valid_until: UTC | None = None
    claim_valid_precision: str = "unknown"
    claim_valid_kind: str | None = None
    document_title: str | None = None
    source_kind: str | None = None
    corroboration_count: int | None = Field(default=None, ge=1)
    grouped_claim_ids: tuple[UUID, ...] = ()
    ocr_citation: OcrCitation | None = None   # sent only when asked for (`PREFER_OCR_CITATIONS`)

    @model_serializer(mode="wrap")
    def _ocr_citation_when_asked(self, handler: SerializerFunctionWrapHandler,
                                 info: SerializationInfo) -> dict[str, Any]:
        body = handler(self)
        if not (info.context or {}).get(_OCR_CITATIONS):
            body.pop("ocr_citation", None)
        return body


class FactEvidence(_Model):
    fact_kind: Literal["relation", "observation"]
    fact_id: UUID
    claim_id: UUID
    stance: Literal["supports", "contradicts"]


class EvidenceTotal(_Model):
    fact_kind: Literal["relation", "observation"]
    fact_id: UUID
    stance: Literal["supports", "contradicts"]
    returned: int = Field(ge=0)
    total: int = Field(ge=0)


class ChunkEvidenceResult(_Model):
    chunk_id: UUID
    doc_id: UUID
    version_id: UUID
    representation_id: UUID
    chunk_text: str
    char_start: int
    char_end: int
    section_role: str | None
    source_kind: str
    context_prefix: str | None = None
    document_title: str | None = None
    source_modified_at: UTC | None = None
    published_at: UTC | None = None


class SourceRecord(_Model):
    doc_id: UUID
    title: str | None
    source_kind: str
    markdown_uri: str | None
    mention_count: int | None = None
    first_mentioned_at: UTC | None = None
    last_mentioned_at: UTC | None = None


class TranscriptEntry(_Model):
    subject_kind: str
    outcome: str
    method: str
    confidence: float | None
    related_id: UUID | None
    decided_by: str
    decided_at: UTC
    features: dict[str, Any] | None


class GraphNode(_Model):
    entity_id: UUID
    name: str
    hops: int = Field(ge=0)


class GraphEdge(_Model):
    relation_id: UUID
    subject_id: UUID
    object_id: UUID
    predicate: str
    fact: str | None
    evidence_count: int
    valid_from: UTC | None
    valid_until: UTC | None
    valid_precision: Precision = "unknown"
    ingested_at: UTC
    invalidated_at: UTC | None
    support: Literal["current", "withdrawn"] = "current"


class GraphPath(_Model):
    length: int = Field(ge=1)
    nodes: tuple[GraphNode, ...] = Field(min_length=2)
    edges: tuple[GraphEdge, ...] = Field(min_length=1)


class RankedItem(_Model):
    item_id: UUID
    score: float
    signals: dict[str, float] = {}


class Truncation(_Model):
    truncated: bool
    returned: int = Field(ge=0)
    estimated_total: int = Field(ge=0)
    total_is_exact: bool = True
    continuation: str | None = None
    reason: str | None = None


class Negative(_Model):
    kind: Literal["unknown_entity", "known_empty", "boundary"]
    explanation: str = Field(min_length=1)
    workaround: str | None = None


class Envelope(_Model):
    grain: Literal["fact", "evidence", "compiled", "composite"]
    temporal_scope: TemporalScope = Field(discriminator="mode")
    freshness: Freshness
    entities: tuple[EntityCandidate, ...] = ()
    facts: tuple[FactResult, ...] = ()
    evidence: tuple[EvidenceResult, ...] = ()
    fact_evidence: tuple[FactEvidence, ...] = ()
    evidence_totals: tuple[EvidenceTotal, ...] = ()
    chunks: tuple[ChunkEvidenceResult, ...] = ()
    sources: tuple[SourceRecord, ...] = ()
    transcript: tuple[TranscriptEntry, ...] = ()
    nodes: tuple[GraphNode, ...] = ()
    paths: tuple[GraphPath, ...] = ()
    edges: tuple[GraphEdge, ...] = ()
    ranking: tuple[RankedItem, ...] = ()
    truncation: Truncation | None = None
    negative: Negative | None = None
    dropped_by_hydration: int = 0


class ContextBundle(_Model):
    contract: Literal["ContextBundle/v2"] = "ContextBundle/v2"
    claims_and_sources: Envelope
    facts: Envelope


class ToolDescriptor(_Model):
    name: str
    description: str
    input_schema: dict[str, Any]
    result_schema: dict[str, Any]
    result_contract: str = Field(min_length=1)
    output_grain: str | None
    answer_intent: str
    mutates: bool | None = None
    version: int | None = Field(default=None, ge=1)
    implementation_plan_hash: str | None = None


class DeploymentBuildInfo(_Model):
    build_revision: str = ""
    model_bindings: dict[str, str] = {}
    document_binding_generation: str | None = None
    tools: dict[str, int] = {}


class DocumentVersionSummary(_Model):
    """`GET /documents`' latest version, in the seed's shape: the remember client accepts only these
    six statuses and no other field, so a parked version is `failed` here, its reason the error."""
    version_id: UUID
    version_no: int
    status: Literal["ingesting", "converting", "structuring", "ready", "failed", "deleted"]
    ingested_at: UTC
    error: str | None = None

    @classmethod
    def listed(cls, *, status: str, error: str | None, parked_reason: str | None, mime: str,
               **fields: Any) -> DocumentVersionSummary:
        """A version as listed: never `converting` when nothing will convert it."""
        if status == "parked":
            return cls(status="failed", error=parked_error(parked_reason, mime), **fields)
        return cls(status=status, error=error, **fields)


def parked_error(reason: str | None, mime: str) -> str:
    return (f"parked: {reason}: no converter route for {mime}; `corpusmem retry` converts it once "
            "this install has one")


# What `GET /documents?status=` selects, by the status each version is listed with: `failed`
# lists parked versions too (the seed's summary shows them as failed); `parked` only those.
DOCUMENT_STATUS_FILTER: dict[str, tuple[str, ...]] = {
    "ingesting": ("ingesting",), "converting": ("converting",), "structuring": ("structuring",),
    "ready": ("ready",), "failed": ("failed", "parked"), "parked": ("parked",)}


class DocumentSummary(_Model):
    doc_id: UUID
    title: str | None = None
    source_kind: str
    source_uri: str | None = None
    first_seen_at: UTC
    latest: DocumentVersionSummary
    serving: bool


class DocumentPage(_Model):
    documents: tuple[DocumentSummary, ...]
    cursor: str | None = None


class DocumentDeletion(_Model):
    doc_id: UUID
    deleted_at: UTC
    claims_retired: int = Field(ge=0)
    relations_closed: int = Field(ge=0)
    observations_closed: int = Field(ge=0)


class PipelineStageReadiness(_Model):
    stage: str
    component_version: str
    status: Literal["missing", "pending", "running", "succeeded", "failed", "dead_letter", "skipped"]
    finished_at: UTC | None = None
    defer_reason: Literal["scheduled", "retry_backoff", "budget", "no_route"] | None = None


class VersionPipelineReadiness(_Model):
    version_id: UUID
    ready: bool
    stages: tuple[PipelineStageReadiness, ...]


class CapabilityReadiness(_Model):
    required: bool
    ready: bool
    checked_at: UTC
    reason: str
    version: str | None = None
    built_at: UTC | None = None
    published_at: UTC | None = None


class PipelineReadinessReport(_Model):
    ready: bool
    versions: tuple[VersionPipelineReadiness, ...]
    capabilities: dict[Literal["pipeline", "p1", "live_graph", "p3"], CapabilityReadiness]
    document_binding_generation: str | None = None
    model_bindings: dict[str, str] = {}
    build_revision: str = ""


class ReadinessRequirements(_Model):
    pipeline: bool
    p1: bool
    live_graph: bool
    p3: bool


class ReadinessRequest(_Model):
    version_ids: list[UUID] = Field(min_length=1, max_length=1000)
    require: ReadinessRequirements


class IngestedVersion(_Model):
    deployment_id: UUID
    doc_id: UUID
    version_id: UUID
    content_hash: str
    created: bool
    mime: str | None = None
    title: str | None = None
    versioning_mode: Literal["snapshot", "living"] | None = None
    parked: Literal["no_route"] | None = None


class SearchRequest(_Model):
    """`POST /search/claims` and `/search/chunks`: `GET`'s parameters, in the body, so a person's
    question stays out of URLs, access logs and browser history."""
    query: str = Field(min_length=1, max_length=4096)
    k: int = Field(default=10, ge=1, le=400)
    channel: Literal["semantic", "bm25"] = "semantic"


INGEST_PRINCIPAL_KINDS = ("user", "api_credential", "service")


class IngestPrincipal(_Model):
    """Who created a version (the seed's `ingested_by`): a person, a credential a person made, or
    the deployment's own automation, never collapsed into one another. `ref` is opaque."""
    kind: Literal["user", "api_credential", "service"]
    ref: str = Field(min_length=1, max_length=255, pattern=r"^[\x20-\x7e]+$")


class DocumentVersion(_Model):
    """A version in corpusmem's own `GET /documents/{doc_id}/versions` (no client of the seed reads
    it): a version waiting for a converter route is `parked`, with `parked_reason`."""
    version_id: UUID
    version_no: int
    status: Literal["ingesting", "converting", "structuring", "ready", "failed", "deleted", "parked"]
    parked_reason: Literal["no_route"] | None = None
    ingested_at: UTC
    content_hash: str
    mime: str
    source_modified_at: UTC | None = None
    source_version_ref: str | None = None
    error: str | None = None
    ingested_by: IngestPrincipal | None = None


class DocumentVersions(_Model):
    """`GET /documents/{doc_id}/versions`: every version of a live document, newest first."""
    doc_id: UUID
    title: str | None = None
    source_kind: str
    source_uri: str | None = None
    versions: tuple[DocumentVersion, ...]
