"""Which payload field of a vector-store record holds its text, source, position, date, title and
offset: named by the user, or guessed from the conventions of LangChain and LlamaIndex payloads.

Every store reader hands over `(record id, payload)` pairs; a payload is a dict, possibly nested
(`{"page_content": ..., "metadata": {"source": ...}}`), and a dotted name reaches inside it
(`metadata.source`). LlamaIndex keeps a node as JSON text under `_node_content`; its fields are
read as if they were the payload's own. The guess is made once, from a sample, and reported, so
a user sees which fields were taken and can name others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipeline.documents.reassembly import Record

ROLES = ("text", "source", "position", "date", "title", "char_start")

# The names each role goes by in common payloads, first match wins.
CONVENTIONS: dict[str, tuple[str, ...]] = {
    "text": ("page_content", "text", "document", "content", "chunk"),
    "source": ("metadata.source", "source", "metadata.file_path", "file_path", "ref_doc_id", "doc_id",
               "document_id", "metadata.doc_id", "metadata.url", "url"),
    # not pages: a page holds several chunks
    "position": ("metadata.chunk_index", "chunk_index", "metadata.position", "position", "metadata.seq_num",
                 "seq_num"),
    "date": ("metadata.modified_at", "modified_at", "metadata.last_modified", "last_modified",
             "metadata.last_modified_date", "metadata.updated_at", "updated_at", "metadata.date", "date",
             "metadata.created_at", "created_at"),
    "title": ("metadata.title", "title", "metadata.file_name", "file_name"),
    "char_start": ("start_char_idx", "metadata.start_index", "start_index"),
}


@dataclass(frozen=True)
class FieldMap:
    text: str | None = None
    source: str | None = None
    position: str | None = None
    date: str | None = None
    title: str | None = None
    char_start: str | None = None
    guessed: tuple[str, ...] = ()   # the roles whose field was guessed, not named

    def describe(self) -> str:
        return ", ".join(f"{role} ← {getattr(self, role) or '(none)'}" + (" (guessed)" if role in self.guessed else "")
                         for role in ROLES)


def lookup(payload: Mapping[str, Any], name: str) -> Any:
    """`name` in `payload`: a key as written, else a dotted path into nested dicts."""
    if name in payload:
        return payload[name]
    node: Any = payload
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def flatten_node(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """A LlamaIndex payload with its `_node_content` JSON read into it (the payload's own keys win)."""
    raw = payload.get("_node_content")
    if not isinstance(raw, str):
        return payload
    try:
        node = json.loads(raw)
    except json.JSONDecodeError:
        return payload
    return {**node, **payload} if isinstance(node, dict) else payload


def _candidates(role: str) -> Iterator[str]:
    for name in CONVENTIONS[role]:
        yield name
        if name.startswith("metadata."):
            yield "c" + name   # LangChain's PGVector table keeps the metadata in `cmetadata`


def guess(sample: Sequence[Mapping[str, Any]], named: FieldMap) -> FieldMap:
    """`named` with each unnamed role given the first conventional field the sample holds."""
    payloads = [flatten_node(p) for p in sample]
    chosen, guessed = {}, []
    for role in ROLES:
        if getattr(named, role):
            continue
        for candidate in _candidates(role):
            if any(lookup(p, candidate) not in (None, "") for p in payloads):
                chosen[role] = candidate
                guessed.append(role)
                break
    return replace(named, **chosen, guessed=tuple(guessed))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def to_records(rows: Iterable[tuple[str, Mapping[str, Any]]], fields: FieldMap) -> Iterator[Record]:
    """Records for `reassembly.reassemble`, read through `fields`."""
    for record_id, payload in rows:
        p = flatten_node(payload)

        def get(name: str | None) -> Any:
            return lookup(p, name) if name else None

        text, source = get(fields.text), get(fields.source)
        title = get(fields.title)
        yield Record(record_id=str(record_id), source=None if source is None else str(source),
                     text=text if isinstance(text, str) else None, position=_int(get(fields.position)),
                     date=get(fields.date), title=title if isinstance(title, str) else None,
                     char_start=_int(get(fields.char_start)))
