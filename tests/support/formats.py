"""Files of the types issue 47 routes, generated, each holding a sentence found nowhere else.

`write_folder` writes one file of each of the 12 types (.eml, .mbox, .msg, .csv, .tsv, .json,
.jsonl, .py, .ipynb, .epub, .odt, .rtf) and returns {file name: its sentences}; the other helpers
build single files for the unit tests.
"""

from __future__ import annotations

import io
import json
import zipfile
from email.message import EmailMessage
from email.utils import format_datetime
from datetime import datetime
from pathlib import Path

from tests.support import msg_writer

SENTENCES = {
    "note.eml": "Quillon Harbor approved the eelgrass survey budget on Tuesday.",
    "team.mbox": "Varnetta Okafor moved the glacier sensor review to Thursday.",
    "team.mbox reply": "Brisco Delano confirmed the glacier sensor review room.",
    "memo.msg": "Odalys Brennan moved the Kittering ferry inspection to Friday.",
    "grants.csv": "The Pellworth grant funds three turbine inspections.",
    "stock.tsv": "Marrowfield depot keeps forty spare lantern batteries.",
    "config.json": "The Ostrava relay team migrated the ledger to Postgres.",
    "events.jsonl": "Tamsin Vale opened the Kestrel observatory archive in May.",
    "tool.py": "Normalises the Wexford tide readings before the nightly export.",
    "analysis.ipynb": "The Halvard cohort showed lower sleep latency in week three.",
    "book.epub": "Captain Ysolde charted the Merrow shoals before the winter storms.",
    "minutes.odt": "The Farrowgate council adopted the riverbank cleanup plan.",
    "letter.rtf": "Professor Anselm Ruiz donated the quartz collection to Brennick Museum.",
}

# The mail's headers date it: not the file's mtime.
MAIL_DATE = datetime.fromisoformat("2026-03-04T09:15:00+01:00")
REPLY_DATE = datetime.fromisoformat("2026-03-05T16:40:00+00:00")


def eml_bytes(sentence: str, *, subject: str = "Eelgrass survey", date: datetime = MAIL_DATE,
              message_id: str = "<survey-1@example.org>", in_reply_to: str | None = None,
              attachment: tuple[str, bytes] | None = None, html: bool = False) -> bytes:
    message = EmailMessage()
    message["From"] = "Dana Ortiz <dana@example.org>"
    message["To"] = "Field Team <team@example.org>"
    message["Subject"] = subject
    message["Date"] = format_datetime(date)
    message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = in_reply_to
    if html:
        message.set_content(f"<html><body><h2>Note</h2><p>{sentence}</p></body></html>", subtype="html")
    else:
        message.set_content(f"Hello team,\n\n{sentence}\n\nDana\n")
    if attachment:
        name, data = attachment
        message.add_attachment(data, maintype="text", subtype="markdown", filename=name)
    return bytes(message)


def mbox_bytes(messages: list[bytes]) -> bytes:
    out = io.BytesIO()
    for raw in messages:
        out.write(b"From dana@example.org Wed Mar  4 09:15:00 2026\n")
        body = raw.replace(b"\r\n", b"\n").replace(b"\nFrom ", b"\n>From ")
        out.write(body if body.endswith(b"\n") else body + b"\n")
        out.write(b"\n")
    return out.getvalue()


def notebook_bytes(markdown: str, code: str) -> bytes:
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "markdown", "metadata": {}, "source": [markdown]},
                          {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": [code]}]}
    return json.dumps(notebook).encode()


def epub_bytes(sentence: str, extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml", (
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            '</rootfiles></container>'))
        book.writestr("OEBPS/content.opf", (
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Merrow Shoals</dc:title>'
            '<dc:creator>A. Writer</dc:creator><dc:identifier id="id">x</dc:identifier></metadata>'
            '<manifest><item id="c1" href="chapter1.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="c1"/></spine></package>'))
        book.writestr("OEBPS/chapter1.xhtml", (
            '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>One</title></head>'
            f'<body><h1>Chapter One</h1><p>{sentence}</p></body></html>'))
        for name, data in (extra or {}).items():
            book.writestr(name, data)
    return out.getvalue()


def odt_bytes(sentence: str) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Council minutes"))
    document.text.addElement(P(text=sentence))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def rtf_bytes(sentence: str) -> bytes:
    return ("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}\\f0\\fs24 "
            f"{{\\b Letter}}\\par {sentence}\\par}}").encode("ascii")


def python_bytes(sentence: str) -> bytes:
    return (f'"""Tide tools."""\n\nimport math\n\nLIMIT = 3\n\n\ndef normalise(readings):\n'
            f'    """{sentence}"""\n    # Readings below the datum are clipped to zero here.\n'
            f'    return [max(0.0, r) for r in readings]\n\n\nclass Gauge:\n    """A tide gauge."""\n\n'
            f'    def read(self):\n        return math.pi\n').encode()


def write_folder(folder: Path) -> dict[str, list[str]]:
    """One file of each of the 12 types in `folder`; {file name: the sentences it holds}."""
    folder.mkdir(parents=True, exist_ok=True)
    s = SENTENCES
    (folder / "note.eml").write_bytes(eml_bytes(s["note.eml"]))
    first = eml_bytes(s["team.mbox"], subject="Sensor review", message_id="<review-1@example.org>")
    reply = eml_bytes(s["team.mbox reply"], subject="Re: Sensor review", date=REPLY_DATE,
                      message_id="<review-2@example.org>", in_reply_to="<review-1@example.org>")
    (folder / "team.mbox").write_bytes(mbox_bytes([first, reply]))
    (folder / "memo.msg").write_bytes(msg_writer.msg_bytes(msg_writer.Message(
        subject="Ferry inspection", body=f"Hello team,\r\n\r\n{s['memo.msg']}\r\n", sent=MAIL_DATE)))
    (folder / "grants.csv").write_text(f'grant,amount,note\nPW-1,1200,"{s["grants.csv"]}"\nPW-2,800,spare\n')
    (folder / "stock.tsv").write_text(f'depot\tcount\tnote\nMarrowfield\t40\t{s["stock.tsv"]}\n')
    (folder / "config.json").write_text(json.dumps({"version": 3, "teams": [
        {"name": "ostrava", "size": 4, "summary": s["config.json"]}]}))
    (folder / "events.jsonl").write_text(json.dumps({"id": 1, "at": "2026-05-02", "text": s["events.jsonl"]})
                                         + "\n" + json.dumps({"id": 2, "at": "2026-05-03", "tag": "x"}) + "\n")
    (folder / "tool.py").write_bytes(python_bytes(s["tool.py"]))
    (folder / "analysis.ipynb").write_bytes(notebook_bytes(f"# Sleep study\n\n{s['analysis.ipynb']}",
                                                           "import pandas as pd\nframe = pd.DataFrame()"))
    (folder / "book.epub").write_bytes(epub_bytes(s["book.epub"]))
    (folder / "minutes.odt").write_bytes(odt_bytes(s["minutes.odt"]))
    (folder / "letter.rtf").write_bytes(rtf_bytes(s["letter.rtf"]))
    return {"note.eml": [s["note.eml"]], "team.mbox": [s["team.mbox"], s["team.mbox reply"]],
            **{name: [s[name]] for name in ("memo.msg", "grants.csv", "stock.tsv", "config.json", "events.jsonl", "tool.py",
                                            "analysis.ipynb", "book.epub", "minutes.odt", "letter.rtf")}}
