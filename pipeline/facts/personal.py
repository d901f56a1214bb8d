"""Relations a conversation states about people's lives: work and its end, where they live, family,
pets and possessions, what they made, where they went, and plans with a destination.

Each pattern reads a claim whose subject is named ("Gina lost their job at Door Dash", "John's
daughter Sara", "Maria adopted a puppy named Coco") and gives relations with governed predicates:
`works_for` (negated, as a change, when the job ends), `member_of`, `participated_in`, `authored`,
`created`, and the `other:` escapes `other:lives_in`, `other:owns`, `other:visits` and
`other:has_<relative>` ("John has daughter Sara"). The entity test (`names.is_name`) runs later,
on the whole version, so an object that is no name ("a nearby church") turns the relation into an
observation there.

Why hand-written: as in `normalize`, no maintained library maps English onto this vocabulary
without a model the rules backend must not load.
"""

from __future__ import annotations

import re

from pipeline.facts.assertion import Assertion

_NAME = r"[A-Z][\w'’&.-]*(?:\s+(?:of\s+|de\s+)?[A-Z][\w'’&.-]*){0,3}"
# A subject is a name, never a pronoun that opens the sentence ("We attended ...", "He works for ...").
_S = rf"(?!(?:I|We|He|She|They|It|You|This|That|These|Those|There)\b)(?P<s>{_NAME})(?:\s+and\s+others)?"
# An object is the whole name: it ends the clause or a time or place follows it, so that "moved to
# the Baltic Genomics sequencing core" is left to the general rules instead of cut at "Genomics".
_O = (rf"(?P<o>{_NAME})(?=\s*(?:$|[.,;:!?)]|\s(?:in|on|at|last|this|next|after|before|since|with|for|and|"
      rf"to|from|because|when|while|until|during|yesterday|today|tomorrow|recently|now|again|together)\b))")
_AUX = r"(?:(?:has|have|had|just|recently|finally|also|now|officially|is|was|been|got)\s+)*"
RELATIVES = ("sister", "brother", "mom", "mother", "dad", "father", "wife", "husband", "son", "daughter",
             "cousin", "aunt", "uncle", "grandma", "grandmother", "grandpa", "grandfather", "partner",
             "girlfriend", "boyfriend", "fiance", "fiancé", "fiancee", "niece", "nephew", "stepmom",
             "stepdad", "stepson", "stepdaughter", "kid", "child", "baby", "friend", "colleague",
             "coworker", "co-worker", "boss", "roommate", "neighbor", "neighbour", "mentor", "teacher", "coach")
PETS_AND_THINGS = (r"dog|puppy|pup|cat|kitten|turtles?|bird|parrot|hamster|rabbit|bunny|horse|fish|snake|"
                   r"lizard|car|truck|bike|boat|house|apartment|guitar|piano|violin|camera|laptop|phone")

