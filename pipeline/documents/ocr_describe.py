"""Visual description of an image: the vision-language model's prompt and the parsing of its answer.

OCR reads the words of an image; what a photo or a diagram shows needs a vision-language model.
The messages here are OpenAI-style chat messages with the image as a `data:` URL content part,
which vLLM's `LLM.chat` and `vllm serve` both take for a multimodal model; the answer is one JSON
object (`pipeline/prompts/describe.schema.json`). Parsing never raises on what a model wrote: an
answer that cannot be used is a `DescriptionFailed` with its cause, and the image keeps its OCR
text alone. Off by default; `scripts/gpu_describe.sh` runs a real model.
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass
from typing import Any

from pipeline.claims import llm_io

KINDS = ("photo", "whiteboard", "diagram", "chart", "screenshot", "slide", "scan", "other")
# What the schema allows; a longer description is a model that ignored it, cut rather than refused.
DESCRIPTION_MAX_CHARS = 1200
# The OCR text shown to the model is cut here: it only has to know what is already read.
_OCR_CONTEXT_CHARS = 2000


@dataclass(frozen=True)
class Description:
    kind: str
    text: str


@dataclass(frozen=True)
class DescriptionFailed:
    cause: str


@functools.cache
def prompt() -> str:
    return llm_io.prompt_file("describe.md")


def schema() -> dict[str, Any]:
    """The answer's JSON Schema (a fresh copy: callers may hand it to an engine's guided decoding)."""
    return json.loads(llm_io.prompt_file("describe.schema.json"))


def describe_messages(image: bytes, mime: str, *, filename: str, ocr_text: str) -> list[dict[str, Any]]:
    """Chat messages asking for the description of `image` (its bytes, of type `mime`)."""
    url = f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"
    read = " ".join(ocr_text.split())[:_OCR_CONTEXT_CHARS] or "(none)"
    task = (f"File name: {filename}\nOCR text of the image: {read}\n\n"
            "Describe the image. Answer with the JSON object only.")
    return [{"role": "system", "content": prompt()},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": task}]}]


def parse_description(text: str) -> Description | DescriptionFailed:
    """The model's answer as a description, or why it cannot be one."""
    body = llm_io.unfenced(text)
    try:
        answer = json.loads(body)
    except json.JSONDecodeError as err:
        return DescriptionFailed(f"not JSON ({err.msg} at char {err.pos})")
    if not isinstance(answer, dict):
        return DescriptionFailed(f"not a JSON object but {type(answer).__name__}")
    kind, description = answer.get("kind"), answer.get("description")
    if kind not in KINDS:
        return DescriptionFailed(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not isinstance(description, str) or not description.strip():
        return DescriptionFailed("no description")
    return Description(kind, " ".join(description.split())[:DESCRIPTION_MAX_CHARS])


def description_section(description: Description) -> str:
    """The Markdown section a description adds after the pages, marked as the model's words."""
    return f"## Description ({description.kind}, by a vision model)\n\n{description.text}\n"
