"""An assertion: what a claim says in the memory's terms, a relation or an observation."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Assertion:
    ord: int
    kind: str                       # relation | observation
    subject: str                    # relation subject, or the entity an observation is about
    statement: str                  # the observation's label; for relations, the claim text
    predicate: str | None = None
    object: str | None = None
    attribute: str | None = None    # an observation's slot ("cutover date"); None for free statements
    value: str | None = None        # the slot's value
    negated: bool = False
    change: bool = False            # the source says a new state begins here
    ends: str | None = None         # "moved from X": the object of the relation this one ends
    window_applies: bool = True     # the claim's stated window is this assertion's validity
