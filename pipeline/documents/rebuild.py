"""Documents rebuilt from a vector store's records, as `DOC_SCHEMA` rows for `ingest`.

`rebuild` is the one step every store reader shares: payloads are read through the field map
(`vector_fields`), joined per source (`reassembly`), and each rebuilt document becomes a row that
enters the normal pipeline as Markdown, so conversion, claims, facts and readiness apply
unchanged. The vectors the store holds never enter: the memory pins its own model.

What the step saw is counted in a `RebuildTally` (records, documents, gaps, overlap removed,
records left out by reason), which read tasks on many nodes add together for the run report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import pyarrow as pa

from pipeline import records
from pipeline.documents.reassembly import REASONS, Document, reassemble
from pipeline.documents.vector_fields import FieldMap, to_records

MIME = "text/markdown"
_EXAMPLES = 5


@dataclass
class RebuildTally:
    records: int = 0
    documents: int = 0
    gaps: int = 0
    overlap_chars: int = 0
    seams_from_offsets: int = 0       # documents whose seams came from character offsets
    undated: int = 0                  # documents none of whose records had a date
    rejected: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def merge(self, other: RebuildTally) -> RebuildTally:
        self.records += other.records
        self.documents += other.documents
        self.gaps += other.gaps
        self.overlap_chars += other.overlap_chars
        self.seams_from_offsets += other.seams_from_offsets
        self.undated += other.undated
        self.rejected.update(other.rejected)
        for reason, ids in other.examples.items():
            shown = self.examples.setdefault(reason, [])
            shown.extend(ids[:max(0, _EXAMPLES - len(shown))])
        return self

    def render(self) -> str:
        lines = [f"  records read     {self.records}, rebuilt into {self.documents} documents "
                 f"({self.overlap_chars} overlapping characters removed at seams, {self.gaps} gaps kept "
                 f"as breaks, {self.seams_from_offsets} joined by character offsets, {self.undated} undated)"]
        left = sum(self.rejected.values())
        lines.append(f"  records left out {left}" + (":" if left else ""))
        for reason in REASONS:
            if self.rejected[reason]:
                lines.append(f"    {reason:<19}{self.rejected[reason]}  (e.g. "
                             + ", ".join(self.examples.get(reason, [])) + ")")
        return "\n".join(lines)


def filename_for(source: str) -> str:
    """A display name for a source: its last path segment (a URL's too), else the source itself."""
    name = PurePosixPath(source.rstrip("/").split("?")[0].split("#")[0]).name
    return name or source


def document_row(doc: Document, *, source_kind: str, versioning_mode: str) -> dict[str, Any]:
    content = doc.text.encode("utf-8")
    filename = filename_for(doc.source)
    return records.new_row(item=doc.source, source_kind=source_kind, source_ref=doc.source, filename=filename,
                           title=doc.title or PurePosixPath(filename).stem or filename, mime=MIME,
                           versioning_mode=versioning_mode, source_modified_at=doc.modified_at,
                           content=content, size_bytes=len(content))


def rebuild(payloads: Iterable[tuple[str, Mapping[str, Any]]], fields: FieldMap, *, source_kind: str,
            versioning_mode: str, assume_utc: bool) -> tuple[pa.Table, RebuildTally]:
    """The documents of `payloads` (every record of each of their sources) and what was counted."""
    got = list(to_records(payloads, fields))
    documents, rejected = reassemble(got, assume_utc=assume_utc)
    tally = RebuildTally(records=len(got), documents=len(documents), rejected=rejected.counts,
                         examples=rejected.examples)
    for doc in documents:
        tally.gaps += doc.gaps
        tally.overlap_chars += doc.overlap_chars
        tally.seams_from_offsets += doc.seams_from_offsets
        tally.undated += doc.modified_at is None
    rows = [document_row(d, source_kind=source_kind, versioning_mode=versioning_mode) for d in documents]
    return records.to_table(rows), tally
