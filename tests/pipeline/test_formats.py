"""The routes of issue 47 as pure functions: routes and the setting's entries, tables, data, code,
mail (Outlook .msg files written by `tests.support.msg_writer`), OpenDocument, RTF, and their bad
input. No Ray, no database."""

from __future__ import annotations

import io
import json
import time
from datetime import UTC, datetime

import pytest

from pipeline.claims.segment import split_passages
from pipeline.documents import mail, tables
from pipeline.documents.convert import ConversionError, ConvertOptions, NoRoute, convert
from pipeline.documents.mime import mime_for
from pipeline.documents.routes import ROUTE_NAMES, Routes, parse_routes
from pipeline.documents.walk import SourceOptions, read_item
from tests.support import formats, msg_writer


def _passages(markdown: str) -> list[str]:
    return [p.text for p in split_passages(markdown, 0, len(markdown))]


# --- routes ------------------------------------------------------------------------------------


def test_every_route_name_has_a_converter():
    from pipeline.documents.convert import _BY_NAME

    assert set(_BY_NAME) == set(ROUTE_NAMES)


def test_the_setting_parses_into_routes_and_names_a_bad_entry():
    assert parse_routes(" text/x-foo=passthrough, .LOG=passthrough ,application/octet-stream=park") == (
        ("text/x-foo", "passthrough"), (".log", "passthrough"), ("application/octet-stream", "park"))
    for bad, said in (("text/x-foo", "is not TYPE=ROUTE"), ("log=passthrough", "neither a MIME type"),
                      (".log=passthru", "no route 'passthru'"), (".log=csv,.LOG=park", "routed twice")):
        with pytest.raises(ValueError, match=said):
            parse_routes(bad)


def test_an_extension_entry_wins_over_a_type_entry_which_wins_over_the_table():
    routes = Routes((("text/plain", "park"), (".notes", "passthrough"), ("text/x-foo", "passthrough")))
    assert routes.route("text/plain", "a.txt") is None
    assert routes.route("application/octet-stream", "a.notes") == "passthrough"
    assert routes.route("text/x-foo; charset=utf-8", "x") == "passthrough"
    assert routes.route("text/csv", "a.csv") == "csv"
    assert Routes(ocr=False).route("image/png", "a.png") is None
    assert convert(b"hello\n", "application/octet-stream", "a.notes", options=ConvertOptions(routes=routes)).markdown \
        == "hello\n"
    with pytest.raises(NoRoute):
        convert(b"hello\n", "text/plain", "a.txt", options=ConvertOptions(routes=routes))


@pytest.mark.parametrize("name,mime", [("a.eml", "message/rfc822"), ("a.mbox", "application/mbox"),
                                       ("a.csv", "text/csv"), ("a.tsv", "text/tab-separated-values"),
                                       ("a.json", "application/json"), ("a.jsonl", "application/x-ndjson"),
                                       ("a.py", "text/x-python"), ("a.ipynb", "application/x-ipynb+json"),
                                       ("a.epub", "application/epub+zip"), ("a.rtf", "application/rtf"),
                                       ("a.odt", "application/vnd.oasis.opendocument.text"),
                                       ("a.yml", "application/yaml"), ("a.xml", "application/xml"),
                                       ("a.msg", "application/vnd.ms-outlook")])
def test_each_type_is_named_from_its_extension_and_has_a_route(name, mime):
    assert mime_for(name) == mime and Routes().route(mime, name) is not None


# --- tables ------------------------------------------------------------------------------------


def test_a_table_is_cut_into_tables_each_with_its_header():
    text = "name,role\n" + "".join(f"Person {i},Engineer number {i}\n" for i in range(40))
    markdown = convert(text.encode(), "text/csv", "staff.csv", options=ConvertOptions(target_chars=200)).markdown
    groups = markdown.strip().split("\n\n")
    assert len(groups) > 3 and all(g.startswith("| name | role |\n| --- | --- |\n") for g in groups)
    assert all(len(g) <= 200 for g in groups)
    assert sum(g.count("| Person ") for g in groups) == 40


