"""World-time windows of facts, as the adjudication reads and writes them. Which facts a time
question selects is memory_v1's rule, in SQL (`read_queries.MATCHED_FACT_COLUMNS`).

A claim stores its bounds as the source stated them, with an inclusive end; a fact stores the
canonical interval with an exclusive end: "in 2025" is [2025-01-01, 2026-01-01). Precision is
never faked and partial windows stay partial.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

RANK = {"instant": 0, "day": 1, "month": 2, "quarter": 3, "year": 4}


@dataclass(frozen=True)
class Window:
    valid_from: datetime | None = None
    valid_until: datetime | None = None     # exclusive
    precision: str = "unknown"
    source: str = "none"                    # stated | said_on | none

    @property
    def known(self) -> bool:
        return self.valid_from is not None or self.valid_until is not None

    def as_dict(self) -> dict:
        return {"valid_from": _iso(self.valid_from), "valid_until": _iso(self.valid_until),
                "valid_precision": self.precision}


NONE = Window()


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def from_claim(valid_from: datetime | None, valid_until: datetime | None, precision: str) -> Window:
    """A fact window from a claim's stated window. A claim's inclusive end is the first instant of
    its last day (of its instant, for `instant`), so the exclusive end is one day (second) on:
    "in 2025" → [2025-01-01, 2026-01-01)."""
    if precision == "unknown" or (valid_from is None and valid_until is None):
        return NONE
    if precision == "open":
        return Window(valid_from, None, "open", "stated")
    step = timedelta(seconds=1) if precision == "instant" else timedelta(days=1)
    return Window(valid_from, valid_until + step if valid_until is not None else None, precision, "stated")


def said_on(asserted_at: datetime | None) -> Window:
    """A change the source announces without a date ("Dana now leads billing"): it holds from the
    document's day on, the way "yesterday" is read against the document date."""
    if asserted_at is None:
        return NONE
    day = asserted_at.replace(hour=0, minute=0, second=0, microsecond=0)
    return Window(day, None, "open", "said_on")


def overlaps(a: Window, b: Window) -> bool:
    """Could the two windows share an instant? Unknown bounds never rule it out."""
    if a.valid_from is not None and b.valid_until is not None and a.valid_from >= b.valid_until:
        return False
    if b.valid_from is not None and a.valid_until is not None and b.valid_from >= a.valid_until:
        return False
    return True


def holds_at(w: Window, t: datetime) -> bool:
    """Not ruled out at `t`."""
    return not ((w.valid_from is not None and w.valid_from > t) or (w.valid_until is not None and w.valid_until <= t))


def closed_at(w: Window, end: datetime) -> Window:
    """The window ended at `end` (a successor's start in the world)."""
    precision = w.precision
    if precision in ("open", "unknown"):
        precision = "instant" if (end.hour, end.minute, end.second) != (0, 0, 0) else "day"
    return replace(w, valid_until=end, precision=precision)


def better(current: Window, incoming: Window) -> Window | None:
    """The window an adjustment would give the fact, or None when `incoming` adds nothing.

    A stated window beats none and beats one read from a document date; a stated window fills
    the missing end of a partial one; a finer window inside the current one narrows it."""
    if incoming.source == "none" or current == incoming:
        return None
    if current.source == "none":
        return incoming
    if current.source == "said_on" and incoming.source == "stated":
        return replace(incoming, valid_until=incoming.valid_until or current.valid_until,
                       precision=incoming.precision if incoming.valid_until or not current.valid_until
                       else closed_at(incoming, current.valid_until).precision)
    if incoming.source != "stated":
        return None
    if current.valid_from is None and incoming.valid_from is not None and (
            current.valid_until is None or incoming.valid_from < current.valid_until):
        return replace(current, valid_from=incoming.valid_from, source="stated",
                       precision=incoming.precision if current.valid_until is None else
                       _coarser(current.precision, incoming.precision))
    if current.valid_until is None and incoming.valid_until is not None and (
            current.valid_from is None or current.valid_from < incoming.valid_until) and (
            incoming.valid_from is None or current.valid_from is None or incoming.valid_from <= current.valid_from):
        # a stated end completes a window that had none
        start = current.valid_from or incoming.valid_from
        precision = incoming.precision if incoming.precision != "open" else "day"
        return Window(start, incoming.valid_until, precision, "stated")
    if (current.valid_from is not None and incoming.valid_from is not None and current.valid_until is not None
            and incoming.valid_until is not None and RANK.get(incoming.precision, 9) < RANK.get(current.precision, 9)
            and current.valid_from <= incoming.valid_from and incoming.valid_until <= current.valid_until):
        return incoming
    return None


def _coarser(a: str, b: str) -> str:
    if a not in RANK:
        return b
    if b not in RANK:
        return a
    return a if RANK[a] >= RANK[b] else b


def for_assertion(valid_from: datetime | None, valid_until: datetime | None, precision: str, kind: str | None,
                  asserted_at: datetime | None, *, applies: bool, change: bool) -> Window:
    """The window an assertion gives its fact, from its claim's stated window.

    Only when the claim's window describes this assertion (`applies`; a plan's date is the
    value of its slot, not its validity). A change ("moved to the search team on 1 June") starts
    an ongoing state at its date, or at the document's date when it gives none; so does a
    state the source says begins on a date and never says ends ("will lead from 1 June")."""
    w = from_claim(valid_from, valid_until, precision) if applies else NONE
    starts_state = kind in ("effective_period", "proposition_validity") and w.valid_until is None
    if w.valid_from is not None and w.valid_until is not None and change:
        return Window(w.valid_from, None, "open", "stated")
    if w.valid_from is not None and (starts_state or change):
        return Window(w.valid_from, None, "open", "stated")
    if change and w.valid_from is None:
        return said_on(asserted_at)
    return w
