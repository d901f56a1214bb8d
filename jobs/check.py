"""`corpusmem check [--repair] [--json]`: an operator's inspection of the memory's integrity.

It reports work per stage and status, and every way the stored memory can disagree with the
rules that wrote it: failed and dead-lettered work, objects referenced but missing from the
object store (and objects nobody references), testimony currency that disagrees with its
events, evidence counts and beliefs that disagree with the evidence, vectors outside the pinned
space, and indexes that are invalid or missing. A finding is a line with its count and a few
example IDs; the exit status is 1 when any finding is an error.

`--repair` fixes only what is safe, through the code that writes those rows in the first place:
currency is restored from its events and facts are reconciled (`sql/write/reconcile.py`),
versions that failed because their bytes were missing and whose bytes are back are queued again
the way `corpusmem retry` reopens them, invalid indexes are rebuilt concurrently and missing ones
built. It never deletes an object, and never rewrites a vector. Then it checks again and reports
what is left.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
import pyarrow as pa
from tqdm import tqdm

from actors.db_writer import UNREADABLE_BYTES
from actors.object_store import ObjectStore
from jobs.settings import Settings
from sql.read import check_queries as q
from sql.store import authority as store
from sql.store import runs
from sql.write import ingest as ingest_sql
from sql.write import reconcile

_EXAMPLES = 5

ERROR, WARNING = "error", "warning"


class CheckError(RuntimeError):
    """The check cannot be made as asked; the message says what to change."""

# Every finding `check` can report, in the order it prints them: (key, severity, what it means,
# what `--repair` does about it or None). The keys are the stable names of `--json`.
FINDINGS: tuple[tuple[str, str, str, str | None], ...] = (
    ("work_failed", ERROR, "stage rows failed for good (not waiting to retry)",
     "re-queued when the bytes they could not read are back; otherwise `corpusmem retry`"),
    ("work_dead_letter", ERROR, "stage rows out of attempts",
     "re-queued when the bytes they could not read are back; otherwise `corpusmem retry`"),
    ("objects_missing", ERROR, "objects a version needs, missing from the object store", None),
    ("objects_unreferenced", WARNING, "objects in the store that no row references", None),
    ("currency_mismatch", ERROR, "claims whose current-testimony flag disagrees with their currency events",
     "restored from the events; their facts reconciled"),
    ("currency_not_superseded", ERROR,
     "claims still current that the latest version of their living document no longer carries",
     "superseded; their facts reconciled"),
    ("evidence_count_mismatch", ERROR,
     "facts whose evidence count is not the number of distinct documents currently supporting them",
     "recounted"),
    ("belief_without_support", ERROR,
     "facts believed with no current support, or withdrawn while supported again",
     "retracted, withdrawn or restored by reconcile"),
    ("vector_columns_untyped", ERROR, "vector columns not typed with the pinned dimension",
     "typed again when every vector in them has the pinned dimension"),
    ("vectors_wrong_dimension", ERROR, "vectors of another dimension than the pinned model's", None),
    ("vectors_zero_norm", ERROR, "all-zero vectors (no cosine distance)", None),
    ("indexes_invalid", ERROR, "indexes PostgreSQL marks invalid", "rebuilt with REINDEX CONCURRENTLY"),
    ("indexes_missing", ERROR, "indexes the migrations or the pinned model declare, missing", "built"),
)


@dataclass
class Finding:
    count: int = 0
    examples: list[str] = field(default_factory=list)
    severity: str = ERROR
    message: str = ""
    repair: str | None = None

    def add(self, count: int, examples: list[str]) -> None:
        self.count += count
        self.examples = (self.examples + examples)[:_EXAMPLES]


@dataclass
class Report:
    stages: list[dict[str, Any]]
    findings: dict[str, Finding]
    pinned_dim: int | None
    objects_listed: int

    @property
    def ok(self) -> bool:
        return not any(f.count and f.severity == ERROR for f in self.findings.values())


def _empty_findings() -> dict[str, Finding]:
    return {key: Finding(severity=severity, message=message, repair=repair)
            for key, severity, message, repair in FINDINGS}


def inspect(settings: Settings, progress: bool = False) -> Report:
    """Ask every question; change nothing."""
    dsn = store.resolve_dsn(settings)
    found = _empty_findings()
    steps: list[tuple[str, Callable[[psycopg.Connection], None]]] = [
        ("work", lambda conn: _work(conn, stages, found)),
        ("currency", lambda conn: _currency(conn, found)),
        ("facts", lambda conn: _facts(conn, found)),
        ("vectors", lambda conn: _vectors(conn, found)),
        ("indexes", lambda conn: _indexes(conn, found)),
    ]
    bar = tqdm(total=len(steps) + 1, unit="check", desc="check", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    stages: list[dict[str, Any]] = []
    with store.connect(dsn) as conn:
        store.migrate(conn)
        conn.commit()
        stages += [{"stage": s, "status": st, "defer_reason": d, "versions": n}
                   for s, st, d, n in runs.stage_counts(conn)]
        dim = q.pinned_dim(conn)
        listed = _objects(conn, _object_store(settings), found, bar)
        bar.update()
        for name, step in steps:
            bar.set_postfix_str(name, refresh=False)
            step(conn)
            bar.update()
    bar.close()
    return Report(stages, found, dim, listed)


def _work(conn: psycopg.Connection, stages: list[dict[str, Any]], found: dict[str, Finding]) -> None:
    # `failed` with `retry_backoff` is a failure waiting for its next attempt, not a finding.
    for row in stages:
        if row["status"] == "dead_letter":
            found["work_dead_letter"].add(row["versions"], [])
        elif row["status"] == "failed" and row["defer_reason"] != "retry_backoff":
            found["work_failed"].add(row["versions"], [])
    _, latest = runs.failures(conn, 50)
    for status, stage, _, _, version_id, _ in latest:
        key = "work_dead_letter" if status == "dead_letter" else "work_failed"
        if len(found[key].examples) < _EXAMPLES and found[key].count:
            found[key].examples.append(f"{version_id} {stage}")


def _object_store(settings: Settings) -> ObjectStore:
    try:
        return ObjectStore(settings.object_store_uri)
    except (OSError, pa.ArrowException) as err:
        raise CheckError(f"cannot open the object store {settings.object_store_uri!r} "
                         f"(CORPUSMEM_OBJECT_STORE): {err}") from err


def _objects(conn: psycopg.Connection, objects: ObjectStore, found: dict[str, Finding], bar: tqdm) -> int:
    """Listed first, then the references read: an import writes an object before the row that
    names it, so a row read after the listing may name an object written after it; every key
    that looks missing is asked for again before it is reported."""
    stored: set[str] = set()
    try:
        for key in objects.keys():
            stored.add(key)
            if len(stored) % 10_000 == 0:
                bar.set_postfix_str(f"objects {len(stored)}")
    except (OSError, pa.ArrowException) as err:
        raise CheckError(f"cannot list the object store {objects.uri!r} (CORPUSMEM_OBJECT_STORE): {err}") from err
    referenced: set[str] = set()
    missing: dict[str, str] = {}
    for key, version_id in q.object_references(conn):
        referenced.add(key)
        if version_id is not None and key not in stored:
            missing.setdefault(key, version_id)
    gone = sorted(k for k in missing if not objects.exists(k))
    found["objects_missing"].add(len(gone), [f"{k} (version {missing[k]})" for k in gone[:_EXAMPLES]])
    orphans = sorted(stored - referenced)
    found["objects_unreferenced"].add(len(orphans), orphans[:_EXAMPLES])
    return len(stored)


def _currency(conn: psycopg.Connection, found: dict[str, Finding]) -> None:
    for key, counted in (("currency_mismatch", q.currency_mismatches(conn)),
                         ("currency_not_superseded", q.living_superseded(conn))):
        found[key].add(counted.count, counted.examples)


def _facts(conn: psycopg.Connection, found: dict[str, Finding]) -> None:
    for key, counted in (("evidence_count_mismatch", q.evidence_count_mismatches(conn)),
                         ("belief_without_support", q.unsupported_beliefs(conn))):
        found[key].add(counted.count, counted.examples)


def _vectors(conn: psycopg.Connection, found: dict[str, Finding]) -> None:
    dim = q.pinned_dim(conn)
    if dim is None:
        return  # nothing pinned, nothing embedded yet
    for col in q.vector_columns(conn, dim):
        where = f"{col.table}.{col.column}"
        if col.typed_dim != dim:
            typed = "no dimension" if col.typed_dim is None else f"{col.typed_dim} dimensions"
            found["vector_columns_untyped"].add(1, [f"{where} ({typed})"])
        found["vectors_wrong_dimension"].add(col.wrong_dim.count, [f"{where} {i}" for i in col.wrong_dim.examples])
        found["vectors_zero_norm"].add(col.zero_norm.count, [f"{where} {i}" for i in col.zero_norm.examples])


def _indexes(conn: psycopg.Connection, found: dict[str, Finding]) -> None:
    invalid = q.invalid_indexes(conn)
    found["indexes_invalid"].add(len(invalid), invalid[:_EXAMPLES])
    missing = q.missing_indexes(conn)
    found["indexes_missing"].add(len(missing), missing[:_EXAMPLES])


# --- repair ------------------------------------------------------------------------------------

def repair(settings: Settings, before: Report) -> dict[str, Any]:
    """Fix what is safe to fix in `before`; what each repair did, and what it refused and why."""
    dsn = store.resolve_dsn(settings)
    done: dict[str, Any] = {}
    f = before.findings
    with store.connect(dsn, autocommit=True) as conn:
        if f["currency_mismatch"].count or f["currency_not_superseded"].count:
            done["claims_restored"] = reconcile.restore_currency(conn)
            done["claims_superseded"] = reconcile.supersede_living(conn)
            done["reconcile"] = reconcile.reconcile_facts(conn, None)
        stale = q.fact_ids_to_reconcile(conn)
        if stale:
            done["facts_reconciled"] = reconcile.reconcile_named_facts(conn, stale, None)
        if f["work_failed"].count or f["work_dead_letter"].count:
            done["versions_requeued"] = _requeue(conn, _object_store(settings))
        if f["vector_columns_untyped"].count or f["indexes_missing"].count or f["indexes_invalid"].count:
            done.update(_indexes_repair(conn, before))
    return done


def _requeue(conn: psycopg.Connection, objects: ObjectStore) -> list[str]:
    """Versions that failed because their bytes could not be read, whose bytes are back: reopened
    as `corpusmem retry` reopens them (`ingest.reopen_versions`), for `corpusmem process` or a
    server's processor to take up."""
    back = [v for v, key in q.requeueable_versions(conn, UNREADABLE_BYTES) if objects.exists(key)]
    return ingest_sql.reopen_versions(conn, back) if back else []


