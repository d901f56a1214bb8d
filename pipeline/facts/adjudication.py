"""Adjudication rules: how one incoming assertion changes the facts of the entity that owns it.

Pure: the adjudicator shard loads an entity's facts into an `EntityFacts`, feeds it that entity's
pending assertions in world-time order (`order_key`), and writes back what `decide` recorded.

Decisions, as the seed names them:
- add       a new proposition (method `novelty_gate` when the entity had no candidate fact);
- noop      the same fact again: the claim is attached as support;
- update    the same fact with a better window (adjust), or an earlier fact closed at its
            successor's start in the world (supersede), never at the said-on time;
- contradict an incompatible value for the same slot at the same time: the new fact joins the
            other in a contradiction group; a negated assertion attaches with stance `contradicts`.

Matching is on resolved entities, predicates and slot values, never on wording alone; a free
observation matches an earlier one only when their wording agrees above the confidence floor.
Distinct events (the same relation with disjoint stated windows) stay distinct facts.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import lru_cache

from pipeline.facts import vocabulary
from pipeline.time import windows
from pipeline.time.windows import Window

NAMESPACE = uuid.UUID("5f0c2d8e-93a1-4c57-b0d4-7e6a1f2b3c4d")
DECIDED_BY = "corpusmem/rules-adjudicator-1"
CONFIDENCE_FLOOR = 0.75
# Per-entity work is bounded: an assertion is compared with at most this many facts of its slot.
MAX_CANDIDATES = 64
_EPOCH = datetime(1, 1, 1, tzinfo=timezone.utc)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an of to in on for and is are was were be been will has have had that this with by at "
                  "from as it its".split())


@dataclass(frozen=True)
class Incoming:
    """An assertion whose entities are resolved."""

    assertion_id: str
    claim_id: str
    doc_id: str
    kind: str
    anchor_id: str
    subject_id: str
    subject_name: str
    statement: str
    window: Window
    asserted_at: datetime | None
    predicate: str | None = None
    object_id: str | None = None
    object_name: str | None = None
    attribute: str | None = None
    value: str | None = None
    negated: bool = False
    change: bool = False
    ends_id: str | None = None      # an entity id, "*" for any, None
    epoch: int = 0                  # times the claim came back after a removal


@dataclass
class Fact:
    fact_id: str
    kind: str
    anchor_id: str
    subject_id: str
    label: str
    window: Window
    predicate: str | None = None
    object_id: str | None = None
    attribute: str | None = None
    value: str | None = None
    statement_key: str | None = None
    contradiction_group: str | None = None
    superseded_by: str | None = None
    invalidated: bool = False


@dataclass
class Decision:
    fact_id: str
    kind: str
    outcome: str
    method: str
    confidence: float | None
    rationale: str
    assertion_id: str | None = None
    claim_ids: tuple[str, ...] = ()
    related_id: str | None = None
    features: dict = field(default_factory=dict)


@dataclass
class Writes:
    """What one entity's adjudication changed, for the shard to write in one transaction."""

    new_facts: list[Fact] = field(default_factory=list)
    updated: dict[str, Fact] = field(default_factory=dict)    # fact_id → fact with new window/group
    evidence: list[tuple[str, Incoming, str]] = field(default_factory=list)  # (fact_id, assertion, stance)
    decisions: list[Decision] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)


def order_key(a: Incoming) -> tuple:
    """World time, then said-on time, then a stable key: never arrival order. An undated
    assertion takes its place at its said-on time."""
    world = a.window.valid_from or a.asserted_at or _EPOCH
    return (world, a.asserted_at or _EPOCH, a.assertion_id)


# An assertion is compared with many facts of its entity: its key and each fact's words are
# worked out once, not once per comparison.
@lru_cache(maxsize=65536)
def statement_key(statement: str) -> str:
    return " ".join(sorted({w for w in _WORD.findall(statement.lower()) if w not in _STOP}))


@lru_cache(maxsize=65536)
def _words(key: str) -> frozenset[str]:
    return frozenset(key.split())


def _jaccard(a: str, b: str) -> float:
    x, y = _words(a), _words(b)
    return len(x & y) / len(x | y) if x or y else 0.0


