"""Prompts, answer schemas, row serialisation and answer parsing shared by the model extractors.

The `vllm` and `openai` backends build the same chat messages and parse answers with the same
functions here, so the same model text gives the same claims on either. The model sees labelled
passages and answers with labels; nothing here shows it a character offset.

Parsing never raises on what a model wrote. Malformed or truncated JSON, schema violations,
unknown labels and invented date formats each become a recorded outcome:

- Selection: a target passage without a valid outcome is kept as `keep_flagged` with the reason
  "selection failed: <cause>". A drop would need a reason from `DROP_REASONS`, and none of them
  means "the answer was unusable"; a flagged keep sends the statement on to Claimify and the
  grounding gate, and the ledger records the flag with its cause. The seed says the same of
  Selection itself: when unsure, prefer `keep_flagged` to a drop.
- Claimify: a draft that fails validation becomes `Omitted(origin, cause)`, and every kept
  statement that no valid draft cites and the model did not omit becomes `Omitted(label, cause)`.
  What the gate checks (a neighbour as origin, words not in the context) is left to the gate.

From a cut answer (truncated, or malformed part-way), the entries that were complete before the
cut are kept; the rest fall back as above.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib import resources
from typing import Any

from pipeline.claims.extraction import (
    CONTEXT_ORIGINS,
    DROP_REASONS,
    PRECISIONS,
    SELECTION_OUTCOMES,
    VALID_KINDS,
    AddedContext,
    ChunkContext,
    ClaimifyResult,
    DraftClaim,
    Omitted,
    Passage,
    Selected,
    SelectionResult,
)

PROMPT_NAMES = ("selection", "claimify")
# What Claimify may say of its own claim; stored for audit, it decides nothing.
ENTAILMENT_VERDICTS = ("supported", "partially_supported", "unsupported")
# The same forms the answer schema allows: a date, or a moment with its UTC offset. Stricter than
# `datetime.fromisoformat`, which also takes "20260303" and naive times.
WHEN_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2}))?$"
_WHEN = re.compile(WHEN_PATTERN)
_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# Free text a model writes into a reason or cause is cut here; it is a note, not a document.
_NOTE_MAX = 200
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


# --- prompts and schemas -------------------------------------------------------------------------

def prompt_file(filename: str) -> str:
    """A file of `pipeline/prompts` (every model step's prompt and answer schema live there)."""
    return resources.files("pipeline").joinpath("prompts", filename).read_text(encoding="utf-8")


def unfenced(text: str) -> str:
    """A model's answer without the Markdown code fence some models wrap JSON in, stripped."""
    body = text.strip()
    fence = _FENCE.match(body)
    return fence.group(1).strip() if fence else body


@functools.cache
def load_prompt(name: str) -> str:
    """The system prompt of one step, `selection` or `claimify`."""
    if name not in PROMPT_NAMES:
        raise ValueError(f"unknown prompt {name!r}; expected one of {PROMPT_NAMES}")
    return prompt_file(f"{name}.md")


@functools.cache
def _schema_text(name: str) -> str:
    if name not in PROMPT_NAMES:
        raise ValueError(f"unknown schema {name!r}; expected one of {PROMPT_NAMES}")
    return prompt_file(f"{name}.schema.json")


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one step's answer (a fresh copy: callers may hand it to a client)."""
    return json.loads(_schema_text(name))


@functools.cache
def prompt_hash() -> str:
    """Changes whenever a prompt or a schema changes; part of every model extractor's version."""
    digest = hashlib.sha256()
    for name in PROMPT_NAMES:
        digest.update(load_prompt(name).encode())
        digest.update(_schema_text(name).encode())
    return digest.hexdigest()[:12]


# --- messages ------------------------------------------------------------------------------------

def selection_messages(ctx: ChunkContext) -> list[dict[str, str]]:
    """OpenAI chat messages asking Selection for one outcome per target passage."""
    task = ("Judge every TARGET passage: " + ", ".join(p.label for p in ctx.target) + ".\n"
            "Answer with the JSON object only.")
    return [{"role": "system", "content": load_prompt("selection")},
            {"role": "user", "content": _render_context(ctx) + "\n\n" + task}]


def claimify_messages(ctx: ChunkContext, selection: SelectionResult) -> list[dict[str, str]]:
    """OpenAI chat messages asking Claimify to rewrite the statements Selection kept."""
    lines = ["Kept statements to rewrite:"]
    for s in selection.statements:
        if s.outcome == "keep":
            lines.append(f"- {s.label}")
        elif s.outcome == "keep_flagged":
            lines.append(f"- {s.label} (borderline: {s.reason or 'flagged'})")
    lines.append("")
    lines.append("Names this chunk introduces:")
    lines.extend(_render_names(ctx, selection.introduced))
    lines.append("")
    lines.append("Write claims for every kept statement, or omit it with a cause. "
                 "Answer with the JSON object only.")
    return [{"role": "system", "content": load_prompt("claimify")},
            {"role": "user", "content": _render_context(ctx) + "\n\n" + "\n".join(lines)}]


def _render_context(ctx: ChunkContext) -> str:
    if ctx.asserted_at is None:
        when = "unknown (resolve no relative dates)"
    else:
        day = ctx.asserted_at.astimezone(UTC)
        when = f"{day.date().isoformat()} ({day.strftime('%A')})"
    lines = [f"Document: {ctx.title}", f"Document date: {when}", f"Section role: {ctx.section_role}", "",
             "Header (between the --- lines):", "---", ctx.header.strip(), "---", "",
             "Names introduced earlier in this document:", *_render_names(ctx, ctx.introduced), "",
             "Passages, in document order:"]
    section = None
    seen_target = False
    for p in ctx.passages:
        here = "target" if p.in_target else ("after" if seen_target else "before")
        seen_target = seen_target or p.in_target
        if here != section:
            section = here
            lines.append({"before": "CONTEXT (before the chunk; read only)",
                          "target": "TARGET (the chunk)",
                          "after": "CONTEXT (after the chunk; read only)"}[here])
        lines.append(_render_passage(p))
    return "\n".join(lines)


def _render_names(ctx: ChunkContext, names: tuple[tuple[str, str], ...]) -> list[str]:
    if not names:
        return ["(none)"]
    # A label is shown only when its passage is shown: the model cannot cite what it cannot see.
    return [f"- {name} (introduced at {label})" if ctx.passage(label) else f"- {name}"
            for name, label in names]


def _render_passage(p: Passage) -> str:
    who = []
    if p.speaker:
        who.append(p.speaker)
    if p.turn_time is not None:
        moment = p.turn_time.astimezone(UTC)
        who.append(f"at {moment.strftime('%Y-%m-%dT%H:%M:%SZ')} ({moment.strftime('%A')})")
    prefix = f"[{p.label}] " + (" ".join(who) + ": " if who else "")
    # Continuation lines are indented so that no line of a passage can pass for another label.
    return prefix + p.text.strip().replace("\n", "\n    ")


# --- parsing -------------------------------------------------------------------------------------

def parse_selection(ctx: ChunkContext, text: str) -> SelectionResult:
    """Selection's answer as one outcome per target passage; see the module docstring for fallbacks."""
    targets = [p.label for p in ctx.target]
    answer, cause = _decode(text, ("statements", "introduced"))
    items, problem = _list_field(answer, "statements")
    cause = cause or problem
    outcomes: dict[str, Selected] = {}
    errors: dict[str, str] = {}
    strays: list[str] = []
    for item in items:
        label = item.get("label") if isinstance(item, dict) else None
        if not isinstance(label, str):
            strays.append("an entry without a label")
            continue
        if ctx.passage(label) is None:
            strays.append(f"unknown label {label}")
            continue
        if label not in targets or label in outcomes or label in errors:
            continue    # a neighbour is never judged; of two outcomes for one passage the first counts
        selected = _selected(label, item)
        if isinstance(selected, str):
            errors[label] = selected
        else:
            outcomes[label] = selected
    statements = []
    for label in targets:
        if label in outcomes:
            statements.append(outcomes[label])
            continue
        why = errors.get(label) or cause
        if why is None:
            why = ("no outcome; the answer had: " + "; ".join(dict.fromkeys(strays)) if strays
                   else "no outcome for this passage")
        statements.append(Selected(label, "keep_flagged", f"selection failed: {why}"))
    names, _ = _list_field(answer, "introduced")
    return SelectionResult(tuple(statements), _introduced(ctx, names))


def _selected(label: str, item: dict) -> Selected | str:
    outcome, reason = item.get("outcome"), item.get("reason")
    if outcome not in SELECTION_OUTCOMES:
        return f"unknown outcome {_show(outcome)}"
    if outcome == "drop":
        if reason not in DROP_REASONS:
            return f"drop reason {_show(reason)} is not in the fixed list"
        return Selected(label, "drop", reason)
    if outcome == "keep_flagged":
        note = reason.strip()[:_NOTE_MAX] if isinstance(reason, str) else ""
        return Selected(label, "keep_flagged", note or "flagged")
    return Selected(label, "keep")


def _introduced(ctx: ChunkContext, items: list) -> tuple[tuple[str, str], ...]:
    seen = {name.casefold() for name, _ in ctx.introduced}
    names = []
    for item in items:
        if not isinstance(item, dict):
            continue
        name, label = item.get("name"), item.get("label")
        if not isinstance(name, str) or not name.strip() or not isinstance(label, str):
            continue
        if ctx.passage(label) is None or name.strip().casefold() in seen:
            continue
        seen.add(name.strip().casefold())
        names.append((name.strip(), label))
    return tuple(names)


def parse_claimify(ctx: ChunkContext, selection: SelectionResult, text: str) -> ClaimifyResult:
    """Claimify's answer as drafts and omissions; see the module docstring for fallbacks.

    Only statements Selection kept are accounted for: with none kept there is nothing to answer,
    and the text is not read.
    """
    kept = [s.label for s in selection.statements if s.outcome != "drop"]
    if not kept:
        return ClaimifyResult(())
    answer, cause = _decode(text, ("drafts", "omitted"))
    draft_items, problem = _list_field(answer, "drafts")
    omitted_items, problem_omitted = _list_field(answer, "omitted")
    cause = cause or problem or problem_omitted
    drafts: list[DraftClaim] = []
    omitted: list[Omitted] = []
    unattributed: list[str] = []
    for item in draft_items:
        draft = _draft(ctx, item)
        if isinstance(draft, DraftClaim):
            drafts.append(draft)
            continue
        cited, why = draft
        origin = next((label for label in cited if label in kept), None)
        if origin is None:
            unattributed.append(why)
        else:
            omitted.append(Omitted(origin, why))
    for item in omitted_items:
        label = item.get("label") if isinstance(item, dict) else None
        if isinstance(label, str) and label in kept:
            why = item.get("cause")
            omitted.append(Omitted(label, why.strip()[:_NOTE_MAX] if isinstance(why, str) and why.strip()
                                   else "omitted without a cause"))
        elif not isinstance(label, str) or ctx.passage(label) is None:
            unattributed.append(f"omission names unknown label {_show(label)}")
    accounted = {label for d in drafts for label in d.cited} | {o.label for o in omitted}
    if cause and answer.cut_origin in kept and answer.cut_origin in accounted:
        # The draft being written when the answer broke off is lost; say so even though an
        # earlier draft already covers its statement.
        omitted.append(Omitted(answer.cut_origin, cause))
    for label in kept:
        if label in accounted:
            continue
        if cause:
            why = cause
        elif unattributed:
            why = "no valid claim; the answer had: " + "; ".join(dict.fromkeys(unattributed))
        else:
            why = "no claim or omission returned"
        omitted.append(Omitted(label, why))
    return ClaimifyResult(tuple(drafts), tuple(omitted))


def _draft(ctx: ChunkContext, item: object) -> DraftClaim | tuple[tuple[str, ...], str]:
    """A validated draft, or (its cited labels, why it is not one)."""
    if not isinstance(item, dict):
        return (), "a draft is not a JSON object"
    cited = item.get("cited")
    if not isinstance(cited, list) or not cited or not all(isinstance(c, str) for c in cited):
        return (), "a draft cites no passage label"
    labels = tuple(cited)
    unknown = [label for label in labels if ctx.passage(label) is None]
    if unknown:
        return labels, f"unknown label {', '.join(unknown)}"
    claim_text = item.get("claim_text")
    if not isinstance(claim_text, str) or not claim_text.strip():
        return labels, "empty claim_text"
    is_attributed = item.get("is_attributed", False)
    if not isinstance(is_attributed, bool):
        return labels, f"is_attributed {_show(is_attributed)} is not true or false"
    bounds = []
    for field in ("valid_from", "valid_until"):
        when = _when(item.get(field), field)
        if isinstance(when, str):
            return labels, when
        bounds.append(when)
    valid_from, valid_until = bounds
    precision = item.get("precision", "unknown")
    if precision not in PRECISIONS:
        return labels, f"precision {_show(precision)} is not one of {', '.join(PRECISIONS)}"
    kind = item.get("kind")
    if kind is not None and kind not in VALID_KINDS:
        return labels, f"kind {_show(kind)} is not one of {', '.join(VALID_KINDS)}"
    inconsistent = _time_inconsistency(valid_from, valid_until, precision, kind)
    if inconsistent:
        return labels, inconsistent
    resolved = item.get("resolved_dates", [])
    if not isinstance(resolved, list):
        return labels, "resolved_dates is not a list"
    for value in resolved:
        if not isinstance(value, str) or not _DAY.match(value) or _calendar_day(value) is None:
            return labels, f"invalid date {_show(value)} in resolved_dates (want YYYY-MM-DD)"
    added = _added_context(ctx, item.get("added_context", []))
    if isinstance(added, str):
        return labels, added
    verdict = item.get("entailment_self_verdict")
    return DraftClaim(claim_text=claim_text.strip(), cited=labels, is_attributed=is_attributed,
                      valid_from=valid_from, valid_until=valid_until, precision=precision, kind=kind,
                      resolved_dates=tuple(resolved), added_context=added,
                      # It decides nothing, so a bad value is dropped rather than the claim.
                      entailment_self_verdict=verdict if verdict in ENTAILMENT_VERDICTS else None)


def _when(value: object, field: str) -> datetime | str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _WHEN.match(value):
        return f"invalid date {_show(value)} in {field} (want YYYY-MM-DD)"
    if _DAY.match(value):
        day = _calendar_day(value)
        if day is None:
            return f"invalid date {_show(value)} in {field} (no such day)"
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    try:
        return datetime.fromisoformat(value).astimezone(UTC)
    except ValueError:
        return f"invalid date {_show(value)} in {field} (no such moment)"


def _calendar_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _time_inconsistency(valid_from: datetime | None, valid_until: datetime | None, precision: str,
                        kind: str | None) -> str | None:
    if valid_from is not None and valid_until is not None and valid_from > valid_until:
        return "valid_from is after valid_until"
    if valid_from is None and valid_until is None:
        if precision != "unknown" or kind is not None:
            return f"precision {precision!r} and kind {kind!r} without valid_from or valid_until"
        return None
    if precision == "unknown":
        return "valid_from or valid_until given with precision 'unknown'"
    if precision == "open" and (valid_from is None or valid_until is not None):
        return "precision 'open' needs a valid_from and no valid_until"
    return None


def _added_context(ctx: ChunkContext, items: object) -> tuple[AddedContext, ...] | str:
    if not isinstance(items, list):
        return "added_context is not a list"
    added = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            return "an added_context entry has no text"
        origin, label = item.get("origin"), item.get("label")
        if origin not in CONTEXT_ORIGINS:
            return f"added_context origin {_show(origin)} is not one of {', '.join(CONTEXT_ORIGINS)}"
        if label is not None and (not isinstance(label, str) or ctx.passage(label) is None):
            return f"unknown label {_show(label)} in added_context"
        added.append(AddedContext(item["text"].strip(), origin, label))
    return tuple(added)


def _show(value: object) -> str:
    return repr(value)[:60]


# --- decoding (tolerant) -------------------------------------------------------------------------

@dataclass(frozen=True)
class _Answer:
    fields: dict[str, Any]
    whole: bool                     # the text was one complete JSON object
    cut_origin: str | None = None   # origin label of the draft being written where the answer broke


def _decode(text: str, keys: tuple[str, ...]) -> tuple[_Answer, str | None]:
    """The answer's top-level fields and, when it could not be read whole, the cause."""
    body = unfenced(text) if isinstance(text, str) else ""
    if not body:
        return _Answer({}, False), "empty output"
    try:
        value, _ = json.JSONDecoder().raw_decode(body)  # text after a complete object is ignored
    except json.JSONDecodeError as error:
        cause = "truncated output" if _unclosed(body) else f"malformed JSON: {error.msg} at char {error.pos}"
        arrays = {key: found for key in keys if (found := _salvage(body, key)) is not None}
        # Nothing after the point where an array broke off is trusted.
        cut_at = min((end for _, _, end, closed in arrays.values() if not closed), default=len(body))
        fields = {key: items for key, (items, start, _, _) in arrays.items() if start < cut_at}
        cut = re.search(r'"cited"\s*:\s*\[\s*"([^"\\]*)"', body[cut_at:])
        return _Answer(fields, False, cut.group(1) if cut else None), cause
    if not isinstance(value, dict):
        return _Answer({}, False), "the answer is not a JSON object"
    return _Answer(value, True), None


def _list_field(answer: _Answer, key: str) -> tuple[list, str | None]:
    """The entries of one top-level array, and a cause when a whole answer lacks it (a cut answer
    already has its cause)."""
    value = answer.fields.get(key)
    if value is None:
        return [], f"the answer has no {key!r} list" if answer.whole else None
    if not isinstance(value, list):
        return [], f"{key!r} is not a list"
    return value, None


def _unclosed(body: str) -> bool:
    """True when the text stops inside a string or an open object/array, with nothing mismatched:
    the shape of an answer cut off by the token limit."""
    stack: list[str] = []
    in_string = escaped = False
    for char in body:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}" and (not stack or stack.pop() != char):
            return False
    return in_string or bool(stack)


