"""The stages of an import, each one `map_batches` call declared once (in the manner of
`ray.data.llm`'s processors: a processor is a list of stages, each stage its UDF and the arguments
Ray runs it with).

    [ingest] ─► convert ─► [ocr] ─► [describe] ─► structure ─► chunk ─► [extract] ─► embed ─► write

`ingest` is left out for a source whose rows are versions already in the authority (queued
versions); `ocr` when OCR is off (CORPUSMEM_OCR_WORKERS=0); `describe` unless
CORPUSMEM_DESCRIBE_MODEL names a vision model (`jobs/describe.py`); `extract` when the claims come
from the LLM extraction (`jobs/extract_llm.py`), which reads what `write` landed through its own
stages (`load_contexts`, the Selection and Claimify processors, `land_claims`): after `write` in
this list where the cluster has the GPUs for it, else in a pass after the pipeline. Ray names each
stage after its UDF (`MapBatches(Ingest)`, ...), which is what the dashboard shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from actors.db_writer import Ingest, Write
from actors.embedder import Embed, ModelRef
from actors.extractor import Extract, ExtractorConfig, build_extractor
from actors import resident
from actors.llm_stage import LandClaims, LoadContexts
from actors.ocr import Ocr
from actors.retries import RetryPolicy
from pipeline.documents import stages as documents
from pipeline.documents.convert import ConvertOptions, OcrOptions
from pipeline.documents.routes import Routes

if TYPE_CHECKING:
    from jobs.settings import Settings

# Fractions of a CPU for the stages that mostly wait on PostgreSQL, so that on a small machine
# they leave the cores to the embedder and the conversion tasks.
DB_STAGE_CPUS = 0.1
TASK_CPUS = 0.25
# Documents per embedder call. `encode` sorts its texts by length, so a bigger call pads less:
# on 2 CPU threads, 16-document calls ran at about half the speed of one call over everything.
# Under ONNX, which encodes every text alone, the run's 16-document batches let the embedder start
# on the first documents; on two cores that only made the stages take turns (LoCoMo development
# set: embed busy 24–25 s became 28–37 s, the import 0.23–0.26 of its floor became 0.23–0.24).
_EMBED_BATCH_DOCS = 128


@dataclass(frozen=True)
class Stage:
    """One `map_batches` call: a function (Ray tasks), a class run as a pool of `actors` actors,
    or a class run `resident` in at most that many tasks at once (`actors/resident.py`: one
    instance per worker process, kept between runs); a class is built with
    `fn_constructor_kwargs`. Also the resources each task or actor asks for."""

    fn: Callable[..., Any]
    batch_size: int
    fn_kwargs: dict[str, Any] = field(default_factory=dict)
    fn_constructor_kwargs: dict[str, Any] = field(default_factory=dict)
    actors: int | None = None
    resident: int | None = None
    tasks: int | None = None   # a function's tasks at once (None: as many as its CPUs allow)
    # a resident class's tasks run in worker processes of their own (`own_workers`)
    own_workers: bool = False
    num_cpus: float | None = None
    num_gpus: float | None = None
    batch_format: str = "pyarrow"

    def map_batches_kwargs(self) -> dict[str, Any]:
        import ray

        kwargs: dict[str, Any] = {"batch_size": self.batch_size, "batch_format": self.batch_format}
        if self.fn_kwargs:
            kwargs["fn_kwargs"] = self.fn_kwargs
        if self.actors is not None:
            kwargs["compute"] = ray.data.ActorPoolStrategy(size=self.actors)
            if self.fn_constructor_kwargs:
                kwargs["fn_constructor_kwargs"] = self.fn_constructor_kwargs
        if self.resident is not None:
            kwargs["compute"] = ray.data.TaskPoolStrategy(size=self.resident)
        if self.tasks is not None:
            kwargs["compute"] = ray.data.TaskPoolStrategy(size=self.tasks)
        if self.num_gpus is not None:
            kwargs["num_gpus"] = self.num_gpus
        if self.num_cpus is not None:
            kwargs["num_cpus"] = self.num_cpus
        if self.own_workers:
            kwargs["runtime_env"] = own_workers(self.fn.__name__)
        return kwargs

    def udf(self) -> Callable[..., Any]:
        """What `map_batches` runs."""
        return resident.batches(self.fn, self.fn_constructor_kwargs) if self.resident is not None else self.fn

    def __call__(self, ds):
        return ds.map_batches(self.udf(), **self.map_batches_kwargs())


def own_workers(stage: str) -> dict[str, Any]:
    """A runtime environment that only this stage's tasks ask for. Ray gives a task a worker
    process of its runtime environment, so a resident stage that runs one task at a time finds its
    instance (a model, the run's cache of what it encoded) in the same process at every batch and
    every run, where any free worker would do otherwise: at 600 notes a resident embedder's
    batches went to two processes, each loading the model and caching apart, and 754 claim texts
    were encoded twice. (An actor pool would hold one process too, but Ray Data's actors print
    an error line of Ray's own at every run, ray-project/ray#57733.)"""
    return {"env_vars": {"CORPUSMEM_STAGE": stage}}


def apply(stages: Sequence[Callable[[Any], Any]], ds):
    """`ds` through `stages` (each a `Stage`, or a processor of `ray.data.llm`: a Dataset in, a
    Dataset out), in order (lazily: nothing runs until the rows are read)."""
    for stage in stages:
        ds = stage(ds)
    return ds


@dataclass(frozen=True)
class Run:
    """What the stages of one run share: where they write, for which run, in what batches, under
    which retry policy."""

    run_id: str
    dsn: str
    object_store: str
    batch_size: int
    retry: RetryPolicy
    # Tasks of each pure stage at once (`pure_tasks`); None: as many as their CPUs allow.
    tasks: int | None = None


@dataclass(frozen=True)
class Embedding:
    """Where and how the run's embedder actors encode (also the claim vectors of the LLM pass and
    the fact vectors of the facts phase)."""

    model: ModelRef
    gpu: bool         # each embedder actor holds a GPU
    device: str
    batch_size: int   # texts per `encode` call
    threads: int      # CPU threads per embedder actor

    @classmethod
    def for_cluster(cls, model: ModelRef, resources: dict[str, float], workers: int, *, device: str,
                    batch_size: Callable[[bool], int]) -> Embedding:
        """`device` is CORPUSMEM_EMBEDDING_DEVICE, `batch_size` the setting's choice for GPU or CPU."""
        # the ONNX executions run on CPU: only torch asks for a GPU
        gpu = resources.get("GPU", 0) >= 1 and model.execution == "torch"
        return cls(model, gpu, "cuda" if gpu else device, batch_size(gpu),
                   max(1, int(resources.get("CPU", 1)) // max(workers, 1)))


@dataclass(frozen=True)
class OcrPool:
    """The OCR stage of a run (CORPUSMEM_OCR_*)."""

    workers: int
    batch_size: int
    max_pixels: int
    min_pdf_page_chars: int
    gpu: bool   # the actors share a GPU that no embedder holds, through ONNX Runtime's CUDA provider
    threads: int   # ONNX Runtime threads per actor: the node's CPUs shared among the actors

    @classmethod
    def of(cls, settings: Settings, resources: dict[str, float], embedder_gpus: int) -> OcrPool | None:
        """None when OCR is off. Refuses when OCR is on and its package is missing (it is not
        installed on Python 3.13 and later), rather than failing every image of the run."""
        if settings.ocr_workers == 0:
            return None
        import importlib.util

        import onnxruntime

        from jobs.settings import SettingsError

        if importlib.util.find_spec("rapidocr_onnxruntime") is None:
            raise SettingsError(f"CORPUSMEM_OCR_WORKERS={settings.ocr_workers} but rapidocr-onnxruntime is not "
                                "installed (its wheel needs Python < 3.13): install it, or set "
                                "CORPUSMEM_OCR_WORKERS=0 to import without OCR")

        gpu = (resources.get("GPU", 0) >= embedder_gpus + 1
               and "CUDAExecutionProvider" in onnxruntime.get_available_providers())
        return cls(settings.ocr_workers, settings.ocr_batch, settings.ocr_max_pixels,
                   settings.ocr_min_pdf_page_chars, gpu,
                   max(1, int(resources.get("CPU", 1)) // settings.ocr_workers))

    def stage(self, *, describe_next: bool = False) -> Stage:
        """`describe_next`: the run's describe step follows (`Ocr`)."""
        # No logical CPU: ONNX Runtime computes on its `threads` cores whatever Ray counts, and a
        # CPU share held by the stage would leave a one-CPU node, after the embedder and the
        # database stages took theirs (`embedder_cpus`), no room for a conversion task. On CPUs
        # the models stay loaded in the worker for the next run (resident); on a GPU an actor
        # holds its share of the device.
        return Stage(Ocr, self.batch_size, fn_constructor_kwargs={
                         "max_pixels": self.max_pixels, "gpu": self.gpu, "threads": self.threads,
                         "describe_next": describe_next},
                     num_cpus=0, **({"actors": self.workers, "num_gpus": 1 / self.workers} if self.gpu
                                    else {"resident": self.workers}))


def pure_tasks(resources: dict[str, float]) -> int:
    """Tasks of each pure stage (read, convert, structure, chunk, the rules' extraction) at once:
    one per CPU of the cluster. Every task in flight holds a worker process, and by Ray Data's
    default a quarter-CPU stage runs as many as its CPUs allow (8 at once on 2 CPUs), each in a
    process that imports Ray Data and the stage's modules (about 2.5 CPU-s) and then idles at
    0.7 % of a core for the rest of the run. With the same cap, and the same CPUs, Ray fuses
    these stages into one task per batch."""
    return max(1, int(resources.get("CPU", 1)))


def ingest(run: Run, routes: Routes) -> Stage:
    """`routes`: the run's conversion routes (images are routable when it has an OCR stage)."""
    return Stage(Ingest, run.batch_size, fn_constructor_kwargs={
        "dsn": run.dsn, "object_store": run.object_store, "run_id": run.run_id, "routes": routes,
        "retry": run.retry}, resident=1, num_cpus=DB_STAGE_CPUS)


@dataclass(frozen=True)
class DocumentStages:
    """The stages from a source's rows to report rows, as a run chose them."""

    target_chars: int                    # CORPUSMEM_CHUNK_TARGET_CHARS
    extractor: ExtractorConfig | None    # None: the LLM extraction extracts the claims
    extractor_version: str | None        # what `write` records on the claims (None with the LLM)
    embedding: Embedding
    workers: int                         # embedder actors
    ocr: OcrPool | None = None           # None: OCR is off
    describe: Callable[[Any], Any] | None = None   # a Dataset → Dataset step (`jobs/describe.py`); None: off
    # the LLM extraction's stages after `write` (`LlmPass.stages`), or None: no LLM, or its pass
    # follows the pipeline
    extraction: Callable[[Run], Sequence[Callable[[Any], Any]]] | None = None
    convert: ConvertOptions = ConvertOptions()   # the routes (CORPUSMEM_CONVERSION_ROUTES) and caps

    @classmethod
    def of(cls, extractor: ExtractorConfig | None, embedding: Embedding, *, workers: int,
           target_chars: int, ocr: OcrPool | None = None,
           describe: Callable[[Any], Any] | None = None,
           extraction: Callable[[Run], Sequence[Callable[[Any], Any]]] | None = None,
           convert: ConvertOptions | None = None) -> DocumentStages:
        """Builds the extractor once, so that one that cannot run refuses before anything is written."""
        version = build_extractor(extractor).version if extractor is not None else None
        convert = convert or ConvertOptions(target_chars=target_chars)
        return cls(target_chars, extractor, version, embedding, workers, ocr, describe, extraction, convert)

    def __call__(self, run: Run, documents, *, ingested: bool, names: Sequence[str] | None = None):
        """A source's `documents` through the stages (lazily: nothing runs until they are read)."""
        return apply(self.stages(run, ingested=ingested, names=names), documents)

    def stages(self, run: Run, *, ingested: bool, names: Sequence[str] | None = None) -> list[Callable[[Any], Any]]:
        """`ingested`: the rows are versions already in the authority; `names`: the file names
        the source lists, where it does (`Reading.names`). A run with OCR has the OCR stage unless
        none of the names can need it: one task and its pass over every batch fewer."""
        b, embedding = run.batch_size, self.embedding
        # images stay routable in a run with OCR, whether or not this source holds any
        routes = dataclasses.replace(self.convert.routes, ocr=self.ocr is not None)
        ocr = self.ocr if names is None or any(routes.may_need_ocr(n) for n in names) else None
        return [
            *([] if ingested else [ingest(run, routes)]),
            Stage(documents.convert, b, num_cpus=TASK_CPUS, tasks=run.tasks,
                  fn_kwargs={"options": self.convert,
                             **({"ocr": OcrOptions(ocr.min_pdf_page_chars)} if ocr is not None else {})}),
            *([ocr.stage(describe_next=self.describe is not None)] if ocr is not None else []),
            *([self.describe] if self.describe is not None else []),
            Stage(documents.structure, b, fn_kwargs={"target_chars": self.target_chars}, num_cpus=TASK_CPUS,
                  tasks=run.tasks),
            Stage(documents.chunk, b, fn_kwargs={"target_chars": self.target_chars}, num_cpus=TASK_CPUS,
                  tasks=run.tasks),
            *([self._extract(run)] if self.extractor is not None else []),
            self._embed(run),
            Stage(Write, b, fn_constructor_kwargs={"dsn": run.dsn, "object_store": run.object_store,
                                                   "run_id": run.run_id, "extractor": self.extractor_version,
                                                   "retry": run.retry}, resident=1, num_cpus=DB_STAGE_CPUS),
            *(self.extraction(run) if self.extraction is not None else []),
        ]

    def _embed(self, run: Run) -> Stage:
        """On a GPU an actor holds its device for the run. On CPUs the embedder is resident in
        worker processes of its own (`own_workers`): the model stays loaded for the next run, as
        the processor's micro-batches want, and a run's batches all reach the one instance."""
        e = self.embedding
        kwargs = {"model": e.model, "device": e.device, "batch_size": e.batch_size, "threads": e.threads,
                  "run_id": run.run_id}
        placed: dict[str, Any] = ({"actors": self.workers, "num_gpus": 1} if e.gpu else
                                  {"resident": self.workers, "num_cpus": embedder_cpus(self.workers), "own_workers": True})
        return Stage(Embed, max(run.batch_size, _EMBED_BATCH_DOCS), fn_constructor_kwargs=kwargs, **placed)

    def _extract(self, run: Run) -> Stage:
        """The rules compute like the pure stages before them (and so fuse with them, one task per
        batch); an endpoint's client waits on the network, one batch at a time."""
        kwargs = {"config": self.extractor, "retry": run.retry}
        if self.extractor.backend == "rules":
            return Stage(Extract, run.batch_size, fn_constructor_kwargs=kwargs, resident=run.tasks or 1,
                         num_cpus=TASK_CPUS)
        return Stage(Extract, run.batch_size, fn_constructor_kwargs=kwargs, resident=1, num_cpus=DB_STAGE_CPUS)


def load_contexts(run: Run, extractor: str) -> Stage:
    """The LLM extraction's first stage: versions (or the writer's report rows) to the contexts of
    their chunks not yet extracted."""
    return Stage(LoadContexts, run.batch_size, fn_constructor_kwargs={
        "dsn": run.dsn, "object_store": run.object_store, "extractor": extractor}, resident=1, num_cpus=DB_STAGE_CPUS)


def land_claims(run: Run, *, extractor: str, model_label: str, embedding: Embedding) -> Stage:
    """The LLM extraction's last stage: the processors' answers through the grounding gate into
    claims. It embeds them on CPU: the GPUs are the processors' and the embedders' (Ray hides them
    from an actor that asks for none)."""
    return Stage(LandClaims, run.batch_size * 4, fn_constructor_kwargs={
        "dsn": run.dsn, "extractor": extractor, "model_label": model_label, "embed_model": embedding.model,
        "embed_device": "cpu" if embedding.gpu else embedding.device, "embed_batch_size": embedding.batch_size},
        actors=1, num_cpus=0.5)


def embedder_cpus(workers: int) -> float:
    """One CPU per embedder actor, unless more embedders were asked for than the cluster has
    free CPUs (after what the stages around them hold, and what a running read API holds):
    then a fair share, so every actor starts. Never more than the smallest node holds beside the
    three database actors and one task: when a node is lost mid-import, the embedder that takes
    its place must fit on a node that is left (on one-CPU nodes a whole-CPU embedder never fits
    beside the writer, and the import would wait for ever)."""
    import ray

    nodes = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0)]
    beside = min(nodes, default=1.0) - 3 * DB_STAGE_CPUS - TASK_CPUS
    fair = (ray.available_resources().get("CPU", 1) - 0.75) / max(workers, 1)
    return max(0.1, min(1.0, beside, fair))
