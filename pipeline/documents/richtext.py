"""Word-processor formats markitdown does not read: OpenDocument (ODT, ODS, ODP) and RTF.

OpenDocument goes through odfpy, the OASIS format's reference reader in Python (it is also what
pandas reads .ods with): its ODF2XHTML writes the document as XHTML (headings, paragraphs, lists,
tables, a presentation's pages), which markitdown's HTML converter turns into Markdown, so an ODT
reads like a .docx. RTF goes through striprtf, which keeps the text (and its code-page
characters) and drops the formatting: markitdown has no RTF converter, and pandoc, which has
one, is a separate binary that no Python wheel of ours ships.
"""

from __future__ import annotations

import functools
import io


class RichTextError(ValueError):
    """The document is not the format its type says, or cannot be read."""


def opendocument_markdown(content: bytes) -> str:
    from odf.odf2xhtml import ODF2XHTML

    from pipeline.documents.mail import html_to_markdown

    converter = ODF2XHTML(generate_css=False, embedable=True)
    try:
        converter.load(io.BytesIO(content))
        xhtml = converter.xhtml()
    except Exception as err:  # odfpy raises whatever its zip or SAX reader met
        raise RichTextError(f"odfpy could not read this OpenDocument file: {type(err).__name__}: {err}") from None
    return html_to_markdown(xhtml)


def rtf_markdown(content: bytes) -> str:
    from striprtf.striprtf import rtf_to_text

    if not content.lstrip().startswith(b"{\\rtf"):
        raise RichTextError("not RTF: it does not start with {\\rtf")
    nul = content.find(b"\x00")
    if nul >= 0:
        raise RichTextError(f"binary content: contains NUL bytes (first at byte {nul})")
    # RTF is 7-bit text whose other characters come as escapes that striprtf decodes per code
    # page; the 8-bit bytes some old writers leave in are read as Latin-1, the RTF default's base.
    text = content.decode("latin-1")
    try:
        return rtf_to_text(text, errors="replace")
    except Exception as err:  # striprtf raises on an unknown code page or a broken group
        raise RichTextError(f"striprtf could not read it: {type(err).__name__}: {err}") from None


@functools.cache
def versions() -> dict[str, str]:
    """The reading libraries' versions, recorded with each representation."""
    from importlib.metadata import version

    return {"opendocument": f"odfpy {version('odfpy')}", "rtf": f"striprtf {version('striprtf')}"}