def _salvage(body: str, key: str) -> tuple[list, int, int, bool] | None:
    """The complete entries of the `key` array, where the array starts, where the complete part
    ends, and whether the array closed; None when the text has no such array."""
    start = re.search(rf'"{re.escape(key)}"\s*:\s*\[', body)
    if start is None:
        return None
    decoder = json.JSONDecoder()
    items: list = []
    pos = start.end()
    while True:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        if pos < len(body) and body[pos] == "]":
            return items, start.start(), pos, True
        try:
            item, end = decoder.raw_decode(body, pos)
        except json.JSONDecodeError:
            return items, start.start(), pos, False
        items.append(item)
        pos = end


# --- fallbacks for a call that produced no answer ------------------------------------------------

def selection_fallback(ctx: ChunkContext, cause: str) -> SelectionResult:
    """Every target passage kept as flagged, with the cause; for a call that returned nothing."""
    return SelectionResult(tuple(Selected(p.label, "keep_flagged", f"selection failed: {cause}")
                                 for p in ctx.target))


def claimify_fallback(selection: SelectionResult, cause: str) -> ClaimifyResult:
    """Every kept statement omitted with the cause; for a call that returned nothing."""
    return ClaimifyResult((), tuple(Omitted(s.label, cause) for s in selection.statements
                                    if s.outcome != "drop"))


