"""Visual description of the pages of an OCR'd document: which pages a vision-language model is
shown, its request, the parsing of its answer, and the answer's place in `document.md`.

OCR reads the words of a page; what a photo, a whiteboard or a diagram shows needs a
vision-language model. One request per document shows it the pages OCR read (at most
`max_pages`, with text found on them or not), each as a JPEG `data:` URL content part of an
OpenAI-style chat message (vLLM's multimodal chat input) after what OCR read on it; the answer is
one JSON object (`pipeline/prompts/describe.schema.json`) holding a description per page. Parsing
never raises on what a model wrote: a page whose description cannot be used is a
`DescriptionFailed` with its reason (one of `FAILURE_REASONS`, which the run report counts) and
cause, and the page keeps its OCR text alone. A document where OCR recognised nothing (a photo, a
diagram without words) comes here with its pages' headings alone, and fails with
`nothing_recognised_or_described` when no page of it is described either (`add_descriptions`).

A description becomes a section of its own at the end of its page's section, under
`### Description (<kind>, by a vision model)`, so a reader (and a claim's source span) can tell
the model's words from the page's; every offset of the side tables after it moves by what was
inserted, so offsets stay exact. Off unless CORPUSMEM_DESCRIBE_MODEL names a model
(`actors/vllm_describer.py`).
"""

from __future__ import annotations

import base64
import functools
import io
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipeline import records
from pipeline.claims import llm_io
from pipeline.documents.convert import OCR
from pipeline.documents.ocr_pages import PageImage, image_pages, pdf_pages
from pipeline.documents.ocr_text import OCR as OCR_SOURCE
from pipeline.documents.ocr_text import escape_line, holds_text

if TYPE_CHECKING:
    from PIL.Image import Image

KINDS = ("photo", "whiteboard", "diagram", "chart", "screenshot", "slide", "scan", "other")
# What the schema allows; a longer description is a model that ignored it, cut rather than refused.
DESCRIPTION_MAX_CHARS = 1200
# A page is shown at most this many pixels on its long side: a vision model's prompt grows with
# the pixels (Qwen2.5-VL: a token per 28x28, about 1,300 for 1024x1024), and an A4 page's print is
# still legible at 1024 px. JPEG, since a photo in PNG is several times larger.
MAX_SIDE_PX = 1024
JPEG_QUALITY = 85
# The OCR text shown beside a page is cut here: the model only has to know what is already read.
_OCR_CONTEXT_CHARS = 2000

STAGE = "describe"
# Why a document fails here: OCR recognised no text on it, and the model described none of its pages.
NOTHING_RECOGNISED_OR_DESCRIBED = "nothing_recognised_or_described"
# Why a page shown (or meant to be shown) to the model has no description.
UNPARSABLE_ANSWER = "unparsable_answer"   # not JSON, or not an object with a list of pages
OFF_SCHEMA = "off_schema"                 # its entry has a kind the schema does not allow, or no text
PAGE_LEFT_OUT = "page_left_out"           # the answer has no entry for it
ENGINE_FAILED = "engine_failed"           # the engine failed on the request
PAGE_UNREADABLE = "page_unreadable"       # its original could not be read again to show it
FAILURE_REASONS = (UNPARSABLE_ANSWER, OFF_SCHEMA, PAGE_LEFT_OUT, ENGINE_FAILED, PAGE_UNREADABLE)


@dataclass(frozen=True)
class PageToDescribe:
    number: int        # 1-based, as in `ocr_pages`
    jpeg: bytes
    ocr_text: str      # what OCR read on the page (its section without the heading)


@dataclass(frozen=True)
class Description:
    kind: str
    text: str


@dataclass(frozen=True)
class DescriptionFailed:
    reason: str   # one of FAILURE_REASONS: what the run report counts
    cause: str    # the detail, for the log and a failed document's error

    def __post_init__(self) -> None:
        if self.reason not in FAILURE_REASONS:
            raise ValueError(f"reason {self.reason!r} is not one of {', '.join(FAILURE_REASONS)}")