def fact_id_for(assertion_id: str, epoch: int = 0) -> str:
    """A fact is named by the assertion that created it, so a re-run creates the same IDs."""
    return str(uuid.uuid5(NAMESPACE, f"fact\x00{assertion_id}" + (f"\x00{epoch}" if epoch else "")))


def group_id_for(first: str, second: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"group\x00{min(first, second)}\x00{max(first, second)}"))


def _value_span(value: str | None) -> tuple[str, str] | None:
    """A date value as a comparable (first, last) prefix pair: "2026-06" covers "2026-06-08"."""
    if value is None or not re.match(r"^\d{4}(-\d{2}(-\d{2})?)?$", value):
        return None
    return value, value


def _values_compatible(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    if _value_span(a) and _value_span(b):
        return a.startswith(b) or b.startswith(a)
    return False


def _bucket(kind: str, predicate: str | None, attribute: str | None, subject_id: str) -> tuple[str, str | None]:
    """What `_same_slot` and `_same_proposition` both require equal: the predicate of a relation,
    the attribute of an attributed observation, the subject of a free one."""
    if kind == "relation":
        return ("relation", predicate)
    if attribute is not None:
        return ("attribute", attribute)
    return ("statement", subject_id)


class EntityFacts:
    """The facts one entity owns, and the decisions made on them during a shard's run."""

    def __init__(self, anchor_id: str, facts: list[Fact], floor: float = CONFIDENCE_FLOOR) -> None:
        self.anchor_id = anchor_id
        self.facts = facts
        self.floor = floor
        self.writes = Writes()
        # Facts by the one field any match needs equal (`_bucket`), in the order of `facts`: an
        # assertion is compared with its bucket, not with every fact of a busy entity.
        self._buckets: dict[tuple[str, str | None], list[Fact]] = {}
        for f in facts:
            self._buckets.setdefault(_bucket(f.kind, f.predicate, f.attribute, f.subject_id), []).append(f)

    # --- matching ------------------------------------------------------------------------

    def _live(self) -> list[Fact]:
        return [f for f in self.facts if not f.invalidated]

    def _same_slot(self, a: Incoming, f: Fact) -> bool:
        if f.kind != a.kind:
            return False
        if a.kind == "relation":
            card = vocabulary.cardinality(a.predicate)
            if f.predicate != a.predicate:
                return False
            if card == "one_per_object":
                return f.object_id == a.object_id
            if card == "one_per_subject":
                return f.subject_id == a.subject_id
            return f.subject_id == a.subject_id and f.object_id == a.object_id
        return a.attribute is not None and f.attribute == a.attribute

    def _same_proposition(self, a: Incoming, f: Fact) -> float:
        """Confidence that `f` states what `a` states (0 when it does not)."""
        if f.kind != a.kind:
            return 0.0
        if a.kind == "relation":
            return 1.0 if (f.subject_id, f.predicate, f.object_id) == (a.subject_id, a.predicate, a.object_id) else 0.0
        if a.attribute is not None:
            return 1.0 if f.attribute == a.attribute and _values_compatible(f.value, a.value) else 0.0
        if f.attribute is not None or f.subject_id != a.subject_id:
            return 0.0
        return _jaccard(f.statement_key or "", statement_key(a.statement))

    # --- the decision ------------------------------------------------------------------------

    def decide(self, a: Incoming) -> None:
        bucket = self._buckets.get(_bucket(a.kind, a.predicate, a.attribute, a.subject_id), [])
        candidates = [f for f in bucket if not f.invalidated and
                      (self._same_slot(a, f) or self._same_proposition(a, f) > 0)][:MAX_CANDIDATES]
        if a.negated:
            self._negated(a, candidates)
            return
        match, confidence = self._best_match(a, candidates)
        if match is not None:
            self._confirm_or_adjust(a, match, confidence)
            fact = match
        else:
            rivals = [f for f in candidates if self._rival(a, f)]
            fact = self._add(a, "novelty_gate" if not candidates else "exact", 1.0,
                             "no candidate fact" if not candidates else "no fact states this")
            self._settle_rivals(a, fact, rivals)
        if a.ends_id is not None:
            self._close_predecessors(a, fact)

    def _rival(self, a: Incoming, f: Fact) -> bool:
        """Another value for a slot that holds one value at a time."""
        if not self._same_slot(a, f) or self._same_proposition(a, f) > 0:
            return False
        if a.kind == "relation":
            return vocabulary.cardinality(a.predicate) != "many"
        return a.attribute is not None

    def _best_match(self, a: Incoming, candidates: list[Fact]) -> tuple[Fact | None, float]:
        best, best_score = None, 0.0
        for f in candidates:
            score = self._same_proposition(a, f)
            if score == 0:
                continue
            if a.window.source == "stated" and f.window.source == "stated" and not windows.overlaps(a.window, f.window):
                continue  # the same relation at a different time: a distinct event
            if f.superseded_by is not None and a.asserted_at is not None and not windows.holds_at(f.window, a.asserted_at) \
                    and a.window.source == "none":
                continue
            if score > best_score:
                best, best_score = f, score
        if best is not None and best_score < self.floor:
            return None, best_score  # low confidence never merges
        return best, best_score

    def _confirm_or_adjust(self, a: Incoming, f: Fact, confidence: float) -> None:
        method = "exact" if confidence == 1.0 else "statement_match"
        self.writes.evidence.append((f.fact_id, a, "supports"))
        new_window = windows.better(f.window, a.window)
        new_value = a.value if (a.value and f.value and a.value != f.value and a.value.startswith(f.value)) else None
        if new_window is None and new_value is None:
            self._decide(f, "noop", method, confidence, "the claim repeats this fact", a)
            return
        before = f.window.as_dict() | {"value": f.value}
        if new_window is not None:
            f.window = new_window
        if new_value is not None:
            f.value = new_value
            f.label = a.statement
        self.writes.updated[f.fact_id] = f
        self._decide(f, "update", method, confidence, "the claim gives this fact better dates", a,
                     features={"before": before, "after": f.window.as_dict() | {"value": f.value}})
        if new_window is not None and new_window.valid_from is not None:
            for p in self._live():
                if p.superseded_by == f.fact_id and p.window.valid_until != new_window.valid_from:
                    self._close(p, new_window.valid_from, f, a, "its successor's start moved")

    def _add(self, a: Incoming, method: str, confidence: float, rationale: str, kind: str | None = None) -> Fact:
        kind = kind or a.kind
        if kind == "relation":
            label = vocabulary.relation_label(a.subject_name, a.predicate, a.object_name)
        else:
            label = a.statement
        fact = Fact(fact_id=fact_id_for(a.assertion_id, a.epoch), kind=kind, anchor_id=self.anchor_id,
                    subject_id=a.subject_id, label=label, window=a.window,
                    predicate=a.predicate if kind == "relation" else None,
                    object_id=a.object_id if kind == "relation" else None,
                    attribute=a.attribute if kind == "observation" else None,
                    value=a.value if kind == "observation" else None,
                    statement_key=statement_key(a.statement) if kind == "observation" else None)
        self.facts.append(fact)
        self._buckets.setdefault(_bucket(fact.kind, fact.predicate, fact.attribute, fact.subject_id), []).append(fact)
        self.writes.new_facts.append(fact)
        self.writes.evidence.append((fact.fact_id, a, "supports"))
        self._decide(fact, "add", method, confidence, rationale, a, features={"after": fact.window.as_dict()})
        return fact

    def _settle_rivals(self, a: Incoming, fact: Fact, rivals: list[Fact]) -> None:
        """Another value for the same slot: a successor closes what it replaces; a plain
        disagreement at the same time is a contradiction."""
        start = fact.window.valid_from
        disagreeing = []
        for r in rivals:
            if start is not None and (a.change or fact.window.source == "stated") and \
                    (r.window.valid_from is None or r.window.valid_from < start) and windows.holds_at(r.window, start):
                self._close(r, start, fact, a, "a successor starts")
            elif r.window.valid_from is not None and fact.window.valid_until is None and (
                    (fact.window.valid_from is None and a.asserted_at is not None and a.asserted_at < r.window.valid_from)
                    or (fact.window.valid_from is not None and fact.window.valid_from < r.window.valid_from)):
                # it began (or was said) before the other value began: the other one is its successor
                self._close(fact, r.window.valid_from, r, a, "it began before its successor")
            elif windows.overlaps(r.window, fact.window) and r.superseded_by is None:
                disagreeing.append(r)
        if disagreeing:
            self._contradict(a, fact, disagreeing)

    def _close(self, f: Fact, end: datetime, successor: Fact, a: Incoming, why: str) -> None:
        before = f.window.as_dict()
        f.window = windows.closed_at(f.window, end)
        f.superseded_by = successor.fact_id
        self.writes.updated[f.fact_id] = f
        self._decide(f, "update", "exact", 1.0, f"superseded: {why}", a, related_id=successor.fact_id,
                     features={"before": before, "after": f.window.as_dict(), "successor": successor.fact_id})

    def _contradict(self, a: Incoming, fact: Fact, rivals: list[Fact]) -> None:
        """The new fact joins the rivals' contradiction group (or starts one with them). One
        decision on the new fact, and one on each rival that enters the group now; a rival already
        in the group is not decided again, so the work stays bounded by the candidate set."""
        group = next((r.contradiction_group for r in rivals if r.contradiction_group), None) \
            or group_id_for(rivals[0].fact_id, fact.fact_id)
        if all(r.contradiction_group is None for r in rivals):
            self.writes.groups.append(group)
        fact.contradiction_group = group
        self.writes.updated[fact.fact_id] = fact
        self._decide(fact, "contradict", "exact", 1.0, "another value for the same thing at the same time", a,
                     related_id=rivals[0].fact_id, features={"group_id": group, "sides": len(rivals) + 1})
        for r in rivals:
            if r.contradiction_group == group:
                continue
            r.contradiction_group = group
            self.writes.updated[r.fact_id] = r
            self._decide(r, "contradict", "exact", 1.0, "another value for the same thing at the same time", a,
                         related_id=fact.fact_id, features={"group_id": group})

    def _close_predecessors(self, a: Incoming, successor: Fact) -> None:
        """ "Moved (from X) to Y on D": the subject's earlier relation of the same predicate ends
        at D (at the document's date when the move is undated)."""
        start = successor.window.valid_from
        if start is None:
            return
        for f in self._live():
            if f is successor or f.kind != "relation" or f.predicate != a.predicate or f.subject_id != a.subject_id \
                    or f.object_id == a.object_id or a.ends_id not in ("*", f.object_id):
                continue
            if f.window.valid_until == start and a.ends_id == f.object_id:
                self.writes.evidence.append((f.fact_id, a, "supports"))
                self._decide(f, "noop", "exact", 1.0, "the claim confirms this period and its end", a)
                continue
            if not windows.holds_at(f.window, start) or (f.window.valid_from is not None and f.window.valid_from >= start):
                continue
            if a.ends_id == f.object_id:
                self.writes.evidence.append((f.fact_id, a, "supports"))
            self._close(f, start, successor, a, "the subject moved on")

    def _negated(self, a: Incoming, candidates: list[Fact]) -> None:
        targets = [f for f in candidates if self._same_proposition(replace(a, negated=False), f) >= self.floor]
        if targets:
            f = targets[0]
            self.writes.evidence.append((f.fact_id, a, "contradicts"))
            self._decide(f, "contradict", "exact", 1.0, "the claim denies this fact", a,
                         features={"stance": "contradicts"})
            return
        self._add(replace(a, attribute=None, value=None), "novelty_gate" if not candidates else "exact", 1.0,
                  "a denial with no fact to dispute is kept as an observation", kind="observation")

    def _decide(self, f: Fact, outcome: str, method: str, confidence: float | None, rationale: str,
                a: Incoming | None, related_id: str | None = None, features: dict | None = None) -> None:
        self.writes.decisions.append(Decision(
            fact_id=f.fact_id, kind=f.kind, outcome=outcome, method=method, confidence=confidence,
            rationale=rationale, assertion_id=a.assertion_id if a else None,
            claim_ids=(a.claim_id,) if a else (), related_id=related_id, features=features or {}))
