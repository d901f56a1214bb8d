"""What an import reads: each source yields a Ray `Dataset` of `DOC_SCHEMA` rows.

    Folders        files, folders and archives (paths), listed in the driver, read by tasks
    QueuedVersions versions already stored (`POST /ingest`, `corpusmem retry`), claimed by the run
    a vector store  `jobs.import_vectors.Prepared`: chunk records rebuilt into whole documents

A source is taken once the run holds its lock (`Source.take`): what it lists or claims then is
the run's, and the `Reading` it returns says how many documents to expect (for the progress bar)
and whether its rows are versions already in the authority (then the pipeline has no `ingest`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol

import pyarrow as pa

from actors.db_writer import LoadQueued
from jobs.stages import DB_STAGE_CPUS, TASK_CPUS, Run, Stage
from pipeline import records
from pipeline.documents import stages as documents
from pipeline.documents.walk import SourceOptions, list_sources
from sql.write import ingest as ingest_sql

# The columns of `pipeline.documents.walk.SourceItem`.
ITEM_SCHEMA = pa.schema([("item", pa.string()), ("path", pa.string()), ("source_ref", pa.string()),
                         ("size", pa.int64()), ("mtime", records.UTC_TS), ("error", pa.string())])


@dataclass(frozen=True)
class Reading:
    """A source taken by a run."""

    total: int | None                  # documents to expect; None: not known before reading
    dataset: Callable[[], Any]         # the rows, as a lazy Ray Dataset of DOC_SCHEMA rows
    ingested: bool = False             # the rows are versions already in the authority
    # the file names the source lists, where it lists them (None: not known before reading): a
    # run none of whose files can need the OCR stage runs without it (`DocumentStages.stages`)
    names: tuple[str, ...] | None = None


class Source(Protocol):
    @property
    def title(self) -> str:
        """What the run reads, as the dashboard's job name says it."""

    def take(self, run: Run, owner: Any) -> Reading:
        """Take what the run reads; `owner` is the connection that holds the run's lock."""

    def record(self) -> dict[str, Any] | None:
        """What the run's options record says of the source, beyond the paths (None: nothing)."""


@dataclass(frozen=True)
class Folders:
    """Files, folders and archives, walked in the driver; each item read by a task."""

    paths: tuple[str, ...]
    options: SourceOptions

    @property
    def title(self) -> str:
        return " ".join(self.paths)

    def take(self, run: Run, owner: Any) -> Reading:
        items = list(list_sources(self.paths, self.options))
        read = Stage(documents.read, run.batch_size, fn_kwargs={"options": self.options}, num_cpus=TASK_CPUS,
                     tasks=run.tasks)
        return Reading(len(items), lambda: read(_items_dataset(items)),
                       names=tuple(PurePosixPath(item["item"]).name for item in items))

    def record(self) -> None:
        return None


@dataclass(frozen=True)
class QueuedVersions:
    """Stored versions waiting for an owner, loaded from their stored bytes in place of reading
    and ingesting: the run claims those still waiting (one taken by a live run is not)."""

    versions: tuple[str, ...]

    @property
    def title(self) -> str:
        return "queued versions"

    def take(self, run: Run, owner: Any) -> Reading:
        claimed = list(ingest_sql.claim_versions(owner, run.run_id, list(self.versions)))
        load = Stage(LoadQueued, run.batch_size, fn_constructor_kwargs={
            "dsn": run.dsn, "object_store": run.object_store, "run_id": run.run_id, "retry": run.retry},
            resident=1, num_cpus=DB_STAGE_CPUS)

        def dataset():
            import ray

            return load(ray.data.from_arrow(pa.table({"version_id": claimed})))
        return Reading(len(claimed), dataset, ingested=True)

    def record(self) -> None:
        return None


def _items_dataset(items: list[dict[str, Any]]):
    """Source items as Arrow blocks (not `from_items`, which goes through numpy and loses the
    time zone of `mtime`), a few items per block so reading spreads over tasks."""
    import ray

    if not items:
        return ray.data.from_arrow(pa.Table.from_pylist([], schema=ITEM_SCHEMA))
    per_block = max(1, len(items) // 256 + 1)
    return ray.data.from_arrow([pa.Table.from_pylist(items[i:i + per_block], schema=ITEM_SCHEMA)
                                for i in range(0, len(items), per_block)])
