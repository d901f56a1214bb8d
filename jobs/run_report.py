"""The report of an import run, as recorded on the run and as printed: `RunReport`, with the
`FactsReport` of its facts phase. (`corpusmem report` renders a recorded run again, with plots:
`jobs/report.py`.)"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from jobs import runtime
from pipeline import records

# How many candidate facts an entity had loaded, the buckets of `FactsReport.per_entity_work`.
_BUCKETS = (("0", 0), ("1-3", 3), ("4-15", 15), ("16-63", 63), ("64-255", 255), ("256+", 10**9))


@dataclass
class FactsReport:
    """The facts phase of a run (`jobs.facts.run_facts`)."""

    claims_normalized: int = 0
    assertions: int = 0
    mentions_resolved: dict[str, int] = field(default_factory=dict)
    merge_proposals: int = 0
    # versions whose fact stage a unit that ran out of attempts dead-lettered
    dead_letter: int = 0
    # the step of the phase itself that ran out of attempts, and why: the phase ended there
    gave_up: str | None = None
    anchors: int = 0
    decisions: int = 0
    adjudicated: int = 0
    reconcile: dict[str, int] = field(default_factory=dict)
    superseded_claims: int = 0
    vectors: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    # CPU seconds of the steps' shards (their worker processes; the database's are its own)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    per_entity: list[tuple[int, int, float]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"claims_normalized": self.claims_normalized, "assertions": self.assertions,
                "mentions_resolved": self.mentions_resolved, "merge_proposals": self.merge_proposals,
                "anchors": self.anchors, "assertions_adjudicated": self.adjudicated, "decisions": self.decisions,
                "superseded_claims": self.superseded_claims, "reconcile": self.reconcile, "vectors": self.vectors,
                "dead_letter": self.dead_letter, "gave_up": self.gave_up,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "cpu_seconds": {k: round(v, 3) for k, v in self.cpu_seconds.items()},
                "per_entity_work": self.per_entity_work()}

    def add_cpu(self, step: str, unit: dict[str, Any]) -> None:
        """A shard unit's CPU seconds (`cpu_seconds` of its result) under `step`."""
        self.cpu_seconds[step] = self.cpu_seconds.get(step, 0.0) + unit.get("cpu_seconds", 0.0)

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
            *([f"  facts phase      ended early, {self.gave_up}; `corpusmem retry` or the next import finishes it"]
              if self.gave_up else []),
            "  facts seconds    " + "  ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()),
            *(["  facts CPU s      " + "  ".join(f"{k} {v:.2f}" for k, v in self.cpu_seconds.items())
               + " (their workers; the database's apart)"] if self.cpu_seconds else []),
        ])