def test_a_tsv_and_a_short_row_are_read_and_a_long_row_is_ragged():
    assert "| Jane |  |" in convert(b"name\trole\nJane\n", "text/tab-separated-values", "a.tsv").markdown
    with pytest.raises(ConversionError, match=r"ragged rows: row 3 has 3 fields, the header 2"):
        convert(b"name,role\nJane,Eng\nOwen,Ops,extra\n", "text/csv", "a.csv")


def test_a_large_table_splits_between_records_with_the_header_in_each_part():
    body = "".join(f'{i},"line one\nline two of {i}"\n' for i in range(500))
    content = ("id,note\n" + body).encode()
    parts = list(tables.split_parts(io.BytesIO(content), 2000))
    assert len(parts) > 3 and all(p.content.startswith(b"id,note\n") for p in parts)
    assert b"".join(p.content[len(b"id,note\n"):] for p in parts) == body.encode()
    assert [p.number for p in parts] == list(range(1, len(parts) + 1))
    assert parts[0].first_line == 2 and parts[-1].last_line == 1 + 2 * 500


def test_the_reader_splits_a_table_over_the_part_size_into_part_documents(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.csv").write_text("a,b\n" + "".join(f"{i},x\n" for i in range(2000)))
    item = {"item": "big.csv", "path": str(tmp_path / "big.csv"), "source_ref": "big.csv",
            "size": (tmp_path / "big.csv").stat().st_size, "mtime": datetime(2026, 1, 2, tzinfo=UTC), "error": None}
    got = list(read_item(item, SourceOptions(table_part_bytes=4000)))
    assert len(got) > 2 and got[0]["source_ref"] == "big.csv!part-00001.csv" and got[0]["mime"] == "text/csv"
    assert got[0]["title"].startswith("big (lines 2–") and all(r["source_modified_at"] == item["mtime"] for r in got)


# --- data --------------------------------------------------------------------------------------


def test_data_records_fence_their_values_and_give_prose_as_paragraphs():
    record = {"id": 7, "owner": "dana", "created": "2026-05-01", "tags": ["a", "b"],
              "summary": "The Ostrava team moved the ledger to Postgres in May."}
    markdown = convert(json.dumps([record]).encode(), "application/json", "a.json").markdown
    assert markdown.startswith("## [0]\n\n```\nid: 7\nowner: dana\ncreated: 2026-05-01\ntags[0]: a\ntags[1]: b\n```")
    assert _passages(markdown) == ["The Ostrava team moved the ledger to Postgres in May."]


@pytest.mark.parametrize("mime,content", [
    ("application/x-ndjson", b'{"text": "Tamsin Vale opened the Kestrel archive in May."}\n'),
    ("application/yaml", b"notes:\n  - text: Tamsin Vale opened the Kestrel archive in May.\n"),
    ("application/xml", b"<notes><note id='1'>Tamsin Vale opened the Kestrel archive in May.</note></notes>"),
])
def test_jsonl_yaml_and_xml_records_give_their_prose(mime, content):
    markdown = convert(content, mime, "x").markdown
    assert _passages(markdown) == ["Tamsin Vale opened the Kestrel archive in May."]


def test_bad_data_is_a_named_error():
    with pytest.raises(ConversionError, match="line 2 is not JSON"):
        convert(b'{"a": 1}\nnope\n', "application/x-ndjson", "a.jsonl")
    with pytest.raises(ConversionError, match="XML refused: EntitiesForbidden"):
        convert(b'<!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>', "application/xml", "a.xml")
    with pytest.raises(ConversionError, match="binary content: contains NUL bytes"):
        convert(b'{"a": "\x00"}', "application/json", "a.json")
    with pytest.raises(ConversionError, match="undecodable text: not valid UTF-8 at byte 7"):
        convert(b'{"a": "\xff"}', "application/json", "a.json")


# --- code --------------------------------------------------------------------------------------


def test_python_is_sectioned_by_definition_and_only_docstrings_and_comments_are_prose():
    markdown = convert(formats.python_bytes("Normalises the Wexford tide readings."), "text/x-python",
                       "tool.py").markdown
    headings = [line for line in markdown.split("\n") if line.startswith("#")]
    assert headings == ["# tool.py", "## module", "## def normalise", "## class Gauge", "### def Gauge.read"]
    assert _passages(markdown) == ["Tide tools.", "Normalises the Wexford tide readings.",
                                   "Readings below the datum are clipped to zero here.", "A tide gauge."]
    assert "    return [max(0.0, r) for r in readings]" in markdown   # the code is kept verbatim


def test_other_languages_give_their_comments_as_prose():
    source = b"// Retries the payment twice before giving up.\nfunction pay() {\n  return 1;\n}\n"
    markdown = convert(source, "text/javascript", "pay.js").markdown
    assert _passages(markdown) == ["Retries the payment twice before giving up."]
    assert "```javascript\n// Retries" in markdown


def test_python_that_does_not_parse_is_a_named_error():
    with pytest.raises(ConversionError, match="unreadable code: not valid Python"):
        convert(b"def broken(:\n", "text/x-python", "a.py")


# --- notebooks, EPUB, OpenDocument, RTF ----------------------------------------------------------


def test_notebook_epub_odt_and_rtf_become_text():
    notebook = convert(formats.notebook_bytes("The Halvard cohort slept well.", "x = 1"),
                       "application/x-ipynb+json", "a.ipynb").markdown
    assert _passages(notebook) == ["The Halvard cohort slept well."]
    assert "Captain Ysolde charted" in convert(formats.epub_bytes("Captain Ysolde charted the shoals."),
                                               "application/epub+zip", "a.epub").markdown
    odt = convert(formats.odt_bytes("The council adopted the plan."), "application/vnd.oasis.opendocument.text",
                  "a.odt")
    assert odt.markdown == "# Council minutes\n\nThe council adopted the plan.\n" and odt.converter == "opendocument"
    assert "Professor Ruiz donated" in convert(formats.rtf_bytes("Professor Ruiz donated."), "application/rtf",
                                               "a.rtf").markdown


def test_a_zip_bomb_inside_an_epub_is_refused_before_it_is_read():
    bomb = formats.epub_bytes("Never read.", extra={"OEBPS/zeros.xhtml": b"0" * 3_000_000})
    with pytest.raises(ConversionError, match="zip bomb: member 'OEBPS/zeros.xhtml' expands"):
        convert(bomb, "application/epub+zip", "bomb.epub", options=ConvertOptions(zip_max_ratio=50))
    with pytest.raises(ConversionError, match="zip bomb: it expands past CORPUSMEM_ARCHIVE_MAX_BYTES=1000000"):
        convert(bomb, "application/epub+zip", "bomb.epub", options=ConvertOptions(zip_max_bytes=1_000_000))


def test_rtf_that_is_not_rtf_is_a_named_error():
    with pytest.raises(ConversionError, match="not RTF"):
        convert(b"plain words", "application/rtf", "a.rtf")


# --- mail --------------------------------------------------------------------------------------


def test_a_message_is_its_headers_as_front_matter_then_subject_and_body():
    markdown = convert(formats.eml_bytes("Quillon Harbor approved the budget."), "message/rfc822", "a.eml").markdown
    assert markdown.startswith('---\nauthor: "Dana Ortiz <dana@example.org>"\n')
    assert 'date: "2026-03-04T08:15:00Z"' in markdown and "\n# Eelgrass survey\n" in markdown
    assert "Quillon Harbor approved the budget." in _passages(markdown)
    assert not any("Dana Ortiz" in p or "example.org" in p for p in _passages(markdown))


def test_an_html_only_message_has_its_html_converted():
    markdown = convert(formats.eml_bytes("The pumps were serviced.", html=True), "message/rfc822", "a.eml").markdown
    assert "## Note" in markdown and "The pumps were serviced." in markdown and "<p>" not in markdown


def test_a_malformed_message_is_an_error_for_it_alone():
    with pytest.raises(ConversionError, match="malformed message"):
        convert(b"no headers, just words\n", "message/rfc822", "a.eml")
    with pytest.raises(ConversionError, match="malformed message: binary content"):
        convert(b"From: a\x00b\n\nbody", "message/rfc822", "a.eml")


def _mail_rows(tmp_path, name: str, content: bytes, **options: object) -> list[dict]:
    (tmp_path / name).write_bytes(content)
    item = {"item": name, "path": str(tmp_path / name), "source_ref": name, "size": len(content),
            "mtime": datetime(2026, 12, 1, tzinfo=UTC), "error": None}
    return list(read_item(item, SourceOptions(**options)))


def test_an_eml_with_attachments_is_a_message_and_child_documents_dated_by_its_header(tmp_path):
    got = _mail_rows(tmp_path, "note.eml", formats.eml_bytes("Body.", attachment=("plan.md", b"# Plan\n")))
    assert [(r["source_ref"], r["mime"], r["title"]) for r in got] == [
        ("note.eml", "message/rfc822", "Eelgrass survey"), ("note.eml!plan.md", "text/markdown", "plan")]
    assert {r["source_modified_at"] for r in got} == {formats.MAIL_DATE}
    assert got[1]["content"] == b"# Plan\n"


def test_a_ten_thousand_message_mbox_is_streamed_into_threads(tmp_path):
    messages = [formats.eml_bytes(f"Pump {i} works.", subject=f"Pump {i}", message_id=f"<p-{i}@x.org>",
                                  in_reply_to=f"<p-{i - 1}@x.org>" if i % 2 else None) for i in range(10_000)]
    started = time.perf_counter()
    got = _mail_rows(tmp_path, "flood.mbox", formats.mbox_bytes(messages))
    assert time.perf_counter() - started < 60
    assert len(got) == 10_000 and all(r["outcome"] is None for r in got)
    # a reply sits in its thread's folder, beside the message it answers
    assert got[0]["source_ref"] == "flood.mbox!p-0@x.org/p-0@x.org.eml"
    assert got[1]["source_ref"] == "flood.mbox!p-0@x.org/p-1@x.org.eml"


def test_messages_past_the_member_cap_are_refused_by_name_and_the_first_land(tmp_path):
    messages = [formats.eml_bytes(f"Pump {i}.", message_id=f"<p-{i}@x.org>") for i in range(5)]
    got = _mail_rows(tmp_path, "flood.mbox", formats.mbox_bytes(messages), archive_max_members=3)
    assert [r["outcome"] for r in got] == [None, None, None, "failed", "failed"]
    assert "CORPUSMEM_ARCHIVE_MAX_MEMBERS=3" in got[3]["error"]


def test_a_date_without_a_zone_dates_nothing():
    message = mail.parse(b"From: a@b\nDate: Wed, 04 Mar 2026 09:15:00 -0000\nSubject: x\n\nbody\n")
    assert mail.sent_at(message) is None


# --- Outlook .msg ------------------------------------------------------------------------------

OUTLOOK = "application/vnd.ms-outlook"
# In UTF-16 well over 4096 bytes: a regular stream of the compound file, not a mini stream.
_LONG_BODY = "\r\n\r\n".join(f"Gauge {i} at the Kittering weir read {i * 3} cm at dawn." for i in range(120))


def _msg(**fields: object) -> bytes:
    return msg_writer.msg_bytes(msg_writer.Message(**{"sent": formats.MAIL_DATE, **fields}))  # type: ignore[arg-type]


def test_the_msg_writer_makes_a_compound_file_olefile_reads_without_a_defect():
    import olefile

    content = _msg(body=_LONG_BODY, attachments=[("plan.md", b"# Plan\n")])
    with olefile.OleFileIO(io.BytesIO(content), raise_defects=olefile.DEFECT_INCORRECT) as ole:
        sizes = {"/".join(path): ole.get_size("/".join(path)) for path in ole.listdir()}
        assert ole.parsing_issues == []
    assert sizes["__substg1.0_1000001F"] >= 4096 > sizes["__substg1.0_0037001F"]   # a regular and a mini stream
    assert {"__properties_version1.0", "__nameid_version1.0/__substg1.0_00020102",
            "__attach_version1.0_#00000000/__substg1.0_37010102"} <= set(sizes)


@pytest.mark.parametrize("subject,body", [
    ("Eelgrass survey", "Quillon Harbor approved the budget."),
    ("Prüfung der Schleuse – 会议 🚢", "Die Schleuse in Kittering wurde am Dienstag geprüft."),
    ("Weir readings", _LONG_BODY + "\r\n\r\nOdalys Brennan signed the weir log."),
], ids=["ascii", "non-ascii", "body-over-4096-bytes"])
def test_an_outlook_message_is_its_envelope_as_front_matter_then_subject_and_body(subject, body):
    content = _msg(subject=subject, body=f"Hello team,\r\n\r\n{body}\r\n\r\nDana\r\n")
    markdown = convert(content, OUTLOOK, "a.msg").markdown
    assert markdown.startswith('---\nauthor: "Dana Ortiz <dana@example.org>"\n')
    assert 'date: "2026-03-04T08:15:00Z"' in markdown and f"\n# {subject}\n" in markdown
    assert body.split("\r\n\r\n")[-1] in _passages(markdown)
    assert not any("Dana Ortiz" in p or "example.org" in p for p in _passages(markdown))


def test_an_html_only_outlook_message_has_its_html_converted():
    html = "<html><body><h2>Note</h2><p>Die Pumpen in Köln wurden gewartet.</p></body></html>".encode()
    markdown = convert(_msg(body=None, html=html), OUTLOOK, "a.msg").markdown
    assert "## Note" in markdown and "Die Pumpen in Köln wurden gewartet." in markdown and "<p>" not in markdown


@pytest.mark.parametrize("cpid,codec,text", [
    (1252, "cp1252", "Café – naïve “quotes”"),
    (28591, "latin-1", "Café à la Schleuse, naïve"),
    (65001, "utf-8", "Café – naïve “quotes” 会議"),
    (932, "cp932", "会議は火曜日、クイロン港で。"),
    (None, "utf-8", "Café – naïve “quotes”"),
    (4242, "utf-8", "Café – naïve “quotes”"),
], ids=["cp1252", "latin-1", "utf-8", "cp932", "no-cpid-is-utf-8", "unknown-cpid-is-utf-8"])
def test_an_html_only_outlook_message_is_read_in_its_internet_code_page(cpid, codec, text):
    # As Outlook writes it: the meta names the page too, but the HTML is read by PR_INTERNET_CPID.
    html = ('<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
            f"</head><body><p>{text}</p></body></html>").encode(codec)
    markdown = convert(_msg(body=None, html=html, properties={msg_writer.INTERNET_CPID: cpid}),
                       OUTLOOK, "a.msg").markdown
    assert markdown.endswith(f"\n# Eelgrass survey\n\n{text}\n")


def test_an_outlook_html_body_not_in_its_code_page_is_read_with_replacement_characters():
    html = "<p>Café in Kittering</p>".encode("cp1252")
    got = mail.read_msg(_msg(body=None, html=html, properties={msg_writer.INTERNET_CPID: 65001}))
    assert got.body.strip() == "Caf\ufffd in Kittering"


@pytest.mark.parametrize("codepage,codec,subject,sender", [
    (1251, "cp1251", "Отчёт о шлюзе", "Дарья Орлова"),
    (1252, "cp1252", "Café – “Schleuse”", "Zoë Brontë"),
    (None, "latin-1", "Café à la Schleuse", "Zoë Brontë"),
], ids=["cp1251", "cp1252", "no-codepage-is-latin-1"])
def test_an_outlook_messages_8_bit_strings_are_read_in_its_code_page(codepage, codec, subject, sender):
    subject8, sender8 = 0x0037001E, 0x0C1A001E
    got = mail.read_msg(_msg(subject=None, sender=(None, "dana@example.org"), properties={
        subject8: subject.encode(codec), sender8: sender.encode(codec), msg_writer.MESSAGE_CODEPAGE: codepage}))
    assert (got.envelope.subject, got.envelope.author) == (subject, f"{sender} <dana@example.org>")


def test_an_exchange_message_is_read_by_its_transport_headers_and_its_smtp_address():
    headers = ("Date: Thu, 05 Mar 2026 16:40:00 +0000\r\nMessage-ID: <weir-2@example.org>\r\n"
               "In-Reply-To: <weir-1@example.org>\r\nReferences: <weir-1@example.org>\r\n")
    dn = "/O=EXCHANGELABS/OU=EXCHANGE ADMINISTRATIVE GROUP/CN=RECIPIENTS/CN=DANA"
    got = mail.read_msg(_msg(properties={msg_writer.SENDER_EMAIL: dn, msg_writer.TRANSPORT_HEADERS: headers}))
    assert got.envelope.author == "Dana Ortiz <dana@example.org>"
    assert got.envelope.date == formats.REPLY_DATE     # the headers' Date wins over the submit time
    assert (got.envelope.message_id, got.envelope.in_reply_to, got.envelope.thread) == (
        "weir-2@example.org", "weir-1@example.org", "weir-1@example.org")
    # an X500 address alone is no address to show
    assert mail.read_msg(_msg(properties={msg_writer.SENDER_EMAIL: dn, msg_writer.SENDER_SMTP: None})
                         ).envelope.author == "Dana Ortiz"


def test_an_msg_is_dated_by_its_submit_time_else_its_delivery_time():
    delivered = {msg_writer.DELIVERY_TIME: formats.REPLY_DATE}
    assert mail.read_msg(_msg(properties=delivered)).envelope.date == formats.MAIL_DATE
    assert mail.read_msg(_msg(sent=None, properties=delivered)).envelope.date == formats.REPLY_DATE
    assert mail.read_msg(_msg(sent=None)).envelope.date is None
    # a damaged time past the year 9999 dates nothing, and the next time read takes its place
    damaged = {msg_writer.CLIENT_SUBMIT_TIME: 2**63, **delivered}
    assert mail.read_msg(_msg(properties=damaged)).envelope.date == formats.REPLY_DATE


def test_an_msg_with_attachments_is_a_message_and_child_documents_dated_by_it(tmp_path):
    table = ("gauge,reading\n" + "".join(f"{i},{i * 3}\n" for i in range(600))).encode()   # a regular stream
    content = _msg(attachments=[("plan.md", b"# Plan\n"), ("readings.csv", table), ("plan.md", b"# Other\n")])
    got = _mail_rows(tmp_path, "note.msg", content)
    assert [(r["source_ref"], r["mime"], r["title"]) for r in got] == [
        ("note.msg", OUTLOOK, "Eelgrass survey"), ("note.msg!plan.md", "text/markdown", "plan"),
        ("note.msg!readings.csv", "text/csv", "readings"), ("note.msg!plan (2).md", "text/markdown", "plan (2)")]
    assert {r["source_modified_at"] for r in got} == {formats.MAIL_DATE}
    assert [r["content"] for r in got[1:]] == [b"# Plan\n", table, b"# Other\n"]
    assert 'attachments: ["plan.md", "readings.csv", "plan (2).md"]' in convert(content, OUTLOOK, "a.msg").markdown


def _as_storage(content: bytes, name: str) -> bytes:
    """`content` with the directory entry of stream `name` marked a storage (its type byte, at 66)."""
    damaged = bytearray(content)
    damaged[damaged.find(name.encode("utf-16-le")) + 66] = 1
    return bytes(damaged)


@pytest.mark.parametrize("damage", ["truncated", "short", "not-ole", "a-path", "stream-as-storage"])
def test_a_damaged_msg_is_a_named_error_for_it_alone(tmp_path, damage):
    good = _msg(body=_LONG_BODY, attachments=[("plan.md", b"# Plan\n")])
    assert [r["source_ref"] for r in _mail_rows(tmp_path, "good.msg", good)] == ["good.msg", "good.msg!plan.md"]
    bad = {"truncated": good[:len(good) // 2],
           "short": good[:1000],              # under olefile's 1536 bytes, which it would take as a path
           "not-ole": b"Subject: words\r\n\r\nnot a compound file\r\n",
           "a-path": str(tmp_path / "good.msg").encode(),   # never the other file's message
           "stream-as-storage": _as_storage(good, "__substg1.0_1000001F")}[damage]
    with pytest.raises(ConversionError, match="malformed message"):
        convert(bad, OUTLOOK, "broken.msg")
    # the reader hands the file on whole, without children, for `convert` to fail with the reason
    assert [(r["source_ref"], r["outcome"]) for r in _mail_rows(tmp_path, "broken.msg", bad)] == [("broken.msg", None)]
