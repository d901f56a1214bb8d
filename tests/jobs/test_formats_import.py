"""Every file on a drive becomes text: mail (.eml, .mbox, Outlook .msg), tables, data, code,
notebooks, EPUB, OpenDocument and RTF imported end to end, operator routes, and bad input of those
types as per-item errors."""

from __future__ import annotations

import json

import pytest

from tests.support import formats, msg_writer
from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration


def _ref_name(ref: str) -> str:
    return ref.rsplit("/folder/", 1)[-1]


def test_a_folder_of_one_file_of_each_type_lands_ready_and_searchable(memory, ray_local, tmp_path):
    sentences = formats.write_folder(tmp_path / "folder")
    (tmp_path / "folder" / "note.eml").write_bytes(formats.eml_bytes(
        formats.SENTENCES["note.eml"], attachment=("survey-plan.md", b"# Plan\n\nSurvey the north shore first.\n")))

    report = do_import(memory, tmp_path / "folder")

    assert report.counts["failed"] == 0, report.failures
    assert report.counts["parked"] == 0
    statuses = rows(memory, "SELECT d.source_ref, l.current_version_status FROM memory_v1.documents_live l"
                            " JOIN documents d USING (doc_id)")
    # 12 files; the mbox is two messages, the .eml brings its attachment
    assert len(statuses) == 14 and {s for _, s in statuses} == {"ready"}, statuses
    for name, said in sentences.items():
        for sentence in said:
            found = rows(memory, "SELECT d.source_ref FROM chunks c JOIN documents d USING (doc_id)"
                                 " WHERE c.tsv @@ plainto_tsquery('english', %s) AND position(%s IN c.text) > 0",
                         sentence, sentence)
            assert found and all(_ref_name(r[0]).startswith(name.split(" ")[0]) for r in found), (name, found)
    dated = dict(rows(memory, "SELECT d.source_ref, v.source_modified_at FROM versions v JOIN documents d"
                              " USING (doc_id) WHERE v.mime IN ('message/rfc822', 'application/vnd.ms-outlook')"
                              " OR d.source_ref LIKE '%%.md'"))
    by_name = {_ref_name(ref): when for ref, when in dated.items()}
    assert by_name["note.eml"] == formats.MAIL_DATE
    assert by_name["note.eml!survey-plan.md"] == formats.MAIL_DATE     # an attachment takes its message's date
    assert by_name["memo.msg"] == formats.MAIL_DATE
    thread = "team.mbox!review-1@example.org/"
    assert by_name[thread + "review-1@example.org.eml"] == formats.MAIL_DATE
    assert by_name[thread + "review-2@example.org.eml"] == formats.REPLY_DATE   # the reply, in its thread's folder
    titles = dict(rows(memory, "SELECT filename, title FROM documents"))
    assert titles["note.eml"] == "Eelgrass survey" and titles["review-2@example.org.eml"] == "Re: Sensor review"
    assert titles["memo.msg"] == "Ferry inspection"

    # claims: none from a table's rows, none from code, some from a docstring and a Markdown cell
    claims = rows(memory, "SELECT d.filename, c.claim_text FROM claim_occurrences o JOIN claims c"
                          " ON c.claim_id = o.claim_id JOIN versions v ON v.version_id = o.version_id"
                          " JOIN documents d ON d.doc_id = v.doc_id")
    by_file: dict[str, list[str]] = {}
    for filename, text in claims:
        by_file.setdefault(filename, []).append(text)
    assert "grants.csv" not in by_file and "stock.tsv" not in by_file
    assert any("Wexford" in c for c in by_file.get("tool.py", [])), by_file.get("tool.py")
    assert any("Halvard" in c for c in by_file.get("analysis.ipynb", []))
    assert any("Ostrava" in c for c in by_file.get("config.json", []))
    assert not any("math.pi" in c or "import" in c for c in by_file.get("tool.py", []))
    roles = set(rows(memory, "SELECT d.filename, s.role FROM sections s JOIN versions v USING (version_id)"
                             " JOIN documents d USING (doc_id) WHERE d.filename IN ('grants.csv', 'stock.tsv')"))
    assert roles == {("grants.csv", "table"), ("stock.tsv", "table")}


def _zip_bomb_epub() -> bytes:
    return formats.epub_bytes("Never read.", extra={"OEBPS/zeros.xhtml": b"0" * 3_000_000})


