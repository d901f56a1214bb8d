"""The pure stages as batch functions over `DOC_SCHEMA` tables: read, convert, structure, chunk.

Each takes a pyarrow batch and returns one, row for row (except `read`, which expands an
archive into its members), runs only on rows that still have work, and turns an exception into
a failed row rather than a failed batch. Ray Data names its operators after these functions,
so the dashboard shows `read`, `convert`, `structure`, `chunk` (OCR, which owns a model, is an
actor class: `actors/ocr.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from pipeline import records
from pipeline.documents import blocks as blocks_mod
from pipeline.documents.chunk import BLOCK_CAP_FACTOR, build_chunks
from pipeline.documents.convert import OCR, ConversionError, ConvertOptions, NeedsOcr, NoRoute, OcrOptions, section_role
from pipeline.documents.convert import convert as convert_bytes
from pipeline.documents.walk import SourceOptions, read_item
from pipeline.documents.structure import build_sections

Row = dict[str, Any]

# `read` hands on what it has read once its rows hold this many bytes: an archive, an mbox or a
# table file split into parts never sits whole in one batch.
READ_BATCH_BYTES = 16 * 1024 * 1024


def _each_active(batch: pa.Table, stage: str, step: Callable[[Row], None]) -> pa.Table:
    started = records.clock()
    rows = records.to_rows(batch)
    for row in rows:
        if records.is_active(row):
            try:
                step(row)
            except Exception as err:  # a per-row error column, never a failed batch
                records.fail(row, stage, f"{type(err).__name__}: {err}")
    records.share_seconds(rows, stage, started)
    return records.to_table(rows)


def read(batch: pa.Table, options: SourceOptions) -> Iterator[pa.Table]:
    """Source items (paths) → one row per document (archives, mail files and large tables expanded
    to their members), in batches of about `READ_BATCH_BYTES`."""
    started = records.clock()
    rows: list[Row] = []
    held = 0
    for item in batch.to_pylist():
        try:
            for row in read_item(item, options):
                rows.append(row)
                held += len(row["content"] or b"")
                if held >= READ_BATCH_BYTES:
                    records.share_seconds(rows, "read", started)
                    yield records.to_table(rows)
                    rows, held, started = [], 0, records.clock()
        except Exception as err:
            rows.append(records.fail(records.new_row(item=item["item"], source_kind=options.source_kind,
                                                     source_ref=item["source_ref"]),
                                     "read", f"{type(err).__name__}: {err}"))
    records.share_seconds(rows, "read", started)
    yield records.to_table(rows)


def _convert(row: Row, ocr: OcrOptions | None, options: ConvertOptions) -> None:
    try:
        done = convert_bytes(row["content"], row["mime"], row["filename"], ocr, options)
    except NoRoute:
        row.update(outcome=records.PARKED, content=None, prior_vectors=None)
        return
    except ConversionError as err:
        records.fail(row, "convert", str(err))
        return
    if isinstance(done, NeedsOcr):   # the bytes stay on the row for the OCR stage
        row.update(converter=OCR, ocr_pdf_pages=None if done.pdf_pages is None else list(done.pdf_pages))
        return
    row.update(markdown=done.markdown, converter=done.converter,
               converter_version=done.converter_version, derivation=done.derivation, content=None)


def convert(batch: pa.Table, ocr: OcrOptions | None = None, options: ConvertOptions = ConvertOptions()) -> pa.Table:
    """Bytes → `document.md` text by the run's routes (`options`); with `ocr` (the run has an OCR
    stage), images and scanned PDFs are marked for it."""
    return _each_active(batch, "convert", lambda row: _convert(row, ocr, options))


def structure(batch: pa.Table, target_chars: int) -> pa.Table:
    """`document.md` → sections from headings, each with a role (a table's all `table`)."""
    def step(row: Row) -> None:
        found = blocks_mod.split_blocks(row["markdown"], max_block_chars=BLOCK_CAP_FACTOR * target_chars)
        row["sections"] = build_sections(row["markdown"], found, all_role=section_role(row["converter"]))
    return _each_active(batch, "structure", step)


def chunk(batch: pa.Table, target_chars: int) -> pa.Table:
    """Sections → chunks: non-overlapping runs of whole blocks with exact char offsets."""
    def step(row: Row) -> None:
        found = blocks_mod.split_blocks(row["markdown"], max_block_chars=BLOCK_CAP_FACTOR * target_chars)
        row["chunks"] = build_chunks(row["markdown"], found, row["sections"], target_chars)
        if not row["chunks"]:
            raise ValueError("the converted document has no text to chunk")
    return _each_active(batch, "chunk", step)