def _indexes_repair(conn: psycopg.Connection, before: Report) -> dict[str, Any]:
    done: dict[str, Any] = {"indexes_rebuilt": [], "indexes_built": [], "refused": []}
    if before.findings["vector_columns_untyped"].count:
        if before.findings["vectors_wrong_dimension"].count:
            done["refused"].append("vector columns left untyped: they hold vectors of another dimension "
                                   "(`corpusmem reembed` computes every vector again)")
        else:
            model, dim, revision = conn.execute(
                "SELECT embedding_model, embedding_dim, build_revision FROM deployment").fetchone()
            # pinning the same model again types every untyped vector column with its dimension
            store.pin_deployment(conn, embedding_model=model, embedding_dim=dim, build_revision=revision)
            done["vector_columns_typed"] = True
    for index in q.invalid_indexes(conn):
        if q.is_reindex_leftover(index):
            done["refused"].append(f"{index} is what a failed REINDEX CONCURRENTLY left: drop it by hand")
            continue
        q.reindex(conn, index)
        done["indexes_rebuilt"].append(index)
    missing = q.missing_indexes(conn)
    declared = q.declared_indexes()
    for index in [i for i in missing if i in declared]:
        try:
            q.build_declared_index(conn, index)
            done["indexes_built"].append(index)
        except psycopg.Error as err:
            done["refused"].append(f"{index} could not be built: {str(err).strip()}")
    if any(i not in declared for i in missing):
        untyped = [c for c in q.vector_columns(conn, q.pinned_dim(conn) or 0) if c.typed_dim is None]
        if untyped:
            done["refused"].append("HNSW indexes left missing: their vector columns have no dimension")
        else:
            done["indexes_built"] += store.ensure_vector_indexes(conn)
    return done