@dataclass
class RunReport:
    """One import run: folded from the pipeline's per-document report rows, then the LLM pass
    and the facts phase; recorded on the run (`as_dict`) and printed (`render`)."""

    run_id: str
    seen: int = 0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    parked: list[str] = field(default_factory=list)
    chunks: int = 0
    claims: int = 0
    claims_reused: int = 0
    ledger_rows: int = 0
    chunk_vectors_computed: int = 0
    claim_vectors_computed: int = 0
    vectors_cached: int = 0
    vectors_reused: int = 0
    ocr_pages: int = 0   # pages that went through the recogniser
    described_pages: int = 0   # pages a vision model described (CORPUSMEM_DESCRIBE_MODEL)
    description_failures: Counter = field(default_factory=Counter)   # pages it did not describe, by reason
    stage_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    stage_cpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    wall_seconds: float = 0.0
    pipeline_seconds: float = 0.0   # from the first source item to the last report row
    status: str = "running"
    facts: FactsReport | None = None
    facts_left_to: list[str] = field(default_factory=list)   # runs whose facts phase covers this one's
    ray_job: dict[str, str | None] = field(default_factory=dict)   # `runtime.job_info`
    nodes: dict[str, dict[str, int]] = field(default_factory=dict)  # `runtime.placements`
    embedding: dict[str, Any] = field(default_factory=dict)   # the run's model and execution: `ModelRef.summary`
    engines_ended: list[dict[str, Any]] = field(default_factory=list)   # `actors.engine_watch.watching`

    def add(self, row: dict[str, Any]) -> None:
        if row["outcome"] == records.EXTRACTED:   # the LLM stages' claims, not a document
            self.claims += row["claims"]
            self.ledger_rows += row["ledger_rows"]
            self.stage_seconds["extract"] += row["s_extract"] or 0.0
            self.stage_cpu_seconds["extract"] += row["c_extract"] or 0.0
            return
        self.seen += 1
        outcome = row["outcome"]
        self.outcomes[outcome] += 1
        self.outcomes["new"] += bool(row["created"])
        if outcome == records.FAILED:
            self.failures.append({"item": row["item"], "stage": row["error_stage"], "error": row["error"]})
        elif outcome == records.PARKED:
            self.parked.append(row["item"])
        self.chunks += row["chunks"]
        self.claims += row["claims"]
        self.claims_reused += row["claims_reused"]
        self.ledger_rows += row["ledger_rows"]
        self.chunk_vectors_computed += row["chunk_vectors_computed"]
        self.claim_vectors_computed += row["claim_vectors_computed"]
        self.vectors_cached += row["vectors_cached"]
        self.vectors_reused += row["vectors_reused"]
        self.ocr_pages += row["ocr_pages"]
        self.described_pages += row["described_pages"]
        self.description_failures.update(row["description_failures"])
        for stage in records.STAGES:
            self.stage_seconds[stage] += row[f"s_{stage}"] or 0.0
            self.stage_cpu_seconds[stage] += row[f"c_{stage}"] or 0.0

    def add_llm_pass(self, landed: dict[str, Any]) -> None:
        """The counts of the LLM pass that follows the pipeline (`jobs.extract_llm.run`): its
        claims, and the versions it gave up on as failures at `extract_claims`."""
        self.claims += landed["claims"]
        self.ledger_rows += landed["ledger_rows"]
        self.failures += [{"item": version_id, "stage": "extract_claims", "error": why}
                          for version_id, why in landed["dead_letter"]]

    @property
    def counts(self) -> dict[str, int]:
        return {"documents_seen": self.seen, "new_versions": self.outcomes["new"],
                "unchanged": self.outcomes[records.UNCHANGED], "resumed": self.outcomes[records.RESUME],
                "parked": self.outcomes[records.PARKED], "failed": self.outcomes[records.FAILED],
                "chunks": self.chunks, "claims": self.claims, "claims_reused": self.claims_reused,
                "ledger_rows": self.ledger_rows,
                "vectors_computed": self.chunk_vectors_computed + self.claim_vectors_computed,
                "chunk_vectors_computed": self.chunk_vectors_computed,
                "claim_vectors_computed": self.claim_vectors_computed,
                "vectors_cached": self.vectors_cached, "vectors_reused": self.vectors_reused,
                "ocr_pages": self.ocr_pages, "described_pages": self.described_pages,
                "descriptions_failed": self.description_failures.total()}

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "status": self.status, "counts": self.counts,
                "facts": self.facts.as_dict() if self.facts else None, "facts_left_to": self.facts_left_to,
                "failures": self.failures, "parked": self.parked,
                "description_failures": dict(sorted(self.description_failures.items())),
                "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
                "stage_cpu_seconds": {k: round(v, 3) for k, v in self.stage_cpu_seconds.items()},
                "wall_seconds": round(self.wall_seconds, 3),
                "pipeline_seconds": round(self.pipeline_seconds, 3), "ray_job": self.ray_job, "nodes": self.nodes,
                "embedding": self.embedding, "engines_ended": self.engines_ended}

    def render(self) -> str:
        c = self.counts
        lines = [
            f"import run {self.run_id}: {self.status} in {self.wall_seconds:.1f} s "
            f"({self.pipeline_seconds:.1f} s in the pipeline)",
            f"  documents seen   {c['documents_seen']}",
            f"  new versions     {c['new_versions']}",
            f"  unchanged        {c['unchanged']}",
            f"  resumed          {c['resumed']}",
            f"  parked           {c['parked']}" + (" (no converter route: " + ", ".join(self.parked[:5])
                                                   + (", ..." if len(self.parked) > 5 else "") + ")"
                                                   if self.parked else ""),
            f"  failed           {c['failed']}",
        ]
        lines += [f"    {f['item']}: {f['stage']}: {f['error']}" for f in self.failures]
        lines += [
            f"  chunks           {c['chunks']}",
            f"  claims           {c['claims']} ({c['claims_reused']} kept from unchanged passages), "
            f"{c['ledger_rows']} ledger rows",
            f"  vectors          {c['vectors_computed']} computed ({c['chunk_vectors_computed']} chunks, "
            f"{c['claim_vectors_computed']} claims), {c['vectors_reused']} reused from earlier versions, "
            f"{c['vectors_cached']} taken from a text already encoded in this run",
            f"  OCR              {c['ocr_pages']} pages in {self.stage_seconds.get('ocr', 0.0):.2f} busy s",
            *self._render_described(),
            *self._render_engines(),
            *self._render_embedding(),
            "  busy seconds per stage (summed over workers), and in brackets the CPU seconds they spent:",
            "    " + "  ".join(f"{s} {self.stage_seconds.get(s, 0.0):.2f} ({self.stage_cpu_seconds.get(s, 0.0):.2f})"
                               for s in records.STAGES),
        ]
        if self.facts is not None:
            lines.append(self.facts.render())
        if self.facts_left_to:
            lines.append("  facts            left to run(s) " + ", ".join(self.facts_left_to)
                         + ", whose pipeline was still running")
        lines += self._render_ray()
        return "\n".join(lines)

    def _render_described(self) -> list[str]:
        """The visual description's line, in a run that had one."""
        c = self.counts
        if not (c["described_pages"] or c["descriptions_failed"]):
            return []
        why = ", ".join(f"{reason} {n}" for reason, n in sorted(self.description_failures.items()))
        return [f"  described        {c['described_pages']} pages by a vision model, {c['descriptions_failed']} not"
                + (f" ({why})" if why else "")]

    def _render_engines(self) -> list[str]:
        """The vLLM engines that ended under the run, whose workers were ended so that Ray started
        them again, in a run that had any."""
        if not self.engines_ended:
            return []
        return [f"  vLLM engines     {len(self.engines_ended)} ended under the run; Ray started their workers again "
                "and sent their batches again: " + ", ".join(f"worker {e['worker']} after {e['waited_s']:.0f} s"
                                                            for e in self.engines_ended)]

    def _render_embedding(self) -> list[str]:
        if not self.embedding:
            return []
        e = self.embedding
        lines = [f"  embedding        {e['execution']} (vectors pinned as {e['model']})"]
        if calibration := e.get("calibration"):
            timed = ", ".join(f"{execution} {1000 * s:.1f}" for execution, s in calibration["seconds_per_chunk"].items())
            lines.append(f"    chosen by calibration, ms per chunk and its {calibration['claims_per_chunk']} claims on "
                         f"{calibration['threads']} threads: {timed} ("
                         + ("kept from " if calibration["cached"] else "measured ") + f"{calibration['measured_at']}"
                         + (f", load average {calibration['load'][0]} on {calibration['load'][1]} CPUs"
                            if calibration.get("load") else "") + ")")
        return lines

    def _render_ray(self) -> list[str]:
        j = self.ray_job
        if not j.get("job_id"):
            return []
        line = f"  ray job          {j['job_id']}"
        named = [f"submission {j['submission_id']}"] if j.get("submission_id") else []
        named += [repr(j["job_name"])] if j.get("job_name") else []
        if named:
            line += f" ({', '.join(named)})"
        if dashboard := runtime.dashboard_text(j):
            line += f", dashboard {dashboard}"
        lines = [line]
        for node, ran in sorted(self.nodes.items()):
            lines.append(f"    node {node}: " + ", ".join(f"{name} x{n}" for name, n in sorted(ran.items())))
        return lines
