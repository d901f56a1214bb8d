"""Visual description: the multimodal chat messages, and the parsing of answers (hand-written in
tests/fixtures/llm/, as a model writes them: valid, fenced, truncated, off the schema)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import jsonschema
import pytest

from pipeline.documents.ocr_describe import (
    KINDS,
    Description,
    DescriptionFailed,
    describe_messages,
    description_section,
    parse_description,
    schema,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm"


def test_the_image_goes_as_a_data_url_beside_the_ocr_text():
    system, user = describe_messages(b"\x89PNG fake", "image/png", filename="board.png",
                                     ocr_text="Ingest\n  Convert   Write")
    assert system["role"] == "system" and "JSON object only" in system["content"]
    image, task = user["content"]
    assert image == {"type": "image_url",
                     "image_url": {"url": "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()}}
    assert "File name: board.png" in task["text"] and "OCR text of the image: Ingest Convert Write" in task["text"]
    assert "(none)" in describe_messages(b"x", "image/jpeg", filename="p.jpg", ocr_text=" ")[1]["content"][1]["text"]


def test_the_schema_names_the_kinds_the_parser_accepts():
    assert tuple(schema()["properties"]["kind"]["enum"]) == KINDS
    jsonschema.validate(json.loads((FIXTURES / "describe.whiteboard.json").read_text()), schema())


def test_a_valid_answer_becomes_a_section_marked_as_the_models_words():
    found = parse_description((FIXTURES / "describe.whiteboard.json").read_text())
    assert isinstance(found, Description) and found.kind == "whiteboard"
    assert found.text.startswith("A whiteboard photographed at an angle.")
    assert description_section(found).startswith("## Description (whiteboard, by a vision model)\n\nA whiteboard")


def test_a_fenced_answer_is_read():
    found = parse_description((FIXTURES / "describe.chart.fenced.txt").read_text())
    assert found == Description("chart", found.text) and "bar chart of monthly invoices" in found.text


@pytest.mark.parametrize("name, cause", [
    ("describe.diagram.truncated.txt", "not JSON (Unterminated string"),
    ("describe.unknown_kind.json", "kind 'painting' is not one of photo,"),
])
def test_an_unusable_answer_is_a_failure_with_its_cause(name, cause):
    found = parse_description((FIXTURES / name).read_text())
    assert isinstance(found, DescriptionFailed) and found.cause.startswith(cause), found


@pytest.mark.parametrize("text, cause", [
    ('["photo", "a dog"]', "not a JSON object but list"),
    ('{"kind": "photo", "description": "   "}', "no description"),
    ('{"kind": "photo"}', "no description"),
])
def test_answers_off_the_schema_never_raise(text, cause):
    assert parse_description(text) == DescriptionFailed(cause)


def test_an_overlong_description_is_cut_not_refused():
    found = parse_description(json.dumps({"kind": "photo", "description": "word " * 1000}))
    assert isinstance(found, Description) and len(found.text) == 1200
