"""`corpusmem import-vectors`: every store through its real embedded or local mode, filled with
chunked, overlapping, shuffled copies of the example corpus, rebuilt into the original documents;
re-imports that change only what changed; `--delete-missing`; bad records counted by reason."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from actors.sources.stores import (
    StoreOptions,
    StoreUnavailable,
    open_reader,
    parse_filter,
)
from jobs import import_vectors
from jobs.import_vectors import VectorImport
from pipeline.documents.convert import NoRoute, convert
from pipeline.documents.mime import mime_for
from pipeline.documents.rebuild import MIME
from pipeline.documents.vector_fields import FieldMap
from tests.support import vector_stores as vs
from tests.support.cli import corpusmem
from tests.support.memory import rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def originals(example_corpus: Path) -> dict[str, tuple[str, datetime]]:
    """The example corpus as Markdown, by source, each dated by the day in its name (or 1 July)."""
    out = {}
    for f in sorted(example_corpus.iterdir()):
        try:
            text = convert(f.read_bytes(), mime_for(f.name), f.name).markdown
        except NoRoute:
            continue   # the zip: an archive, not a document
        day = f.name[:10] if f.name[:4].isdigit() and f.name[4] == "-" and f.name[7] == "-" else "2026-07-01"
        out[f"team/{f.stem}.md"] = (text, datetime.fromisoformat(f"{day}T09:30:00+00:00"))
    return out


@pytest.fixture(scope="module")
def chunk_records(originals):
    return vs.chunk_records((s, t, d.isoformat().replace("+00:00", "Z")) for s, (t, d) in originals.items())


def rebuilt(request: VectorImport):
    """The document rows the store's reads yield (what enters `ingest`), and the prepared store."""
    import ray

    prepared = import_vectors.prepare(request, parallelism=2)
    found = prepared.dataset().take_all()
    return {r["source_ref"]: r for r in found}, prepared, ray.get(prepared.counter.result.remote())


def _fill(store: str, tmp_path: Path, recs, dsn: str) -> StoreOptions:
    if store == "qdrant":
        vs.fill_qdrant(tmp_path / "qdrant", "team", recs)
        return StoreOptions("qdrant", str(tmp_path / "qdrant"), "team")
    if store == "chroma":
        vs.fill_chroma(tmp_path / "chroma", "team-notes", recs)
        return StoreOptions("chroma", str(tmp_path / "chroma"), "team-notes")
    if store == "lancedb":
        vs.fill_lance(tmp_path / "lance", "team", recs)
        return StoreOptions("lancedb", str(tmp_path / "lance"), "team")
    if store == "pgvector":
        vs.fill_pgvector(dsn, "langchain_pg_embedding", recs)
        return StoreOptions("pgvector", dsn, "langchain_pg_embedding")
    if store == "parquet":
        vs.write_parquet(tmp_path / "team.parquet", recs)
        return StoreOptions("parquet", str(tmp_path / "team.parquet"))
    vs.write_jsonl(tmp_path / "team.jsonl", recs)
    return StoreOptions("jsonl", str(tmp_path / "team.jsonl"))


# Qdrant's local mode filters by a scan of every point: it is read once and grouped instead
PLANS = {"qdrant": "sources", "chroma": "sources", "lancedb": "sources", "pgvector": "hash",
         "parquet": "groupby", "jsonl": "groupby"}


@pytest.mark.parametrize("store", list(PLANS))
def test_a_store_of_overlapping_shuffled_chunks_is_rebuilt_into_the_original_documents(
        store, memory, ray_local, tmp_path, originals, chunk_records):
    options = _fill(store, tmp_path, chunk_records, memory.dsn)
    docs, prepared, tally = rebuilt(VectorImport(options))

    assert prepared.plan.kind == PLANS[store]
    assert set(docs) == set(originals)
    for source, (text, day) in originals.items():
        row = docs[source]
        assert row["content"].decode("utf-8") == text, source
        assert row["source_modified_at"] == day and row["mime"] == MIME
        assert row["source_kind"] == options.default_source_kind and row["versioning_mode"] == "snapshot"
    assert tally.records == len(chunk_records) and tally.documents == len(originals)
    assert tally.overlap_chars > 0 and not tally.rejected and tally.gaps == 0
    # the fields were guessed and say so (a Chroma record's text is its own document); vectors were never read
    assert "source" in prepared.fields.guessed
    assert ("text" in prepared.fields.guessed) == (store != "chroma")
    assert all("vector" not in row and "embedding" not in row for row in docs.values())


# Cut by a plain sliding window, 90 characters every 60: the last record of the first lies wholly in
# the one before (11 characters), the second's is all overlap (30), the third's longer than it.
WINDOWED = {"notes/ops-review.md": "Ops review, week 36. Dana Kim chairs; Ravi Patel takes the minutes.\n"
                                  "The billing cutover moved after the invoice backlog review.\n"
                                  "Priya has it now. The next review is scheduled for 2025-09-14.\n",
            "notes/roster.md": "# Roster\n\nDana Kim is on call in March. Omar Farouk takes April, and the handover "
                               "happens on the first Monday of the month; Ravi covers all the gaps.\n",
            "notes/travel.md": "# Travel\n\nThe offsite is in Lisbon in May. Priya Shah books the venue and Ravi "
                               "Patel plans the agenda; café on the first morning, then a walk along the river.\n",
            "notes/short.md": "Ship it on Friday.\n"}


