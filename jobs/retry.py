"""`corpusmem retry`: failed and dead-lettered work through the same pipeline again.

A version whose document stage is `failed` (permanent: a corrupt file, undecodable text) or
`dead_letter` (transient failures that used up their attempts) is reopened, claimed by a new run
and processed from its stored bytes exactly as an import would (`LoadQueued` in place of read and
ingest); fact stages are reopened and the run's facts phase takes them up. What still fails ends
`failed` or `dead_letter` again with its new reason. A version parked `no_route` that has a route
now (images once OCR is on, a type or an extension CORPUSMEM_CONVERSION_ROUTES names) is queued
and converted the same way. Items
refused before they became versions (unreadable files, archive members) have no stored bytes:
importing them again retries them.
"""

from __future__ import annotations

import argparse

from jobs.import_corpus import ImportOptions, import_options, run_import
from jobs.settings import Settings
from jobs.sources import QueuedVersions
from sql.store import authority as store
from sql.store import runs
from sql.write import ingest as ingest_sql
from sql.write.writes import FACT_STAGES, WORK_STAGES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stage", choices=WORK_STAGES[1:] + FACT_STAGES, default=None,
                        help="only work that failed at this stage")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--version", metavar="ID", default=None, help="only this version")
    which.add_argument("--all", action="store_true", help="every failed and dead-lettered version")


def retry(settings: Settings, stage: str | None, version_id: str | None) -> tuple[int, str]:
    """Replay the matching work; (exit status, text to print): 1 when some of it still fails."""
    dsn = store.resolve_dsn(settings)
    with store.connect(dsn, autocommit=True) as conn:
        store.migrate(conn)
        work = runs.failed_work(conn, stage, version_id)
        routes = settings.routes(settings.ocr_workers > 0)
        rerouted = ingest_sql.reroute_parked(conn, lambda mime, name: routes.route(mime, name) is not None,
                                             version_id) \
            if stage in (None, "convert") else []
        if not work and not rerouted:
            return 0, "nothing to retry: no failed or dead-lettered work, and no parked version with a route now"
        document = sorted({v for v, s, _ in work if s in WORK_STAGES})
        facts = sorted({v for v, s, _ in work if s in FACT_STAGES})
        reopened = ingest_sql.reopen_versions(conn, document, stage) + rerouted
        runs.reopen_fact_stages(conn, facts, [stage] if stage else list(FACT_STAGES))
    report = run_import(options(settings, tuple(reopened)), settings)
    with store.connect(dsn) as conn:
        left = runs.work_statuses(conn, sorted(set(document) | set(facts)))
    lines = [f"retrying {len(reopened)} versions and the fact stages of {len(facts)}", report.render()]
    failing = [r for r in left if r[2] in ("failed", "dead_letter")]
    if failing:
        lines.append("still failing:")
        lines += [f"  {ref} ({v}): {st} {status} after {n} attempts: {err}" for v, st, status, n, err, ref in failing]
    else:
        lines.append("every retried stage succeeded" if not left else
                     "left waiting: " + ", ".join(sorted({f"{st} {status}" for _, st, status, *_ in left})))
    return (1 if failing else 0), "\n".join(lines)


def options(settings: Settings, versions: tuple[str, ...]) -> ImportOptions:
    """The options of a retry run over the reopened `versions`."""
    return import_options(settings, ("retry",), batch_size=8, progress=False, quiet=True,
                          reads=QueuedVersions(versions))


def main(settings: Settings, args: argparse.Namespace) -> int:
    status, text = retry(settings, args.stage, args.version)
    print(text)
    return status
