"""Rebuild the binary files of the example corpus in ``examples/team/``.

The billing-migration corpus is a handful of dated team documents. The
plain-text ones (``.md``, ``.html``, ``.txt``) are written by hand and kept in
the repository as they are. The binary ones are generated here, from text held
in this script:

- ``2026-02-10-billing-review.pptx``  February slide deck
- ``2026-04-20-planning.docx``        April planning document
- ``2026-06-12-retro.pdf``            June retrospective (real text layer)
- ``2026-05-weekly-notes.zip``        three dated weekly notes from May

Every timestamp inside the files is fixed (document core properties, zip
member times, the PDF creation date), each set to the document's own date, so running the script twice produces
byte-identical files. The date a document speaks for is carried by its file
name (``YYYY-MM-DD-...``), which the importer reads with
``--modified-at-from path``.

Run from the repository root::

    .venv/bin/python examples/make_corpus.py

Needs python-pptx, python-docx and fpdf2.
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from docx import Document
from docx.oxml import OxmlElement
from fpdf import FPDF
from pptx import Presentation
from pptx.util import Pt

TEAM = Path(__file__).resolve().parent / "team"

def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def zip_time(when: datetime) -> tuple[int, int, int, int, int, int]:
    return (when.year, when.month, when.day, when.hour, when.minute, when.second)


def normalized_zip(data: bytes, when: datetime) -> bytes:
    """Rewrite a zip (or an Office package) with every member stamped ``when``.

    python-docx and python-pptx stamp every member with the time of writing;
    this keeps member order and content and replaces the metadata.
    """
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(
        out, "w", compression=zipfile.ZIP_DEFLATED
    ) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=zip_time(when))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            fixed.create_system = 3
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def set_core_properties(props, *, title: str, author: str, when: datetime) -> None:
    """Give an Office document fixed, plausible core properties."""
    props.title = title
    props.author = author
    props.last_modified_by = author
    props.comments = ""
    props.subject = ""
    props.keywords = ""
    props.category = ""
    props.revision = 1
    props.created = when.replace(tzinfo=None)
    props.modified = when.replace(tzinfo=None)
    props.last_printed = when.replace(tzinfo=None)


def write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    print(f"wrote {path.relative_to(TEAM.parent.parent)} ({len(data)} bytes)")


# --------------------------------------------------------------------------
# 2026-02-10: billing review slides
# --------------------------------------------------------------------------

SLIDES_TITLE = "Billing migration review"
SLIDES_SUBTITLE = "Payments team, 10 February 2026"
SLIDES = [
    (
        "Status",
        [
            "Ravi leads the billing migration.",
            "The schema draft is in review.",
            "Priya finished the first data validation script.",
            "Launch is still planned for June.",
        ],
    ),
    (
        "Risks",
        [
            "The invoice system reads the legacy database in 40 places.",
            "Q4 billing errors rose to 31.",
            "Finance needs two weeks of notice before the cutover.",
        ],
    ),
    (
        "Next steps",
        [
            "Dana reviews the schema draft on 17 February.",
            "Ravi merges the schema change by early March.",
            "Marco confirms which finance reports read from billing.",
        ],
    ),
]


def build_slides() -> bytes:
    prs = Presentation()
    title_slide = prs.slides.add_slide(prs.slide_layouts[0])
    title_slide.shapes.title.text = SLIDES_TITLE
    title_slide.placeholders[1].text = SLIDES_SUBTITLE
    for heading, bullets in SLIDES:
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = heading
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            paragraph = body.add_paragraph()
            paragraph.text = bullet
            paragraph.font.size = Pt(24)
    when = utc(2026, 2, 10, 9)
    set_core_properties(prs.core_properties, title=SLIDES_TITLE, author="Ravi", when=when)
    buf = io.BytesIO()
    prs.save(buf)
    return normalized_zip(buf.getvalue(), when)


# --------------------------------------------------------------------------
# 2026-04-20: planning document
# --------------------------------------------------------------------------

PLAN_TITLE = "Billing migration: plan for the rest of 2026"

# (style, text); style is a heading level (1, 2), "p" for a paragraph,
# "li" for a bullet, or "table" with rows as the text.
PLAN = [
    ("p", "Written by Ravi on 20 April 2026 for the payments team and finance."),
    (1, "Summary"),
    (
        "p",
        "The launch moves to October. The invoice system needs a rewrite. "
        "The database cutover stays in June. Ravi leads the billing migration "
        "and owns the schema change.",
    ),
    (1, "What changed"),
    (
        "p",
        "In March the validation scripts found 214 invoices with mismatched tax "
        "codes. The invoice system computes tax in three different places. "
        "Patching it would take as long as rewriting it.",
    ),
    (2, "Invoice system"),
    (
        "p",
        "The new invoice system will use the shared tax service. Priya will join "
        "the invoice rewrite in May. The old invoice system stays in service until "
        "the launch.",
    ),
    (2, "Error rates"),
    (
        "p",
        "Q1 billing errors fell to 12. Most of the remaining errors come from the "
        "tax codes that the rewrite removes.",
    ),
    (1, "Timeline"),
    ("li", "June: the billing database moves to PostgreSQL."),
    ("li", "May to September: the invoice rewrite."),
    ("li", "October: the new billing system launches for all customers."),
    (1, "Risks"),
    (
        "p",
        "The rewrite depends on the shared tax service, which the platform team "
        "owns. Marco needs the new invoice layout approved by the auditors before "
        "September.",
    ),
    (1, "Appendix A: Billing errors by quarter"),
    (
        "table",
        [
            ("Quarter", "Billing errors"),
            ("Q3 2025", "27"),
            ("Q4 2025", "31"),
            ("Q1 2026", "12"),
        ],
    ),
    (1, "References"),
    ("li", "Billing migration kickoff notes, 15 January 2026."),
    ("li", "Billing migration review slides, 10 February 2026."),
    ("li", "Billing migration stand-up transcript, 4 March 2026."),
]


def mark_header_row(row) -> None:
    """Mark a table row as a header row (repeated on each page, read as <th>)."""
    tr_pr = row._tr.get_or_add_trPr()
    tr_pr.append(OxmlElement("w:tblHeader"))


def build_plan() -> bytes:
    doc = Document()
    doc.add_heading(PLAN_TITLE, level=0)
    for style, text in PLAN:
        if style in (1, 2):
            doc.add_heading(text, level=style)
        elif style == "p":
            doc.add_paragraph(text)
        elif style == "li":
            doc.add_paragraph(text, style="List Bullet")
        elif style == "table":
            table = doc.add_table(rows=len(text), cols=len(text[0]))
            table.style = "Table Grid"
            for row, values in zip(table.rows, text):
                for cell, value in zip(row.cells, values):
                    cell.text = value
            mark_header_row(table.rows[0])
    when = utc(2026, 4, 20, 14)
    set_core_properties(doc.core_properties, title=PLAN_TITLE, author="Ravi", when=when)
    buf = io.BytesIO()
    doc.save(buf)
    return normalized_zip(buf.getvalue(), when)


# --------------------------------------------------------------------------
# 2026-06-12: retrospective (PDF with a text layer; core font, ASCII only)
# --------------------------------------------------------------------------

RETRO_TITLE = "Billing migration retrospective"
RETRO = [
    ("p", "12 June 2026. Attendees: Dana, Priya, Marco, Ravi."),
    ("h", "Changes to the team"),
    ("p", "Ravi moved from the billing migration to the search team on 1 June."),
    ("p", "Dana now leads the billing migration. Priya owns the schema change from 1 June."),
    ("p", "Ravi stays available for questions about the schema until the end of June."),
    ("h", "What went well"),
    ("li", "The parallel run has shown no differences since 14 May."),
    ("li", "The new database handles the monthly invoice run in 50 minutes."),
    ("li", "The handover notes for the schema change were ready before Ravi left."),
    ("h", "What did not go well"),
    ("li", "The invoice rewrite started two weeks later than planned."),
    ("li", "Finance learned about schedule changes from stand-up notes, not from the spec."),
    ("h", "Actions"),
    ("li", "Dana sends finance a weekly status email from 15 June."),
    ("li", "Priya keeps the cutover specification up to date."),
    ("li", "Marco books the auditors' review of the new invoice layout for August."),
    ("h", "Schedule"),
    ("p", "The launch is still planned for October."),
]


class RetroPDF(FPDF):
    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", size=9)
        self.cell(0, 10, f"Page {self.page_no()}", align="C")


def build_retro() -> bytes:
    pdf = RetroPDF(format="A4")
    pdf.set_creation_date(utc(2026, 6, 12, 14))
    pdf.set_title(RETRO_TITLE)
    pdf.set_author("Dana")
    pdf.set_creator("Dana")
    pdf.set_producer("Payments team")
    pdf.set_lang("en")
    pdf.set_margins(20, 20, 20)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=18)
    pdf.multi_cell(0, 10, RETRO_TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    for kind, text in RETRO:
        if kind == "h":
            pdf.ln(3)
            pdf.set_font("Helvetica", style="B", size=13)
            pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "p":
            # 5 mm leading keeps a paragraph's lines in one text block for
            # extractors; the gap after it separates paragraphs.
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
        elif kind == "li":
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 5, f"- {text}", new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
    return bytes(pdf.output())


# --------------------------------------------------------------------------
# May 2026: weekly notes, as a zip of dated files
# --------------------------------------------------------------------------

WEEKLY = {
    "2026-05-08-weekly.md": """\
