"""Statements of a chunk as labelled passages, each tied to exact characters of document.md.

A passage is what Selection judges and Claimify cites: one sentence of a paragraph, list item or
conversation turn, or one table row. Headings, rules, HTML comments (slide markers), code and
front matter state nothing and give no passages. Offsets are absolute, so for every passage
`markdown[p.char_start:p.char_end] == p.text`; a span starts after a list marker, a task box, a
quote marker or a speaker prefix, and never ends in whitespace.

Conversation turns (the ingest-conversations layout, `[t2 | 2026-09-17T09:31:10Z] Ravi: text`,
and the looser `[t2] Ravi:`, `Ravi:`, `**Ravi:**`, `**Ravi**:`) give passages that carry the
speaker, the turn id and the turn's own UTC time; the span is the sentence only.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from pipeline.claims.extraction import Passage
from pipeline.documents.blocks import front_matter_close, split_blocks

# Tokens that end in a dot without ending a sentence (compared lower-cased, dot included).
ABBREVIATIONS = frozenset({
    "e.g.", "i.e.", "mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "vs.", "etc.", "inc.", "ltd.",
    "co.", "corp.", "jr.", "sr.", "cf.", "al.", "approx.", "dept.", "est.", "gov.", "univ.",
})
# Abbreviations that are a sentence's last word as often as not ("the plan for Q1.", "the answer
# is no."), so they only hold a sentence together before a number: "No. 5", "Q1. 2026", "Jan. 5".
NUMBER_ABBREVIATIONS = frozenset({
    "no.", "nos.", "vol.", "p.", "pp.", "fig.", "sec.", "art.", "ch.", "q1.", "q2.", "q3.", "q4.",
    "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
})

# `Label:` at a line start that names a field, not a person, so the line is no conversation turn.
NON_SPEAKER_LABELS = (
    "note", "notes", "nb", "decision", "decisions", "participants", "attendees", "present",
    "absent", "apologies", "action", "actions", "action item", "action items", "owner", "owners",
    "date", "time", "when", "where", "location", "venue", "agenda", "summary", "status", "update",
    "updates", "next steps", "next step", "todo", "to do", "question", "questions", "answer",
    "warning", "caution", "important", "tip", "example", "source", "sources", "subject", "from",
    "to", "cc", "bcc", "re", "title", "author", "authors", "version", "outcome", "outcomes",
    "result", "results", "risk", "risks", "blocker", "blockers", "goal", "goals", "deadline",
    "due", "priority", "context", "background", "topic", "topics", "reason", "conclusion",
    "objective", "objectives", "scope", "meeting", "follow-up", "follow up", "follow-ups",
    "minutes", "chair", "facilitator", "scribe", "note taker", "recap", "highlights", "issue",
    "issues", "fix", "problem", "solution", "purpose", "overview", "description", "details",
    "consequence", "consequences", "impact", "community impact", "info", "tl;dr", "tldr", "usage",
    "input", "output", "returns", "parameters", "default", "type", "step", "steps", "hint", "important",
    "reference", "see also", "prerequisites", "requirements", "notice", "disclaimer", "license",
)
# A month or weekday before a colon opens a timeline entry ("June: the database moves").
CALENDAR_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "today", "tomorrow", "yesterday",
})
# Header lines that name who took part and when: permitted context, and each its own passage.
HEADER_LABELS = ("participants", "attendees", "present", "date")

# A line that looks like a heading but is not one in Markdown terms (PDF and plain-text
# conversions lose heading marks) is at most this many words and ends without punctuation.
PSEUDO_HEADING_WORDS = 6
# A document's first line, a fully emphasised line, or a line introducing a list, may be longer.
TITLE_LINE_WORDS = 12
# How far `document_header` looks for the first heading and the header lines.
HEADER_SCAN_LINES = 12
HEADER_SCAN_CHARS = 8000

_LINE_END = re.compile(r"\r\n?|\n")
_PREFIX = re.compile(r"[ \t]*(?:>[ \t]?)*[ \t]*")  # indentation and blockquote markers
_FENCE = re.compile(r"(`{3,}|~{3,})")
# A line of markup: one that opens an HTML or JSX tag ("<a href=…>text</a>", "<Card title=…"),
# closes one, or carries a multi-line tag's attributes ("  description=\"…\"", "/>").
_HTML_TAG_LINE = re.compile(r"</?[A-Za-z][\w.:-]*(?:[\s/>]|$)|/?>$|[\w-]+=(?:\"|'|\{)")
_ATX_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r"(?:=+|-+)[ \t]*$")
_RULE = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|(?:-[ \t]*){3,})$")
_TABLE_SEPARATOR = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_LIST_MARKER = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?(?=\S)")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LEADING_NOISE = re.compile(r"(?:\s+|<!--.*?-->)*", re.DOTALL)  # before a document's first text

# A name word: a capital, then letters, apostrophes or hyphens ("O'Brien", "Anne-Marie").
_NAME_WORD = r"[A-ZÀ-ÖØ-Þ][A-Za-zÀ-ÖØ-öø-ÿ'’\-]*"
_NAME = rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,2}}"
# A role written in lower case ("user", "assistant"): a speaker only behind a turn marker, or where
# the document's header declares it.
_ROLE = r"[a-z][a-z0-9_\-]{0,30}"
_TURN = re.compile(
    r"(?:\[(?P<meta>[^\[\]\n]{1,100})\][ \t]*)?"
    rf"(?:\*\*(?P<bold_in>{_NAME}):\*\*|\*\*(?P<bold_out>{_NAME})\*\*:|(?P<plain>{_NAME}):|(?P<role>{_ROLE}):)"
    r"[ \t]+(?=\S)"
)
_LABEL = re.compile(r"(?:\*\*)?(?P<label>[A-Za-z][A-Za-z \-]{0,30}?)(?::\*\*|\*\*:|:)(?:[ \t]|$)")
_TIMESTAMP_LIKE = re.compile(r"\d{4}-\d{2}-\d{2}")

# A sentence ends at a run of . ? ! … with any closing quotes, brackets or emphasis after it,
# when whitespace and then a capital or a digit (possibly behind an opening mark) follow.
_SENTENCE_END = re.compile(r"[.?!…]+[\"'”’)\]*_]*")
_WHITESPACE = re.compile(r"\s+")
_OPENERS = "\"'“‘([*_`"
_TOKEN_START = re.compile(r"[(\[\"'“‘*_]+")
_INITIAL = re.compile(r"[A-Z]\.")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.){2,}")
_TERMINAL = ".!?:;…"
_EMPHASIS_EDGES = "*_`\"'“”‘’ \t"
_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


@dataclass
class _Unit:
    """A run of lines that reads as one piece: a paragraph, a list item, a turn, a table row."""

    kind: str                 # "para", "item", "turn", "label", "row"
    start: int                # where its statements start (after markers and speaker prefix)
    end: int
    line_start: int           # start of its first line
    lines: int = 1
    continues: bool = True    # later lines without a blank line in between belong to it
    before_list: bool = False  # the next line starts a list item or a table row
    speaker: str | None = None
    turn_id: str | None = None
    turn_time: datetime | None = None


def split_passages(markdown: str, chunk_start: int, chunk_end: int, *, label_start: int = 1,
                   in_target: bool = True, prefix: str = "P") -> list[Passage]:
    """The statements of `markdown[chunk_start:chunk_end]`, labelled `{prefix}{n}` from
    `label_start` in document order, with absolute offsets into `markdown`."""
    if not 0 <= chunk_start <= chunk_end <= len(markdown):
        raise ValueError(f"chunk {chunk_start}–{chunk_end} does not lie in a document of "
                         f"{len(markdown)} chars")
    passages: list[Passage] = []
    for unit in _units(markdown, chunk_start, chunk_end):
        if unit.kind == "para" and _is_pseudo_heading(markdown, unit):
            continue
        if unit.kind == "row":
            spans = [(unit.start, unit.end)]
        else:
            spans = _sentences(markdown, unit.start, unit.end)
        for start, end in spans:
            passages.append(Passage(
                label=f"{prefix}{label_start + len(passages)}", char_start=start, char_end=end,
                text=markdown[start:end], in_target=in_target, speaker=unit.speaker,
                turn_time=unit.turn_time, turn_id=unit.turn_id))
    return passages


def context_passages(markdown: str, chunks: Sequence[tuple[int, int]], target_index: int, *,
                     window: int = 1) -> list[Passage]:
    """Passages of the target chunk (P1, P2, ...) and of up to `window` chunks on either side
    (permitted neighbours, N1, N2, ... in document order), all in document order.

    Neighbours get their own prefix so a label alone says whether a passage may be a claim's
    origin; within one context every label is unique.
    """
    if not 0 <= target_index < len(chunks):
        raise IndexError(f"target_index {target_index} is outside {len(chunks)} chunks")
    if window < 0:
        raise ValueError(f"window must be at least 0, got {window}")
    before: list[Passage] = []
    for start, end in chunks[max(0, target_index - window):target_index]:
        before += split_passages(markdown, start, end, label_start=len(before) + 1,
                                 in_target=False, prefix="N")
    target = split_passages(markdown, *chunks[target_index])
    after: list[Passage] = []
    for start, end in chunks[target_index + 1:target_index + 1 + window]:
        after += split_passages(markdown, start, end, label_start=len(before) + len(after) + 1,
                                in_target=False, prefix="N")
    return before + target + after


def turn_speakers(text: str, opening: str = "") -> list[str]:
    """The speakers of the turns that open in `text`, in order (`turn_openings`)."""
    return [speaker for _, speaker in turn_openings(text, opening)]


def turn_openings(text: str, opening: str = "") -> list[tuple[int, str]]:
    """(offset in `text`, speaker) of each turn that opens in `text`, a passage of a document that
    opens with `opening` (its first chunk, where its header is), in order: a line opens a turn by
    the rule that splits the statements (`_takes_turns`), so where the header declares the
    participants an unmarked `Name:` opens one only for them ("**Helmet:**" in an assistant's
    answer is a label). Read line by line, without the whole document's code spans: a reader
    asks it of many passages."""
    found = []
    line_start = 0
    for line in text.splitlines(keepends=True):
        turn = _TURN.match(line, _PREFIX.match(line).end())
        if turn is not None:
            speaker = turn.group("bold_in") or turn.group("bold_out") or turn.group("plain") or turn.group("role")
            marked = turn.group("meta") is not None
            if _takes_turns(text, speaker, marked=marked, role=turn.group("role") is not None,
                            declared=True if marked else _declared_speakers(opening) if opening else None) \
                    and _is_speaker(speaker):
                found.append((line_start, " ".join(speaker.split())))
        line_start += len(line)
    return found


def speaker_key(name: str) -> str:
    """How speakers' names compare: lower-cased, spaces collapsed ("Dana  Kim" is "dana kim")."""
    return " ".join(name.lower().split())


