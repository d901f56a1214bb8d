"""The facts phase of an import: claims → assertions → entities → facts → reconcile → vectors.

    normalize ─► resolve (shards own mention keys) ─► adjudicate (shards own entities)
              ─► reconcile (living removals, deletions, re-extraction) ─► labels and profiles

It runs after the document pipeline has landed every version of the run, so adjudication can
take each entity's assertions in world-time order however the documents arrived. Keys and
entities are spread over shards by a stable hash, one owner each; a shard is a resident Ray task
(`actors/resident.py`), which finds its connection, and the label step its model, already open in
the worker process when an earlier run left them there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg

from actors import facts_shards, resident
from actors.db_writer import Link
from actors.embedder import ModelRef
from actors.extractor import ExtractorConfig
from actors.retries import GaveUp, RetryPolicy, with_retries
from jobs.run_report import FactsReport
from sql.store import authority as store
from sql.store import runs
from sql.write import assertions as assertions_sql
from sql.write import entities as entities_sql
from sql.write import facts_store, writes
from sql.write import reconcile as reconcile_sql

_log = logging.getLogger(__name__)

T = TypeVar("T")

# Each shard's unit asks for a quarter CPU, so on a small machine the steps leave cores to the
# document pipelines of other runs.
_SHARD_CPUS = 0.25
_VERSIONS_PER_CALL = 64
_MAX_SHARDS = 8


def _split(items: list, shards: int, key=lambda x: x) -> list[list]:
    out: list[list] = [[] for _ in range(shards)]
    for item in items:
        out[facts_shards.shard_of(key(item), shards)].append(item)
    return out


def _resident(cls, kwargs: dict, method: str, *args, num_cpus: float = _SHARD_CPUS):
    """`method(*args)` of `cls(**kwargs)` as a resident Ray task (`actors/resident.py`: the
    instance, its connection and its model stay in the worker process for the next run)."""
    import ray

    return ray.remote(resident.call).options(num_cpus=num_cpus).remote(cls, kwargs, method, *args)


def _on_shards(cls, kwargs: dict, method: str, units: list, *, at_once: int) -> list:
    """`method(unit)` of `cls(**kwargs)` for every unit, as resident tasks, at most `at_once` in
    flight; the results in the order they came."""
    import ray

    pending, results = [], []
    for unit in units:
        if len(pending) >= at_once:
            done, pending = ray.wait(pending, num_returns=1)
            results += ray.get(done)
        pending.append(_resident(cls, kwargs, method, unit))
    return results + ray.get(pending)


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
    phase = _Phase(link, report, dsn, run_id=run_id, shards=shard_count(workers), retry=retry,
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


def shard_count(workers: int) -> int:
    """Shards of each step: one per CPU of the cluster, so that the phase, which runs when the
    pipeline has ended, has every core (a unit asks for a quarter CPU; its PostgreSQL backend
    works beside it), and at least one per embedder worker; at most `_MAX_SHARDS`, past which
    the database sets the pace. Keys and entities go to shards by a stable hash and a shard sees
    only what the run's other shards do not decide, so the count changes no outcome."""
    import ray

    cpus = int(ray.cluster_resources().get("CPU", 1)) if ray.is_initialized() else 1
    return max(1, workers, min(cpus, _MAX_SHARDS))


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
    """The steps of one facts phase, in order. A shard is a resident task (`_on_shards`): keys and
    entities are split by a stable hash, one call per shard, so each has one owner."""

    def __init__(self, link: Link, report: FactsReport, dsn: str, *, run_id: str, shards: int,
                 retry: RetryPolicy, labeller_args: tuple[ModelRef, str, int, int | None],
                 extractor: ExtractorConfig) -> None:
        self.link, self.report, self.dsn, self.run_id = link, report, dsn, run_id
        self.shards, self.retry, self.extractor = shards, retry, extractor
        self.labeller_args = labeller_args   # the label vectors' model, device, batch size, threads
        self.stage = "normalize_relations"   # the fact stage of the step running: where a GaveUp lands
        self.versions: list[str] = []

    def run(self) -> None:
        self.analyze("pipeline")
        for name, step in (("normalize", self.normalize), ("resolve", self.resolve),
                           ("adjudicate", self.adjudicate), ("reconcile", self.reconcile),
                           ("label", self.label)):
            _timed(self.report.seconds, name, step)
        self.step("label_relation", writes.finish_fact_stages)

    def analyze(self, filled_by: str, changed: int | None = None) -> None:
        """What `filled_by` wrote (`changed` rows, where it counted them), analysed when that is
        enough to mislead the planner: the next statements are planned on it."""
        self.step(self.stage, lambda conn: store.refresh_statistics(conn, filled_by, changed))

    def step(self, fact_stage: str, call: Callable[[psycopg.Connection], T]) -> T:
        """`call` on the phase's connection under the retry policy, as part of `fact_stage`."""
        self.stage = fact_stage
        return with_retries(self.retry, lambda: call(self.link.conn), self.link.after)

    def normalize(self) -> None:
        self.versions = self.step("normalize_relations", assertions_sql.versions_to_normalize)
        report, versions = self.report, self.versions
        if versions and self.extractor.backend == "vllm":
            from jobs import normalize_llm

            got = normalize_llm.run(self.dsn, versions, self.extractor.llm_model, self.retry,
                                    device=self.extractor.llm_device)
            report.claims_normalized += got["claims"]
            report.assertions += got["assertions"]
            report.dead_letter += got["dead_letter"]
        elif versions:
            config = self.extractor if self.extractor.backend == "openai" else None
            batches = [versions[i:i + _VERSIONS_PER_CALL] for i in range(0, len(versions), _VERSIONS_PER_CALL)]
            for got in _on_shards(facts_shards.Normalizer, {"dsn": self.dsn, "config": config, "retry": self.retry},
                                  "normalize", batches, at_once=self.shards):
                report.add_cpu("normalize", got)
                report.claims_normalized += got["claims"]
                report.assertions += got["assertions"]
                report.dead_letter += got["dead_letter"]
        self.analyze("normalize", report.assertions)

    def resolve(self) -> None:
        report = self.report
        keys = self.step("adjudicate_observations", entities_sql.unresolved)
        if keys:
            parts = [{k: keys[k] for k in part} for part in _split(sorted(keys), self.shards) if part]
            shard = {"dsn": self.dsn, "run_id": self.run_id, "retry": self.retry}
            for got in _on_shards(facts_shards.ResolverShard, shard, "resolve", parts, at_once=len(parts)):
                report.add_cpu("resolve", got)
                report.dead_letter += got["dead_letter"]
                for verdict, n in got["verdicts"].items():
                    report.mentions_resolved[verdict] = report.mentions_resolved.get(verdict, 0) + n
            self.analyze("resolve", sum(report.mentions_resolved.values()))
            report.merge_proposals = self.step("adjudicate_observations",
                                               lambda conn: entities_sql.propose_merges(conn, self.run_id))
        bound = self.step("adjudicate_observations",
                          lambda conn: entities_sql.bind_assertions(conn, facts_store.one_per_object()))
        self.analyze("bind", bound)

    def adjudicate(self) -> None:
        report = self.report
        anchors = self.step("adjudicate_observations", facts_store.pending_anchors)
        if anchors:
            parts = [p for p in _split(anchors, self.shards) if p]
            shard = {"dsn": self.dsn, "run_id": self.run_id, "retry": self.retry}
            for got in _on_shards(facts_shards.AdjudicatorShard, shard, "adjudicate", parts, at_once=len(parts)):
                report.add_cpu("adjudicate", got)
                report.anchors += got["anchors"]
                report.adjudicated += got["assertions"]
                report.decisions += got["decisions"]
                report.dead_letter += got["dead_letter"]
                report.per_entity += got["per_entity"]
            self.analyze("adjudicate", report.decisions)

    def reconcile(self) -> None:
        self.report.superseded_claims = self.step("adjudicate_supersession", reconcile_sql.supersede_living)
        self.report.reconcile = self.step("reconcile", lambda conn: reconcile_sql.reconcile_facts(conn, self.run_id))

    def label(self) -> None:
        import ray

        report = self.report
        from_claims = self.step("label_relation", reconcile_sql.labels_from_claims)
        if self.step("label_relation", reconcile_sql.labels_to_vectorize):
            model, device, batch_size, threads = self.labeller_args
            labeller = {"dsn": self.dsn, "model": model, "device": device, "batch_size": batch_size,
                        "threads": threads, "retry": self.retry}
            # No CPU asked: the model's threads are the embedder's, whose pipeline has ended.
            report.vectors = ray.get(_resident(facts_shards.LabelVectors, labeller, "run", num_cpus=0))
            report.add_cpu("label", report.vectors)
            report.vectors.pop("seconds", None)
            report.vectors.pop("cpu_seconds", None)
            gave_up = report.vectors.pop("gave_up", None)
            if gave_up is not None:
                raise GaveUp(*gave_up)
        report.vectors["fact_vectors_from_claims"] = from_claims
        self.analyze("label", from_claims + report.vectors.get("fact_vectors", 0))
