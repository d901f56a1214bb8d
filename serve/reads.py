"""The read side of the API: envelopes built from the PostgreSQL authority.

Indexes (pgvector, full-text) only nominate; every fact and claim returned is re-read from the
authority tables in the same snapshot, and what fails that check is counted in
`dropped_by_hydration`. No language model runs here.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timezone
from typing import Any
from uuid import UUID

from pipeline.claims import askers, segment
from pipeline.facts.names import named_in
from pipeline.time.timeparse import asks_when, question_period
from serve import models as m
from serve.retrieval import facts as facts_retrieval
from serve.retrieval import confirmation, fusion
from sql.read import facts_queries, read_queries
from sql.read.read_queries import Conn, Nomination

# The seed's caps.
EVIDENCE_CAP = 60
CO_MEMBERS = 25


def now() -> datetime:
    return datetime.now(timezone.utc)


def freshness(at: datetime) -> m.Freshness:
    return m.Freshness(pg_live_ts=at)


def scope(time: facts_retrieval.TimeQuery, at: datetime) -> m.TemporalScope:
    if time.mode == "at":
        return m.ScopeAt(at=time.at, evaluated_at=at, believed_at=at)
    if time.mode == "overlap":
        return m.ScopeOverlap(from_=time.start, to=time.end, evaluated_at=at, believed_at=at)
    if time.mode == "history":
        return m.ScopeHistory(evaluated_at=at, believed_at=at)
    return m.ScopeCurrent(evaluated_at=at, believed_at=at)


def _envelope(grain: str, at: datetime, time: facts_retrieval.TimeQuery | None = None, **fields: Any) -> m.Envelope:
    return m.Envelope(grain=grain, temporal_scope=scope(time or facts_retrieval.TimeQuery(), at),
                      freshness=freshness(at), **fields)


async def resolve_entity(conn: Conn, name: str, context_entity_ids: list[str] = ()) -> m.Envelope:
    """Every candidate for a name, ranked, with the tier that found it; never a pick."""
    at = now()
    found = await facts_queries.find_entities(conn, name)
    hits = (await read_queries.context_hits(conn, [c[0] for c in found], list(context_entity_ids))
            if context_entity_ids else {})
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


def fact_result(f: facts_retrieval.FactResult) -> m.FactResult:
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


async def facts_context(conn: Conn, query: str, *, time: facts_retrieval.TimeQuery, k: int = 15,
                        evidence_per_fact: int = 3, entity_ids: list[str] | None = None, hops: int = 1,
                        predicate: str | None = None, vector: Any = None, at: datetime | None = None) -> m.Envelope:
    """Facts for a question, in a time mode, each with a sample of its evidence per stance and
    the exact totals; every side of a live contradiction; the neighbours a graph expansion added."""
    at = at or now()
    answer = await facts_retrieval.facts(conn, entity_ids=entity_ids, text=None if entity_ids else query, time=time, k=k,
                              now=at, vector=None if entity_ids else vector, hops=hops, predicate=predicate)
    if answer.negative and answer.negative["kind"] == "unknown_entity":
        return _envelope("fact", at, time, negative=m.Negative(kind="unknown_entity",
                                                                explanation=answer.negative["explanation"]))
    facts = [fact_result(f) for f in answer.facts]
    links, totals, claims = await read_queries.fact_evidence(conn, [(str(f.fact_id), f.kind) for f in facts],
                                                        per_stance=evidence_per_fact, cap=EVIDENCE_CAP)
    negative = None
    if not facts:
        negative = m.Negative(kind="known_empty", explanation=answer.negative["explanation"] if answer.negative
                              else "no current fact matches")
    names = await read_queries.entity_names(conn, [e for e, _ in answer.nodes]) if answer.nodes else {}
    return _envelope(
        "fact", at, time, facts=tuple(facts), negative=negative, dropped_by_hydration=answer.dropped,
        nodes=tuple(m.GraphNode(entity_id=e, name=names.get(e, ""), hops=h) for e, h in answer.nodes),
        evidence=tuple(evidence_result(c) for c in claims),
        fact_evidence=tuple(m.FactEvidence(**link) for link in links),
        evidence_totals=tuple(m.EvidenceTotal(**t) for t in totals),
        truncation=m.Truncation(truncated=answer.truncated, returned=len(facts),
                                estimated_total=len(facts) + (1 if answer.truncated else 0),
                                total_is_exact=not answer.truncated))


# --- lookups, hydration, transcript ---------------------------------------------------------

TRANSCRIPT_LIMIT = 40


async def _results(conn: Conn, rows: list[tuple]) -> list[m.FactResult]:
    found = [f for f in map(facts_retrieval.result_from_row, rows) if f is not None]
    await facts_retrieval.attach_co_members(conn, found)
    return [fact_result(f) for f in found]


def _cut(items: list, k: int, reason: str) -> tuple[list, m.Truncation | None]:
    if len(items) > k:
        return items[:k], m.Truncation(truncated=True, returned=k, estimated_total=len(items), total_is_exact=False,
                                       reason=reason)
    return items, None


async def lookup_relations(conn: Conn, *, subject: str | None, predicate: str | None, obj: str | None,
                           valid_at: datetime | None, k: int) -> m.Envelope:
    at = now()
    time = facts_retrieval.TimeQuery("at", at=valid_at) if valid_at else facts_retrieval.TimeQuery()
    rows = await read_queries.lookup_relations(conn, subject=subject, predicate=predicate, obj=obj,
                                               at=valid_at or at, k=k)
    facts, truncation = _cut(await _results(conn, rows), k, "lookup_k_limit")
    negative = None if facts else m.Negative(kind="known_empty", explanation="no live relation matches")
    return _envelope("fact", at, time, facts=tuple(facts), truncation=truncation, negative=negative)


async def lookup_observations(conn: Conn, entity_id: str, k: int, vector: Any = None) -> m.Envelope:
    at = now()
    rows = await read_queries.lookup_observations(conn, entity_id, at, k, vector)
    facts, truncation = _cut(await _results(conn, rows), k, "lookup_k_limit")
    negative = None if facts else m.Negative(kind="known_empty", explanation="no live observation on this entity")
    return _envelope("fact", at, facts=tuple(facts), truncation=truncation, negative=negative)


async def hydrate_relation(conn: Conn, relation_id: str) -> m.Envelope:
    """The relation (invalidated ones too: this is the audit path), all its claims and sources."""
    at = now()
    row = await read_queries.fact_row(conn, relation_id, facts_retrieval.TimeQuery("history").span(at))
    if row is None or row[1] != "relation":
        return _envelope("composite", at, negative=m.Negative(kind="unknown_entity",
                                                             explanation=f"no relation {relation_id}"))
    [fact] = await _results(conn, [row[:14]]) or [None]
    if fact is None:  # a window that began after now: hydration still reports it
        fact = fact_result(facts_retrieval.result_from_row(row[:14], keep_any=True))
    claims = await read_queries.all_evidence(conn, relation_id)
    sources = [m.SourceRecord(doc_id=d, title=t, source_kind=k, markdown_uri=uri)
               for d, t, k, uri in await read_queries.sources(conn, sorted({str(c["doc_id"]) for c in claims}))]
    return _envelope("composite", at, facts=(fact,), evidence=tuple(evidence_result(c) for c in claims),
                     sources=tuple(sources))


async def transcript_relation(conn: Conn, relation_id: str) -> m.Envelope:
    at = now()
    row = await read_queries.fact_row(conn, relation_id, facts_retrieval.TimeQuery("history").span(at))
    if row is None or row[1] != "relation":
        return _envelope("composite", at, negative=m.Negative(kind="unknown_entity",
                                                             explanation=f"no relation {relation_id}"))
    rows, total = await read_queries.transcript(conn, relation_id, TRANSCRIPT_LIMIT)
    entries = tuple(m.TranscriptEntry(subject_kind=r[0], outcome=r[1], method=r[2], confidence=r[3], related_id=r[4],
                                      decided_by=r[5], decided_at=r[6], features=r[7]) for r in rows)
    truncation = m.Truncation(truncated=total > len(entries), returned=len(entries), estimated_total=total,
                              reason="result_budget" if total > len(entries) else None)
    return _envelope("composite", at, transcript=entries, truncation=truncation)


# --- search and passages ----------------------------------------------------------------------

def chunk_result(row: dict[str, Any]) -> m.ChunkEvidenceResult:
    return m.ChunkEvidenceResult(**row)


async def search(conn: Conn, what: str, query: str, k: int, channel: str, vector: Any) -> m.Envelope:
    """One channel, nominated by its index, confirmed against the authority."""
    at = now()
    ids = await read_queries.nominate(conn, what, channel, query, vector, k)
    if what == "claims":
        confirmed = await read_queries.confirm_claims(conn, ids)
        fields = {"evidence": tuple(evidence_result(c) for c in confirmed)}
    else:
        confirmed = await read_queries.confirm_chunks(conn, ids)
        fields = {"chunks": tuple(chunk_result(c) for c in confirmed)}
    negative = None if confirmed else m.Negative(kind="known_empty", explanation=f"no {what} match {query!r}")
    return _envelope("evidence", at, negative=negative, dropped_by_hydration=len(ids) - len(confirmed), **fields)


async def adjacent(conn: Conn, chunk_id: str, window: int) -> m.Envelope:
    at = now()
    rows = await read_queries.adjacent_chunks(conn, chunk_id, window)
    if rows is None:
        return _envelope("evidence", at, negative=m.Negative(kind="unknown_entity", explanation=f"no chunk {chunk_id}"))
    negative = None if rows else m.Negative(kind="known_empty", explanation="the chunk's document is deleted")
    return _envelope("evidence", at, chunks=tuple(chunk_result(r) for r in rows), negative=negative)


# The longest span of days a question may name for its days' claims to be a channel: a day, a
# week, a month, with the slack of a rough "weeks ago". Past it ("since 2019") the days hold too
# much of the memory to rank exactly at every question.
DAYS_NAMED = 62


async def claims_and_sources_context(conn: Conn, query: str, *, k: int = 50, candidate_k: int = 200,
                                     vector: Any = None, entity_ids: list[str] | None = None,
                                     at: datetime | None = None) -> m.Envelope:
    at = at or now()
    if entity_ids:
        missing = sorted(set(entity_ids) - set(await read_queries.entity_names(conn, entity_ids)))
        if missing:
            return _envelope("evidence", at, negative=m.Negative(kind="unknown_entity",
                                                                explanation=f"no entity {', '.join(missing)}"))
    channels = {f"{table}_{channel}": Nomination(table, channel, entity_ids)
                for table in ("claims", "chunks") for channel in ("semantic", "bm25")}
    if not entity_ids and vector is not None:
        # The people and things the question names (exact names, as resolve_entity's T0): the claims
        # about them, by meaning, are a channel of their own, so "When did Melanie paint a
        # sunrise?" prefers what is said of Melanie to every claim about painting.
        spellings = named_in(query)
        named = sorted({e for e, _ in await facts_queries.named_entities(conn, spellings)}) if spellings else []
        if named:
            channels["claims_named"] = Nomination("claims", "semantic", named)
    if vector is not None and asks_when(query):
        # A question that asks for a time is answered by a claim whose world time is known: those
        # claims, by meaning, are a channel of their own.
        channels["claims_dated"] = Nomination("claims", "semantic", entity_ids, dated=True)
    period = question_period(query, at) if vector is not None and not entity_ids else None
    if period and (period[1] - period[0]).days < DAYS_NAMED:
        # A question that names its days ("What did I buy four weeks ago?", read against the
        # instant it is asked) is answered by what happened or was said on them: those claims, by
        # meaning, are a channel of their own.
        channels["claims_then"] = Nomination("claims", "days", days=period)
    nominated = await read_queries.nominate_all(conn, channels, query, vector, candidate_k)
    # One fused ranking over claims and chunks: a caller sees which claim outranks which chunk.
    # Within one table it is the order of that table's two channels fused alone.
    fused = fusion.signals(nominated, fusion.CHANNEL_WEIGHTS)
    of = {table: [i for i, found in fused.items() if next(iter(found)).startswith(table)]
          for table in ("claims", "chunks")}
    claims, claims_read = await _confirm_best(conn, read_queries.confirm_claims, of["claims"], k,
                                              lambda found: len(_claim_groups(found)))
    chunks, chunks_read = await _confirm_best(conn, read_queries.confirm_chunks, of["chunks"], k, len)
    dropped = claims_read - len(claims) + chunks_read - len(chunks)
    if (claims or chunks) and askers.asks_own_words(query):
        # What the asker said outranks an assistant's answer around it (pipeline/claims/askers.py).
        own, assistant_only = await _whose_words(conn, claims, chunks)
        fused = fusion.scaled(fused, own, "own_words", askers.OWN_WORDS_WEIGHT)
        fused = fusion.scaled(fused, assistant_only, "assistant_only", askers.ASSISTANT_ONLY_WEIGHT)
        place = {i: n for n, i in enumerate(fused)}
        claims.sort(key=lambda c: place[str(c["claim_id"])])
        chunks.sort(key=lambda c: place[str(c["chunk_id"])])
    groups = _claim_groups(claims)
    full_channel = any(len(ids) >= candidate_k for ids in nominated.values())
    unread = claims_read < len(of["claims"]) or chunks_read < len(of["chunks"])
    truncated = len(groups) > k or len(chunks) > k or full_channel or unread
    evidence = tuple(_grouped_claim(members) for members in itertools.islice(groups.values(), k))
    returned = {str(e.claim_id) for e in evidence} | {str(c["chunk_id"]) for c in chunks[:k]}
    ranking = tuple(m.RankedItem(item_id=UUID(i), score=sum(found.values()), signals=found)
                    for i, found in fused.items() if i in returned)
    negative = None if evidence or chunks else m.Negative(kind="known_empty", explanation=f"nothing matches {query!r}")
    return _envelope("evidence", at, evidence=evidence, chunks=tuple(chunk_result(c) for c in chunks[:k]),
                     dropped_by_hydration=dropped, negative=negative, ranking=ranking,
                     truncation=m.Truncation(truncated=truncated, returned=len(evidence),
                                             estimated_total=len(groups),
                                             total_is_exact=not (full_channel or unread),
                                             reason="result_budget" if truncated else None))


async def _confirm_best(conn: Conn, confirm, ids: list[str], k: int, count) -> tuple[list[dict[str, Any]], int]:
    """The confirmed rows of the best-fused `ids` until `count` of them exceeds `k`, and how many
    ids were read (`confirmation.best_pages`, pages of `confirmation.page(k)`)."""
    return await confirmation.best_pages(lambda page: confirm(conn, page), ids, page=confirmation.page(k),
                                         enough=lambda found: count(found) > k)


async def _whose_words(conn: Conn, claims: list[dict[str, Any]], chunks: list[dict[str, Any]]
                      ) -> tuple[set[str], set[str]]:
    """The ids of the `claims` a person said in a chat with an assistant, and of the `chunks` in
    which only an assistant speaks (`askers`). Who speaks where is read from the turns that open
    in a chunk and, before its first, the last to open in the `TURN_LOOKBACK` chunks before it;
    where that is not known (no turn in them), a claim or a chunk is neither."""
    context = await read_queries.turn_context(
        conn, sorted({str(c["chunk_id"]) for c in chunks} | {str(c["chunk_id"]) for c in claims}), TURN_LOOKBACK)
    openings: dict[str, list[tuple[int, str]]] = {}   # the turns that open in a chunk
    starts: dict[str, str | None] = {}                  # who speaks where a chunk starts

    def speaker_at(chunk_id: str, offset: int) -> tuple[str | None, list[tuple[int, str]]]:
        """Who speaks at `offset` of the chunk, and the turns that open in it (each read once)."""
        found = context[chunk_id]
        if chunk_id not in openings:
            openings[chunk_id] = segment.turn_openings(found.text, found.opening)
        speaker = next((speaker for at, speaker in reversed(openings[chunk_id]) if at <= offset), None)
        if speaker is None:
            if chunk_id not in starts:
                starts[chunk_id] = next((s[-1] for t in found.before
                                         if (s := segment.turn_speakers(t, found.opening))), None)
            speaker = starts[chunk_id]
        return speaker, openings[chunk_id]

    own, assistant_only = set(), set()
    for c in chunks:
        chunk_id = str(c["chunk_id"])
        if chunk_id in context:
            first, opened = speaker_at(chunk_id, len(c["chunk_text"]) - len(c["chunk_text"].lstrip()))
            if askers.assistant_only([s for _, s in opened] + ([first] if first else [])):
                assistant_only.add(chunk_id)
    for c in claims:
        chunk_id = str(c["chunk_id"])
        if chunk_id in context:
            speaker, opened = speaker_at(chunk_id, c["char_start"] - context[chunk_id].char_start)
            chat = segment.participants(context[chunk_id].opening) | {s for _, s in opened}
            if speaker and askers.persons_words(speaker, chat):
                own.add(str(c["claim_id"]))
    return own, assistant_only


# Chunks read back for the turn a chunk starts inside: an assistant's answer spans a few.
TURN_LOOKBACK = 3


def _claim_groups(claims: list[dict[str, Any]]) -> dict[tuple, list[dict[str, Any]]]:
    """Claims that agree in normalized text, said-on time, world time and attribution are one:
    their rows by that agreement, in the order each first appears. (Counted at every page of
    confirmation; only the groups returned become results, `_grouped_claim`.)"""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for c in claims:
        key = (" ".join(c["claim_text"].lower().split()), c["asserted_at"], c["claim_valid_from"],
               c["claim_valid_until"], c["claim_valid_precision"], c["is_attributed"])
        groups.setdefault(key, []).append(c)
    return groups


def _grouped_claim(members: list[dict[str, Any]]) -> m.EvidenceResult:
    """One group of `_claim_groups` as its first claim, with `corroboration_count` = distinct
    documents that stated it."""
    return m.EvidenceResult(**members[0], corroboration_count=len({x["doc_id"] for x in members}),
                            grouped_claim_ids=tuple(x["claim_id"] for x in members[1:]))


async def list_documents(conn: Conn, limit: int, cursor: str | None, status: str | None) -> m.DocumentPage:
    statuses = list(m.DOCUMENT_STATUS_FILTER[status]) if status else None
    rows = await read_queries.documents_page(conn, limit, cursor, statuses)
    page = rows[:limit]
    docs = tuple(m.DocumentSummary(
        doc_id=r[0], title=r[1], source_kind=r[2], source_uri=r[3], first_seen_at=r[4], serving=r[7] == "ready",
        latest=m.DocumentVersionSummary.listed(version_id=r[5], version_no=r[6], status=r[7], ingested_at=r[8],
                                               error=r[9], parked_reason=r[10], mime=r[11]))
        for r in page)
    return m.DocumentPage(documents=docs, cursor=str(page[-1][0]) if len(rows) > limit else None)


async def readiness(conn: Conn, request: m.ReadinessRequest, info: Any, component: str,
                    vector_indexes: list[str]) -> m.PipelineReadinessReport:
    """Per version and stage, and per capability; reads only, never waits or starts work."""
    at = now()
    ids = list(dict.fromkeys(str(v) for v in request.version_ids))
    statuses = await read_queries.stage_statuses(conn, ids)
    versions = []
    for version_id in ids:
        stages = []
        for stage in read_queries.READINESS_STAGES:
            status, finished, defer = statuses.get(version_id, {}).get(stage, ("missing", None, None))
            stages.append(m.PipelineStageReadiness(stage=stage, component_version=component, status=status,
                                                   finished_at=finished,
                                                   defer_reason=defer if status in ("pending", "failed") else None))
        done = all(s.status in ("succeeded", "skipped") and s.finished_at is not None for s in stages)
        versions.append(m.VersionPipelineReadiness(version_id=UUID(version_id), ready=done, stages=tuple(stages)))
    pipeline_ready = all(v.ready for v in versions)
    p1_ready = await read_queries.search_indexes_built(conn, vector_indexes)
    req = request.require
    caps = {
        "pipeline": m.CapabilityReadiness(required=req.pipeline, ready=pipeline_ready, checked_at=at,
                                          reason="ready" if pipeline_ready else "stage_incomplete"),
        "p1": m.CapabilityReadiness(required=req.p1, ready=p1_ready, checked_at=at,
                                    reason="ready" if p1_ready else "search_channel_incomplete"),
        # the live graph is the facts tables themselves: ready whenever PostgreSQL answers
        "live_graph": m.CapabilityReadiness(required=req.live_graph, ready=True, checked_at=at, reason="ready"),
        "p3": m.CapabilityReadiness(required=req.p3, ready=False, checked_at=at, reason="corpus_snapshot_incomplete"),
    }
    ready = all(c.ready for c in caps.values() if c.required)
    return m.PipelineReadinessReport(ready=ready, versions=tuple(versions), capabilities=caps,
                                     model_bindings={"embedding": info.embedding_model},
                                     build_revision=info.build_revision)
