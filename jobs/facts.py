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
from sql.write import facts_store, writes
from sql.write import reconcile as reconcile_sql

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
    phase = _Phase(link, report, dsn, run_id=run_id, shards=max(1, workers), retry=retry,
                   labeller_args=(model, device, embed_batch_size, threads),
                   extractor=extractor or ExtractorConfig())
    try:
        phase.run()
    except GaveUp as err:
        report.gave_up = f"{phase.stage}: {err}"
        report.dead_letter += _dead_letter_unfinished(link, phase.stage, err)
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


def _timed(seconds: dict[str, float], name: str, step: Callable[[], None]) -> None:
    """Run `step` and record its seconds under `name`; a step that raises ends the phase untimed."""
    started = time.perf_counter()
    step()
    seconds[name] = time.perf_counter() - started


class _Phase:
    """The steps of one facts phase, in order, and the shard actors they share."""

    def __init__(self, link: Link, report: FactsReport, dsn: str, *, run_id: str, shards: int,
                 retry: RetryPolicy, labeller_args: tuple[ModelRef, str, int, int | None],
                 extractor: ExtractorConfig) -> None:
        self.link, self.report, self.dsn, self.run_id = link, report, dsn, run_id
        self.shards, self.retry, self.extractor = shards, retry, extractor
        self.labeller_args = labeller_args   # the label vectors actor's model, device, batch size, threads
        self.stage = "normalize_relations"   # the fact stage of the step running: where a GaveUp lands
        self.started: list = []               # every actor started, released when the phase ends
        self.versions: list[str] = []
        self.normalizers: list = []
        self.resolvers: list = []
        self.adjudicators: list = []
        self.labeller = None

    def run(self) -> None:
        try:
            for name, step in (("normalize", self.normalize), ("resolve", self.resolve),
                               ("adjudicate", self.adjudicate), ("reconcile", self.reconcile),
                               ("label", self.label)):
                _timed(self.report.seconds, name, step)
        finally:
            _release(self.started)   # what each step did not release itself
        self.step("label_relation", writes.finish_fact_stages)

    def step(self, fact_stage: str, call: Callable[[psycopg.Connection], T]) -> T:
        """`call` on the phase's connection under the retry policy, as part of `fact_stage`."""
        self.stage = fact_stage
        return with_retries(self.retry, lambda: call(self.link.conn), self.link.after)

    def _start_actors(self) -> None:
        """Every step's actors start now, each process starting while the steps before it run (a
        Ray actor is a new process: about a second each on a small machine), the label step's
        holding no CPU until its turn. Without new claims, the later steps start theirs on demand."""
        import ray

        versions, shards, dsn, run_id, retry = self.versions, self.shards, self.dsn, self.run_id, self.retry
        config = self.extractor if self.extractor.backend == "openai" else None
        self.normalizers = _start(self.started, facts_shards.Normalizer,
                                  0 if self.extractor.backend == "vllm" else min(shards, len(versions)),
                                  dsn, config, retry)
        self.resolvers = _start(self.started, facts_shards.ResolverShard, shards if versions else 0, dsn, run_id,
                                retry)
        self.adjudicators = _start(self.started, facts_shards.AdjudicatorShard, shards if versions else 0, dsn,
                                   run_id, retry=retry)
        if versions or self.step("label_relation", reconcile_sql.labels_to_vectorize):
            self.labeller = ray.remote(num_cpus=0)(facts_shards.LabelVectors).remote(dsn, *self.labeller_args, retry)
            self.started.append(self.labeller)

    def normalize(self) -> None:
        from ray.util import ActorPool

        self.versions = self.step("normalize_relations", assertions_sql.versions_to_normalize)
        self._start_actors()
        report, versions = self.report, self.versions
        if versions and self.extractor.backend == "vllm":
            from jobs import normalize_llm

            got = normalize_llm.run(self.dsn, versions, self.extractor.llm_model, self.retry)
            report.claims_normalized += got["claims"]
            report.assertions += got["assertions"]
            report.dead_letter += got["dead_letter"]
        elif versions:
            pool = ActorPool(self.normalizers)
            batches = [versions[i:i + _VERSIONS_PER_CALL] for i in range(0, len(versions), _VERSIONS_PER_CALL)]
            for got in pool.map_unordered(lambda actor, batch: actor.normalize.remote(batch), batches):
                report.claims_normalized += got["claims"]
                report.assertions += got["assertions"]
                report.dead_letter += got["dead_letter"]
            _release(self.normalizers)

    def resolve(self) -> None:
        import ray

        report = self.report
        keys = self.step("adjudicate_observations", entities_sql.unresolved)
        if keys:
            parts = [p for p in _split(sorted(keys), self.shards) if p]
            actors = self.resolvers[:len(parts)] or _start(self.started, facts_shards.ResolverShard, len(parts),
                                                           self.dsn, self.run_id, self.retry)
            results = ray.get([a.resolve.remote({k: keys[k] for k in part}) for a, part in zip(actors, parts)])
            _release(actors)
            for got in results:
                report.dead_letter += got["dead_letter"]
                for verdict, n in got["verdicts"].items():
                    report.mentions_resolved[verdict] = report.mentions_resolved.get(verdict, 0) + n
            report.merge_proposals = self.step("adjudicate_observations",
                                               lambda conn: entities_sql.propose_merges(conn, self.run_id))
        self.step("adjudicate_observations",
                  lambda conn: entities_sql.bind_assertions(conn, facts_store.one_per_object()))

    def adjudicate(self) -> None:
        import ray

        report = self.report
        anchors = self.step("adjudicate_observations", facts_store.pending_anchors)
        if anchors:
            parts = [p for p in _split(anchors, self.shards) if p]
            actors = self.adjudicators[:len(parts)] or _start(self.started, facts_shards.AdjudicatorShard,
                                                              len(parts), self.dsn, self.run_id, retry=self.retry)
            results = ray.get([a.adjudicate.remote(p) for a, p in zip(actors, parts)])
            _release(actors)
            for got in results:
                report.anchors += got["anchors"]
                report.adjudicated += got["assertions"]
                report.decisions += got["decisions"]
                report.dead_letter += got["dead_letter"]
                report.per_entity += got["per_entity"]

    def reconcile(self) -> None:
        self.report.superseded_claims = self.step("adjudicate_supersession", reconcile_sql.supersede_living)
        self.report.reconcile = self.step("reconcile", lambda conn: reconcile_sql.reconcile_facts(conn, self.run_id))

    def label(self) -> None:
        import ray

        report = self.report
        from_claims = self.step("label_relation", reconcile_sql.labels_from_claims)
        if self.labeller is not None and self.step("label_relation", reconcile_sql.labels_to_vectorize):
            report.vectors = ray.get(self.labeller.run.remote())
            report.vectors.pop("seconds", None)
            gave_up = report.vectors.pop("gave_up", None)
            if gave_up is not None:
                raise GaveUp(*gave_up)
        report.vectors["fact_vectors_from_claims"] = from_claims
