"""The processor: versions `POST /ingest` queued go through the import pipeline in micro-batches.

`corpusmem serve` runs `drain` in a background thread; every few seconds it takes up to
`batch` queued versions and runs them through the same stages as `corpusmem import`, facts
phase included.
"""

from __future__ import annotations

import logging
import threading

from jobs.import_corpus import ImportOptions, run_import
from jobs.settings import Settings
from pipeline.documents.sources import SourceOptions
from sql.store import authority as store
from sql.write import ingest as ingest_sql

_log = logging.getLogger(__name__)


def process_once(settings: Settings, batch: int = 64) -> int:
    """Process up to `batch` queued versions; return how many there were."""
    with store.connect(store.resolve_dsn(settings)) as conn:
        queued = ingest_sql.queued_versions(conn, batch)
    if not queued:
        return 0
    options = ImportOptions(paths=("queued",), source=SourceOptions.from_settings(settings), batch_size=8,
                            quiet=True, progress=False, queued=tuple(queued))
    report = run_import(options, settings)
    _log.info("processed %d queued versions: %s", len(queued), report.counts)
    return len(queued)


def drain(settings: Settings, stop: threading.Event, interval_s: float = 2.0) -> None:
    while not stop.is_set():
        try:
            done = process_once(settings)
        except Exception:  # the server keeps serving; the versions stay queued for the next round
            _log.exception("processing queued versions failed")
            done = 0
        if not done:
            stop.wait(interval_s)
