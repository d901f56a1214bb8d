"""Structured data (JSON, JSON Lines, YAML, XML) as Markdown, one section per record.

A record is an element of a top-level list, a value of a top-level mapping (each element of a
list there), a line of JSON Lines, or a child of an XML root. Its section shows the record's
values that are not prose as `path: value` lines in a fenced block, where they can be searched
but state nothing (fenced code gives no claims: `pipeline/claims/segment.py`), and each string
value that is prose as a paragraph of its own, the only text claims are drawn from.

No library renders data for retrieval this way, so it is written here; the parsing is the
standard library's `json`, PyYAML's safe loader and defusedxml (which refuses entity
declarations, so an XML bomb is an error, not an expansion).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# A string is prose when it has at least this many words, most of them words of letters: a
# sentence, not an identifier, a date, a path or a list of codes.
PROSE_MIN_WORDS = 4
PROSE_MIN_LETTER_WORDS = 0.6
_WORD = re.compile(r"^[^\W\d_]+(?:['’-][^\W\d_]+)*[.,;:!?)\"”]*$")
_NOT_PROSE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|/|[A-Za-z]:\\)")

# A line that Markdown would read as the start of a block other than a paragraph.
_BLOCK_START = re.compile(r"^(?:#{1,6}(?:\s|$)|>|[-*+](?:\s|$)|\d{1,9}[.)](?:\s|$)|\||`{3,}|~{3,}|={2,}\s*$|-{2,}\s*$)")

Record = tuple[str, Any]   # (locator, value)


class DataError(ValueError):
    """The document is not the data its type says."""


def is_prose(value: str) -> bool:
    """True for a string that reads as sentences."""
    words = value.split()
    if len(words) < PROSE_MIN_WORDS or _NOT_PROSE.match(value.strip()):
        return False
    return sum(1 for w in words if _WORD.match(w)) / len(words) >= PROSE_MIN_LETTER_WORDS


def json_records(text: str) -> Iterator[Record]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    yield from _records(value)


def jsonl_records(text: str) -> Iterator[Record]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"line {number} is not JSON: {err.msg} at column {err.colno}") from None
        yield f"line {number}", value


def yaml_records(text: str) -> Iterator[Record]:
    import yaml

    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise DataError(f"not YAML: {' '.join(str(err).split())}") from None
    if len(documents) == 1:
        yield from _records(documents[0])
        return
    for number, document in enumerate(documents, start=1):
        for locator, value in _records(document):
            yield f"document {number} {locator}".rstrip(), value


def _records(value: Any) -> Iterator[Record]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield f"[{index}]", item
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
                for index, element in enumerate(item):
                    yield f"{key}[{index}]", element
            else:
                yield str(key), item
    else:
        yield "", value


def xml_records(content: bytes) -> Iterator[Record]:
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(content, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as err:
        raise DataError(f"XML refused: {type(err).__name__} ({err})") from None
    except ParseError as err:
        raise DataError(f"not XML: {err}") from None
    children = list(root)
    if not children:
        yield _local(root.tag), _element_value(root)
        return
    counts: dict[str, int] = {}
    for child in children:
        tag = _local(child.tag)
        counts[tag] = counts.get(tag, 0) + 1
        yield f"{_local(root.tag)}/{tag}[{counts[tag]}]", _element_value(child)


def _local(tag: Any) -> str:
    return str(tag).rsplit("}", 1)[-1]


def _element_value(element: Any) -> Any:
    """An element as nested data: attributes as `@name`, text as `#text`, children by tag."""
    value: dict[str, Any] = {f"@{_local(k)}": v for k, v in element.attrib.items()}
    text = " ".join((element.text or "").split())
    children = list(element)
    if not children and not value:
        return text
    if text:
        value["#text"] = text
    for child in children:
        tag = _local(child.tag)
        got = _element_value(child)
        if tag in value:
            value[tag] = (value[tag] if isinstance(value[tag], list) else [value[tag]]) + [got]
        else:
            value[tag] = got
        tail = " ".join((child.tail or "").split())
        if tail:
            value.setdefault("#text", "")
            value["#text"] = (value["#text"] + " " + tail).strip()
    return value


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, scalar) of every leaf of `value`, in order."""
    if isinstance(value, dict):
        if not value:
            yield path, {}
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if not value:
            yield path, []
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def to_markdown(records: Iterator[Record]) -> str:
    """The records as sections: a heading with the locator, a fenced block of the values that are
    not prose, then each prose value as a paragraph."""
    parts: list[str] = []
    for locator, value in records:
        fenced: list[str] = []
        prose: list[str] = []
        for path, leaf in leaves(value):
            if isinstance(leaf, str) and is_prose(leaf):
                prose.append(paragraph(leaf))
            else:
                shown = leaf if isinstance(leaf, str) else json.dumps(leaf, ensure_ascii=False, default=str)
                shown = " ".join(shown.split()) if isinstance(leaf, str) else shown
                fenced.append(f"{path}: {shown}" if path else shown)
        section = [f"## {' '.join(locator.split())}"] if locator else []
        if fenced:
            section.append(fence("\n".join(fenced)))
        section.extend(prose)
        if section:
            parts.append("\n\n".join(section))
    return "\n\n".join(parts)


def fence(text: str, info: str = "") -> str:
    """`text` as a fenced code block whose fence no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def paragraph(text: str) -> str:
    """Prose as Markdown paragraphs: each line's leading marker escaped, so that no line becomes a
    heading, list, quote, table or fence."""
    lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.strip()
        lines.append("\\" + line if _BLOCK_START.match(line) else line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
