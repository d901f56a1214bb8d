"""The grounding gate: a deterministic check, no model, that decides whether a draft claim is stored.

Checks, in order (the first that fails is recorded as the reason):
1. `unknown_passage`: every cited label names a passage the engine showed.
2. `origin_outside_target`: the first cited passage (the origin) lies in the target chunk.
3. `origin_not_kept`: Selection kept the origin (`keep` or `keep_flagged`).
4. `unsupported_number`: every number in the claim occurs in the permitted context, except an
   ISO date (a day, a month or a year) the claim resolved itself and either recorded in its time
   fields or read from its cited passages as the rules read them (`timeparse.read_time` against the
   turn's or the document's date): "sluggish today … to bed at 2 AM last Wednesday" writes both
   days, and its window holds the first.
5. `unsupported_word`: every other word occurs in the permitted context (the document header,
   the target chunk, the permitted neighbours, names introduced earlier) or is one of the few
   connective words a rewrite needs (`_REWRITE_WORDS`).
Evidence spans come from the cited labels, never from anything the model wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from pipeline.claims.extraction import ChunkContext, DraftClaim, Passage, SelectionResult
from pipeline.time import timeparse

# Words a decontextualising rewrite may add without a source: attribution ("Ravi said that"),
# articles, prepositions and auxiliaries. Anything with content must come from the document.
_REWRITE_WORDS = frozenset("""
a an the and or of on in at to for from by with as that this these those it its is are was were be
been being has have had do does did said says stated reported according believes thinks feels noted
who which whom whose not no than then also both
their they them others shared doesn't hasn't isn't going wants will would
""".split())

_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|[A-Za-z]+(?:['’][A-Za-z]+)?|\d+(?:[.,:]\d+)*")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class GateResult:
    passed: bool
    check: str | None = None        # the failed check's name
    detail: str | None = None
    evidence_spans: tuple[tuple[int, int], ...] = ()


def _tokens(text: str) -> list[str]:
    return [t.lower().replace("’", "'") for t in _TOKEN.findall(text)]


def vocabulary(ctx: ChunkContext) -> frozenset[str]:
    """The words a claim of this chunk may use: the same for every draft of the chunk, so its
    caller computes it once (a long document's chunk carries every name introduced before it,
    and recomputing it for each draft was two thirds of the rules' extraction)."""
    words = set(_tokens(ctx.header)) | set(_tokens(ctx.title))
    for passage in ctx.passages:
        words.update(_tokens(passage.text))
        if passage.speaker:
            words.update(_tokens(passage.speaker))
    for name in {name for name, _ in ctx.introduced}:   # a name is introduced again by every chunk that uses it
        words.update(_tokens(name))
    # a possessive, a plural or a third person of a permitted word is permitted ("Ravi's",
    # "cutovers", "goes", "tries")
    words.update({w + "'s" for w in list(words)} | {w + "s" for w in list(words)}
                 | {w + "es" for w in list(words)} | {w[:-1] + "ies" for w in list(words) if w.endswith("y")})
    return frozenset(words)


def _dates_in_window(draft: DraftClaim) -> set[str]:
    """The window's ends as ISO days, months and years: what a resolved date may write."""
    return {form for d in (draft.valid_from, draft.valid_until) if isinstance(d, datetime)
            for form in (d.date().isoformat(), f"{d:%Y-%m}", f"{d:%Y}")}


def _dates_stated(ctx: ChunkContext, passages: list[Passage]) -> set[str]:
    """The days, months and years the passages' own relative time expressions resolve to."""
    return {period for p in passages
            for period in timeparse.written_periods(timeparse.read_time(p.text, p.turn_time or ctx.asserted_at))}


def check(ctx: ChunkContext, selection: SelectionResult, draft: DraftClaim,
          words: frozenset[str] | None = None) -> GateResult:
    """`words`: `vocabulary(ctx)`, where the caller has it."""
    passages = [ctx.passage(label) for label in draft.cited]
    if not draft.cited or any(p is None for p in passages):
        unknown = [label for label, p in zip(draft.cited, passages) if p is None]
        return GateResult(False, "unknown_passage", f"cited {unknown or 'nothing'}")
    origin = passages[0]
    if not origin.in_target:
        return GateResult(False, "origin_outside_target", f"origin {origin.label} is a neighbour")
    kept = {s.label for s in selection.statements if s.outcome in ("keep", "keep_flagged")}
    if origin.label not in kept:
        return GateResult(False, "origin_not_kept", f"Selection did not keep {origin.label}")

    allowed = vocabulary(ctx) if words is None else words
    claimed = set(draft.resolved_dates)
    resolved = claimed & _dates_in_window(draft)
    if claimed - resolved:   # read again only where the window does not hold them all
        resolved |= claimed & _dates_stated(ctx, [p for p in passages if p is not None])
    # a resolved month or year is tokenised into its numbers ("2026-03" → "2026", "03")
    resolved_numbers = {n for period in resolved if not _ISO_DATE.match(period) for n in period.split("-")}
    for token in _tokens(draft.claim_text):
        if not token[0].isdigit():
            continue
        if (_ISO_DATE.match(token) and token in resolved) or token in resolved_numbers:
            continue
        if token not in allowed:
            return GateResult(False, "unsupported_number", f"{token!r} is not in the source")
    for token in _tokens(draft.claim_text):
        if token[0].isdigit() or token in _REWRITE_WORDS:
            continue
        if token not in allowed:
            return GateResult(False, "unsupported_word", f"{token!r} is not in the permitted context")
    return GateResult(True, evidence_spans=tuple((p.char_start, p.char_end) for p in passages))