@pytest.mark.parametrize("store", list(PLANS))
def test_a_sliding_window_whose_last_record_lies_inside_the_one_before_is_rebuilt_exactly(
        store, memory, ray_local, tmp_path):
    cut = [(source, i, text[start:start + 90]) for source, text in WINDOWED.items()
           for i, start in enumerate(range(0, len(text), 60))]
    recs = [(str(n), {"page_content": piece,
                      "metadata": {"source": source, "chunk_index": i, "modified_at": "2026-03-04T10:00:00Z"}})
            for n, (source, i, piece) in enumerate(cut)]
    random.Random(11).shuffle(recs)
    assert sorted(len(p["page_content"]) for _, p in recs)[:3] == [11, 19, 30]
    docs, _, tally = rebuilt(VectorImport(_fill(store, tmp_path, recs, memory.dsn)))
    assert {source: row["content"].decode("utf-8") for source, row in docs.items()} == WINDOWED
    assert tally.records == len(recs) and not tally.rejected and tally.gaps == 0


def test_a_filter_keeps_only_the_matching_records(memory, ray_local, tmp_path, chunk_records, originals):
    options = _fill("qdrant", tmp_path, chunk_records, memory.dsn)
    wanted = sorted(originals)[:2]
    filtered = StoreOptions("qdrant", options.location, "team",
                            filter=parse_filter(json.dumps({"metadata.source": wanted})))
    docs, _, tally = rebuilt(VectorImport(filtered))
    assert sorted(docs) == wanted
    assert tally.records == sum(1 for _, p in chunk_records if p["metadata"]["source"] in wanted)


def _jsonl(path: Path, lines: list[dict]) -> StoreOptions:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json at all\n")
    return StoreOptions("jsonl", str(path))


def test_bad_records_are_counted_by_reason_and_the_rest_lands(ray_local, tmp_path):
    def rec(i, source, text, pos, date="2026-03-04T10:00:00Z"):
        return {"id": f"r{i}", "text": text, "metadata": {"source": source, "chunk_index": pos, "modified_at": date}}

    lines = [rec(1, "good.md", "The first part of the good document, long enough to stand. ", 0),
             rec(2, "good.md", "And its second part, which follows it.", 1),
             rec(3, "good.md", "A second record that claims position 1 as well.", 1),
             rec(4, None, "A record that names no source.", 0),
             rec(5, "empty.md", "   ", 0),
             rec(6, "baddate.md", "Dated on no calendar.", 0, date="the day after yesterday"),
             rec(7, "naive.md", "A time without a zone.", 0, date="2026-03-04T10:00:00")]
    options = _jsonl(tmp_path / "bad.jsonl", lines)

    docs, _, tally = rebuilt(VectorImport(options))
    assert sorted(docs) == ["good.md"]
    assert docs["good.md"]["content"].decode() == ("The first part of the good document, long enough to stand. "
                                                   "And its second part, which follows it.")
    # the line that is not JSON has neither text nor source: counted, with its digest as its id
    assert dict(tally.rejected) == {"duplicate_position": 1, "no_source": 1, "no_text": 2, "bad_date": 1,
                                    "naive_date": 1}
    assert tally.examples["duplicate_position"] == ["r3"] and tally.examples["naive_date"] == ["r7"]
    assert "duplicate_position 1  (e.g. r3)" in tally.render()

    docs, _, tally = rebuilt(VectorImport(options, assume_utc=True))
    assert sorted(docs) == ["good.md", "naive.md"] and "naive_date" not in tally.rejected
    assert docs["naive.md"]["source_modified_at"] == datetime(2026, 3, 4, 10, tzinfo=UTC)


@pytest.mark.parametrize("store, location, collection, message", [
    ("qdrant", "{tmp}/nowhere", "team", "no Qdrant local storage folder"),
    ("qdrant", "{tmp}/qdrant", "other", "has no collection 'other' (it has: team)"),
    ("qdrant", ":memory:", "team", "inside one process"),
    ("chroma", "{tmp}/nowhere", "team", "no Chroma persistent folder"),
    ("lancedb", "{tmp}/lance", "missing", "cannot open LanceDB table 'missing'"),
    ("pgvector", "{dsn}", "no_such_table", "no table 'no_such_table'"),
])
def test_a_store_that_cannot_be_opened_is_a_clear_error(store, location, collection, message, memory, tmp_path,
                                                        chunk_records):
    vs.fill_qdrant(tmp_path / "qdrant", "team", chunk_records[:3])
    vs.fill_lance(tmp_path / "lance", "team", chunk_records[:3])
    options = StoreOptions(store, location.format(tmp=tmp_path, dsn=memory.dsn), collection)
    with pytest.raises(StoreUnavailable, match=message.replace("(", r"\(").replace(")", r"\)")):
        open_reader(options).close()


