"""The identity rule of the `rules` backend: which candidate a mention is, or a new entity.

The cascade's first steps only nominate: exact alias (T0), similar spelling (T1, pg_trgm),
similar sound (T2, Daitch–Mokotoff); the profile step (T3) scores each candidate's profile
vector against the vector of the mention's claim. Where a model backend would make one
small-model choice among the bounded candidates, this deterministic rule decides instead:

1. one exact-alias candidate: that entity;
2. several exact-alias candidates (two people called Dana): the one whose profile is closest
   to the claim when it leads by a margin, else the first in (profile score, entity_id) order —
   an existing compatible candidate is preferred to a new referent, as the seed asks;
3. no exact alias: a spelling or sound candidate is accepted only when its profile agrees with
   the claim (T3 score at least `PROFILE_ACCEPT`) or the spellings are nearly identical
   (similarity at least `SPELLING_ACCEPT`); otherwise the mention is a new entity and the
   closest candidate becomes a merge proposal for review.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

RESOLVER_VERSION = "rules-resolver-1"
NAMESPACE = uuid.UUID("c3e1a7b2-4d5f-4a6b-8c9d-0e1f2a3b4c5d")
CANDIDATE_LIMIT = 10        # the bounded candidate set
SPELLING_NOMINATE = 0.45    # pg_trgm similarity that makes a T1 candidate
SPELLING_ACCEPT = 0.8
PROFILE_ACCEPT = 0.6
PROFILE_MARGIN = 0.05
PROPOSE_MERGE = 0.5


@dataclass(frozen=True)
class Candidate:
    entity_id: str
    tier: str                       # T0 | T1 | T2
    score: float                    # 1.0 for T0; trigram similarity for T1; 1.0 for T2
    profile: float | None = None    # T3: cosine of the claim's vector with the entity's profile

    def as_dict(self) -> dict:
        return {"entity_id": self.entity_id, "tier": self.tier, "score": round(self.score, 4),
                "profile": None if self.profile is None else round(self.profile, 4)}


@dataclass(frozen=True)
class Verdict:
    entity_id: str | None           # None: a new entity
    step: str                       # T0 | T1 | T2 | T3 | rule | new
    proposal: Candidate | None = None


def new_entity_id(mention_key: str, first_doc_id: str) -> str:
    """Named by the key and the first document that used it, so a re-run names it the same."""
    return str(uuid.uuid5(NAMESPACE, f"entity\x00{mention_key}\x00{first_doc_id}"))


def _profile(c: Candidate) -> float:
    return c.profile if c.profile is not None else -1.0


def decide(candidates: list[Candidate]) -> Verdict:
    exact = sorted((c for c in candidates if c.tier == "T0"), key=lambda c: (-_profile(c), c.entity_id))
    if len(exact) == 1:
        return Verdict(exact[0].entity_id, "T0")
    if exact:
        lead = _profile(exact[0]) - _profile(exact[1])
        return Verdict(exact[0].entity_id, "T3" if lead >= PROFILE_MARGIN and exact[0].profile is not None else "rule")
    near = sorted(candidates, key=lambda c: (-_profile(c), -c.score, c.entity_id))
    for c in near:
        if c.profile is not None and c.profile >= PROFILE_ACCEPT:
            return Verdict(c.entity_id, "T3")
    for c in sorted(near, key=lambda c: (-c.score, c.entity_id)):
        if c.tier == "T1" and c.score >= SPELLING_ACCEPT:
            return Verdict(c.entity_id, "T1")
    best = next((c for c in sorted(near, key=lambda c: (-c.score, c.entity_id)) if c.score >= PROPOSE_MERGE), None)
    return Verdict(None, "new", proposal=best)
