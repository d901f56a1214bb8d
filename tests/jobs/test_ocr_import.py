"""OCR in an import: a folder holding a scanned PDF, three images and a normal PDF lands in a
memory where every page's text is searchable and claims cite page and line; a truncated image, an
image bomb and an encrypted PDF in the same folder fail with their reasons and the rest lands.
A version parked while OCR was off is converted by `corpusmem retry` once OCR is on."""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF
from PIL import Image

from jobs import retry
from jobs.claims_cli import show_claims
from tests.support.memory import do_import, rows
from tests.support.ocr_pages import encode, render

pytestmark = pytest.mark.integration

PAGES = {
    "scanned.pdf": [["Dana Whitfield leads the search team since March 2024."],
                    ["Priya Raman approved the invoice rewrite in June 2025."]],
    "whiteboard.png": [["Ravi Kumar works on the cutover plan."]],
    "receipt.jpg": [["Omar Haddad paid the Lisbon hotel invoice in May 2025."]],
    "minutes.tiff": [["Grace Liu chairs the security council."], ["Marco Rossi joined the platform team in 2023."]],
}
# one word of each page that no other page of the folder holds
PAGE_WORDS = {("scanned.pdf", 1): "Whitfield", ("scanned.pdf", 2): "Raman", ("whiteboard.png", 1): "cutover",
              ("receipt.jpg", 1): "Lisbon", ("minutes.tiff", 1): "council", ("minutes.tiff", 2): "Rossi",
              ("typed.pdf", 1): "auditors"}


def _typed_pdf(text: str, password: str | None = None) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 8, text)
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    return bytes(pdf.output())


def _folder(root: Path) -> Path:
    folder = root / "scans"
    folder.mkdir()
    for name, pages in PAGES.items():
        fmt = {".pdf": "PDF", ".png": "PNG", ".jpg": "JPEG", ".tiff": "TIFF"}[Path(name).suffix]
        (folder / name).write_bytes(encode([render(lines) for lines in pages], fmt))
    (folder / "typed.pdf").write_bytes(_typed_pdf("Nadia Petrova hired the external auditors in April 2025."))
    whole = encode([render(["Cut short before the end."])], "PNG")
    (folder / "cut.png").write_bytes(whole[: len(whole) // 2])
    (folder / "secret.pdf").write_bytes(_typed_pdf("Sealed minutes of the board.", password="user"))
    bomb = folder / "bomb.png"   # 10000 x 10000 one-bit pixels: 100 M pixels in a few kilobytes
    Image.new("1", (10_000, 10_000), 1).save(bomb, "PNG")
    return folder


def test_a_folder_of_scans_imports_searchable_pages_and_claims_that_cite_page_and_line(memory, ray_local, tmp_path):
    report = do_import(memory, _folder(tmp_path))
    assert report.status == "succeeded"
    failures = {Path(f["item"]).name: (f["stage"], f["error"].split(":")[0]) for f in report.failures}
    assert failures == {"cut.png": ("ocr", "truncated image"), "bomb.png": ("ocr", "image bomb"),
                        "secret.pdf": ("convert", "encrypted PDF")}
    assert report.counts["new_versions"] == 8 and report.counts["failed"] == 3
    assert report.counts["ocr_pages"] == 6 and report.stage_seconds["ocr"] > 0

    # every page's text is searchable, in the document it was on
    for (name, _page), word in PAGE_WORDS.items():
        found = rows(memory, "SELECT DISTINCT d.filename FROM chunks c JOIN documents d USING (doc_id)"
                             " WHERE c.tsv @@ plainto_tsquery('english', %s)", word)
        assert found == [(name,)], (word, found)
    # each page is a section of its own, and each OCR'd page is recorded with its lines
    pages = rows(memory, "SELECT d.filename, p.page, p.source, p.lines, p.reason FROM ocr_pages p"
                         " JOIN versions v USING (version_id) JOIN documents d USING (doc_id) ORDER BY 1, 2")
    assert [(f, p, s) for f, p, s, _, _ in pages] == [
        ("minutes.tiff", 1, "ocr"), ("minutes.tiff", 2, "ocr"), ("receipt.jpg", 1, "ocr"),
        ("scanned.pdf", 1, "ocr"), ("scanned.pdf", 2, "ocr"), ("whiteboard.png", 1, "ocr")]
    assert all(lines == 1 and reason is None for *_, lines, reason in pages)
    # the typed PDF kept markitdown's route
    assert rows(memory, "SELECT r.converter FROM representations r JOIN versions v USING (version_id)"
                        " JOIN documents d USING (doc_id) WHERE d.filename = 'typed.pdf'") == [("markitdown",)]

    # claims come out of the recognised text as from typed text, and cite their page and line
    second_page = show_claims(memory, "scanned.pdf")
    assert "page 2, line 1 " in second_page and "Priya Raman" in second_page, second_page
    assert "page 1, line 1 " in show_claims(memory, "whiteboard.png")
    assert " page " not in show_claims(memory, "typed.pdf")
    # and facts are decided from them as from any text
    subjects = {name for (name,) in rows(memory, "SELECT DISTINCT e.canonical_name FROM facts f"
                                                 " JOIN entities e ON e.entity_id = f.subject_id")}
    assert "Dana Whitfield" in subjects, subjects


def test_retry_converts_a_version_parked_while_ocr_was_off(memory, ray_local, tmp_path):
    image = tmp_path / "note.png"
    image.write_bytes(encode([render(["Ravi Kumar works on the cutover plan."])], "PNG"))
    off = memory.model_copy(update={"ocr_workers": 0})
    # the version as an import without OCR leaves it: stored, `convert` parked `no_route`
    report = do_import(off, image)
    assert report.counts["parked"] == 1
    assert rows(memory, "SELECT status, parked_reason FROM versions") == [("converting", "no_route")]
    assert retry.retry(off, None, None)[1].startswith("nothing to retry")

    status, text = retry.retry(memory, None, None)
    assert status == 0, text
    assert rows(memory, "SELECT status, parked_reason FROM versions") == [("ready", None)]
    assert "page 1, line 1 " in show_claims(memory, "note.png")
