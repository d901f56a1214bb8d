"""The rebuild step every store reader shares: payloads → document rows for `ingest`, and counts."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline import records
from pipeline.documents.rebuild import MIME, RebuildTally, filename_for, rebuild
from pipeline.documents.vector_fields import FieldMap, guess

PAYLOADS = [
    ("b", {"page_content": "overlapping text at the seam. And the second half of the note.",
           "metadata": {"source": "s3://team/notes/kickoff.md", "chunk_index": 1, "modified_at": "2026-01-16T10:00:00Z"}}),
    ("a", {"page_content": "# Kickoff\n\nThe first half ends with overlapping text at the seam.",
           "metadata": {"source": "s3://team/notes/kickoff.md", "chunk_index": 0, "modified_at": "2026-01-15T10:00:00Z"}}),
    ("c", {"page_content": "", "metadata": {"source": "s3://team/notes/empty.md", "chunk_index": 0}}),
]


def test_records_become_one_markdown_row_per_source_with_the_newest_date_and_the_heading_as_title():
    fields = guess([p for _, p in PAYLOADS], FieldMap())
    table, tally = rebuild(PAYLOADS, fields, source_kind="qdrant:team", versioning_mode="living", assume_utc=False)
    assert table.schema == records.DOC_SCHEMA
    [row] = table.to_pylist()
    assert row["content"].decode() == ("# Kickoff\n\nThe first half ends with overlapping text at the seam. "
                                       "And the second half of the note.")
    assert row["size_bytes"] == len(row["content"]) and row["mime"] == MIME
    assert (row["source_kind"], row["source_ref"], row["item"]) == ("qdrant:team", "s3://team/notes/kickoff.md",
                                                                    "s3://team/notes/kickoff.md")
    assert row["filename"] == "kickoff.md" and row["title"] == "Kickoff" and row["versioning_mode"] == "living"
    assert row["source_modified_at"] == datetime(2026, 1, 16, 10, tzinfo=UTC)
    assert row["outcome"] is None and row["doc_id"] is None   # ingest decides those
    assert (tally.records, tally.documents, tally.overlap_chars) == (3, 1, len("overlapping text at the seam."))
    assert dict(tally.rejected) == {"no_text": 1} and tally.examples == {"no_text": ["c"]}


def test_a_document_without_heading_or_title_is_named_after_its_source():
    table, tally = rebuild([("1", {"text": "plain words", "source": "https://wiki.example/page/Runbook?rev=3"})],
                           FieldMap(text="text", source="source"), source_kind="k", versioning_mode="snapshot",
                           assume_utc=False)
    [row] = table.to_pylist()
    assert (row["filename"], row["title"], row["source_modified_at"]) == ("Runbook", "Runbook", None)
    assert tally.undated == 1


def test_tallies_add_up_across_read_tasks_and_render_every_reason_with_examples():
    one = RebuildTally(records=3, documents=1, gaps=1, overlap_chars=10)
    one.rejected.update({"no_text": 2})
    one.examples["no_text"] = ["r1", "r2"]
    two = RebuildTally(records=4, documents=2, undated=1)
    two.rejected.update({"no_text": 5, "bad_date": 1})
    two.examples.update({"no_text": ["r3", "r4", "r5", "r6", "r7"], "bad_date": ["r9"]})
    total = RebuildTally().merge(one).merge(two)
    assert (total.records, total.documents, total.gaps, total.overlap_chars, total.undated) == (7, 3, 1, 10, 1)
    assert total.rejected == {"no_text": 7, "bad_date": 1}
    assert total.examples["no_text"] == ["r1", "r2", "r3", "r4", "r5"]   # a few, never all
    text = total.render()
    assert "records read     7, rebuilt into 3 documents" in text and "records left out 8:" in text
    assert "no_text            7  (e.g. r1, r2, r3, r4, r5)" in text and "bad_date           1  (e.g. r9)" in text


def test_filenames_of_sources():
    assert filename_for("notes/2026/kickoff.md") == "kickoff.md"
    assert filename_for("https://x.example/a/b/#frag") == "b"
    assert filename_for("doc-42") == "doc-42"
