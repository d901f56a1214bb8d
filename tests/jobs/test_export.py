"""`corpusmem export`: every file is its `memory_v1` view row for row (counts, keys and a hash of
the rows against the same view read directly), in Parquet and in JSON lines; a deleted document
is in no file; `--as-of` answers at the query space's own instant; bad inputs are refused whole."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pandas as pd
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import facts_cli
from sql.read import export_queries
from tests.support.cli import corpusmem

pytestmark = pytest.mark.integration

VIEWS = {v.name: v for v in export_queries.VIEWS}


def _direct(dsn: str, view: str, as_of: str | None = None) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """({column: PostgreSQL type}, rows) of `SELECT * FROM memory_v1.<view>`, read here with
    psycopg's own types, at `as_of` (the query space's instant) when given."""
    with psycopg.connect(dsn) as conn:
        if as_of:
            conn.execute("SELECT set_config('corpusmem.evaluated_at', %s, true)", (as_of,))
        cur = conn.execute(f"SELECT * FROM memory_v1.{view}")
        types = {d.name: conn.adapters.types.get(d.type_code).name for d in cur.description}
        return types, [dict(zip(types, row)) for row in cur.fetchall()]


def _canon(value: Any, pg_type: str) -> Any:
    """One value as both sides must agree on it, whatever the reader gave (pandas or psycopg)."""
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    if pg_type == "uuid":
        return str(UUID(str(value)))
    if pg_type == "timestamptz":
        return pd.Timestamp(value).tz_convert("UTC").isoformat()
    if pg_type in ("jsonb", "json"):
        if isinstance(value, str):   # JSON text in Parquet; in JSON lines only a JSON string is a str
            try:
                value = json.loads(value)
            except ValueError:
                pass
        return json.dumps(value, sort_keys=True)
    if pg_type in ("float4", "float8"):
        return round(float(value), 4)   # real is float32 in the file
    if pg_type in ("int2", "int4", "int8"):
        return int(value)
    if pg_type == "bool":
        return bool(value)
    return value


def _fingerprint(types: dict[str, str], rows: list[dict[str, Any]], key: tuple[str, ...]) -> dict[str, Any]:
    canon = [tuple(_canon(r[c], t) for c, t in types.items()) for r in rows]
    at = [list(types).index(k) for k in key]
    return {"rows": len(canon), "keys": {tuple(r[i] for i in at) for r in canon},
            "hash": hashlib.sha256(json.dumps(sorted(canon, key=repr), default=str).encode()).hexdigest()}


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        # as written: no guessing of dates or numbers from names and strings
        frame = pd.read_json(path, lines=True, dtype=False, convert_dates=False) if path.stat().st_size else \
            pd.DataFrame()
    return frame.to_dict("records")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_every_file_is_its_view(example_memory, tmp_path, monkeypatch, fmt):
    dest = tmp_path / "export"
    assert corpusmem(example_memory, monkeypatch, "export", str(dest), "--format", fmt) == 0

    manifest = json.loads((dest / "manifest.json").read_text())
    assert set(manifest["files"]) == {f"{v}.{fmt}" for v in [*VIEWS, "document_texts"]}
    assert {p.name for p in dest.iterdir()} == {*manifest["files"], "manifest.json"}
    for name, view in VIEWS.items():
        # at the export's instant: facts_current carries the instant it answered at
        types, direct = _direct(example_memory.dsn, name, as_of=manifest["evaluated_at"])
        exported = _read(dest / f"{name}.{fmt}")
        if name in ("documents_live", "claims_visible_history", "entities_current", "facts_visible_history",
                    "fact_claim_evidence_live"):
            assert direct, f"the example memory has no {name}: the comparison would prove nothing"
        if exported:
            assert list(exported[0]) == list(types), name   # the view's columns, in its order
        assert _fingerprint(types, exported, view.key) == _fingerprint(types, direct, view.key), name
        assert manifest["files"][f"{name}.{fmt}"]["rows"] == len(direct)

    # the converted Markdown of every visible version, byte for byte as the object store holds it
    texts = {r["version_id"]: r["text"] for r in _read(dest / f"document_texts.{fmt}")}
    _, versions = _direct(example_memory.dsn, "document_versions_visible")
    assert set(texts) == {str(v["version_id"]) for v in versions if v["current_representation_id"]}
    with psycopg.connect(example_memory.dsn) as conn:
        for version_id, text in texts.items():
            [(chunk_text, start, end)] = conn.execute(
                "SELECT text, char_start, char_end FROM chunks WHERE version_id = %s ORDER BY ord LIMIT 1",
                (version_id,)).fetchall()
            assert text[start:end] == chunk_text   # offsets index the exported text


def test_parquet_types_are_read_directly(example_memory, tmp_path, monkeypatch):
    dest = tmp_path / "export"
    assert corpusmem(example_memory, monkeypatch, "export", f"file://{dest}") == 0   # a pyarrow.fs URI, like S3's
    schema = pq.read_schema(dest / "documents_live.parquet")
    assert schema.field("first_seen_at").type == pa.timestamp("us", tz="UTC")
    assert schema.field("doc_id").type == pa.string()
    assert schema.field("doc_id").metadata == {b"pg_type": b"uuid"}
    evidence = pq.read_schema(dest / "claim_occurrences_live.parquet").field("evidence_spans")
    assert evidence.type == pa.string() and evidence.metadata == {b"pg_type": b"jsonb"}
    frame = pd.read_parquet(dest / "facts_visible_history.parquet")
    assert str(frame["ingested_at"].dtype) == "datetime64[us, UTC]"
    assert frame["evidence_count_current"].dtype == "int64"


def test_a_deleted_document_is_in_no_file(example_memory_copy, tmp_path, monkeypatch):
    settings = example_memory_copy
    with psycopg.connect(settings.dsn) as conn:
        doc = conn.execute("SELECT doc_id::text FROM documents WHERE source_ref LIKE '%%2026-03-04-standup.md'"
                           ).fetchone()[0]
        ids = [doc, *(r[0] for r in conn.execute(
            "SELECT claim_id::text FROM claims WHERE doc_id = %s UNION SELECT version_id::text FROM versions"
            " WHERE doc_id = %s UNION SELECT chunk_id::text FROM chunks WHERE doc_id = %s", (doc, doc, doc)))]
    before, after = tmp_path / "before", tmp_path / "after"
    assert corpusmem(settings, monkeypatch, "export", str(before), "--format", "jsonl") == 0
    facts_cli.delete(settings, "2026-03-04-standup.md")
    assert corpusmem(settings, monkeypatch, "export", str(after), "--format", "jsonl") == 0

    def found(folder: Path) -> set[str]:
        text = "".join(p.read_text() for p in folder.glob("*.jsonl"))
        return {i for i in ids if i in text}

    # the document was exported while it was there, with its versions and claims
    assert doc in found(before) and len(found(before)) > 3
    assert found(after) == set()
    documents = pd.read_json(after / "documents_live.jsonl", lines=True, dtype=False)
    assert len(documents) == len(pd.read_json(before / "documents_live.jsonl", lines=True, dtype=False)) - 1


def test_as_of_answers_at_the_query_space_instant(example_memory, tmp_path, monkeypatch):
    before_import = tmp_path / "before-import"
    assert corpusmem(example_memory, monkeypatch, "export", str(before_import), "--as-of", "2000-01-01") == 0
    manifest = json.loads((before_import / "manifest.json").read_text())
    assert manifest["evaluated_at"] == manifest["as_of"] == "2000-01-01T00:00:00+00:00"
    for name in ("facts_current", "contradiction_members_current", "fact_claim_evidence_live"):
        assert len(pd.read_parquet(before_import / f"{name}.parquet")) == 0, name
    # the memory's whole record is no one instant's: it is left out of an export at an instant
    assert not (before_import / "facts_visible_history.parquet").exists()
    assert len(pd.read_parquet(before_import / "documents_live.parquet")) > 0

    # at an instant after the import, facts_current as the SQL query space answers at that instant
    with psycopg.connect(example_memory.dsn) as conn:
        last = conn.execute("SELECT max(ingested_at) FROM memory_v1.facts_visible_history").fetchone()[0]
    at = (last + (datetime.fromisoformat("2030-01-01T00:00:00+00:00") - last) / 2).isoformat()
    later = tmp_path / "later"
    assert corpusmem(example_memory, monkeypatch, "export", str(later), "--as-of", at) == 0
    types, direct = _direct(example_memory.dsn, "facts_current", as_of=at)
    assert direct
    exported = _read(later / "facts_current.parquet")
    assert _fingerprint(types, exported, ("fact_id",)) == _fingerprint(types, direct, ("fact_id",))
    evidence = {r["fact_id"] for r in _read(later / "fact_claim_evidence_live.parquet")}
    assert evidence and evidence <= {r["fact_id"] for r in exported}


def test_bad_inputs_are_refused_and_change_nothing(example_memory, tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exit_:
        corpusmem(example_memory, monkeypatch, "export", str(tmp_path / "x"), "--format", "csv")
    assert exit_.value.code == 2 and "--format: invalid choice: 'csv'" in capsys.readouterr().err

    assert corpusmem(example_memory, monkeypatch, "export", str(tmp_path / "y"), "--as-of", "last tuesday") == 2
    assert "corpusmem export: --as-of 'last tuesday' is not a date" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()

    dest = tmp_path / "export"
    assert corpusmem(example_memory, monkeypatch, "export", str(dest)) == 0
    written = {p.name: p.read_bytes() for p in dest.iterdir()}
    capsys.readouterr()
    assert corpusmem(example_memory, monkeypatch, "export", str(dest)) == 2
    err = capsys.readouterr().err
    assert "already holds" in err and "documents_live.parquet" in err and "--force" in err
    assert {p.name: p.read_bytes() for p in dest.iterdir()} == written
    # another format is refused too: its manifest would replace this export's
    assert corpusmem(example_memory, monkeypatch, "export", str(dest), "--format", "jsonl") == 2
    assert corpusmem(example_memory, monkeypatch, "export", str(dest), "--force") == 0

    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    assert corpusmem(example_memory, monkeypatch, "export", str(a_file)) == 2
    assert "is a file" in capsys.readouterr().err and a_file.read_text() == "keep me"
