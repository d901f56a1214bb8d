"""Tables (CSV, TSV): Markdown tables in groups of rows, each with the header, and the reader's
split of a large table file into parts.

A chunk is a run of whole blocks, so a table must be cut into tables, not into runs of rows, for
every chunk to carry the header: the rows are grouped so that each group's table fits the chunk
target, and markitdown's CSV converter writes each group (header included) as a Markdown table.
A file larger than `part_bytes` is split by the reader into parts (`split_parts`), each a
document of its own with the header as its first line, so that no stage ever holds more than a
part of it: a 1 GB CSV is read, converted and embedded in bounded memory.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

# What a row costs in Markdown beyond its cells: `| ` before the first, ` | ` between, ` |` and a
# line end after the last; the separator row is `| --- ` per column and `|`.
_CELL_OVERHEAD = 3
_ROW_OVERHEAD = 2
_SEPARATOR_PER_COLUMN = 6

DELIMITERS = {"csv": ",", "tsv": "\t"}


class RaggedRows(ValueError):
    """A row has more fields than the header: its extra fields would have no column."""


def to_markdown(text: str, delimiter: str, target_chars: int) -> str:
    """`text` (a whole CSV or TSV) as Markdown tables of at most about `target_chars` each (one row
    at least), every one with the header. A row shorter than the header is padded; a longer one
    raises `RaggedRows` naming it."""
    from markitdown import StreamInfo
    from markitdown.converters import CsvConverter

    converter = CsvConverter()
    rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    tables: list[str] = []
    group: list[list[str]] = []
    size = 0
    info = StreamInfo(mimetype="text/csv", extension=".csv", charset="utf-8")

    def flush() -> None:
        nonlocal size
        if header is not None and group:
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows([header, *group])
            table = converter.convert(io.BytesIO(buffer.getvalue().encode("utf-8")), info).markdown
            tables.append(table)
        group.clear()
        size = header_chars

    header_chars = 0
    try:
        for row in rows:
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = row
                header_chars = (sum(len(c) for c in row) + (_CELL_OVERHEAD + _SEPARATOR_PER_COLUMN) * len(row)
                                + 2 * _ROW_OVERHEAD)
                size = header_chars
                continue
            if len(row) > len(header):
                raise RaggedRows(f"ragged rows: row {rows.line_num} has {len(row)} fields, the header "
                                 f"{len(header)}")
            row_chars = sum(len(c) for c in row) + _CELL_OVERHEAD * len(header) + _ROW_OVERHEAD
            if group and size + row_chars > target_chars:
                flush()
            group.append(row)
            size += row_chars
    except csv.Error as err:
        raise RaggedRows(f"malformed table at line {rows.line_num}: {err}") from None
    if header is not None and not group:
        group.append([""] * len(header))   # a header alone is still a table, with one empty row
    flush()
    return "\n\n".join(tables)


@dataclass(frozen=True)
class Part:
    """One part of a split table file: its bytes (the header line first) and the lines it holds."""

    number: int          # 1-based
    content: bytes
    first_line: int      # 1-based line numbers of the file, of its first and last rows
    last_line: int


def split_parts(stream: BinaryIO, part_bytes: int) -> Iterator[Part]:
    """Parts of a table file of at most about `part_bytes` each, every one starting with the
    file's first (header) line, cut only between records: a quoted field that spans lines stays
    whole. Reads the stream once; holds one part at a time."""
    header = stream.readline()
    if not header:
        return
    line = 1
    number = 0
    buffer: list[bytes] = []
    size = 0
    first = 2
    quotes = 0  # quote characters seen in the record being read: odd means it goes on
    for raw in stream:
        line += 1
        buffer.append(raw)
        size += len(raw)
        quotes += raw.count(b'"')
        if quotes % 2 == 0:
            quotes = 0
            if size >= part_bytes:
                number += 1
                yield Part(number, header + b"".join(buffer), first, line)
                buffer, size, first = [], 0, line + 1
    if buffer or number == 0:
        yield Part(number + 1, header + b"".join(buffer), first, line)
