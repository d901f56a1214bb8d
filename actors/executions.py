"""How the embedding model can run, and how a deployment's pin names a model and its execution.

Its own module, with nothing imported: the settings check `CORPUSMEM_EMBEDDING_EXECUTION` against
this list without loading the embedder (pyarrow, and torch behind it) at every command's start.
"""

from __future__ import annotations

# `onnx` reproduces torch's vectors (cosine 1.0000 measured on LoCoMo chunks and claims), so the
# two share a pin; bfloat16 and int8 give other vectors, pinned apart ("model@execution").
EXECUTIONS = ("torch", "onnx", "torch-bf16", "onnx-int8")
SAME_VECTORS_AS_TORCH = ("torch", "onnx")


def pinned_model_name(pin: str) -> str:
    """The model a pin names, without the execution it may carry."""
    name, _, execution = pin.rpartition("@")
    return name if name and execution in EXECUTIONS else pin
