"""`corpusmem status`: per-stage counts by status, totals, the latest import runs, and the work
that failed: `failed` (permanent) and `dead_letter` (out of attempts), each with its reason."""

from __future__ import annotations

from jobs.settings import Settings
from sql.store import authority as store
from sql.store import runs

_FAILURES_SHOWN = 50
_REASON_CHARS = 200


def render(dsn: str) -> str:
    with store.connect(dsn) as conn:
        totals = runs.totals(conn)
        stages = runs.stage_counts(conn)
        versions = runs.version_counts(conn)
        recent = runs.recent_runs(conn)
        failed_totals, failed = runs.failures(conn, _FAILURES_SHOWN)
    lines = ["memory: " + ", ".join(f"{v} {k}" for k, v in totals.items()),
             "versions by status: " + (", ".join(f"{n} {s}" + (f" ({why})" if why else "")
                                                   for s, why, n in versions) or "none"),
             "stage                    status       defer       versions"]
    lines += [f"{stage:<24} {status:<12} {defer or '':<11} {n:>8}" for stage, status, defer, n in stages]
    if recent:
        lines.append("recent import runs:")
        for run_id, status, started, finished, counts in recent:
            took = f"{(finished - started).total_seconds():.1f} s" if finished else "unfinished"
            summary = ", ".join(f"{k} {v}" for k, v in (counts or {}).items() if v)
            lines.append(f"  {started:%Y-%m-%d %H:%M:%S} {run_id} {status} ({took}) {summary}")
    if failed:
        lines.append("failures (" + ", ".join(f"{n} {s}" for s, n in sorted(failed_totals.items()))
                     + " stages; `corpusmem retry` replays them):")
        for status, stage, attempts, error, version_id, source_ref in failed:
            reason = " ".join((error or "").split())
            lines.append(f"  {status:<11} {stage:<16} {attempts} attempt{'s' if attempts != 1 else ''}  "
                         f"{source_ref} ({version_id}): {reason[:_REASON_CHARS]}"
                         + ("…" if len(reason) > _REASON_CHARS else ""))
        hidden = sum(failed_totals.values()) - len(failed)
        if hidden > 0:
            lines.append(f"  … and {hidden} more")
    return "\n".join(lines)


def main(settings: Settings) -> int:
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn) as conn:
        store.migrate(conn)
    print(render(dsn))
    return 0
