"""`corpusmem import-vectors`: a vector store's chunks rebuilt into whole documents and imported.

    store ─► rebuild (per source) ─► ingest ─► convert ─► … the pipeline of `corpusmem import`

The store is opened once in the driver to guess the field mapping from a sample and to plan the
reads (`actors.sources.datasource`); the read tasks then rebuild documents where the records of
each source come together, and the rows go on through the same stages, report and facts phase
as a folder import. A re-run changes only what changed in the store; `--delete-missing` deletes
the documents of the source kind that the store no longer holds. Also runnable as a Ray job:
`ray job submit --working-dir . -- python -m jobs.import_vectors STORE LOCATION ...`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from actors.sources import datasource, files
from actors.sources.datasource import Plan, Rebuild, RebuildCounter
from actors.sources.stores import (
    STORES,
    StoreOptions,
    StoreUnavailable,
    open_reader,
    parse_filter,
)
from jobs import import_corpus, runtime
from jobs.run_report import RunReport
from jobs.settings import Settings
from jobs.sources import Reading
from jobs.stages import TASK_CPUS, Run
from pipeline import records
from pipeline.documents.rebuild import RebuildTally
from pipeline.documents.vector_fields import ROLES, FieldMap, guess, lookup
from sql.read import claims_queries
from sql.store import authority as store
from sql.write import reconcile

_SAMPLE = 200
# The field names a store's records are known to use, where they differ from the conventions.
_STORE_FIELDS = {"chroma": FieldMap(text="document")}


@dataclass(frozen=True)
class VectorImport:
    store: StoreOptions
    named: FieldMap = FieldMap()
    source_kind: str | None = None
    living: bool = False
    assume_utc: bool = False
    delete_missing: bool = False
    dry_run: bool = False

    @property
    def kind(self) -> str:
        return self.source_kind or self.store.default_source_kind


@dataclass
class Prepared:
    """A store opened and planned in the driver: the `jobs.sources.Source` of its import."""

    request: VectorImport
    fields: FieldMap
    plan: Plan
    sources: list[str] | None            # the store's sources, where the plan listed them
    counter: Any = field(repr=False)      # the RebuildCounter actor

    @property
    def title(self) -> str:
        return f"{self.request.store.store}:{self.request.store.location}"

    def take(self, run: Run, owner: Any) -> Reading:
        """The store holds what the run reads: nothing to list or claim before reading it."""
        return Reading(self.plan.sources, self.dataset)

    def rebuild(self) -> Rebuild:
        return Rebuild(self.fields, self.request.kind, "living" if self.request.living else "snapshot",
                       self.request.assume_utc)

    def dataset(self):
        """The documents, as `DOC_SCHEMA` rows."""
        import ray

        s = self.request.store
        if self.plan.kind == "sources" and not self.plan.groups:
            return ray.data.from_arrow(records.to_table([]))
        if s.store in ("parquet", "jsonl"):
            keyed = files.keyed_dataset(s, self.fields.source, TASK_CPUS)
        else:
            ds = ray.data.read_datasource(datasource.VectorStoreDatasource(
                s, self.fields.source, self.plan, self.rebuild(), self.counter),
                num_cpus=TASK_CPUS)
            if self.plan.kind != "groupby":
                return ds
            keyed = ds
        # A sort-based shuffle runs as plain tasks; the default hash shuffle first starts aggregator
        # actors, which cost seconds and CPUs a small cluster's pipeline actors already hold.
        from ray.data.context import ShuffleStrategy

        ray.data.DataContext.get_current().shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
        # The shuffle's tasks ask for a whole CPU each and take no other setting, so they cannot
        # run beside the pipeline's actors on a small cluster: the grouped documents are made
        # first (held in the object store, spilled to disk when large), then the pipeline starts.
        return keyed.groupby("source").map_groups(
            datasource.rebuild_group, fn_kwargs={"make": self.rebuild(), "counter": self.counter},
            batch_format="pyarrow", num_cpus=TASK_CPUS).materialize()

    def record(self) -> dict[str, Any]:
        s = self.request.store
        return {"store": s.store, "location": s.location, "collection": s.collection,
                "filter": [[k, list(v)] for k, v in s.filter], "fields": self.fields.describe(),
                "plan": self.plan.kind}

    def describe(self) -> str:
        return (f"{self.request.store.store} {self.request.store.location}"
                + (f" / {self.request.store.collection}" if self.request.store.collection else "")
                + f" as source kind {self.request.kind!r}\n  fields: {self.fields.describe()}"
                + f"\n  reads: {self.plan.describe()}")


def _fields(request: VectorImport, sample: list) -> FieldMap:
    named = request.named
    defaults = _STORE_FIELDS.get(request.store.store)
    if defaults is not None:
        named = FieldMap(**{r: getattr(named, r) or getattr(defaults, r) for r in ROLES})
    fields = guess([p for _, p in sample], named)
    if sample and not fields.text:
        raise StoreUnavailable("no field of the records holds their text: name it with --text-field "
                               f"(the first record's fields: {', '.join(sorted(sample[0][1]))})")
    if sample and not fields.source:
        raise StoreUnavailable("no field of the records names their source document: name it with "
                               f"--source-field (the first record's fields: {', '.join(sorted(sample[0][1]))})")
    return fields


def prepare(request: VectorImport, parallelism: int) -> Prepared:
    """Open the store, guess the fields from a sample, plan the reads (raises StoreUnavailable)."""
    import ray

    s = request.store
    if s.store in ("parquet", "jsonl"):
        fields = _fields(request, files.sample(s, _SAMPLE))
        plan, sources = Plan("groupby"), None
    else:
        reader = open_reader(s)
        try:
            sample = reader.sample(_SAMPLE)
            fields = _fields(request, sample)
            if not sample:   # an empty store (or a filter that keeps nothing): nothing to read
                plan, sources = Plan("sources", sources=0), []
            else:
                # the store can be asked by source only when the field is its own, not inside `_node_content`
                pushdown = any(lookup(p, fields.source) is not None for _, p in sample)
                plan = datasource.plan_reads(s, reader, fields.source, pushdown=pushdown, parallelism=parallelism)
                sources = [x for g in plan.groups for x in g] if plan.kind == "sources" else None
        finally:
            reader.close()
    return Prepared(request, fields, plan, sources, ray.remote(num_cpus=0)(RebuildCounter).remote())


def store_sources(prepared: Prepared) -> set[str]:
    """Every source the store holds now (whatever became of its records)."""
    if prepared.sources is not None:
        return set(prepared.sources)
    s = prepared.request.store
    if s.store in ("parquet", "jsonl"):
        keyed = files.keyed_dataset(s, prepared.fields.source)
        return {v for v in keyed.unique("source") if v}
    reader = open_reader(s)
    try:
        if prepared.plan.kind == "groupby":
            return {v for page in reader.scan() for v in datasource.keyed(page, prepared.fields.source)
                    .column("source").to_pylist() if v}
        return set(reader.distinct(prepared.fields.source))
    finally:
        reader.close()


@dataclass
class Deletions:
    missing: list[tuple[str, str]]        # (doc_id, source_ref)
    deleted: int = 0
    dry_run: bool = False

    def render(self, kind: str) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        lines = [f"  missing          {len(self.missing)} documents of source kind {kind!r} are gone from the "
                 f"store: {verb} {len(self.missing) if self.dry_run else self.deleted}"]
        lines += [f"    {ref}" for _, ref in self.missing[:20]]
        if len(self.missing) > 20:
            lines.append(f"    ... and {len(self.missing) - 20} more")
        return "\n".join(lines)


def delete_missing(dsn: str, prepared: Prepared, *, dry_run: bool, out=sys.stdout) -> Deletions:
    """Delete the live documents of the source kind whose source the store no longer holds,
    printing them first."""
    present = store_sources(prepared)
    with store.connect(dsn, autocommit=True) as conn:
        live = claims_queries.documents_of_kind(conn, prepared.request.kind)
        missing = [(d, ref) for d, ref in live if ref not in present]
        result = Deletions(missing, dry_run=dry_run)
        if missing and not present:
            raise StoreUnavailable(f"the store holds no records now; refusing to delete all {len(missing)} "
                                   f"documents of source kind {prepared.request.kind!r} (`corpusmem delete` "
                                   "deletes documents one by one)")
        print(result.render(prepared.request.kind), file=out, flush=True)
        if not dry_run:
            for doc_id, _ in missing:
                reconcile.delete_document(conn, doc_id)
                result.deleted += 1
    return result


@dataclass
class VectorReport:
    run: RunReport | None
    prepared: Prepared
    tally: RebuildTally
    deletions: Deletions | None

    def render(self) -> str:
        lines = [self.run.render()] if self.run else [f"dry run: nothing imported from {self.prepared.describe()}"]
        if self.run:
            lines += ["  store            " + self.prepared.describe().replace("\n", "\n    "), self.tally.render()]
        if self.deletions is not None:
            lines.append(self.deletions.render(self.prepared.request.kind))
        return "\n".join(lines)


def run(request: VectorImport, settings: Settings, *, quiet: bool = True, **run_args: Any) -> VectorReport:
    """Import the store `request` names; `run_args` are `import_options` arguments (batch size, workers,
    the `--extractor` flag, progress)."""
    import ray

    if request.store.store not in ("parquet", "jsonl"):
        open_reader(request.store).close()   # a store that cannot be opened fails before Ray starts
    resources = runtime.init_ray(quiet=quiet, job_name=f"corpusmem import-vectors {request.store.store} "
                                                         f"{request.store.location}",
                                 keep=bool(run_args.get("keep_ray")), dashboard=settings.ray_dashboard)
    prepared = prepare(request, datasource.parallelism_for(resources.get("CPU", 1)))
    print(f"import-vectors: {prepared.describe()}", file=sys.stderr, flush=True)
    if request.dry_run:
        deletions = None
        if request.delete_missing:
            dsn = store.resolve_dsn(settings)
            # a memory not made yet holds nothing to delete
            deletions = (delete_missing(dsn, prepared, dry_run=True, out=sys.stderr) if store.pinned_model(dsn)
                         else Deletions([], dry_run=True))
        return VectorReport(None, prepared, RebuildTally(), deletions)
    options = import_corpus.import_options(
        settings, (prepared.title,), source={"source_kind": request.kind, "living": request.living}, quiet=quiet,
        reads=prepared, **run_args)
    report = import_corpus.run_import(options, settings)
    tally = ray.get(prepared.counter.result.remote())
    deletions = None
    if request.delete_missing:
        deletions = delete_missing(store.resolve_dsn(settings), prepared, dry_run=False, out=sys.stderr)
    return VectorReport(report, prepared, tally, deletions)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", choices=STORES, help="the kind of store")
    parser.add_argument("location", metavar="LOCATION",
                        help="Qdrant URL or local folder; Chroma folder or URL; LanceDB URI; PostgreSQL DSN; "
                             "Parquet or JSONL file or folder")
    parser.add_argument("--collection", help="Qdrant or Chroma collection")
    parser.add_argument("--table", help="LanceDB table, or PostgreSQL table (schema.table)")
    parser.add_argument("--source-kind", help="source_kind of the documents (default: STORE:COLLECTION)")
    for role, help_text in (("source", "the record's source document"), ("position", "its position there"),
                            ("text", "its text"), ("date", "its date (ISO 8601 or epoch)"),
                            ("title", "the document's title")):
        parser.add_argument(f"--{role}-field", metavar="F",
                            help=f"field holding {help_text}; dots reach inside nested payloads (default: guessed)")
    parser.add_argument("--filter", metavar="JSON", help='only records matching {"field": value | [values], ...}')
    parser.add_argument("--assume-utc", action="store_true", help="read dates without a time zone as UTC")
    parser.add_argument("--living", action="store_true",
                        help="living mode: the store is kept up to date in place; its latest text is the standing "
                             "statement")
    parser.add_argument("--delete-missing", action="store_true",
                        help="delete the documents of this source kind that the store no longer holds")
    parser.add_argument("--dry-run", action="store_true",
                        help="open and plan the store, print the fields and what --delete-missing would delete; "
                             "import nothing")
    import_corpus.add_run_arguments(parser)


def request_from_args(args: argparse.Namespace) -> VectorImport:
    if args.collection and args.table:
        raise StoreUnavailable("give --collection or --table, not both")
    s = StoreOptions(args.store, args.location, collection=args.collection or args.table,
                     filter=parse_filter(args.filter))
    if args.delete_missing and s.filter and not args.source_kind:
        raise StoreUnavailable("--delete-missing with --filter would delete the documents the filter leaves out: "
                               "give the filtered import a --source-kind of its own")
    named = FieldMap(text=args.text_field, source=args.source_field, position=args.position_field,
                     date=args.date_field, title=args.title_field)
    return VectorImport(s, named, source_kind=args.source_kind, living=args.living, assume_utc=args.assume_utc,
                        delete_missing=args.delete_missing, dry_run=args.dry_run)


def main_args(args: argparse.Namespace, settings: Settings) -> int:
    run_args = import_corpus.run_options(args, "import-vectors")
    request = request_from_args(args)
    import_corpus.own_signals()
    report = run(request, settings, **run_args)
    print(report.render())
    return 0 if report.run is None or report.run.status == "succeeded" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.import_vectors", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return main_args(parser.parse_args(argv), runtime.settings())


if __name__ == "__main__":
    sys.exit(main())