def participants(opening: str) -> frozenset[str]:
    """Who a document whose first chunk is `opening` declares takes part, lower-cased (empty
    where its header declares no one)."""
    return _declared_speakers(opening) or frozenset() if opening else frozenset()


@lru_cache(maxsize=8)   # asked again for every chunk of the same document
def document_header(markdown: str, title: str, max_chars: int = 600) -> str:
    """The document header Claimify may use as context: the title, a title-like first line (a
    converted PDF or text file's title), the first heading, and the Participants / Attendees /
    Present / Date lines before the second heading, among the first `HEADER_SCAN_LINES`
    non-blank lines; one per line, repeats left out, at most `max_chars` characters (cut at a
    line end, else at a word end)."""
    lines: list[str] = []

    def add(line: str) -> None:
        line = " ".join(line.split())
        if line and line.casefold() not in {seen.casefold() for seen in lines}:
            lines.append(line)

    add(title)
    top = _top_lines(_COMMENT.sub("", markdown[:HEADER_SCAN_CHARS]), HEADER_SCAN_LINES)
    headings = [index for index, line in enumerate(top) if _is_heading(top, index)]
    if top and not _is_heading(top, 0) and _is_title_like(top[0]) and not _header_label(top[0]):
        add(_strip_emphasis(top[0]))
    if headings:
        add(_strip_emphasis(top[headings[0]].lstrip("#").rstrip("#").strip()))
    for index, line in enumerate(top):
        if len(headings) > 1 and index >= headings[1]:
            break
        if _header_label(line):
            add(_strip_emphasis(line).replace("**", ""))
    return _cap(lines, max_chars)


