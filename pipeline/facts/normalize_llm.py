"""`normalize_relations` by a model: the prompt, its answer schema and the parsing shared by the
`openai` and `vllm` normalizers. Pure: nothing here touches the network.

The model sees the document's topic and the claims as labels `C1..Cn`, and answers with assertions
that name their claim by label (`pipeline/prompts/normalize.md`). Its answer becomes the same
`normalize.Assertion`s the rules normalizer makes, and is checked as strictly:

- a label that is not one of the claims is ignored, with a problem;
- a relation whose predicate is not governed (`vocabulary.governed`) is dropped, and so is an
  assertion whose subject or object is a pronoun or a bare head noun (`names.is_entity`); the claim
  keeps its statement either way;
- an attributed claim stays observations on its holders: a relation is dropped, a slot is read as
  a free statement;
- a slot observation (`attribute` set, "cutover date") reads "The {thing} is scheduled for {value}."
  as the rules normalizer's plans do, and its window is not the claim's (`window_applies=False`);
  every other assertion's statement is the claim text.

A claim the answer says nothing about, and every claim of an answer that cannot be read (empty,
malformed, truncated), falls back to the rules normalizer, and the problem says so. From a cut
answer the claims answered whole before the cut are kept; the claim being written where it broke
off falls back too, since some of its assertions may be lost.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from pipeline.claims import llm_io
from pipeline.facts import names, normalize, vocabulary

Assertion = normalize.Assertion

PROMPT_NAME = "normalize"
VERSION = "llm-normalize-1"
# Claims per model call: enough to share the prompt's cost, few enough that an answer fits the
# output cap and a failed call costs little.
MAX_CLAIMS_PER_CALL = 25
# Fields of a claim row that hold moments (`assertions_sql.claims_of`); JSON carries them as text.
_MOMENTS = ("asserted_at", "valid_from", "valid_until")
_ISO_VALUE = re.compile(r"^[0-9]{4}(-Q[1-4]|-[0-9]{2}(-[0-9]{2}(T[0-9:.]+(Z|[+-][0-9]{2}:[0-9]{2})?)?)?)?$")
# Longer than this, a "name" is a clause (the rules normalizer's limit).
_NAME_WORDS = 8


# --- prompt and schema ---------------------------------------------------------------------------

@functools.cache
def load_prompt() -> str:
    return llm_io.prompt_file(f"{PROMPT_NAME}.md")


@functools.cache
def schema_text() -> str:
    return llm_io.prompt_file(f"{PROMPT_NAME}.schema.json")


def load_schema() -> dict[str, Any]:
    """The answer's JSON Schema (a fresh copy: callers may hand it to a client)."""
    return json.loads(schema_text())


@functools.cache
def prompt_hash() -> str:
    """Changes whenever the normalize prompt or its schema changes."""
    digest = hashlib.sha256()
    digest.update(load_prompt().encode())
    digest.update(schema_text().encode())
    return digest.hexdigest()[:12]


def version(model: str | None = None, backend: str = "llm") -> str:
    """The normalizer version recorded on every assertion: backend, model and prompt hash."""
    return f"{backend}-normalize-1:{model}:{prompt_hash()}" if model else f"{VERSION}:{prompt_hash()}"


# --- messages ------------------------------------------------------------------------------------

def label(index: int) -> str:
    return f"C{index + 1}"


def messages(claims: list[dict], topic: str | None) -> list[dict[str, str]]:
    """OpenAI chat messages asking for the assertions of `claims` (each with `claim_text`,
    `is_attributed` and `asserted_at`)."""
    lines = [f"Document topic: {topic or '(none)'}", "", "Claims, in document order:"]
    lines += [_render_claim(label(i), claim) for i, claim in enumerate(claims)]
    lines += ["", "Answer for every claim: " + ", ".join(label(i) for i in range(len(claims))) + ".",
              "Answer with the JSON object only."]
    return [{"role": "system", "content": load_prompt()}, {"role": "user", "content": "\n".join(lines)}]


def _render_claim(name: str, claim: dict) -> str:
    attributed = "attributed" if claim.get("is_attributed") else "not attributed"
    text = " ".join(str(claim.get("claim_text") or "").split())
    return f"[{name}] ({attributed}, said on {_said_on(claim.get('asserted_at'))}) {text}"


