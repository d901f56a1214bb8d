"""Sections from headings, and the role of each section, decided by rule from heading text.

A role tells later stages how to treat a section's text: `body` is what the document states,
`references` and `boilerplate` are lists of other works and legal text that state nothing about
the world, `appendix` is supporting material, `front_matter` is what comes before the content
(YAML metadata, a preamble before the first heading, a table of contents). `table` is not decided
from headings: every section of a table file (CSV, TSV) has it, and it states nothing either: its
rows are data, searchable, but no claim is drawn from them.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.documents.blocks import Block

BODY = "body"
REFERENCES = "references"
APPENDIX = "appendix"
FRONT_MATTER = "front_matter"
BOILERPLATE = "boilerplate"
TABLE = "table"
ROLES = (BODY, REFERENCES, APPENDIX, FRONT_MATTER, BOILERPLATE, TABLE)
# Sections whose chunks no extractor is shown: they are searchable, and give no claims.
SILENT_ROLES = (TABLE,)

# Headings are matched whole (after numbering and emphasis are removed), so "Links between
# trade and growth" stays body; only an appendix word may be followed by a label ("Appendix B: Data").
# Lists of other works: their sentences cite, they do not assert.
REFERENCE_HEADINGS = (
    "references", "reference", "reference list", "bibliography", "sources", "citations",
    "works cited", "further reading", "links", "external links", "see also",
    "notes and references",
)
# Supporting material after the main text, however it is lettered or numbered.
APPENDIX_WORDS = ("appendix", "appendices", "annex", "annexes")
# What precedes the content. "Abstract" is deliberately absent: an abstract states the
# document's findings in its own words, so it is body.
FRONT_MATTER_HEADINGS = ("table of contents", "contents", "toc")
# Legal text repeated across documents of one publisher; it says nothing about the subject.
BOILERPLATE_HEADINGS = (
    "legal", "legal notice", "legal notices", "disclaimer", "disclaimers", "copyright",
    "copyright notice", "license", "licence", "licensing", "confidentiality notice",
    "confidentiality",
)

# Leading numbering: "7", "7.2.", "IV.", "A)", "(3)", "§ 4", "Chapter 3:", "Section 2 -". Letters
# need their punctuation, or "Mild disclaimer" would read as numeral "mild" + "disclaimer".
_NUMBERING = re.compile(
    r"^(?:(?:chapter|section|part)\s+)?(?:§\s*)?\(?"
    r"(?:\d+(?:\.\d+)*[.):]?|(?:[ivxlcdm]+|[a-z])[.):])(?:\s*[-–—:])?\s+"
)
_EMPHASIS = re.compile(r"[*_`]+")
# The appendix word alone, or followed by a label ("B", "3", "IV") or punctuation: "Appendix
# removal in children" is a medical heading, not an appendix.
_APPENDIX = re.compile(
    r"^(?:" + "|".join(APPENDIX_WORDS) + r")(?:$|\s*[:.\-–—]|\s+(?:\d+|[ivxlcdm]+|[a-z])\b)"
)


def heading_role(heading: str) -> str | None:
    """The role a heading's own text gives its section, or None when it names no role.

    >>> heading_role("7. References"), heading_role("Appendix B: Raw data"), heading_role("Results")
    ('references', 'appendix', None)
    """
    name = _EMPHASIS.sub("", heading).strip().lower()
    name = _NUMBERING.sub("", name, count=1)
    name = " ".join(name.split()).rstrip(" .:")
    if _APPENDIX.match(name):
        return APPENDIX
    for role, names in ((REFERENCES, REFERENCE_HEADINGS), (FRONT_MATTER, FRONT_MATTER_HEADINGS),
                        (BOILERPLATE, BOILERPLATE_HEADINGS)):
        if name in names:
            return role
    return None


def build_sections(markdown: str, blocks: list[Block], all_role: str | None = None) -> list[dict[str, Any]]:
    """Sections of `markdown` (records.SECTION fields), in document order.

    A section starts at each heading block and at the first block after a YAML front matter;
    text before the first heading (other than front matter) is a section with heading None and
    level 0. Spans tile the whole string: the first section starts at 0, each later one at its
    heading block's `char_start` (or the first block after the front matter), and each ends
    where the next begins, the last at `len(markdown)` — so a section's span includes the
    whitespace that follows its last block. A document without blocks has no sections.

    Roles: a heading's own text decides (`heading_role`); a heading that names no role inherits
    the role of the nearest enclosing role-bearing heading, until a heading of the same or a
    higher level (a smaller number) closes it; otherwise `body`. Front matter blocks and the
    preamble before the first heading are `front_matter` when the document has headings; a
    document with no headings is one `body` section (after any front matter). An `all_role` given is
    every section's, whatever its heading says (a table's sections are all `table`).
    """
    if not blocks:
        return []
    has_headings = any(block.kind == "heading" for block in blocks)
    sections: list[dict[str, Any]] = []
    open_roles: list[tuple[int, str]] = []  # (heading level, role) of enclosing role headings
    previous_kind = None
    for block in blocks:
        if block.kind == "heading":
            while open_roles and open_roles[-1][0] >= block.level:
                open_roles.pop()
            own = heading_role(block.text)
            if own is not None:
                open_roles.append((block.level, own))
            role = own or (open_roles[-1][1] if open_roles else BODY)
            sections.append(_section(len(sections), block.text, block.level, role, block.char_start))
        elif block.kind == "front_matter":
            if not sections:  # an oversized front matter arrives as several pieces
                sections.append(_section(0, None, 0, FRONT_MATTER, block.char_start))
        elif not sections or previous_kind == "front_matter":
            role = FRONT_MATTER if has_headings else BODY
            sections.append(_section(len(sections), None, 0, role, block.char_start))
        previous_kind = block.kind
    if all_role is not None:
        for section in sections:
            section["role"] = all_role
    sections[0]["char_start"] = 0
    for section, following in zip(sections, sections[1:]):
        section["char_end"] = following["char_start"]
    sections[-1]["char_end"] = len(markdown)
    return sections


def _section(ord_: int, heading: str | None, level: int, role: str, start: int) -> dict[str, Any]:
    return {"ord": ord_, "heading": heading, "level": level, "role": role,
            "char_start": start, "char_end": start}