@functools.cache
def prompt() -> str:
    return llm_io.prompt_file("describe.md")


def schema() -> dict[str, Any]:
    """The answer's JSON Schema (a fresh copy: callers may hand it to an engine's guided decoding)."""
    return json.loads(llm_io.prompt_file("describe.schema.json"))


def page_jpeg(image: Image) -> bytes:
    """A page as the model is shown it: RGB, at most MAX_SIDE_PX on its long side, JPEG."""
    shown = image.convert("RGB")
    shown.thumbnail((MAX_SIDE_PX, MAX_SIDE_PX))
    out = io.BytesIO()
    shown.save(out, "JPEG", quality=JPEG_QUALITY)
    return out.getvalue()


def page_texts(markdown: str, pages: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Each page's text in `document.md`: its section without the `## Page N` heading."""
    out = {}
    for page in pages:
        section = markdown[page["char_start"]:page["char_end"]]
        out[page["page"]] = section.split("\n", 1)[1] if "\n" in section else ""
    return out


def pages_wanted(row: Mapping[str, Any], max_pages: int) -> list[int]:
    """The pages of a row the model is to be shown: the first `max_pages` the OCR stage read with
    its recogniser (whether it found text there or not), none for a row OCR did not convert. A PDF
    page kept from its text layer is not shown."""
    if not (records.is_active(row) and row["converter"] == OCR and row["markdown"] is not None):
        return []
    return [p["page"] for p in row["ocr_pages"] or [] if p["source"] == OCR_SOURCE][:max_pages]


def pages_to_describe(row: Mapping[str, Any], original: Callable[[], bytes], max_pixels: int,
                      max_pages: int) -> list[PageToDescribe]:
    """The `pages_wanted` of a row, read again from its original bytes (`original()`, called only
    when there is a page to show)."""
    numbers = set(pages_wanted(row, max_pages))
    if not numbers:
        return []
    texts = page_texts(row["markdown"], [p for p in row["ocr_pages"] if p["page"] in numbers])
    content = original()
    source = (image_pages(content, max_pixels) if row["ocr_pdf_pages"] is None
              else pdf_pages(content, sorted(n - 1 for n in numbers), max_pixels))
    shown: list[PageToDescribe] = []
    with closing(source) as pages:   # a long scan is not read past its last page shown
        for page in pages:
            if isinstance(page, PageImage) and page.number in numbers:
                shown.append(PageToDescribe(page.number, page_jpeg(page.image), texts[page.number]))
                if len(shown) == len(numbers):
                    break
    return shown


def describe_messages(pages: Sequence[PageToDescribe], *, filename: str) -> list[dict[str, Any]]:
    """Chat messages asking for a description of each of `pages`."""
    content: list[dict[str, Any]] = []
    for page in pages:
        read = " ".join(page.ocr_text.split())[:_OCR_CONTEXT_CHARS] or "(none)"
        url = f"data:image/jpeg;base64,{base64.b64encode(page.jpeg).decode('ascii')}"
        content += [{"type": "text", "text": f"Page {page.number}. OCR text of the page: {read}"},
                    {"type": "image_url", "image_url": {"url": url}}]
    numbers = ", ".join(str(p.number) for p in pages)
    content.append({"type": "text", "text": f"File name: {filename}\n\nDescribe each page shown (pages {numbers}). "
                                            "Answer with the JSON object only."})
    return [{"role": "system", "content": prompt()}, {"role": "user", "content": content}]


def _entry(entry: Mapping[str, Any]) -> Description | DescriptionFailed:
    kind, description = entry.get("kind"), entry.get("description")
    if kind not in KINDS:
        return DescriptionFailed(OFF_SCHEMA, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not isinstance(description, str) or not description.strip():
        return DescriptionFailed(OFF_SCHEMA, "no description")
    return Description(kind, " ".join(description.split())[:DESCRIPTION_MAX_CHARS])


def parse_descriptions(text: str, pages: Sequence[int]) -> dict[int, Description | DescriptionFailed]:
    """The model's answer as a description, or why there is none, for each of the `pages` it was
    shown. An entry for a page it was not shown, or a second one for a page, is not read."""
    body = llm_io.unfenced(text)
    try:
        answer = json.loads(body)
    except json.JSONDecodeError as err:
        return dict.fromkeys(pages, DescriptionFailed(UNPARSABLE_ANSWER, f"not JSON ({err.msg} at char {err.pos})"))
    if not isinstance(answer, dict) or not isinstance(answer.get("pages"), list):
        return dict.fromkeys(pages, DescriptionFailed(UNPARSABLE_ANSWER, "not a JSON object with a list of pages"))
    found: dict[int, Description | DescriptionFailed] = {}
    for entry in answer["pages"]:
        page = entry.get("page") if isinstance(entry, dict) else None
        if type(page) is int and page in pages and page not in found:
            found[page] = _entry(entry)
    return {n: found.get(n, DescriptionFailed(PAGE_LEFT_OUT, "the answer has no entry for this page")) for n in pages}


def description_section(description: Description) -> str:
    """What a description adds at the end of its page's section, marked as the model's words."""
    return f"\n### Description ({description.kind}, by a vision model)\n\n{escape_line(description.text)}\n"


def with_descriptions(markdown: str, lines: Sequence[Mapping[str, Any]], pages: Sequence[Mapping[str, Any]],
                      descriptions: Mapping[int, Description]
                      ) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """`document.md` and its side rows (`records.OCR_LINE`, `records.OCR_PAGE`) with each page's
    description at the end of its section. The page's span grows to hold it, and every offset at
    or after an insertion moves by what was inserted there (a page's section ends where the next
    page's separating newline starts, so no line or later page starts at that point)."""
    inserts = sorted((p["char_end"], description_section(descriptions[p["page"]]))
                     for p in pages if p["page"] in descriptions)

    def moved(offset: int) -> int:
        return offset + sum(len(text) for at, text in inserts if at <= offset)

    parts, start = [], 0
    for at, text in inserts:
        parts += [markdown[start:at], text]
        start = at
    parts.append(markdown[start:])
    return ("".join(parts),
            [{**ln, "char_start": moved(ln["char_start"]), "char_end": moved(ln["char_end"])} for ln in lines],
            [{**p, "char_start": moved(p["char_start"]), "char_end": moved(p["char_end"])} for p in pages])


def add_descriptions(row: dict[str, Any], found: Mapping[int, Description | DescriptionFailed], model: str) -> None:
    """What the model made of the pages of `row` it was shown (or meant to be): each page's
    outcome in `descriptions`, the descriptions in `document.md` (`with_descriptions`) and the
    model in the converter version. A row that holds no text even now (OCR recognised none, and
    no page was described) fails with NOTHING_RECOGNISED_OR_DESCRIBED and the causes; its pages
    keep `no_text_recognised` either way, since that is what OCR found."""
    row["descriptions"] = [{"page": n, "kind": r.kind, "reason": None} if isinstance(r, Description)
                           else {"page": n, "kind": None, "reason": r.reason} for n, r in sorted(found.items())]
    described = {n: d for n, d in found.items() if isinstance(d, Description)}
    if described:
        markdown, lines, pages = with_descriptions(row["markdown"], row["ocr_lines"] or [], row["ocr_pages"],
                                                   described)
        row.update(markdown=markdown, ocr_lines=lines, ocr_pages=pages,
                   converter_version=f"{row['converter_version']} + {model}")
    elif not holds_text(row["ocr_pages"] or []):
        causes = sorted({f"{r.reason}: {r.cause}" for r in found.values() if isinstance(r, DescriptionFailed)})
        records.fail(row, STAGE, f"{NOTHING_RECOGNISED_OR_DESCRIBED}: no text on any of its {len(row['ocr_pages'])} "
                                 f"pages, and no description ({'; '.join(causes) or 'no page shown'})")