def _said_on(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return "an unknown day"
    if isinstance(value, datetime):
        day = value.astimezone(UTC).date() if value.tzinfo else value.date()
    elif isinstance(value, date):
        day = value
    else:
        return "an unknown day"
    return f"{day.isoformat()}, a {day.strftime('%A')}"


# --- parsing -------------------------------------------------------------------------------------

def parse(claims: list[dict], topic: str | None, text: str) -> tuple[list[list[Assertion]], list[str]]:
    """Per claim its assertions (`ord` numbered per claim), and the problems met on the way."""
    index = {label(i): i for i in range(len(claims))}
    answer, cause = llm_io._decode(text, ("assertions",))
    items, missing_list = llm_io._list_field(answer, "assertions")
    cause = cause or missing_list
    problems: list[str] = []
    found: dict[int, list[Assertion]] = {}
    answered: set[int] = set()
    relation_only: set[int] = set()     # attributed claims whose answer held only relations
    last = None
    for item in items:
        name = item.get("claim") if isinstance(item, dict) else None
        if not isinstance(name, str) or name not in index:
            problems.append(f"unknown claim label {llm_io._show(name)} ignored" if isinstance(item, dict)
                            else "an entry is not a JSON object")
            continue
        i = last = index[name]
        answered.add(i)
        result = _assertion(claims[i], topic, item)
        if isinstance(result, str):
            problems.append(f"{name}: {result}")
            continue
        if result is None:
            continue
        if claims[i].get("is_attributed"):
            if result.kind == "relation":
                problems.append(f"{name}: attributed claim: relation dropped (an observation on the holder only)")
                relation_only.add(i)
                continue
            result = replace(result, statement=claims[i]["claim_text"].strip(), attribute=None, value=None,
                             window_applies=True)
        found.setdefault(i, []).append(result)
    if cause and last is not None:
        answered.discard(last)      # the claim being written where the answer broke off
    out = []
    for i, claim in enumerate(claims):
        if i in relation_only and i not in found:
            answered.discard(i)
            why = "attributed claim answered with relations only"
        else:
            why = cause or "no output for this claim"
        if i in answered:
            out.append([replace(a, ord=n) for n, a in enumerate(normalize.dedupe(found.get(i, [])))])
        else:
            problems.append(f"{label(i)}: {why}; rules fallback")
            out.append(normalize.normalize_claim(claim, topic))
    return out, problems


def fallback(claims: list[dict], topic: str | None, cause: str) -> tuple[list[list[Assertion]], list[str]]:
    """Every claim by the rules normalizer, for a call that returned nothing usable."""
    return ([normalize.normalize_claim(c, topic) for c in claims],
            [f"{label(i)}: {cause}; rules fallback" for i in range(len(claims))])



def _assertion(claim: dict, topic: str | None, item: dict) -> Assertion | str | None:
    """One validated assertion; None for a `none` entry; a string saying why the entry is dropped."""
    kind = item.get("kind")
    if kind == "none":
        return None
    if kind not in ("relation", "observation"):
        return f"unknown kind {llm_io._show(kind)}; entry dropped"
    subject = _name(item.get("subject"))
    if subject is None:
        return f"subject {llm_io._show(item.get('subject'))} is not an entity; {kind} dropped"
    change = item.get("change") is True
    text = claim["claim_text"].strip()
    if kind == "relation":
        predicate = item.get("predicate")
        if not isinstance(predicate, str) or not vocabulary.governed(predicate):
            return f"predicate {llm_io._show(predicate)} is not governed; relation dropped"
        obj = _name(item.get("object"))
        if obj is None:
            return f"object {llm_io._show(item.get('object'))} is not an entity; relation dropped"
        ends = item.get("ends")
        if not change or not isinstance(ends, str) or not ends.strip():
            ends = None
        elif ends.strip() != "*":
            ends = _name(ends) or "*"   # a change that ends a state it cannot name ends whatever held
        return Assertion(ord=0, kind="relation", subject=subject, statement=text, predicate=predicate, object=obj,
                         negated=item.get("negated") is True, change=change, ends=ends)
    attribute, value = item.get("attribute"), item.get("value")
    if isinstance(attribute, str) and attribute.strip():
        if not isinstance(value, str) or not value.strip():
            return f"slot {llm_io._show(attribute)} has no value; observation dropped"
        attribute = " ".join(attribute.lower().split())
        value = _slot_value(claim, value.strip())
        return Assertion(ord=0, kind="observation", subject=subject,
                         statement=f"The {_thing(subject, attribute, topic)} is scheduled for {value}.",
                         attribute=attribute, value=value, change=change, window_applies=False)
    return Assertion(ord=0, kind="observation", subject=subject, statement=text, change=change)


def _name(phrase: object) -> str | None:
    """The name a model wrote, determiners off; None for a pronoun, a bare head noun or a clause."""
    if not isinstance(phrase, str) or not names.is_entity(phrase):
        return None
    name = names.clean(phrase)
    return name if len(name.split()) <= _NAME_WORDS else None


def _slot_value(claim: dict, value: str) -> str:
    """An ISO value as written; a date phrase the model did not resolve is read as the rules read it."""
    if _ISO_VALUE.match(value) or not normalize.is_date_phrase(value):
        return value
    return normalize.date_value(claim, value)


def _thing(subject: str, attribute: str, topic: str | None) -> str:
    """What a slot dates, as the rules normalizer's plan statements name it: the subject itself
    ("Atlas launch"), or the topic with the bare head it anchors ("billing migration cutover")."""
    head = attribute.removesuffix(" date")
    if names.key(head) == names.key(subject):
        return subject
    if names.key(head).startswith(names.key(subject) + " "):
        return subject + head[len(subject):]
    if topic and names.key(subject) == names.key(topic) and not subject[:2].isupper():
        return f"{subject[:1].lower() + subject[1:]} {head}"
    return f"{subject} {head}"


# --- batches and rows ----------------------------------------------------------------------------

def batches(claims: list[dict], size: int = MAX_CLAIMS_PER_CALL) -> list[list[dict]]:
    """The claims in calls of at most `size`, in order."""
    size = max(1, min(size, MAX_CLAIMS_PER_CALL))
    return [claims[i:i + size] for i in range(0, len(claims), size)]


def claims_to_json(claims: list[dict]) -> str:
    def moment(value: Any) -> Any:
        if isinstance(value, datetime | date):
            return value.isoformat()
        raise TypeError(f"cannot carry {type(value).__name__} in claims_json")

    return json.dumps(claims, ensure_ascii=False, default=moment)


def claims_from_json(text: str) -> list[dict]:
    claims = json.loads(text)
    for claim in claims:
        for field in _MOMENTS:
            if isinstance(claim.get(field), str):
                claim[field] = datetime.fromisoformat(claim[field])
    return claims