@lru_cache(maxsize=8)
def _code_spans(markdown: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(starts, ends) of the document's code blocks, fenced or indented, as the CommonMark parse
    finds them: a chunk that begins inside a long code block must still know it is code."""
    found = [(b.char_start, b.char_end) for b in split_blocks(markdown, max_block_chars=len(markdown) + 1)
             if b.kind == "code"]
    return tuple(a for a, _ in found), tuple(b for _, b in found)


def _in_code(markdown: str, position: int) -> bool:
    starts, ends = _code_spans(markdown)
    i = bisect.bisect_right(starts, position) - 1
    return i >= 0 and position < ends[i]


def _units(markdown: str, start: int, end: int) -> list[_Unit]:
    units: list[_Unit] = []
    open_unit: _Unit | None = None  # the unit a following text line continues
    fence: str | None = None
    in_comment = False
    previous = "blank"
    front_matter_end = _front_matter_end(markdown) if start == 0 else 0
    for line_start, line_end in _lines(markdown, start, end):
        if line_start < front_matter_end:
            continue
        if fence is None and _in_code(markdown, line_start + len(markdown[line_start:line_end]) -
                                      len(markdown[line_start:line_end].lstrip())):
            previous, open_unit = "code", None
            continue
        if fence is not None:
            if markdown[line_start:line_end].strip().startswith(fence):
                fence = None
            continue
        if in_comment:
            in_comment = "-->" not in markdown[line_start:line_end]
            continue
        body_start = _PREFIX.match(markdown, line_start, line_end).end()
        body = markdown[body_start:line_end].rstrip()
        kind = "text"
        if not body:
            kind = "blank"
        elif fence_open := _FENCE.match(body):
            fence, kind = fence_open.group(1)[0] * 3, "code"
        elif body.startswith("<!--"):
            in_comment, kind = "-->" not in body[4:], "html"
        elif _HTML_TAG_LINE.match(body):
            kind = "html"
        elif _ATX_HEADING.match(body):
            kind = "heading"
        elif _SETEXT_UNDERLINE.match(body) and open_unit is not None and open_unit.kind == "para":
            units.remove(open_unit)  # the paragraph above it was a setext heading
            kind = "heading"
        elif _RULE.match(body):
            kind = "rule"
        elif previous == "row" and "-" in body and _TABLE_SEPARATOR.match(body):
            continue
        elif body.startswith("|"):
            kind = "row"
            units.append(_Unit("row", body_start, body_start + len(body), line_start,
                               continues=False))
        elif marker := _LIST_MARKER.match(body):
            kind = "item"
            units.append(_opened(markdown, "item", body_start + marker.end(), line_end, line_start))
        elif (opened := _opened(markdown, "text", body_start, line_end, line_start)).kind != "text":
            kind = opened.kind
            units.append(opened)
        elif open_unit is not None:
            open_unit.end, open_unit.lines = line_end, open_unit.lines + 1
        else:
            units.append(_Unit("para", body_start, line_end, line_start))
        if kind in ("row", "item") and open_unit is not None and open_unit.kind == "para":
            open_unit.before_list = True
        if kind == "text":
            open_unit = open_unit or units[-1]
        elif kind in ("item", "turn", "label"):
            open_unit = units[-1] if units[-1].continues else None
        else:
            open_unit = None
        previous = kind
    for unit in units:
        unit.end = unit.start + len(markdown[unit.start:unit.end].rstrip())
    return units


def _opened(markdown: str, kind: str, start: int, end: int, line_start: int) -> _Unit:
    """The unit a line opens at `start`: a turn when a speaker prefix is there, a label line when
    a known label is, else a unit of `kind` ("text" means: no new unit of its own)."""
    turn = _TURN.match(markdown, start, end)
    if turn is not None and not _documentation_label(markdown, turn):
        speaker = turn.group("bold_in") or turn.group("bold_out") or turn.group("plain") or turn.group("role")
        if _is_speaker(speaker) and _takes_turns(markdown, speaker, marked=turn.group("meta") is not None,
                                                 role=turn.group("role") is not None):
            turn_id, turn_time = _turn_meta(turn.group("meta"))
            return _Unit("turn", turn.end(), end, line_start, speaker=" ".join(speaker.split()),
                         turn_id=turn_id, turn_time=turn_time)
    label = _LABEL.match(markdown, start, end)
    if label is not None and " ".join(label.group("label").lower().split()) in NON_SPEAKER_LABELS:
        header_line = label.group("label").strip().lower() in HEADER_LABELS
        return _Unit("label", start, end, line_start, continues=not header_line)
    return _Unit(kind, start, end, line_start)


def _documentation_label(markdown: str, turn: re.Match[str]) -> bool:
    """A bold label on a page of documentation ("5. **Multi-Agent Support**: A single service ...",
    "**Cost Saver**: Spend less ...") names a feature or a step: no one speaks in a page's lists
    and paragraphs, however the label's words read. Behind a turn marker it still opens a turn,
    and in a note or a transcript, which sets no code, it still may."""
    return turn.group("meta") is None and (turn.group("bold_in") or turn.group("bold_out")) is not None \
        and _documentation(markdown)


@lru_cache(maxsize=8)   # asked for each line of the same document
def _documentation(markdown: str) -> bool:
    from pipeline.facts.names import is_documentation

    return is_documentation(markdown)


def _takes_turns(markdown: str, speaker: str, *, marked: bool, role: bool,
                 declared: frozenset[str] | None | bool = True) -> bool:
    """Whether `speaker:` at a line start opens a turn. Behind a turn marker (`[t3 | …] Dana:`) it
    does. Where the header declares who takes part ("Participants: user, assistant"), an unmarked
    one does only when it names one of them: "**Helmet:**" inside an assistant's answer is a
    label. Elsewhere a name does, unless the document also writes it as a common word
    ("Consequence:" beside "consequences"), and a lower-case role does not."""
    if marked:
        return True
    if declared is True:   # not given: the speakers `markdown` itself declares
        declared = _declared_speakers(markdown)
    if declared is not None:
        return speaker_key(speaker) in declared or speaker.split()[0].lower() in declared
    return not role and not _common_word(markdown, speaker)


@lru_cache(maxsize=1024)   # by a document's text, or its first chunk's for `turn_speakers`
def _declared_speakers(markdown: str) -> frozenset[str] | None:
    """The speakers a document's header declares (`participants_of`), lower-cased, each name and
    its first word; None where it declares none."""
    from pipeline.claims.selection_turns import participants_of

    names = participants_of(document_header(markdown, ""))
    return frozenset(n for name in names for n in (speaker_key(name), name.split()[0].lower())) or None


@lru_cache(maxsize=8)
def _lowercase_words(markdown: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(markdown) if w.islower())


def _common_word(markdown: str, label: str) -> bool:
    """Whether a label is made of common words: one word the document also writes in lower case
    ("Consequence:" beside "consequences"), or several that are each an English word and none a
    given name, the last of which the document also writes in lower case, names an abstract thing
    or follows two others ("**Error Handling:**" beside "handling", "**Memory Management:**",
    "**Clear Agent Roles:**" heading a list item of documentation; never "Mark Webber:"): a
    field's label, not a person's name. A turn marker or a declared participant overrules it."""
    from pipeline.facts.names import is_english_word

    words, found = label.split(), _lowercase_words(markdown)
    if len(words) > 1:
        last = words[-1].lower()
        return all(is_english_word(w) for w in words) and (
            last in found or last.endswith(_ABSTRACT_NOUN_ENDINGS) or len(words) > 2)
    lowered = words[0].lower()
    return lowered in found or lowered + "s" in found or lowered + "es" in found


# A one-word English noun of these endings before a colon heads a section of documentation
# ("Initialization:", "Authentication:", "Performance:"); no one is called that.
_ABSTRACT_NOUN_ENDINGS = ("tion", "sion", "ment", "ness", "ity", "ance", "ence")


def _is_speaker(name: str) -> bool:
    from pipeline.facts.names import is_compound_adjective, is_english_word

    words = name.split()
    if " ".join(words).lower() in NON_SPEAKER_LABELS:
        return False
    if len(words) == 1 and words[0].lower().endswith(_ABSTRACT_NOUN_ENDINGS) and is_english_word(words[0].lower()):
        return False
    if any(is_compound_adjective(w) for w in words):
        return False  # "Thread-safe:", "Non-blocking:": a property
    return all(any(c.islower() for c in word) and word.lower() not in CALENDAR_WORDS
               for word in words)


def _turn_meta(meta: str | None) -> tuple[str | None, datetime | None]:
    """(turn id, UTC turn time) from `t2 | 2026-09-17T09:31:10Z`, `t2` or a lone timestamp."""
    if meta is None:
        return None, None
    parts = [part.strip() for part in meta.split("|")]
    if len(parts) >= 2:
        return parts[0] or None, _parse_time(parts[1])
    if _TIMESTAMP_LIKE.match(parts[0]):
        return None, _parse_time(parts[0])
    return parts[0] or None, None


def _parse_time(value: str) -> datetime | None:
    """An aware timestamp in UTC; None for a naive or unreadable one (never a guessed zone)."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        return None
    return parsed.astimezone(UTC)


def _sentences(markdown: str, start: int, end: int) -> list[tuple[int, int]]:
    text = markdown[start:end]
    cuts = [0]
    for match in _SENTENCE_END.finditer(text):
        after = match.end()
        gap = _WHITESPACE.match(text, after)
        if gap is None:
            continue
        following = gap.end()
        while following < len(text) and text[following] in _OPENERS:
            following += 1
        if following < len(text):
            nxt = text[following]
            if not (nxt.isupper() or nxt.isdigit()) or _holds_together(text, match, nxt):
                continue
        cuts.append(after)
    cuts.append(len(text))
    spans = []
    for cut_start, cut_end in itertools.pairwise(cuts):
        piece = text[cut_start:cut_end]
        lead = len(piece) - len(piece.lstrip())
        span = (start + cut_start + lead, start + cut_start + len(piece.rstrip()))
        if span[0] < span[1] and any(c.isalnum() for c in markdown[span[0]:span[1]]):
            spans.append(span)
    return spans


def _holds_together(text: str, end: re.Match[str], following: str) -> bool:
    """Whether the dot ending `end` belongs to an abbreviation, an initial or an acronym."""
    if end.group() != ".":
        return False
    token_start = text.rfind(" ", 0, end.start()) + 1
    token_start = max(token_start, text.rfind("\n", 0, end.start()) + 1)
    token = _TOKEN_START.sub("", text[token_start:end.end()], count=1)
    lowered = token.lower()
    if lowered in ABBREVIATIONS or _ACRONYM.fullmatch(token) or _INITIAL.fullmatch(token):
        return True
    return lowered in NUMBER_ABBREVIATIONS and following.isdigit()


def _is_pseudo_heading(markdown: str, unit: _Unit) -> bool:
    """A one-line paragraph without closing punctuation that a converter made out of a heading:
    a short standalone line ("What went well"), the document's first line, a fully emphasised
    line, or a line directly above a list or a table ("Cutover")."""
    if unit.lines != 1:
        return False
    line = markdown[unit.start:unit.end]
    core = line.strip(_EMPHASIS_EDGES)
    if not core or core[-1] in _TERMINAL:
        return False
    words = len(_WORD.findall(core))
    if words <= PSEUDO_HEADING_WORDS and not any(c.isdigit() for c in core):
        return True
    if words > TITLE_LINE_WORDS:
        return False
    emphasised = len(line) > 4 and line[:2] in ("**", "__") and line[-2:] == line[:2]
    return (emphasised or unit.before_list
            or _LEADING_NOISE.match(markdown).end() >= unit.line_start)


def _lines(markdown: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each line of `markdown[start:end]`, line breaks excluded."""
    lines, position = [], start
    for match in _LINE_END.finditer(markdown, start, end):
        lines.append((position, match.start()))
        position = match.end()
    if position < end:
        lines.append((position, end))
    return lines


def _front_matter_end(markdown: str) -> int:
    closing = front_matter_close(markdown)
    return 0 if closing is None else closing.end()


def _top_lines(markdown: str, limit: int) -> list[str]:
    """The first `limit` non-blank lines, stripped, after a leading front matter."""
    lines = []
    for line in _LINE_END.split(markdown[_front_matter_end(markdown):]):
        if line.strip():
            lines.append(line.strip())
            if len(lines) == limit:
                break
    return lines


def _is_heading(lines: list[str], index: int) -> bool:
    """An ATX heading, or the text line above a setext underline."""
    if _ATX_HEADING.match(lines[index]):
        return True
    return (index + 1 < len(lines) and not _SETEXT_UNDERLINE.match(lines[index])
            and _SETEXT_UNDERLINE.match(lines[index + 1]) is not None)


def _header_label(line: str) -> bool:
    label = _LABEL.match(line)
    if label is not None and label.group("label").strip().lower() in HEADER_LABELS:
        return True
    return any(re.search(rf"\b{name}:", line, re.IGNORECASE) for name in HEADER_LABELS[:3])


def _is_title_like(line: str) -> bool:
    core = _strip_emphasis(line)
    return (bool(core) and core[-1] not in _TERMINAL and not line.startswith(("|", "<", "-", "*"))
            and len(_WORD.findall(core)) <= TITLE_LINE_WORDS)


def _strip_emphasis(text: str) -> str:
    return text.strip(_EMPHASIS_EDGES)


def _cap(lines: list[str], max_chars: int) -> str:
    header = "\n".join(lines)
    if len(header) <= max_chars:
        return header
    cut = header.rfind("\n", 0, max_chars + 1)
    if cut <= 0:
        cut = header.rfind(" ", 0, max_chars + 1)
    return header[:cut if cut > 0 else max_chars].rstrip()