def test_bad_input_of_the_new_types_is_a_named_error_per_item_and_the_rest_lands(memory, ray_local, tmp_path):
    corpus = tmp_path / "bad"
    corpus.mkdir()
    (corpus / "good.json").write_text(json.dumps({"note": "Dana leads the billing migration this spring."}))
    (corpus / "binary.csv").write_bytes(b"a,b\n1,\x00\x01\x02\n")
    (corpus / "latin1.py").write_bytes("# caf\xe9 au lait\nx = 1\n".encode("latin-1"))
    (corpus / "ragged.csv").write_text("name,role\nJane,Engineer\nOwen,Support,Extra,Fields\n")
    (corpus / "bomb.epub").write_bytes(_zip_bomb_epub())
    (corpus / "broken.eml").write_bytes(b"this is not a message at all, no headers here\n")
    memo = msg_writer.msg_bytes(msg_writer.Message(body="Long enough to need a regular sector. " * 120))
    (corpus / "broken.msg").write_bytes(memo[:len(memo) // 2])
    (corpus / "broken.jsonl").write_text('{"a": 1}\n{"b": \n')
    (corpus / "bomb.xml").write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>'
                                     "<x>&b;</x>")
    messages = [formats.eml_bytes(f"Message {i} of the flood says the pump {i} works.", subject=f"Pump {i}",
                                  message_id=f"<pump-{i}@example.org>") for i in range(12)]
    (corpus / "flood.mbox").write_bytes(formats.mbox_bytes(messages))
    settings = memory.model_copy(update={"archive_max_ratio": 50, "archive_max_members": 10})

    report = do_import(settings, corpus)

    failures = {f["item"].split("/bad/", 1)[1]: f for f in report.failures}
    expected = {
        "binary.csv": ("convert", "binary content"),
        "latin1.py": ("convert", "undecodable text"),
        "ragged.csv": ("convert", "ragged rows"),
        "bomb.epub": ("convert", "zip bomb"),
        "broken.eml": ("convert", "malformed message"),
        "broken.msg": ("convert", "malformed message"),
        "broken.jsonl": ("convert", "line 2 is not JSON"),
        "bomb.xml": ("convert", "XML refused"),
        "flood.mbox!pump-10@example.org/pump-10@example.org.eml": ("read", "CORPUSMEM_ARCHIVE_MAX_MEMBERS"),
        "flood.mbox!pump-11@example.org/pump-11@example.org.eml": ("read", "CORPUSMEM_ARCHIVE_MAX_MEMBERS"),
    }
    for name, (stage, reason) in expected.items():
        assert name in failures, f"{name} not reported; got {sorted(failures)}"
        assert failures[name]["stage"] == stage and reason in failures[name]["error"], failures[name]
    assert len(report.failures) == len(expected), sorted(failures)
    ready = {r[0] for r in rows(memory, "SELECT d.filename FROM documents d JOIN versions v USING (doc_id)"
                                        " WHERE v.status = 'ready'")}
    assert "good.json" in ready and len([r for r in ready if r.startswith("pump-")]) == 10


def test_an_operator_routes_a_parked_type_and_retry_converts_it(memory, ray_local, tmp_path):
    from jobs import retry

    corpus = tmp_path / "logs"
    corpus.mkdir()
    (corpus / "server.log").write_text("Kerrigan rotated the Sable cluster keys at noon.\n")
    (corpus / "blob.bin").write_bytes(b"plain words in a binary-named file\n")

    first = do_import(memory, corpus)
    assert first.counts["parked"] == 2
    assert {r[0] for r in rows(memory, "SELECT current_version_status FROM memory_v1.documents_live")} == {"parked"}

    routed = memory.model_copy(update={"conversion_routes": (("application/octet-stream", "park"),
                                                             (".log", "passthrough"))})
    status, text = retry.retry(routed, None, None)
    assert status == 0, text
    assert dict(rows(memory, "SELECT d.filename, l.current_version_status FROM memory_v1.documents_live l"
                             " JOIN documents d USING (doc_id)")) == {"server.log": "ready", "blob.bin": "parked"}
    assert rows(memory, "SELECT count(*) FROM chunks WHERE text LIKE '%%Sable cluster%%'")[0][0] == 1


def test_a_large_table_is_read_in_parts_each_with_its_header(memory, ray_local, tmp_path):
    corpus = tmp_path / "big"
    corpus.mkdir()
    lines = ["id,city,note"] + [f"{i},Brno,row {i} of the lantern census" for i in range(1, 3001)]
    (corpus / "census.csv").write_text("\n".join(lines) + "\n")
    settings = memory.model_copy(update={"max_file_bytes": 40_000})

    report = do_import(settings, corpus, table_part_bytes=30_000)

    assert report.counts["failed"] == 0, report.failures
    parts = rows(memory, "SELECT d.source_ref, d.title FROM documents d ORDER BY 1")
    assert len(parts) >= 3
    assert all(_ref_name(ref).split("!")[-1].startswith("part-") for ref, _ in parts)
    # every chunk is a table with the header, and every row of the file is in exactly one
    texts = [r[0] for r in rows(memory, "SELECT text FROM chunks")]
    assert all(t.startswith("| id | city | note |") for t in texts)
    found = sorted(int(line.split("|")[1]) for t in texts for line in t.split("\n")[2:] if line.startswith("| "))
    assert found == list(range(1, 3001))

