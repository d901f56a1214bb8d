"""The facts phase of an import: claims → assertions → entities → facts → reconcile → vectors.

    normalize ─► resolve (shards own mention keys) ─► adjudicate (shards own entities)
              ─► reconcile (living removals, deletions, re-extraction) ─► labels and profiles

It runs after the document pipeline has landed every version of the run, so adjudication can
take each entity's assertions in world-time order however the documents arrived. Shards are Ray
actors; keys and entities are spread over them by a stable hash, one owner each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from actors import facts_shards
from actors.db_writer import RetryPolicy
from actors.embedder import ModelRef
from actors.extractor import ExtractorConfig
from sql.write import assertions as assertions_sql
from sql.write import entities as entities_sql
from sql.write import facts_store, reconcile, writes

_ACTOR_CPUS = 0.25
_BUCKETS = (("0", 0), ("1-3", 3), ("4-15", 15), ("16-63", 63), ("64-255", 255), ("256+", 10**9))
_VERSIONS_PER_CALL = 64


@dataclass
class FactsReport:
    claims_normalized: int = 0
    assertions: int = 0
    mentions_resolved: dict[str, int] = field(default_factory=dict)
    merge_proposals: int = 0
    # versions whose fact stage a unit that ran out of attempts dead-lettered
    dead_letter: int = 0
    anchors: int = 0
    decisions: int = 0
    adjudicated: int = 0
    reconcile: dict[str, int] = field(default_factory=dict)
    superseded_claims: int = 0
    vectors: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    per_entity: list[tuple[int, int, float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"claims_normalized": self.claims_normalized, "assertions": self.assertions,
                "mentions_resolved": self.mentions_resolved, "merge_proposals": self.merge_proposals,
                "anchors": self.anchors, "assertions_adjudicated": self.adjudicated, "decisions": self.decisions,
                "superseded_claims": self.superseded_claims, "reconcile": self.reconcile, "vectors": self.vectors,
                "dead_letter": self.dead_letter,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "per_entity_work": self.per_entity_work()}

    def per_entity_work(self) -> list[dict[str, Any]]:
        """Adjudication cost per assertion, by how many candidate facts the entity had loaded:
        it should stay flat as entities accumulate facts."""
        buckets: dict[str, list[tuple[int, int, float]]] = {}
        for facts_loaded, assertions, seconds in self.per_entity:
            label = next(name for name, top in _BUCKETS if facts_loaded <= top)
            buckets.setdefault(label, []).append((facts_loaded, assertions, seconds))
        out = []
        for name, _ in _BUCKETS:
            got = buckets.get(name)
            if got:
                n = sum(a for _, a, _ in got)
                out.append({"candidate_facts": name, "entities": len(got), "assertions": n,
                            "ms_per_assertion": round(1000 * sum(s for _, _, s in got) / max(n, 1), 3)})
        return out

    def render(self) -> str:
        resolved = ", ".join(f"{k} {v}" for k, v in sorted(self.mentions_resolved.items())) or "none"
        rc = self.reconcile
        return "\n".join([
            f"  assertions       {self.assertions} from {self.claims_normalized} claims",
            f"  mentions         {resolved}; {self.merge_proposals} merge proposals for review",
            f"  adjudication     {self.adjudicated} assertions on {self.anchors} entities, {self.decisions} decisions",
            f"  reconcile        {self.superseded_claims} claims superseded; {rc.get('retracted', 0)} facts retracted,"
            f" {rc.get('withdrawn', 0)} withdrawn",
            *([f"  dead letters     {self.dead_letter} versions (see `corpusmem status`)"] if self.dead_letter else []),
            "  facts seconds    " + "  ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()),
        ])


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
    """`extractor` of backend `openai` normalizes with the same endpoint; other backends by the rules.
    `retry` bounds each unit's attempts against transient failures (`actors/db_writer.py`)."""
    import ray
    from ray.util import ActorPool

    report = FactsReport()
    shards = max(1, workers)
    with psycopg.connect(dsn, autocommit=True) as conn:
        t = time.perf_counter()
        versions = assertions_sql.versions_to_normalize(conn)
        # Every step's actors start now, each process starting while the steps before it run (a
        # Ray actor is a new process: about a second each on a small machine), the label step's
        # holding no CPU until its turn. Without new claims, the later steps start theirs on demand.
        config = extractor if extractor is not None and extractor.backend == "openai" else None
        started: list = []
        normalizers = _start(started, facts_shards.Normalizer, min(shards, len(versions)), dsn, config, retry)
        resolvers = _start(started, facts_shards.ResolverShard, shards if versions else 0, dsn, run_id, retry)
        adjudicators = _start(started, facts_shards.AdjudicatorShard, shards if versions else 0, dsn, run_id,
                              retry=retry)
        labeller = (ray.remote(num_cpus=0)(facts_shards.LabelVectors).remote(
            dsn, model, device, embed_batch_size, threads)
            if versions or reconcile.labels_to_vectorize(conn) else None)
        started += [labeller] if labeller is not None else []
        try:
            if versions:
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
            keys = entities_sql.unresolved(conn)
            if keys:
                parts = [p for p in _split(sorted(keys), shards) if p]
                actors = resolvers[:len(parts)] or _start(started, facts_shards.ResolverShard, len(parts), dsn,
                                                          run_id, retry)
                results = ray.get([a.resolve.remote({k: keys[k] for k in part}) for a, part in zip(actors, parts)])
                _release(actors)
                for got in results:
                    report.dead_letter += got["dead_letter"]
                    for step, n in got["verdicts"].items():
                        report.mentions_resolved[step] = report.mentions_resolved.get(step, 0) + n
                report.merge_proposals = entities_sql.propose_merges(conn, run_id)
            entities_sql.bind_assertions(conn, facts_store.one_per_object())
            report.seconds["resolve"] = time.perf_counter() - t

            t = time.perf_counter()
            anchors = facts_store.pending_anchors(conn)
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
            report.superseded_claims = reconcile.supersede_living(conn)
            report.reconcile = reconcile.reconcile_facts(conn, run_id)
            report.seconds["reconcile"] = time.perf_counter() - t

            t = time.perf_counter()
            from_claims = reconcile.labels_from_claims(conn)
            if labeller is not None and reconcile.labels_to_vectorize(conn):
                report.vectors = ray.get(labeller.run.remote())
                report.vectors.pop("seconds", None)
            report.vectors["fact_vectors_from_claims"] = from_claims
            report.seconds["label"] = time.perf_counter() - t
        finally:
            _release(started)   # what each step did not release itself
        writes.finish_fact_stages(conn)
    return report
