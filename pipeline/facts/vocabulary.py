"""The governed predicate vocabulary: the 16 core predicates, the `work` pack, the `other:` escape.

A relation's predicate comes from here or the relation is not made (the claim still holds the
statement). `cardinality` says which relations a newer one replaces instead of joining: a thing
has one leader and one owner at a time (`one_per_object`: "Ravi leads X" and "Dana leads X" are
rivals); a person has one manager, a bug one assignee, a decision one decider (`one_per_subject`:
"Y is assigned to Peter" and "Z is assigned to Peter" are not rivals, "Y is assigned to Maria"
is); everything else can hold many times over (`many`).
"""

from __future__ import annotations

import re

CORE = ("related_to", "works_for", "member_of", "affiliated_with", "founded", "located_in", "part_of",
        "authored", "created", "about", "knows_about", "knows", "participated_in", "works_on", "uses",
        "reports_to")
WORK_PACK = ("blocks", "depends_on", "concerns", "decided_by", "assigned_to", "pursues")
PACKS = {"work": WORK_PACK}

# The seed's escape rule: `other:`, a lower-case letter, then 1 to 40 lower-case letters, digits
# or underscores.
OTHER = re.compile(r"^other:[a-z][a-z0-9_]{1,40}$")

# The relations whose ends only a name takes: a person or an organisation works for an
# organisation, lives in a place, reports to a person. A capitalised end of one of these is a name
# though its words are English ("Ravi works for Stripe", "Priya works at Blue Harbor Bank", "Dev
# reports to Grace Young"); "Ravi works on the Atlas platform" proves nothing.
NAMED_SUBJECT = frozenset({"works_for", "member_of", "affiliated_with", "reports_to", "knows", "founded",
                           "other:lives_in"})
NAMED_OBJECT = frozenset({"works_for", "member_of", "affiliated_with", "located_in", "reports_to", "knows",
                          "founded", "other:lives_in", "other:visits", "other:signed_with"})

ONE_PER_OBJECT = frozenset({"other:leads", "other:owns"})
ONE_PER_SUBJECT = frozenset({"reports_to", "assigned_to", "decided_by"})

# How a label reads each predicate ("Ravi works on billing migration").
_PHRASES = {
    "related_to": "is related to", "works_for": "works for", "member_of": "is a member of",
    "affiliated_with": "is affiliated with", "founded": "founded", "located_in": "is located in",
    "part_of": "is part of", "authored": "authored", "created": "created", "about": "is about",
    "knows_about": "knows about", "knows": "knows", "participated_in": "participated in",
    "works_on": "works on", "uses": "uses", "reports_to": "reports to", "blocks": "blocks",
    "depends_on": "depends on", "concerns": "concerns", "decided_by": "was decided by",
    "assigned_to": "is assigned to", "pursues": "pursues",
}


def governed(predicate: str, packs: tuple[str, ...] = ("work",)) -> bool:
    """True for a core predicate, one of an installed pack's, or a well-formed `other:` escape."""
    if predicate in CORE or OTHER.match(predicate):
        return True
    return any(predicate in PACKS.get(pack, ()) for pack in packs)


def cardinality(predicate: str) -> str:
    if predicate in ONE_PER_OBJECT:
        return "one_per_object"
    if predicate in ONE_PER_SUBJECT:
        return "one_per_subject"
    return "many"


def phrase(predicate: str) -> str:
    """The words a label uses for `predicate`; an escape reads as its own words."""
    if predicate.startswith("other:"):
        return predicate[len("other:"):].replace("_", " ")
    return _PHRASES[predicate]


def relation_label(subject: str, predicate: str, obj: str) -> str:
    """A relation's label, built without a model; it holds only the statement, never dates."""
    return f"{subject} {phrase(predicate)} {obj}"
