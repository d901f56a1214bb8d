"""Reading vector-store payloads: named fields, guessed conventions, LlamaIndex nodes."""

from __future__ import annotations

import json

from pipeline.documents import reassembly, vector_fields
from pipeline.documents.vector_fields import FieldMap

LANGCHAIN = [
    ("p2", {"page_content": "the cutover to June 8 and Priya sizes the backlog.",
            "metadata": {"source": "notes/kickoff.md", "chunk_index": 1, "last_modified": "2026-01-16T10:00:00Z"}}),
    ("p1", {"page_content": "Ravi has been on the billing migration and agreed on",
            "metadata": {"source": "notes/kickoff.md", "chunk_index": 0, "title": "Kickoff"}}),
]


def test_langchain_payloads_are_read_by_convention_and_the_guess_is_reported():
    fields = vector_fields.guess([p for _, p in LANGCHAIN], FieldMap())
    assert (fields.text, fields.source, fields.position, fields.date, fields.title) == (
        "page_content", "metadata.source", "metadata.chunk_index", "metadata.last_modified", "metadata.title")
    assert fields.char_start is None and set(fields.guessed) == {"text", "source", "position", "date", "title"}
    assert "source ← metadata.source (guessed)" in fields.describe()
    [doc], rejected = reassembly.reassemble(vector_fields.to_records(LANGCHAIN, fields))
    assert doc.text.startswith("Ravi has been") and doc.text.endswith("backlog.") and doc.title == "Kickoff"
    assert doc.source == "notes/kickoff.md" and doc.modified_at.isoformat() == "2026-01-16T10:00:00+00:00"
    assert not rejected.counts


def test_a_named_field_wins_over_the_conventions():
    payloads = [{"page_content": "x", "body": "the real text", "metadata": {"source": "a", "path": "b"}}]
    fields = vector_fields.guess(payloads, FieldMap(text="body", source="metadata.path"))
    assert (fields.text, fields.source) == ("body", "metadata.path") and "text" not in fields.guessed
    [record] = vector_fields.to_records([("r", payloads[0])], fields)
    assert (record.text, record.source) == ("the real text", "b")


def test_llamaindex_nodes_are_read_from_their_node_content_with_exact_offsets():
    text = "Dana leads the payments team. She owns the cutover plan for June."
    nodes = []
    for i, (start, end) in enumerate(((0, 40), (30, len(text)))):
        node = {"text": text[start:end], "start_char_idx": start, "end_char_idx": end,
                "metadata": {"file_name": "payments.md"}}
        nodes.append((f"n{i}", {"_node_content": json.dumps(node), "ref_doc_id": "doc-7", "doc_id": "doc-7",
                                "document_id": "doc-7"}))
    fields = vector_fields.guess([p for _, p in nodes], FieldMap())
    assert (fields.text, fields.source, fields.char_start, fields.title) == (
        "text", "ref_doc_id", "start_char_idx", "metadata.file_name")
    [doc], _ = reassembly.reassemble(vector_fields.to_records(reversed(nodes), fields))
    assert doc.text == text and doc.seams_from_offsets and doc.title == "payments.md" and doc.source == "doc-7"


def test_values_that_are_not_positions_or_texts_are_left_empty_and_counted():
    fields = FieldMap(text="t", source="s", position="p")
    rows = [("a", {"t": "first", "s": "x", "p": "0"}), ("b", {"t": 42, "s": "x", "p": 1}),
            ("c", {"t": "third", "s": "x", "p": "one"}), ("d", {"t": "fourth", "s": "x", "p": 2.0})]
    records = list(vector_fields.to_records(rows, fields))
    assert [(r.text, r.position) for r in records] == [("first", 0), (None, 1), ("third", None), ("fourth", 2)]
    [doc], rejected = reassembly.reassemble(records)
    assert dict(rejected.counts) == {"no_text": 1, "no_position": 1}
    assert doc.gaps == 1   # position 1 is missing from what landed: a visible break
