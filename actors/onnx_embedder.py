"""The embedding model executed by ONNX Runtime, with its weights in fp32 or int8.

It is the same sentence-transformers model (tokenizer, transformer, pooling, normalization), run
2–4× faster on a CPU. The ONNX graph is exported once per machine from the model's own weights
and kept in `CORPUSMEM_MODEL_CACHE` (ModelRef.cache); nothing is downloaded.

sentence-transformers' own ONNX backend goes through optimum-onnx, which pins transformers<4.58
while this project runs transformers 5; so the export (`torch.onnx`), the int8 quantization
(`onnxruntime.quantization`) and the forward pass (`onnxruntime`) are called here directly, and
only the model layouts whose pooling we can follow (Transformer → Pooling → optional Normalize)
are accepted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

_GRAPH = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx"}
_META = "corpusmem_onnx.json"
# What changes the exported files: bump it when the export or the quantization changes.
_EXPORT_VERSION = "2"


class UnsupportedModel(ValueError):
    pass


def weights_digest(model_path: Path) -> str:
    """Which weights the export came from: a changed model folder is exported anew."""
    h = hashlib.sha256(_EXPORT_VERSION.encode())
    for name in sorted(p.name for p in model_path.iterdir() if p.suffix in (".safetensors", ".bin", ".json")):
        stat = (model_path / name).stat()
        h.update(f"{name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return h.hexdigest()[:16]


def _pooling(model_path: Path) -> tuple[str, bool]:
    """(pooling mode, normalize) from the model's modules.json; anything else is refused."""
    modules = json.loads((model_path / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise UnsupportedModel(f"{model_path}: modules {kinds}; the ONNX execution follows only Transformer → "
                               "Pooling → Normalize models: set CORPUSMEM_EMBEDDING_EXECUTION=torch")
    config = json.loads((model_path / modules[1]["path"] / "config.json").read_text())
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens") if config.get(f"pooling_mode_{m}")]
    if len(modes) != 1 or any(v for k, v in config.items() if k.startswith("pooling_mode_") and
                              k[len("pooling_mode_"):] not in modes):
        raise UnsupportedModel(f"{model_path}: pooling {config}; the ONNX execution follows one of cls, mean "
                               "or max pooling: set CORPUSMEM_EMBEDDING_EXECUTION=torch")
    return modes[0], "Normalize" in kinds


def supports(model_path: Path) -> bool:
    try:
        _pooling(model_path)
    except (UnsupportedModel, OSError, ValueError, KeyError):
        return False
    return True


def dimension(folder: Path) -> int:
    return int(json.loads((folder / _META).read_text())["dimension"])


def prepare(model_path: str, execution: str, cache: str) -> Path:
    """The folder holding the model's ONNX graph for `execution`, exported if absent. Safe to call
    from many processes at once: one exports under a file lock, the others wait for it."""
    from filelock import FileLock

    source = Path(model_path)
    folder = Path(cache).expanduser() / f"{source.name}-{weights_digest(source)}"
    graph = folder / _GRAPH[execution]
    if graph.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if not (folder / _GRAPH["onnx"]).exists():
            _export(source, folder)
        if not graph.exists():
            _quantize(folder / _GRAPH["onnx"], graph)
    return folder


def _export(source: Path, folder: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from actors.embedder import embedding_dim

    pooling, normalize = _pooling(source)
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    transformer, tokenizer = model[0].auto_model.eval(), model.tokenizer
    names = list(tokenizer.model_input_names)
    if not getattr(tokenizer, "is_fast", False) or set(names) - {"input_ids", "attention_mask", "token_type_ids"}:
        raise UnsupportedModel(f"{source}: the ONNX execution needs a fast tokenizer with BERT-style inputs "
                               f"(has {names}): set CORPUSMEM_EMBEDDING_EXECUTION=torch")
    sample = tokenizer(["an example sentence", "another"], padding=True, return_tensors="pt")
    staging = folder.with_name(folder.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)

    class _Hidden(torch.nn.Module):  # the graph returns the token embeddings only
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            return self.inner(**dict(zip(names, inputs))).last_hidden_state

    axes = {name: {0: "batch", 1: "tokens"} for name in [*names, "token_embeddings"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shapes, not the user's concern
        torch.onnx.export(_Hidden(transformer), tuple(sample[n] for n in names), str(staging / _GRAPH["onnx"]),
                          input_names=names, output_names=["token_embeddings"], dynamic_axes=axes,
                          opset_version=17, dynamo=False)
    tokenizer.save_pretrained(str(staging))
    (staging / _META).write_text(json.dumps({
        "inputs": names, "pooling": pooling, "normalize": normalize, "max_seq_length": model.max_seq_length,
        "dimension": embedding_dim(model), "source": str(source),
        "pad_token": tokenizer.pad_token, "pad_token_id": tokenizer.pad_token_id}))
    shutil.rmtree(folder, ignore_errors=True)   # what an export that did not finish left
    os.replace(staging, folder)


class _NoPreProcessingAdvice(logging.Filter):
    """ONNX Runtime advises "pre-processing before quantization" (shape inference and graph
    fusions) on the root logger, for static quantization of vision models. Dynamic quantization of
    the weight products needs none, and the advice reads as a fault on a first import's console."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _quantize(graph: Path, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    staging = out.with_name(out.name + ".staging")
    quiet = _NoPreProcessingAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        # Only the products with a weight matrix (the attention products stay fp32), one scale per
        # output channel: per-tensor scales moved vectors to cosine 0.93 of torch's, per channel 0.99.
        quantize_dynamic(str(graph), str(staging), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"], extra_options={"MatMulConstBOnly": True})
    finally:
        logging.getLogger().removeFilter(quiet)
    os.replace(staging, out)


class OnnxEmbedder:
    """`encode` as sentence-transformers' (the arguments the project uses), on ONNX Runtime."""

    def __init__(self, folder: Path, execution: str, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._meta = json.loads((folder / _META).read_text())
        # The fast tokenizer transformers itself wraps, read from the same tokenizer.json: the same
        # ids, without importing transformers and torch into every actor (1.4 s and ~300 MiB).
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=int(self._meta["max_seq_length"]))
        self._tokenizer.enable_padding(pad_id=int(self._meta["pad_token_id"]), pad_token=self._meta["pad_token"])
        options = ort.SessionOptions()
        # With `threads` > 1, that many passes run side by side, each on one thread (`encode`);
        # without, one pass at a time on ONNX Runtime's default pool (a reader's one question).
        self._passes = threads if threads and threads > 1 else 1
        options.intra_op_num_threads = 1 if self._passes > 1 else (threads or 0)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(str(folder / _GRAPH[execution]), options,
                                             providers=["CPUExecutionProvider"])
        self.max_seq_length = int(self._meta["max_seq_length"])
        # Every text is encoded alone (`encode`), so its vector never depends on its batch-mates.
        self.batch_invariant = True
        self._pool: ThreadPoolExecutor | None = None

    def get_sentence_embedding_dimension(self) -> int:
        return int(self._meta["dimension"])

    def encode(self, texts, batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> np.ndarray:
        """One forward pass per text; `batch_size` is accepted for sentence-transformers' signature
        and not used. int8 activations are scaled per pass over the whole input, so in a batch a
        text's vector moved with the texts beside it (components by up to 0.04, measured on chat
        turns): which texts share a batch depends on Ray's blocks, the batch size and the number
        of workers, and a decision near a threshold (a merge, a duplicate) then flipped with the
        cluster's shape. Alone, a text is also never padded: on chat it was faster (0.51 s against
        0.55 s for 400 turns, 0.50 s against 0.86 s for 50 chunks of eight turns, 2 threads); on
        `bench import --docs 500` the embedder's busy time rose 11 %.

        With `threads` > 1 the passes run side by side on one thread each (ONNX Runtime releases
        the GIL in a pass): a short text's pass spends much of its time starting and joining the
        intra-op pool, and two one-thread passes at once encoded chat claims 1.4–1.5× and
        400-character chunks 1.2–1.4× faster than one two-thread pass after another (2 cores). A
        text's vector is the same bytes on one thread or two, so this changes no vector."""
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        out = np.zeros((len(texts), self.get_sentence_embedding_dimension()), dtype=np.float32)
        passes = map
        if self._passes > 1 and len(texts) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._passes, thread_name_prefix="onnx-pass")
            passes = self._pool.map
        for i, vector in enumerate(passes(lambda text: self._forward([text])[0], texts)):
            out[i] = vector
        if normalize_embeddings or self._meta["normalize"]:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out[0] if single else out

    def _forward(self, texts: list[str]) -> np.ndarray:
        batch = self._tokenizer.encode_batch([t.strip() for t in texts])   # as sentence-transformers does
        encoded = {"input_ids": np.array([e.ids for e in batch], dtype=np.int64),
                   "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
                   "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64)}
        hidden = self._session.run(None, {n: encoded[n] for n in self._meta["inputs"]})[0]
        mask = encoded["attention_mask"][..., None].astype(np.float32)
        if self._meta["pooling"] == "cls_token":
            return hidden[:, 0]
        if self._meta["pooling"] == "max_tokens":
            return np.where(mask > 0, hidden, -1e9).max(axis=1)
        return (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
