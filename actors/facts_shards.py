"""The stateful units of the facts phase, each holding one PostgreSQL connection (run as resident
Ray tasks, `actors/resident.py`).

- `Normalizer`: claims → assertions and mentions (`normalize_relations`), a version at a time.
- `NormalizeInputs` and `AssertionWriter`: the same step when a processor reads the claims (the
  `vllm` normalizer, `jobs/normalize_llm.py`): claims → processor rows, answers → assertions.
- `ResolverShard`: owns a set of mention keys; resolves each key's mentions document by
  document, in said-on order, through the cascade (`pipeline/facts/resolution.py`).
- `AdjudicatorShard`: owns a set of anchor entities; adjudicates each entity's pending
  assertions in world-time order (`pipeline/facts/adjudication.py`) and writes the result per entity.

The driver assigns keys and entities to shards by a stable hash, so during a run every key and
every entity has exactly one owner and nothing about one entity is decided twice at once. Across
processes, a shard takes a transaction-level advisory lock on the key or entity it decides and
reads what is still undecided under it, so a second decider (another run's facts phase) waits
and then finds nothing left: no entity is decided twice.

Each unit (a batch of versions, a key, an entity) is retried on transient failures with a new
connection; one that runs out of attempts dead-letters its versions' fact stage and the shard
goes on with the next unit.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
import pyarrow as pa

from actors import metrics
from actors.db_writer import Link
from actors.extractor import ExtractorConfig, ExtractorUnavailable
from actors.retries import GaveUp, RetryPolicy, with_retries
from pipeline.records import clock
from pipeline.facts import adjudication, names, normalize, resolution
from sql.store import runs
from sql.write import assertions as assertions_sql
from sql.write import entities as entities_sql
from sql.write import facts_store

_log = logging.getLogger(__name__)


def _spent(started: tuple[float, float]) -> dict[str, float]:
    """A unit's wall and CPU seconds since `started` (`records.clock()`): a worker runs one task at
    a time, so the process's CPU clock is the unit's."""
    return {"seconds": time.perf_counter() - started[0], "cpu_seconds": time.process_time() - started[1]}


def shard_of(key: str, shards: int) -> int:
    """A stable hash (not Python's salted `hash`), so a key has the same owner in every process."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % shards


def _dead_letter(link: Link, stage: str, versions: Callable[[psycopg.Connection], list[str]], err: GaveUp) -> int:
    """Record a unit that ran out of attempts on its versions' `stage`; how many versions."""
    _log.error("giving up on a unit of %s: %s", stage, err)
    try:
        found = versions(link.conn)
        runs.dead_letter_stage(link.conn, stage, found, err.attempts, str(err))
        return len(found)
    except Exception:  # the database is what failed: the work stays pending for the next phase
        _log.warning("could not record the dead letter", exc_info=True)
        return 0


class Normalizer:
    """`normalize_relations` by the rules, or by a schema-bound call to an OpenAI-compatible
    endpoint when the import's extractor is `openai` (malformed answers fall back to the rules; an
    endpoint that fails every attempt dead-letters the version, whose claims stay unread)."""

    def __init__(self, dsn: str, config: ExtractorConfig | None = None, retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem normalize")
        self._retry = retry
        self._model = None
        self.version = normalize.VERSION
        if config is not None and config.backend == "openai":
            from actors.openai_extractor import OpenAIExtractorConfig
            from actors.openai_normalizer import OpenAINormalizer

            if not config.llm_model or not config.llm_base_url:
                raise ExtractorUnavailable("the openai normalizer needs CORPUSMEM_LLM_MODEL and CORPUSMEM_LLM_BASE_URL")
            self._model = OpenAINormalizer(OpenAIExtractorConfig(base_url=config.llm_base_url, model=config.llm_model),
                                           retry=retry)
            self.version = self._model.version

    def normalize(self, version_ids: list[str]) -> dict[str, Any]:
        started = clock()
        try:
            claims = with_retries(self._retry, lambda: assertions_sql.claims_of(self._link.conn, version_ids),
                                  self._link.after)
        except GaveUp as err:
            dead = _dead_letter(self._link, "normalize_relations", lambda _: version_ids, err)
            return {"claims": 0, "assertions": 0, "dead_letter": dead, **_spent(started)}
        by_version: dict[str, list[dict]] = defaultdict(list)
        for claim in claims:
            by_version[claim["version_id"]].append(claim)
        rows, mentions, costs, read = [], [], [], []
        dead = 0

        def assertion_id(claim_id: str, o: int) -> str:
            return assertions_sql.assertion_id_for(claim_id, self.version, o)

        for version_id, version_claims in by_version.items():
            if self._model is None:
                r, m = normalize.normalize_version(version_claims, assertion_id)
            else:
                try:
                    r, m, cost, _problems = self._model.normalize_version_costed(version_claims, assertion_id)
                except GaveUp as err:   # the model, not the database: this version waits, the others go on
                    dead += _dead_letter(self._link, "normalize_relations", lambda _, v=version_id: [v], err)
                    continue
                if cost is not None:
                    costs.append((version_id, cost))
            rows += r
            mentions += m
            read += [c["claim_id"] for c in version_claims]
        # Only the write is retried: the normalization (model calls included) is not paid twice.
        try:
            with_retries(self._retry, lambda: assertions_sql.write(
                self._link.conn, rows, mentions, read, self.version, costs), self._link.after)
        except GaveUp as err:
            dead = _dead_letter(self._link, "normalize_relations", lambda _: version_ids, err)
            return {"claims": 0, "assertions": 0, "dead_letter": dead, **_spent(started)}
        return {"claims": len(read), "assertions": len(rows), "dead_letter": dead,
                **_spent(started)}


# `vllm_normalizer.INPUT_COLUMNS`, typed.
NORMALIZE_INPUT_SCHEMA = pa.schema([("version_id", pa.string()), ("part", pa.int32()), ("parts", pa.int32()),
                                    ("claims_json", pa.string()), ("topic", pa.string())])


class NormalizeInputs:
    """Ray Data callable class: versions waiting for `normalize_relations` → the `vllm`
    normalizer's input rows (`vllm_normalizer.rows_for`). A batch whose claims stay unreadable is
    dead-lettered and gives no rows."""

    def __init__(self, dsn: str, retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem normalize")
        self._retry = retry

    def __call__(self, batch: pa.Table) -> pa.Table:
        from actors.vllm_normalizer import rows_for

        version_ids = batch.column("version_id").to_pylist()
        try:
            claims = with_retries(self._retry, lambda: assertions_sql.claims_of(self._link.conn, version_ids),
                                  self._link.after)
        except GaveUp as err:
            _dead_letter(self._link, "normalize_relations", lambda _: version_ids, err)
            claims = []
        by_version: dict[str, list[dict]] = defaultdict(list)
        for claim in claims:
            by_version[claim["version_id"]].append(claim)
        return pa.Table.from_pylist([row for version_id, found in by_version.items()
                                     for row in rows_for(version_id, found, normalize.version_topic(found))],
                                    schema=NORMALIZE_INPUT_SCHEMA)


class AssertionWriter:
    """Writes the assertions a processor found (`normalizer` names it), a few versions to a
    transaction, each version's claims read together (`normalize.version_rows`); retried on
    transient failures, dead-lettered when the database stays away."""

    def __init__(self, dsn: str, normalizer: str, retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem normalize")
        self._normalizer = normalizer
        self._retry = retry

    def write(self, read: list[tuple[str, list[dict], list[list[normalize.Assertion]], list]]) -> dict[str, int]:
        """`read`: (version_id, its claims, per claim the assertions found, the calls' CallCosts)."""
        rows, mentions, claim_ids, costs = [], [], [], []

        def assertion_id(claim_id: str, o: int) -> str:
            return assertions_sql.assertion_id_for(claim_id, self._normalizer, o)

        for version_id, claims, found, calls in read:
            r, m = normalize.version_rows(list(zip(claims, found, strict=True)), assertion_id, self._normalizer)
            rows += r
            mentions += m
            claim_ids += [c["claim_id"] for c in claims]
            costs += [(version_id, cost) for cost in calls]
        try:
            with_retries(self._retry, lambda: assertions_sql.write(
                self._link.conn, rows, mentions, claim_ids, self._normalizer, costs), self._link.after)
        except GaveUp as err:
            return {"claims": 0, "assertions": 0,
                    "dead_letter": _dead_letter(self._link, "normalize_relations",
                                                lambda _: [v for v, *_ in read], err)}
        return {"claims": len(claim_ids), "assertions": len(rows), "dead_letter": 0}

    def dead_letter(self, version_ids: list[str], err: GaveUp) -> int:
        return _dead_letter(self._link, "normalize_relations", lambda _: version_ids, err)

    def close(self) -> None:
        self._link.close()


class ResolverShard:
    def __init__(self, dsn: str, run_id: str, retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem resolve")
        self._run_id = run_id
        self._retry = retry

    def resolve(self, keys: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        started = clock()
        counts: dict[str, int] = defaultdict(int)
        dead = 0
        for key in sorted(keys):
            try:
                got = with_retries(self._retry, partial(self._resolve_key, key, keys[key]), self._link.after)
            except GaveUp as err:
                dead += _dead_letter(self._link, "adjudicate_observations",
                                     partial(runs.fact_versions_of_key, key=key), err)
                continue
            for step, n in got.items():
                counts[step] += n
        return {"verdicts": dict(counts), "dead_letter": dead, **_spent(started)}

    def _resolve_key(self, key: str, listed: list[dict[str, Any]]) -> dict[str, int]:
        """One key, under its lock, in one transaction: only mentions still unbound once the
        lock is held are decided, so a key another process resolved meanwhile is left alone.

        The documents are decided one after another, each seeing the spellings the ones before
        it added; the verdicts are written together (`entities_sql.Binds`), and only a verdict that
        adds a spelling (a new entity, or a new spelling of one) makes the key's candidates be
        read again, after what was decided so far is written. A key's documents are thousands in
        a large corpus, and writing each on its own was most of the facts phase."""
        counts: dict[str, int] = defaultdict(int)
        conn = self._link.conn
        with conn.transaction():
            runs.lock_mention_key(conn, key)
            unbound = runs.unbound_mentions(conn, key)
            by_doc: dict[str, list[dict[str, Any]]] = {}
            for m in listed:  # already in said-on, document order
                if (m["doc_id"], m["surface"]) in unbound:
                    by_doc.setdefault(m["doc_id"], []).append(m | {"alias_key": names.key(m["surface"])})
            binds = entities_sql.Binds(key, self._run_id)
            spellings: _Spellings | None = None
            docs = list(by_doc.items())
            for i, (doc_id, mentions) in enumerate(docs):
                # Within one document the same name is decided once, for all its uses there.
                if spellings is None:
                    binds.write(conn)
                    spellings = _Spellings.read(conn, key, self._run_id, [m[0]["claim_id"] for _, m in docs[i:]])
                found = spellings.scored(mentions[0]["claim_id"])
                verdict = resolution.decide(found)
                created = verdict.entity_id is None
                entity_id = resolution.new_entity_id(key, doc_id) if created else verdict.entity_id
                binds.add(mentions=mentions, entity_id=entity_id, created=created,
                          verdict="new" if created else "matched", step=verdict.step, found=found)
                if created or spellings.adds(entity_id, mentions):
                    spellings = None   # a spelling was added: this key's candidates may change
                if verdict.proposal is not None:
                    binds.propose(entity_id, verdict.proposal.entity_id, verdict.proposal.score,
                                  f"{verdict.proposal.tier} candidate not accepted")
                counts["new" if created else verdict.step] += 1
            binds.write(conn)
        return counts


class _Spellings:
    """A key's candidates (T0–T2) as its shard sees them, with their profiles scored against the
    claims of the key's documents (T3), and the spellings the candidates already have, so that a
    verdict that adds none is known without writing it."""

    def __init__(self, found: list[resolution.Candidate], scores: dict[tuple[str, str], float],
                 spelled: set[tuple[str, str]]) -> None:
        self._found, self._scores, self._spelled = found, scores, spelled

    @classmethod
    def read(cls, conn: psycopg.Connection, key: str, run_id: str, claim_ids: list[str]) -> _Spellings:
        found = entities_sql.spelling_candidates(conn, key, run_id)
        ids = [c.entity_id for c in found]
        with_profiles = sorted(entities_sql.profiled(conn, ids))
        return cls(found, entities_sql.profile_scores(conn, with_profiles, claim_ids),
                   entities_sql.alias_keys(conn, ids))

    def scored(self, claim_id: str) -> list[resolution.Candidate]:
        """T3: each candidate's profile against the vector of the claim the mention came from."""
        return [resolution.Candidate(c.entity_id, c.tier, c.score, self._scores.get((c.entity_id, claim_id)))
                for c in self._found]

    def adds(self, entity_id: str, mentions: list[dict[str, Any]]) -> bool:
        """Whether binding `mentions` to `entity_id` gives it a spelling it did not have."""
        return any((entity_id, m["alias_key"]) not in self._spelled for m in mentions)


class AdjudicatorShard:
    def __init__(self, dsn: str, run_id: str, floor: float = adjudication.CONFIDENCE_FLOOR,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        self._link = Link(dsn, "corpusmem adjudicate")
        self._run_id = run_id
        self._floor = floor
        self._retry = retry

    def adjudicate(self, anchors: list[str]) -> dict[str, Any]:
        started = clock()
        decisions = assertions = dead = 0
        per_entity: list[tuple[int, int, float]] = []  # (candidate facts, assertions, seconds)
        for anchor_id in sorted(anchors):
            t0 = time.perf_counter()
            try:
                loaded, incoming, decided = with_retries(self._retry, partial(self._adjudicate_one, anchor_id),
                                                         self._link.after)
            except GaveUp as err:
                dead += _dead_letter(self._link, "adjudicate_observations",
                                     partial(runs.fact_versions_of_anchor, anchor_id=anchor_id), err)
                continue
            decisions += decided
            assertions += incoming
            per_entity.append((loaded, incoming, time.perf_counter() - t0))
        return {"anchors": len(anchors), "assertions": assertions, "decisions": decisions, "dead_letter": dead,
                "per_entity": per_entity, **_spent(started)}

    def _adjudicate_one(self, anchor_id: str) -> tuple[int, int, int]:
        """One entity under its lock, read and written in one transaction: (candidate facts,
        assertions, decisions). A second decider waits for the lock, then finds nothing pending."""
        conn = self._link.conn
        with conn.transaction():
            runs.lock_entity(conn, anchor_id)
            incoming, skipped = facts_store.pending(conn, anchor_id)
            facts = facts_store.candidate_facts(conn, anchor_id, incoming) if incoming else []
            state = adjudication.EntityFacts(anchor_id, facts, floor=self._floor)
            for a in incoming:
                state.decide(a)
            if incoming or skipped:
                facts_store.write(conn, anchor_id, state.writes, [a.assertion_id for a in incoming], skipped,
                                  self._run_id)
        for d in state.writes.decisions:
            metrics.inc("corpusmem_facts_total", decision=d.outcome)
        return len(facts), len(incoming), len(state.writes.decisions)


class LabelVectors:
    """`label_relation` and profile refresh (`adjudicate_supersession`): fact labels and entity
    profiles into vectors, with the deployment's embedding model. A run that fails transiently is
    run again (what it wrote stays written); one that runs out of attempts says so in its result."""

    def __init__(self, dsn: str, model, device: str, batch_size: int, threads: int | None = None,
                 retry: RetryPolicy = RetryPolicy()) -> None:
        from actors.embedder import kept_model

        self._link = Link(dsn, "corpusmem label")
        self._model = kept_model(model, device, threads)
        self._batch_size = batch_size
        self._retry = retry

    def _encode(self, texts: list[str]):
        return self._model.encode(texts, batch_size=self._batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)

    def run(self, page: int = 1024) -> dict[str, Any]:
        """Counts of fact vectors and profiles written; with `gave_up` (attempts, reason) when the
        database stayed away."""
        from sql.write import reconcile

        started = clock()
        done = {"fact_vectors": 0, "profiles": 0}

        def attempt() -> None:
            conn = self._link.conn
            while rows := reconcile.facts_without_vectors(conn, page):
                reconcile.set_fact_vectors(conn, list(zip([f for f, _ in rows], self._encode([l for _, l in rows]))))
                done["fact_vectors"] += len(rows)
            while rows := reconcile.stale_profiles(conn, page):
                vectors = self._encode([p for _, p in rows])
                reconcile.set_profiles(conn, [(e, p, v) for (e, p), v in zip(rows, vectors)])
                done["profiles"] += len(rows)

        try:
            with_retries(self._retry, attempt, self._link.after)
        except GaveUp as err:
            return {**done, "gave_up": (err.attempts, err.reason), **_spent(started)}
        return {**done, **_spent(started)}