# (pattern, predicate, negated, change): the first that matches a claim decides.
PATTERNS: tuple[tuple[re.Pattern[str], str, bool, bool], ...] = tuple(
    (re.compile(p), predicate, negated, change) for p, predicate, negated, change in (
        (rf"^{_S}\s+{_AUX}(?:got|landed|started|found|accepted|took|began)\s+(?:a\s+|an\s+|their\s+)?(?:new\s+)?"
         rf"(?:job|position|role|internship|gig|career)\s+(?:at|with|in)\s+(?:the\s+)?{_O}", "works_for", False, True),
        (rf"^{_S}\s+{_AUX}(?:lost|quit|left)\s+(?:their\s+|a\s+|the\s+)?(?:job|position|role|gig)\s+(?:at|with)\s+"
         rf"(?:the\s+)?{_O}", "works_for", True, True),
        (rf"^{_S}\s+{_AUX}(?:was\s+|got\s+)?(?:fired|laid off|let go)\s+(?:from|by)\s+(?:the\s+)?{_O}",
         "works_for", True, True),
        (rf"^{_S}\s+{_AUX}(?:works?|worked|working)\s+(?:as\s+an?\s+[\w -]+?\s+)?(?:at|for)\s+(?:the\s+)?{_O}",
         "works_for", False, False),
        (rf"^{_S}\s+{_AUX}(?:lives?|lived|living|settled)\s+in\s+(?:the\s+)?{_O}", "other:lives_in", False, False),
        (rf"^{_S}\s+{_AUX}(?:moved|moving|relocated|relocating)\s+(?:back\s+)?to\s+(?:the\s+)?{_O}",
         "other:lives_in", False, True),
        (rf"^{_S}\s+{_AUX}(?:joined|joins|became\s+a\s+member\s+of|signed\s+up\s+for)\s+(?:the\s+)?{_O}",
         "member_of", False, True),
        (rf"^{_S}\s+{_AUX}(?:went|traveled|travelled|flew|drove|headed|took\s+a\s+trip|visited|toured)"
         rf"(?:\s+(?:back|out))?\s+(?:to\s+)?(?:the\s+)?{_O}", "other:visits", False, False),
        (rf"^{_S}\s+{_AUX}(?:is|are|was|were)\s+(?:off\s+to|in|back\s+in|away\s+in)\s+(?:the\s+)?{_O}",
         "other:visits", False, False),
        (rf"^{_S}\s+{_AUX}(?:took|takes|planned|booked|had)\s+(?:a|an|their)?\s*(?:[\w-]+\s+){{0,2}}trip\s+to\s+"
         rf"(?:the\s+)?{_O}", "other:visits", False, False),
        (rf"^{_S}\s+{_AUX}(?:met|talked\s+to|chatted\s+with|had\s+a\s+(?:chat|conversation|talk)\s+with)\s+"
         rf"(?:someone|a\s+[\w-]+)\s+named\s+{_O}", "knows", False, False),
        (rf"^{_S}\s+{_AUX}signed(?:\s+up)?\s+(?:a\s+deal\s+)?(?:with\s+)?(?:the\s+)?{_O}", "other:signed_with",
         False, True),
        (rf"^{_S}\s+(?:is|are|will\s+be|was)\s+(?:going|planning|heading|traveling|travelling|flying)\s+"
         rf"(?:on\s+a\s+trip\s+|a\s+trip\s+)?to\s+(?:the\s+)?{_O}", "other:visits", False, False),
        (rf"^{_S}\s+{_AUX}(?:attended|competed\s+in|ran\s+in|took\s+part\s+in|participated\s+in|played\s+in|won)\s+"
         rf"(?:the\s+|a\s+)?{_O}", "participated_in", False, False),
        (rf"^{_S}\s+{_AUX}(?:has|had|got|adopted|bought|owns|rescued|took\s+in)\s+(?:a|an|two|three|\d+)?\s*"
         rf"(?:new\s+|little\s+|cute\s+)?(?:{PETS_AND_THINGS})\s+(?:named|called)\s+{_O}", "other:owns", False, False),
        (rf"^{_S}\s+{_AUX}(?:wrote|writes|published|finished)\s+(?:a|an|their|the)?\s*(?:new\s+)?"
         rf"(?:book|screenplay|script|novel|story|song|poem|play|movie|film|article|blog post)\s+"
         rf"(?:called|named|titled)\s+[\"“]?{_O}", "authored", False, False),
        (rf"^{_S}\s+{_AUX}(?:made|painted|built|created|designed|drew|composed|recorded)\s+(?:a|an|their|the)?\s*"
         rf"[\w -]{{0,30}}?\s*(?:called|named|titled)\s+[\"“]?{_O}", "created", False, False),
    ))
# A time that opens the claim ("In 2024-02, Tim is off to Ireland"): the claim's window holds it.
_LEADING_TIME = re.compile(r"^(?:in|on|during|since|last|this|next)\s+(?:the\s+)?(?:week\s+of\s+|weekend\s+of\s+)?"
                           r"[\w-]+(?:\s+\d{4})?,?\s+(?=[A-Z])", re.IGNORECASE)
# Clauses that each open on their own named subject: "Gina moved to Seattle and Gina works at ...".
_CLAUSES = re.compile(r",?\s+and\s+(?=[A-Z])|;\s+|,\s+(?=[A-Z][\w'’-]*\s+[a-z])")
_RELATIVE = re.compile(rf"\b{_S}['’]s\s+(?P<r>{'|'.join(RELATIVES)})s?,?\s+(?:named\s+|called\s+)?{_O}")
_PET = re.compile(rf"\b{_S}['’]s\s+(?:{PETS_AND_THINGS}),?\s+(?:named\s+|called\s+)?{_O}")


def relations(text: str) -> list[Assertion]:
    """The relations of one claim (its statement `text`, attribution off): the life-event patterns
    at its start, and every "X's sister Y" or "X's dog Y" it holds."""
    found: list[Assertion] = []
    for clause in _CLAUSES.split(_LEADING_TIME.sub("", text)):
        for pattern, predicate, negated, change in PATTERNS:
            m = pattern.match(clause)
            if m:
                found.append(Assertion(ord=0, kind="relation", subject=m.group("s"), predicate=predicate,
                                       object=m.group("o"), statement=text, negated=negated, change=change))
                break
    for m in _RELATIVE.finditer(text):
        relative = m.group("r").lower().replace("é", "e")
        found.append(Assertion(ord=0, kind="relation", subject=m.group("s"), predicate=f"other:has_{relative}",
                               object=m.group("o"), statement=text))
    for m in _PET.finditer(text):
        found.append(Assertion(ord=0, kind="relation", subject=m.group("s"), predicate="other:owns",
                               object=m.group("o"), statement=text))
    return found