def kept_labels(selection: SelectionResult) -> tuple[str, ...]:
    return tuple(s.label for s in selection.statements if s.outcome != "drop")


# --- row serialisation (Ray Data columns) --------------------------------------------------------

def _moment(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse_moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def ctx_to_json(ctx: ChunkContext) -> str:
    return json.dumps({
        "version_id": ctx.version_id, "chunk_ord": ctx.chunk_ord, "title": ctx.title, "header": ctx.header,
        "asserted_at": _moment(ctx.asserted_at), "section_role": ctx.section_role,
        "passages": [{"label": p.label, "char_start": p.char_start, "char_end": p.char_end, "text": p.text,
                      "in_target": p.in_target, "speaker": p.speaker, "turn_time": _moment(p.turn_time),
                      "turn_id": p.turn_id} for p in ctx.passages],
        "introduced": [list(pair) for pair in ctx.introduced],
    }, ensure_ascii=False)


def ctx_from_json(text: str) -> ChunkContext:
    data = json.loads(text)
    return ChunkContext(
        version_id=data["version_id"], chunk_ord=data["chunk_ord"], title=data["title"], header=data["header"],
        asserted_at=_parse_moment(data["asserted_at"]), section_role=data["section_role"],
        passages=tuple(Passage(label=p["label"], char_start=p["char_start"], char_end=p["char_end"],
                               text=p["text"], in_target=p["in_target"], speaker=p["speaker"],
                               turn_time=_parse_moment(p["turn_time"]), turn_id=p["turn_id"])
                       for p in data["passages"]),
        introduced=tuple((name, label) for name, label in data["introduced"]))


def selection_to_json(selection: SelectionResult) -> str:
    return json.dumps({"statements": [{"label": s.label, "outcome": s.outcome, "reason": s.reason}
                                      for s in selection.statements],
                       "introduced": [list(pair) for pair in selection.introduced]}, ensure_ascii=False)


def selection_from_json(text: str) -> SelectionResult:
    data = json.loads(text)
    return SelectionResult(tuple(Selected(s["label"], s["outcome"], s["reason"]) for s in data["statements"]),
                           tuple((name, label) for name, label in data["introduced"]))


def claimify_to_json(result: ClaimifyResult) -> str:
    return json.dumps({
        "drafts": [{"claim_text": d.claim_text, "cited": list(d.cited), "is_attributed": d.is_attributed,
                    "valid_from": _moment(d.valid_from), "valid_until": _moment(d.valid_until),
                    "precision": d.precision, "kind": d.kind, "resolved_dates": list(d.resolved_dates),
                    "added_context": [{"text": a.text, "origin": a.origin, "label": a.label}
                                      for a in d.added_context],
                    "entailment_self_verdict": d.entailment_self_verdict} for d in result.drafts],
        "omitted": [{"label": o.label, "cause": o.cause} for o in result.omitted],
    }, ensure_ascii=False)


def claimify_from_json(text: str) -> ClaimifyResult:
    data = json.loads(text)
    drafts = tuple(DraftClaim(
        claim_text=d["claim_text"], cited=tuple(d["cited"]), is_attributed=d["is_attributed"],
        valid_from=_parse_moment(d["valid_from"]), valid_until=_parse_moment(d["valid_until"]),
        precision=d["precision"], kind=d["kind"], resolved_dates=tuple(d["resolved_dates"]),
        added_context=tuple(AddedContext(a["text"], a["origin"], a["label"]) for a in d["added_context"]),
        entailment_self_verdict=d["entailment_self_verdict"]) for d in data["drafts"])
    return ClaimifyResult(drafts, tuple(Omitted(o["label"], o["cause"]) for o in data["omitted"]))