# Billing migration weekly, 8 May 2026

Present: Dana, Ravi, Priya, Marco

## Decisions

- The old invoice system stays read-only after the cutover until the October launch.
- Marco approved the budget for the invoice rewrite.

## Updates

Priya joins the invoice rewrite on 11 May. The parallel run starts on 11 May.
Ravi finished the load test of the new database. The new database handles the
monthly invoice run in 50 minutes.

## Actions

- Ravi prepares the parallel run dashboards by 11 May.
- Dana tells the support team about the read-only invoice system.
""",
    "2026-05-15-weekly.md": """\
# Billing migration weekly, 15 May 2026

Present: Dana, Ravi, Priya

## Updates

Priya has joined the invoice rewrite. The parallel run found two differences in
tax rounding on 12 May. Ravi fixed both differences on 13 May. The parallel run
has shown no differences since 14 May.

The invoice rewrite uses the shared tax service. The platform team gave the
billing team access to the tax service on 14 May.

## Actions

- Priya writes the first invoice template by 22 May.
- Dana asks Marco which cutover date finance has in its calendar.
""",
    "2026-05-22-weekly.txt": """\
Billing migration weekly, 22 May 2026
Present: Dana, Ravi, Priya, Marco

Team changes
- Ravi is moving to the search team on 1 June.
- Dana will lead the billing migration from 1 June.
- Priya will take over the schema change from Ravi.

Updates
- The first invoice template is ready for review.
- Marco reviewed the template and asked for the tax breakdown on every line.

Actions
- Ravi finishes the handover notes for the schema change by 29 May.
- Priya adds the tax breakdown to the invoice template.
""",
}


def build_weekly_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(WEEKLY):
            # Each member is stamped 17:00 on the date its name starts with.
            day = datetime.strptime(name[:10], "%Y-%m-%d")
            info = zipfile.ZipInfo(name, date_time=zip_time(day.replace(hour=17)))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            zf.writestr(info, WEEKLY[name].encode("utf-8"))
    return out.getvalue()


def main() -> None:
    TEAM.mkdir(parents=True, exist_ok=True)
    write(TEAM / "2026-02-10-billing-review.pptx", build_slides())
    write(TEAM / "2026-04-20-planning.docx", build_plan())
    write(TEAM / "2026-06-12-retro.pdf", build_retro())
    write(TEAM / "2026-05-weekly-notes.zip", build_weekly_zip())


if __name__ == "__main__":
    main()
