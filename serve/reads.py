"""The read side of the API: envelopes built from the PostgreSQL authority.

Indexes (pgvector, full-text) only nominate; every fact and claim returned is re-read from the
authority tables in the same snapshot, and what fails that check is counted in
`dropped_by_hydration`. No language model runs here.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from uuid import UUID

import psycopg

from serve import models as m
from sql import facts_read, read_queries

# The seed's caps.
EVIDENCE_CAP = 60
CO_MEMBERS = 25


def now() -> datetime:
    return datetime.now(timezone.utc)


def freshness(at: datetime) -> m.Freshness:
    return m.Freshness(pg_live_ts=at)


def scope(time: facts_read.TimeQuery, at: datetime) -> m.TemporalScope:
    if time.mode == "at":
        return m.ScopeAt(at=time.at, evaluated_at=at, believed_at=at)
    if time.mode == "overlap":
        return m.ScopeOverlap(from_=time.start, to=time.end, evaluated_at=at, believed_at=at)
    if time.mode == "history":
        return m.ScopeHistory(evaluated_at=at, believed_at=at)
    return m.ScopeCurrent(evaluated_at=at, believed_at=at)


def _envelope(grain: str, at: datetime, time: facts_read.TimeQuery | None = None, **fields: Any) -> m.Envelope:
    return m.Envelope(grain=grain, temporal_scope=scope(time or facts_read.TimeQuery(), at),
                      freshness=freshness(at), **fields)


def resolve_entity(conn: psycopg.Connection, name: str, context_entity_ids: list[str] = ()) -> m.Envelope:
    """Every candidate for a name, ranked, with the tier that found it; never a pick."""
    at = now()
    found = facts_read.find_entities(conn, name)
    hits = read_queries.context_hits(conn, [c[0] for c in found], list(context_entity_ids)) if context_entity_ids else {}
    entities = sorted((m.EntityCandidate(entity_id=UUID(eid), canonical_name=canonical, tier=tier,
                                         context_hits=hits.get(eid, 0)) for eid, canonical, tier in found),
                      key=lambda c: (-c.context_hits, c.canonical_name, str(c.entity_id)))
    negative = None if entities else m.Negative(
        kind="unknown_entity", explanation=f"no entity is known by the name {name!r}",
        workaround="check the spelling, or search claims for the name")
    return _envelope("fact", at, entities=tuple(entities), negative=negative,
                     truncation=m.Truncation(truncated=False, returned=len(entities), estimated_total=len(entities)))


def _validity(v: dict[str, Any]) -> m.Validity:
    return m.Validity(valid_from=v["valid_from"], valid_until=v["valid_until"],
                      valid_precision=v["valid_precision"], ingested_at=v["ingested_at"],
                      invalidated_at=v["invalidated_at"])


def fact_result(f: facts_read.FactResult) -> m.FactResult:
    contradiction = None
    if f.contradiction:
        c = f.contradiction
        contradiction = m.Contradiction(
            group_id=UUID(c["group_id"]), returned=c["returned"], total=c["total"], continuation=c["continuation"],
            co_members=tuple(m.CoMember(fact_id=UUID(o["fact_id"]), label=o["label"],
                                        evidence_count=o["evidence_count"], validity=_validity(o["validity"]))
                             for o in c["co_members"]))
    return m.FactResult(fact_id=UUID(f.fact_id), kind=f.kind, label=f.label, evidence_count=f.evidence_count,
                        validity=_validity(f.validity), temporal_match=f.temporal_match,
                        contradiction_group=UUID(f.contradiction_group) if f.contradiction_group else None,
                        contradiction=contradiction, support=f.support)


def evidence_result(row: dict[str, Any]) -> m.EvidenceResult:
    return m.EvidenceResult(**row)


def facts_context(conn: psycopg.Connection, query: str, *, time: facts_read.TimeQuery, k: int = 15,
                  evidence_per_fact: int = 3, entity_ids: list[str] | None = None) -> m.Envelope:
    """Facts for a question, in a time mode, each with a sample of its evidence per stance and
    the exact totals; every side of a live contradiction."""
    at = now()
    answer = facts_read.facts(conn, entity_ids=entity_ids, text=None if entity_ids else query, time=time, k=k,
                              now=at)
    if answer.negative and answer.negative["kind"] == "unknown_entity":
        return _envelope("fact", at, time, negative=m.Negative(kind="unknown_entity",
                                                                explanation=answer.negative["explanation"]))
    facts = [fact_result(f) for f in answer.facts]
    links, totals, claims = read_queries.fact_evidence(conn, [(str(f.fact_id), f.kind) for f in facts],
                                                        per_stance=evidence_per_fact, cap=EVIDENCE_CAP)
    negative = None
    if not facts:
        negative = m.Negative(kind="known_empty", explanation=answer.negative["explanation"] if answer.negative
                              else "no current fact matches")
    return _envelope(
        "fact", at, time, facts=tuple(facts), negative=negative,
        evidence=tuple(evidence_result(c) for c in claims),
        fact_evidence=tuple(m.FactEvidence(**link) for link in links),
        evidence_totals=tuple(m.EvidenceTotal(**t) for t in totals),
        truncation=m.Truncation(truncated=answer.truncated, returned=len(facts),
                                estimated_total=len(facts) + (1 if answer.truncated else 0),
                                total_is_exact=not answer.truncated))
