"""The driver's side of a running import: the report rows of the pipeline folded into the run
report as they arrive, with a progress bar and the gauge of the items still in flight."""

from __future__ import annotations

import sys

from tqdm import tqdm

from actors import metrics
from jobs.run_report import RunReport
from pipeline import records


class Progress:
    def __init__(self, report: RunReport, total: int | None, *, enabled: bool) -> None:
        self.report = report
        self.bar = tqdm(total=total, unit="doc", desc="import", disable=not enabled, file=sys.stderr,
                        dynamic_ncols=True)

    def follow(self, ds) -> None:
        """Read the pipeline's report rows to the end (which is what runs the pipeline). The rows
        are small, so the driver's memory does not grow with the corpus."""
        report, bar = self.report, self.bar
        for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
            documents = 0
            for row in batch.to_pylist():
                report.add(row)
                documents += row["outcome"] != records.EXTRACTED
            bar.update(documents)
            bar.set_postfix(chunks=report.chunks, failed=report.outcomes[records.FAILED], refresh=False)
            metrics.set_gauge("corpusmem_items_in_flight", max(0, (bar.total or 0) - bar.n), run_id=report.run_id)
        metrics.set_gauge("corpusmem_items_in_flight", 0, run_id=report.run_id)

    def close(self) -> None:
        self.bar.close()
