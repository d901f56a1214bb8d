"""Arrow schemas of the rows that flow through an import, declared once.

One row is one document version on its way through the stages. Every stage takes and returns
whole `DOC_SCHEMA` tables, filling the columns it owns, so that Ray Data never has to unify
schemas inferred from batches that happen to hold only nulls. A row that failed keeps flowing
with `outcome = "failed"`, `error` and `error_stage` set, and every later stage passes it on
untouched, so the writer can record it (a per-row error column, never a dropped row).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

UTC_TS = pa.timestamp("us", tz="UTC")

SECTION = pa.struct([
    ("ord", pa.int32()),
    ("heading", pa.string()),
    ("level", pa.int32()),
    ("role", pa.string()),
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
])

CHUNK = pa.struct([
    ("ord", pa.int32()),
    ("section_ord", pa.int32()),
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
    ("text", pa.string()),
    ("text_hash", pa.string()),
    # float32 little-endian bytes: cheaper in Arrow than a list<float> and written as-is.
    ("embedding", pa.binary()),
    ("reused", pa.bool_()),
])

PRIOR_VECTOR = pa.struct([("text_hash", pa.string()), ("embedding", pa.binary())])

SPAN = pa.struct([("char_start", pa.int32()), ("char_end", pa.int32())])

CLAIM = pa.struct([
    ("claim_id", pa.string()),
    ("chunk_ord", pa.int32()),
    ("claim_text", pa.string()),
    ("source_span", pa.string()),
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
    ("evidence_spans", pa.list_(SPAN)),
    ("is_attributed", pa.bool_()),
    ("valid_from", UTC_TS),
    ("valid_until", UTC_TS),
    ("precision", pa.string()),
    ("kind", pa.string()),
    ("added_context", pa.string()),      # JSON list of {text, origin, label}
    ("entailment_self_verdict", pa.string()),
    ("extractor", pa.string()),
    ("embedding", pa.binary()),
    # true when an earlier version's unchanged passage already holds this claim: only its
    # occurrence in this version is written, and no model was called for it
    ("reused", pa.bool_()),
])

# A claim of the document's previous version, found by the text of the chunk it came from.
PRIOR_CLAIM = pa.struct([
    ("chunk_text_hash", pa.string()),
    ("claim_id", pa.string()),
    ("extractor", pa.string()),
    ("rel_start", pa.int32()),           # offsets relative to the chunk's start
    ("rel_end", pa.int32()),
    ("rel_evidence", pa.list_(SPAN)),
])

LEDGER = pa.struct([
    ("chunk_ord", pa.int32()),
    ("decision", pa.string()),
    ("reason", pa.string()),
    ("detail", pa.string()),
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
])

COST = pa.struct([
    ("stage", pa.string()),
    ("backend", pa.string()),
    ("model", pa.string()),
    ("calls", pa.int64()),
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("device_seconds", pa.float64()),
])

# One recognised line of an OCR'd page: where it is in `document.md` and on the page (box corners
# as fractions of the page's width and height).
OCR_LINE = pa.struct([
    ("page", pa.int32()),
    ("block", pa.int32()),
    ("line", pa.int32()),               # 1-based, down the page in reading order
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
    ("x0", pa.float32()),
    ("y0", pa.float32()),
    ("x1", pa.float32()),
    ("y1", pa.float32()),
    ("confidence", pa.float32()),
    ("low_confidence", pa.bool_()),
])

# One page of an OCR'd document: recognised or kept from the text layer, and its section's span.
OCR_PAGE = pa.struct([
    ("page", pa.int32()),
    ("source", pa.string()),            # ocr | text_layer
    ("width", pa.int32()),              # pixels the page was read at (0 for a text layer)
    ("height", pa.int32()),
    ("char_start", pa.int32()),
    ("char_end", pa.int32()),
    ("lines", pa.int32()),
    ("reason", pa.string()),            # no_text_recognised, or null
])

# What the vision model made of one page it was shown (`pipeline/documents/ocr_describe.py`): the
# description's kind, or the reason there is none.
DESCRIPTION = pa.struct([
    ("page", pa.int32()),
    ("kind", pa.string()),              # photo, whiteboard, ...; null when not described
    ("reason", pa.string()),            # why not described (`ocr_describe.FAILURE_REASONS`), or null
])

# Outcomes a row can have after `ingest`.
PROCESS = "process"        # a new version: run every stage
RESUME = "resume"          # the latest version, but an earlier run did not finish it
UNCHANGED = "unchanged"    # the latest version, finished: nothing to do
PARKED = "parked"          # stored, but no converter route for its type
FAILED = "failed"          # refused or failed; `error_stage` and `error` say where and why
# Not a document: the claims the LLM extraction's stages landed for documents that have their own
# report rows (`actors/llm_stage.py`); it counts claims, not documents.
EXTRACTED = "extracted"

STAGES = ("read", "ingest", "convert", "ocr", "structure", "chunk", "extract", "embed", "write")

DOC_SCHEMA = pa.schema([
    ("item", pa.string()),                 # what the user pointed at: path, or archive!member
    ("source_kind", pa.string()),
    ("source_ref", pa.string()),
    ("filename", pa.string()),
    ("title", pa.string()),
    ("mime", pa.string()),
    ("versioning_mode", pa.string()),
    ("source_modified_at", UTC_TS),
    ("source_version_ref", pa.string()),
    ("content", pa.binary()),
    ("size_bytes", pa.int64()),
    # set by ingest
    ("outcome", pa.string()),
    ("doc_id", pa.string()),
    ("version_id", pa.string()),
    ("content_hash", pa.string()),
    ("created", pa.bool_()),
    ("prior_vectors", pa.list_(PRIOR_VECTOR)),
    # set by convert / structure / chunk / embed
    ("markdown", pa.string()),
    ("converter", pa.string()),
    ("converter_version", pa.string()),
    ("derivation", pa.string()),
    # set by convert for a document the OCR stage converts (converter "ocr", no markdown yet): the
    # 0-based PDF pages to recognise, null for an image (every frame); then by the OCR stage
    ("ocr_pdf_pages", pa.list_(pa.int32())),
    ("ocr_lines", pa.list_(OCR_LINE)),
    ("ocr_pages", pa.list_(OCR_PAGE)),
    # set by the describe step (CORPUSMEM_DESCRIBE_MODEL): one per page meant for the vision model
    ("descriptions", pa.list_(DESCRIPTION)),
    ("sections", pa.list_(SECTION)),
    ("chunks", pa.list_(CHUNK)),
    # set by ingest (prior claims) and extract
    ("prior_claims", pa.list_(PRIOR_CLAIM)),
    ("claims", pa.list_(CLAIM)),
    ("ledger", pa.list_(LEDGER)),
    ("costs", pa.list_(COST)),
    # set by embed: the vectors the model computed for this row (the rest were reused or cached)
    ("chunk_vectors_computed", pa.int64()),
    ("claim_vectors_computed", pa.int64()),
    # errors
    ("error_stage", pa.string()),
    ("error", pa.string()),
    # the failure was transient and outlived its attempts: the stage is `dead_letter`, not `failed`
    ("dead_letter", pa.bool_()),
    # busy seconds spent on this row, per stage (a batch's time shared among its rows)
    *[(f"s_{stage}", pa.float64()) for stage in STAGES],
    # CPU seconds spent on this row, per stage: the worker process's, over the batch, shared the same way
    *[(f"c_{stage}", pa.float64()) for stage in STAGES],
])

COLUMNS = tuple(DOC_SCHEMA.names)


def new_row(**values: Any) -> dict[str, Any]:
    """A full row with every column present; unknown keys are a programming error."""
    unknown = set(values) - set(COLUMNS)
    if unknown:
        raise KeyError(f"not columns of DOC_SCHEMA: {sorted(unknown)}")
    row = dict.fromkeys(COLUMNS)
    row.update(values)
    return row


def to_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=DOC_SCHEMA)


def to_rows(batch: pa.Table) -> list[dict[str, Any]]:
    missing = set(COLUMNS) - set(batch.column_names)
    if missing:
        raise ValueError(f"batch lacks DOC_SCHEMA columns {sorted(missing)}")
    return batch.select(list(COLUMNS)).to_pylist()


def fail(row: dict[str, Any], stage: str, error: str, *, dead_letter: bool = False) -> dict[str, Any]:
    """Mark a row failed at `stage` (`dead_letter`: transiently, out of attempts); its bytes and
    derived text are dropped to keep batches small."""
    row.update(outcome=FAILED, error_stage=stage, error=error, dead_letter=dead_letter, content=None, markdown=None,
               sections=None, chunks=None, prior_vectors=None, prior_claims=None, claims=None,
               ledger=None, costs=None)
    return row


def is_active(row: dict[str, Any]) -> bool:
    """True when the row still has stages to run (new or resumed versions)."""
    return row["outcome"] in (PROCESS, RESUME, None)


def clock() -> tuple[float, float]:
    """Now, as `share_seconds` takes it: the wall clock and this process's CPU clock."""
    return time.perf_counter(), time.process_time()


def share_seconds(rows: list[dict[str, Any]], stage: str, started: tuple[float, float]) -> None:
    """Spread a batch's busy time and CPU time since `started` (`clock()`) over its rows, so
    per-stage totals add up across workers. The CPU is the whole process's: a worker runs one
    task at a time, so it is the stage's own, with the little its Ray threads spend meanwhile."""
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    for row in rows:
        row[f"s_{stage}"] = wall / max(len(rows), 1)
        row[f"c_{stage}"] = cpu / max(len(rows), 1)
