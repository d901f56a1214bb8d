"""The processor: versions `POST /ingest` queued go through the import pipeline in micro-batches.

`corpusmem serve` runs `drain` in a background thread; every few seconds it takes up to
`batch` queued versions and runs them through the same stages as `corpusmem import`, facts
phase included. Queued means waiting for an owner: a version an import is processing is never
taken, one whose owner died is (`ingest_sql.claim_versions`), so any number of processors and
imports can share an authority.
"""

from __future__ import annotations

import logging
import threading

from jobs.import_corpus import ImportOptions, import_options, run_import
from jobs.settings import Settings
from jobs.sources import QueuedVersions
from sql.store import authority as store
from sql.write import ingest as ingest_sql

_log = logging.getLogger(__name__)


def process_once(settings: Settings, batch: int = 64) -> int:
    """Process up to `batch` queued versions; return how many this round claimed."""
    with store.connect(store.resolve_dsn(settings)) as conn:
        queued = ingest_sql.queued_versions(conn, batch)
    if not queued:
        return 0
    # A server must keep draining while a long import runs: its facts phase is left to the
    # import when one is in flight (that phase reads these versions' claims too).
    report = run_import(options(settings, tuple(queued)), settings)
    _log.info("processed %d queued versions: %s", report.seen, report.counts)
    return report.seen


def options(settings: Settings, versions: tuple[str, ...]) -> ImportOptions:
    """The options of a micro-batch over the queued `versions`."""
    return import_options(settings, ("queued",), batch_size=8, quiet=True, progress=False,
                          reads=QueuedVersions(versions), wait_for_facts=False)


def drain(settings: Settings, stop: threading.Event, interval_s: float = 2.0) -> None:
    while not stop.is_set():
        try:
            done = process_once(settings)
        except Exception:  # the server keeps serving; the versions stay queued for the next round
            _log.exception("processing queued versions failed")
            done = 0
        if not done:
            stop.wait(interval_s)