def test_an_export_that_cannot_be_read_and_fields_that_cannot_be_found_are_clear_errors(ray_local, tmp_path):
    with pytest.raises(StoreUnavailable, match="cannot read parquet"):
        import_vectors.prepare(VectorImport(StoreOptions("parquet", str(tmp_path / "none.parquet"))), 1)
    (tmp_path / "odd.jsonl").write_text(json.dumps({"body": "text under a name no convention uses",
                                                    "origin": "a.md"}) + "\n")
    with pytest.raises(StoreUnavailable, match="--text-field"):
        import_vectors.prepare(VectorImport(StoreOptions("jsonl", str(tmp_path / "odd.jsonl"))), 1)
    docs, prepared, _ = rebuilt(VectorImport(StoreOptions("jsonl", str(tmp_path / "odd.jsonl")),
                                             named=FieldMap(text="body", source="origin")))
    assert list(docs) == ["a.md"] and prepared.fields.guessed == ()


def _points(path: Path, recs) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.upsert("notes", points=[models.PointStruct(id=int(i), vector=vs.vector(int(i)), payload=p)
                                   for i, p in recs])
    client.close()


def _drop_source(path: Path, source: str) -> None:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(path))
    client.delete("notes", points_selector=models.FilterSelector(filter=models.Filter(must=[
        models.FieldCondition(key="metadata.source", match=models.MatchValue(value=source))])))
    client.close()


NOTES = {"notes/billing.md": "# Billing\n\nRavi Patel leads the billing migration. The cutover moved to June 8 "
                             "after the review with Priya Shah.\n",
         "notes/roster.md": "# Roster\n\nDana Kim is on call in March. Omar Farouk takes April, and the handover "
                            "happens on the first Monday.\n",
         "notes/travel.md": "# Travel\n\nThe offsite is in Lisbon in May. Priya Shah books the venue and Ravi "
                            "Patel plans the agenda.\n"}


def test_reimports_change_only_what_changed_and_delete_missing_deletes_exactly_the_vanished(
        memory, ray_local, tmp_path, monkeypatch, capsys):
    recs = vs.chunk_records([(s, t, "2026-03-04T10:00:00Z") for s, t in NOTES.items()], size=60, overlap=25)
    store = tmp_path / "qdrant"
    vs.fill_qdrant(store, "notes", recs)
    args = ("import-vectors", "qdrant", str(store), "--collection", "notes", "--no-progress")

    def run_cli(*extra: str) -> str:
        assert corpusmem(memory, monkeypatch, *args, *extra) == 0
        return capsys.readouterr().out

    first = run_cli()
    assert "new versions     3" in first and "records left out 0" in first
    assert "sources listed first" in first

    # the same store again: nothing new, no model call
    again = run_cli()
    assert "new versions     0" in again and "unchanged        3" in again
    assert "vectors          0 computed" in again

    # one source edited in place: one new version, of that source only
    edited = [(i, {**p, "page_content": p["page_content"].replace("June 8", "June 15")})
              for i, p in recs if p["metadata"]["source"] == "notes/billing.md"]
    _points(store, edited)
    changed = run_cli()
    assert "new versions     1" in changed and "unchanged        2" in changed
    [(seq, text)] = rows(memory, "SELECT max(v.seq), d.source_ref FROM versions v JOIN documents d USING (doc_id)"
                                 " GROUP BY d.source_ref HAVING max(v.seq) > 1")
    assert (seq, text) == (2, "notes/billing.md")

    # one source gone from the store: a dry run prints it and deletes nothing, then it is deleted
    _drop_source(store, "notes/travel.md")
    assert corpusmem(memory, monkeypatch, *args, "--delete-missing", "--dry-run") == 0
    out = capsys.readouterr()
    assert "would delete 1" in out.err and "notes/travel.md" in out.err and "dry run" in out.out
    live = rows(memory, "SELECT source_ref FROM documents WHERE deleted_at IS NULL ORDER BY 1")
    assert [r[0] for r in live] == sorted(NOTES)

    run_cli("--delete-missing")
    live = rows(memory, "SELECT source_ref FROM documents WHERE deleted_at IS NULL ORDER BY 1")
    assert [r[0] for r in live] == ["notes/billing.md", "notes/roster.md"]
    with psycopg.connect(memory.dsn) as conn:
        kinds = conn.execute("SELECT DISTINCT source_kind FROM documents").fetchall()
    assert kinds == [("qdrant:notes",)]

    # a store emptied (or unreachable by its filter) deletes nothing; a filter needs a kind of its own
    for source in NOTES:
        _drop_source(store, source)
    assert corpusmem(memory, monkeypatch, *args, "--delete-missing", "--dry-run") == 2
    assert "refusing to delete all 2 documents" in capsys.readouterr().err
    assert corpusmem(memory, monkeypatch, *args, "--delete-missing", "--filter", '{"team": "ops"}') == 2
    assert "--source-kind of its own" in capsys.readouterr().err
