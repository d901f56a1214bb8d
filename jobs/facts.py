"""The facts phase of an import: claims → assertions → entities → facts → reconcile → vectors.

    normalize ─► resolve (shards own mention keys) ─► adjudicate (shards own entities)
              ─► reconcile (living removals, deletions, re-extraction) ─► labels and profiles

It runs after the document pipeline has landed every version of the run, so adjudication can
take each entity's assertions in world-time order however the documents arrived. Shards are Ray
actors; keys and entities are spread over them by a stable hash, one owner each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg

from actors import facts_shards
from actors.db_writer import Link
from actors.embedder import ModelRef
from actors.extractor import ExtractorConfig
from actors.retries import GaveUp, RetryPolicy, with_retries
from jobs.run_report import FactsReport
from sql.store import runs
from sql.write import assertions as assertions_sql
from sql.write import entities as entities_sql
from sql.write import facts_store, reconcile, writes

_log = logging.getLogger(__name__)

T = TypeVar("T")

_ACTOR_CPUS = 0.25
_VERSIONS_PER_CALL = 64


def _split(items: list, shards: int, key=lambda x: x) -> list[list]:
    out: list[list] = [[] for _ in range(shards)]
    for item in items:
        out[facts_shards.shard_of(key(item), shards)].append(item)
    return out


def _start(started: list, cls, count: int, *args, **kwargs) -> list:
    import ray

    actors = [ray.remote(num_cpus=_ACTOR_CPUS)(cls).remote(*args, **kwargs) for _ in range(count)]
    started += actors
    return actors


def _release(actors: list) -> None:
    """Give a step's CPUs back before the next step's actors ask for theirs (killing an actor
    twice is harmless)."""
    import ray

    for actor in actors:
        ray.kill(actor)


def run_facts(dsn: str, *, run_id: str, workers: int, model: ModelRef, device: str,
              embed_batch_size: int, threads: int | None, extractor: ExtractorConfig | None = None,
              retry: RetryPolicy = RetryPolicy()) -> FactsReport:
    """`extractor` names the normalizer: `openai` normalizes with the same endpoint, `vllm` with the
    normalizer processor on the same model (`jobs/normalize_llm.py`), `rules` (or None) by the rules.

    `retry` bounds the attempts of every unit against transient failures (`actors/retries.py`):
    the shards' units, and the steps this driver runs on its own connection. A step whose
    attempts run out ends the phase there: the fact stage it belongs to is `dead_letter` with the
    reason on every version the phase had yet to finish, for the next facts phase or
    `corpusmem retry`; every step is safe to run again, so nothing is left half done."""
    report = FactsReport()
    # Its own name, so that an operator (or a test) can tell the phase's connection apart.
    link = Link(dsn, application_name=f"corpusmem facts {run_id}")
    stage = "normalize_relations"
    try:
        def step(fact_stage: str, call: Callable[[psycopg.Connection], T]) -> T:
            nonlocal stage
            stage = fact_stage
            return with_retries(retry, lambda: call(link.conn), link.after)

        _phase(step, report, dsn, run_id=run_id, workers=workers, model=model, device=device,
               embed_batch_size=embed_batch_size, threads=threads, extractor=extractor, retry=retry)
    except GaveUp as err:
        report.gave_up = f"{stage}: {err}"
        report.dead_letter += _dead_letter_unfinished(link, stage, err)
    finally:
        link.close()
    return report


def _dead_letter_unfinished(link: Link, stage: str, err: GaveUp) -> int:
    """Record a step that ran out of attempts; how many versions wait on it."""
    try:
        return runs.dead_letter_unfinished_fact_stage(link.conn, stage, err.attempts, str(err))
    except Exception:  # the database is what failed: the work stays pending for the next phase
        _log.warning("could not record the dead letter of %s", stage, exc_info=True)
        return 0


def _phase(step: Callable, report: FactsReport, dsn: str, *, run_id: str, workers: int, model: ModelRef,
           device: str, embed_batch_size: int, threads: int | None, extractor: ExtractorConfig | None,
           retry: RetryPolicy) -> None:
    import ray
    from ray.util import ActorPool

    shards = max(1, workers)
    t = time.perf_counter()
    versions = step("normalize_relations", assertions_sql.versions_to_normalize)
    # Every step's actors start now, each process starting while the steps before it run (a
    # Ray actor is a new process: about a second each on a small machine), the label step's
    # holding no CPU until its turn. Without new claims, the later steps start theirs on demand.
    backend = extractor.backend if extractor is not None else "rules"
    config = extractor if backend == "openai" else None
    started: list = []
    normalizers = _start(started, facts_shards.Normalizer,
                         0 if backend == "vllm" else min(shards, len(versions)), dsn, config, retry)
    resolvers = _start(started, facts_shards.ResolverShard, shards if versions else 0, dsn, run_id, retry)
    adjudicators = _start(started, facts_shards.AdjudicatorShard, shards if versions else 0, dsn, run_id,
                          retry=retry)
    labeller = (ray.remote(num_cpus=0)(facts_shards.LabelVectors).remote(
        dsn, model, device, embed_batch_size, threads, retry)
        if versions or step("label_relation", reconcile.labels_to_vectorize) else None)
    started += [labeller] if labeller is not None else []
    try:
        if versions and backend == "vllm":
            from jobs import normalize_llm

            got = normalize_llm.run(dsn, versions, extractor.llm_model, retry)
            report.claims_normalized += got["claims"]
            report.assertions += got["assertions"]
            report.dead_letter += got["dead_letter"]
        elif versions:
            actors = normalizers
            pool = ActorPool(actors)
            batches = [versions[i:i + _VERSIONS_PER_CALL] for i in range(0, len(versions), _VERSIONS_PER_CALL)]
            for got in pool.map_unordered(lambda actor, batch: actor.normalize.remote(batch), batches):
                report.claims_normalized += got["claims"]
                report.assertions += got["assertions"]
                report.dead_letter += got["dead_letter"]
            _release(actors)
        report.seconds["normalize"] = time.perf_counter() - t

        t = time.perf_counter()
        keys = step("adjudicate_observations", entities_sql.unresolved)
        if keys:
            parts = [p for p in _split(sorted(keys), shards) if p]
            actors = resolvers[:len(parts)] or _start(started, facts_shards.ResolverShard, len(parts), dsn,
                                                      run_id, retry)
            results = ray.get([a.resolve.remote({k: keys[k] for k in part}) for a, part in zip(actors, parts)])
            _release(actors)
            for got in results:
                report.dead_letter += got["dead_letter"]
                for verdict, n in got["verdicts"].items():
                    report.mentions_resolved[verdict] = report.mentions_resolved.get(verdict, 0) + n
            report.merge_proposals = step("adjudicate_observations",
                                          lambda conn: entities_sql.propose_merges(conn, run_id))
        step("adjudicate_observations", lambda conn: entities_sql.bind_assertions(conn, facts_store.one_per_object()))
        report.seconds["resolve"] = time.perf_counter() - t

        t = time.perf_counter()
        anchors = step("adjudicate_observations", facts_store.pending_anchors)
        if anchors:
            parts = [p for p in _split(anchors, shards) if p]
            actors = adjudicators[:len(parts)] or _start(started, facts_shards.AdjudicatorShard, len(parts),
                                                         dsn, run_id, retry=retry)
            results = ray.get([a.adjudicate.remote(p) for a, p in zip(actors, parts)])
            _release(actors)
            for got in results:
                report.anchors += got["anchors"]
                report.adjudicated += got["assertions"]
                report.decisions += got["decisions"]
                report.dead_letter += got["dead_letter"]
                report.per_entity += got["per_entity"]
        report.seconds["adjudicate"] = time.perf_counter() - t

        t = time.perf_counter()
        report.superseded_claims = step("adjudicate_supersession", reconcile.supersede_living)
        report.reconcile = step("reconcile", lambda conn: reconcile.reconcile_facts(conn, run_id))
        report.seconds["reconcile"] = time.perf_counter() - t

        t = time.perf_counter()
        from_claims = step("label_relation", reconcile.labels_from_claims)
        if labeller is not None and step("label_relation", reconcile.labels_to_vectorize):
            report.vectors = ray.get(labeller.run.remote())
            report.vectors.pop("seconds", None)
            gave_up = report.vectors.pop("gave_up", None)
            if gave_up is not None:
                raise GaveUp(*gave_up)
        report.vectors["fact_vectors_from_claims"] = from_claims
        report.seconds["label"] = time.perf_counter() - t
    finally:
        _release(started)   # what each step did not release itself
    step("label_relation", writes.finish_fact_stages)