# --- output ------------------------------------------------------------------------------------

def render(report: Report) -> str:
    lines = ["stage                    status       defer       versions"]
    lines += [f"{s['stage']:<24} {s['status']:<12} {s['defer_reason'] or '':<11} {s['versions']:>8}"
              for s in report.stages]
    lines.append(f"objects in the store: {report.objects_listed}")
    problems = [(k, f) for k, f in report.findings.items() if f.count]
    for key, f in problems:
        examples = f" (e.g. {', '.join(f.examples)})" if f.examples else ""
        lines.append(f"{f.severity.upper()} {key}: {f.count} {f.message}{examples}")
    lines.append("ok: no integrity problem found" if report.ok and not problems else
                 "ok: only warnings" if report.ok else
                 f"not ok: {sum(1 for _, f in problems if f.severity == ERROR)} kinds of problem found")
    return "\n".join(lines)


def as_json(report: Report, repaired: dict[str, Any] | None, before: Report | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ok": report.ok,
        "pinned_dim": report.pinned_dim,
        "objects_listed": report.objects_listed,
        "stages": report.stages,
        "findings": {k: asdict(f) for k, f in report.findings.items()},
    }
    if repaired is not None and before is not None:
        out["repair"] = {"done": repaired, "before": {k: f.count for k, f in before.findings.items()}}
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repair", action="store_true",
                        help="fix what is safe (currency, facts, re-queue versions whose bytes are back, indexes), "
                             "then check again")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout, for monitoring")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(settings: Settings, args: argparse.Namespace) -> int:
    progress = not args.no_progress and not args.json and sys.stderr.isatty()
    before, repaired = None, None
    try:
        report = inspect(settings, progress)
        if args.repair:
            before, repaired = report, repair(settings, report)
            report = inspect(settings, progress)
    except CheckError as err:
        print(f"corpusmem check: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_json(report, repaired, before), default=str, sort_keys=False))
    else:
        if repaired is not None:
            print("repair: " + json.dumps(repaired, default=str))
            print("after repair:")
        print(render(report))
    return 0 if report.ok else 1
