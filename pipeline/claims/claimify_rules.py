"""Claimify by rule, for the deterministic `rules` extractor.

What it does, per statement Selection kept:
- attribution: a conversation turn becomes "<Speaker> said that <statement>", with first-person
  words ("I", "me", "my", "we" when the speaker is the only candidate) replaced by the speaker;
  a named holder's stance ("Dana thinks ...") is kept as said and marked attributed;
- pronouns: a sentence-initial "He"/"She" is replaced by the one person named in the passage
  before it; with no such person, or two, the statement is omitted, never guessed;
  a statement that opens on "It", "This", "That" or "They" is omitted for the same reason;
- relative dates are resolved against the turn's own time, else the document date, and written
  into the text as ISO dates; the original words stay in `source_span`;
- statements joined by ";" are split into separate claims.
What it does not do: partial references ("the cutover" → "the billing migration cutover"),
ellipsis, or anything that needs reading beyond the previous passage; such statements are kept
as written when they stand alone by the rules above.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.claims.extraction import (
    AddedContext,
    ChunkContext,
    ClaimifyResult,
    DraftClaim,
    Omitted,
    Passage,
    SelectionResult,
)
from pipeline.claims import claimify_turns
from pipeline.claims.selection_turns import participants_of
from pipeline.facts import names
from pipeline.time import timeparse

_FIRST_PERSON = re.compile(r"\b(I|me|myself)\b")
_FIRST_PERSON_POSSESSIVE = re.compile(r"\b(my|My)\b")
_OPENING_PRONOUN = re.compile(r"^(He|She)\b")
_UNRESOLVABLE_OPENING = re.compile(r"^(It|This|That|They|These|Those|We)\b(?!\s+(?:is|are)\s+\d)")
_HOLDER_STANCE = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)? (?:thinks|believes|feels|says|said|argues|"
                            r"expects|worries|prefers|suggested|suggests)\b")
_PERSON = re.compile(r"\b([A-Z][a-z]{2,})\b")
_MARKUP = re.compile(r"\*\*|__|`")
_INLINE_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_SPACES = re.compile(r"\s+")
# Capitalised words that open sentences or name months and days, never people.
_NOT_PEOPLE = frozenset("""The A An This That These Those It He She They We I Our Your Their His Her
In On At By For From To Of And But Or If When While After Before Since Until During Launch
January February March April May June July August September October November December
Monday Tuesday Wednesday Thursday Friday Saturday Sunday Q1 Q2 Q3 Q4""".split())


def _clean(text: str) -> str:
    """The statement without emphasis, code ticks and inline tags (a link's text stays)."""
    return _SPACES.sub(" ", _MARKUP.sub("", _INLINE_TAG.sub("", text))).strip()


def _people(text: str) -> list[str]:
    found = []
    for name in _PERSON.findall(text):
        if name not in _NOT_PEOPLE and name not in found:
            found.append(name)
    return found


def _lower_first(text: str) -> str:
    """Lower-case the opening word unless it is a name (it now follows "X said that")."""
    first = text.split(" ", 1)[0]
    if not first or first in _people(first) or first.isupper():
        return text
    return first[0].lower() + text[1:]


def _previous(ctx: ChunkContext, passage: Passage) -> Passage | None:
    before = [p for p in ctx.passages if p.char_end <= passage.char_start]
    return before[-1] if before else None


def _cells(text: str) -> list[str]:
    return [c.strip() for c in text.strip().strip("|").split("|")]


def _table_row(ctx: ChunkContext, passage: Passage) -> str | None:
    """A table row as "Header: cell, Header: cell." using the table's header row, which sits in
    the passages just before it; None when the header is not in view or does not fit."""
    rows = [p for p in ctx.passages if p.char_end <= passage.char_start]
    header = None
    while rows and rows[-1].text.lstrip().startswith("|"):
        header = rows.pop()
    if header is None:
        return None
    names, cells = _cells(header.text), _cells(passage.text)
    if len(names) != len(cells) or not any(cells):
        return None
    return ", ".join(f"{_clean(n)}: {_clean(c)}" for n, c in zip(names, cells) if c) + "."


class _TurnClaims:
    """Claimify for the sentences of conversation turns, in document order: each sentence in the
    third person (`claimify_turns`), and the photo it shares. A sentence that points back ("It was
    rich and creamy") joins the claim the sentence just before it in the same turn made, citing
    both: the seed's claim that keeps an assertion together across sentences. With nothing to
    join, it is omitted as an unresolved reference. A shared photo joins the claim of the sentence
    it came with, and is a claim of its own when that sentence made none."""

    def __init__(self, ctx: ChunkContext) -> None:
        self.ctx = ctx
        self.participants = {p.speaker for p in ctx.passages if p.speaker} | set(participants_of(ctx.header))
        self.names = names.proper_words([p.text for p in ctx.passages])
        self.drafts: list[DraftClaim] = []
        self.omitted: list[Omitted] = []
        self._open: tuple[Passage, str, bool, tuple[str, ...]] | None = None  # origin, text, attributed, cited

    def add(self, passage: Passage, text: str) -> None:
        speaker = passage.speaker
        sentence, caption = claimify_turns.photo_caption(text)
        rewritten = claimify_turns.rewrite(sentence, speaker, self.participants, self.names)
        open_claim = self._open if self._open and self._open[0].turn_id == passage.turn_id else None
        if rewritten is not None and rewritten.unresolved:
            joined = claimify_turns.continuation(sentence, speaker, self.participants) if open_claim else None
            if joined:
                origin, claim, attributed, cited = open_claim
                self._open = (origin, f"{claim.rstrip('.!?')}; {joined}.", attributed, cited + (passage.label,))
            elif not caption:
                self.close()
                self.omitted.append(Omitted(passage.label, f"unresolved reference: {rewritten.unresolved!r}"))
        elif rewritten is not None:
            self.close()
            self._open = (passage, rewritten.text, rewritten.attributed, (passage.label,))
        if caption and self._open and self._open[0].turn_id == passage.turn_id and passage.label in self._open[3]:
            # the photo shows what the sentence it came with says: one claim ("Nate adopted a
            # puppy; Nate shared a photo of a puppy on a couch")
            origin, claim, attributed, cited = self._open
            shared = claimify_turns.photo_claim(speaker, caption)
            self._open = (origin, f"{claim.rstrip('.!?')}; {shared}", attributed, cited)
        elif caption:
            self.drafts.append(_dated(self.ctx, passage, claimify_turns.photo_claim(speaker, caption),
                                      [AddedContext(speaker, "speaker", passage.label)], False))

    def close(self) -> None:
        """The open claim is finished: the next sentence is no continuation of it."""
        if self._open:
            origin, claim, attributed, cited = self._open
            draft = _dated(self.ctx, origin, claim, [AddedContext(origin.speaker, "speaker", origin.label)], attributed)
            self.drafts.append(replace(draft, cited=cited))
            self._open = None


def claimify_passage(ctx: ChunkContext, passage: Passage, reason: str | None = None
                     ) -> tuple[list[DraftClaim], Omitted | None]:
    if passage.text.lstrip().startswith("|"):
        row = _table_row(ctx, passage)
        if row is None:
            return [], Omitted(passage.label, "a table row without its header row in view cannot stand alone")
        return [_dated(ctx, passage, row, [], False)], None
    text = _clean(passage.text)
    added: list[AddedContext] = []
    attributed = False
    pronoun = _OPENING_PRONOUN.match(text)
    if pronoun:
        prior = _previous(ctx, passage)
        candidates = _people(prior.text) if prior else []
        if len(candidates) != 1:
            return [], Omitted(passage.label, f"unresolved pronoun {pronoun.group(1)!r}")
        text = candidates[0] + text[pronoun.end():]
        added.append(AddedContext(candidates[0], "target" if prior.in_target else "neighbour", prior.label))
    elif _UNRESOLVABLE_OPENING.match(text):
        return [], Omitted(passage.label, f"unresolved reference: {text.split()[0]!r}")
    attributed = bool(_HOLDER_STANCE.match(text))

    drafts = [_dated(ctx, passage, part if part.endswith((".", "!", "?")) else part + ".", added, attributed)
              for part in (p.strip() for p in text.split(";")) if part]
    return drafts, None


def _dated(ctx: ChunkContext, passage: Passage, text: str, added: list[AddedContext],
           attributed: bool) -> DraftClaim:
    """The draft of one statement, its relative dates resolved and its world time read."""
    reading = timeparse.read_time(text, passage.turn_time or ctx.asserted_at)
    claim_text = timeparse.apply_replacements(text, reading.replacements)
    context = list(added) + [AddedContext(r.resolved, "date_resolution", passage.label)
                             for r in reading.replacements]
    return DraftClaim(
        claim_text=claim_text[0].upper() + claim_text[1:], cited=(passage.label,),
        is_attributed=attributed, valid_from=reading.valid_from, valid_until=reading.valid_until,
        precision=reading.precision, kind=reading.kind,
        resolved_dates=timeparse.written_periods(reading),
        added_context=tuple(context))


def claimify_rules(ctx: ChunkContext, selection: SelectionResult) -> ClaimifyResult:
    kept = {s.label: s.reason for s in selection.statements if s.outcome in ("keep", "keep_flagged")}
    drafts: list[DraftClaim] = []
    omitted: list[Omitted] = []
    turns = _TurnClaims(ctx)
    for passage in ctx.target:
        if passage.label not in kept:
            turns.close()
            continue
        if passage.speaker:
            turns.add(passage, _clean(passage.text))
            continue
        made, why = claimify_passage(ctx, passage, kept[passage.label])
        drafts.extend(made)
        if why:
            omitted.append(why)
    turns.close()
    # a claim left open until its turn ended was finished after later photos: back in document order
    order = {p.label: i for i, p in enumerate(ctx.passages)}
    in_order = sorted(turns.drafts, key=lambda d: order[d.cited[0]])
    return ClaimifyResult(tuple(drafts + in_order), tuple(omitted + turns.omitted))
