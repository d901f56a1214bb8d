"""The embedding model run by torch on a CPU in bfloat16, where the CPU computes bfloat16 natively.

The model's own sentence-transformers weights and code, under `torch.autocast("cpu", bfloat16)`:
on a CPU with AVX-512 BF16 it ran at about 2× fp32 torch, its vectors at cosine ≥ 0.99994 of fp32's
(LoCoMo's turns and chunks). Those are other vectors, so the execution is pinned with the model
(`model@torch-bf16`).

A batch rounds differently with its batch-mates: padded, components moved by up to 1e-3, and on
a CPU that computes bfloat16 natively (an Intel Xeon with AVX-512 BF16) even a batch of texts of
one token count gave other bytes than each text alone. So every text is encoded alone, as the
ONNX executions do: its vector is the same bytes whatever was encoded beside it
(`tests/actors/test_embedding_execution.py`).
"""

from __future__ import annotations

import numpy as np

EXECUTION = "torch-bf16"


def native() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16, or AMX tiles): elsewhere oneDNN
    emulates it, slower than fp32. torch asks its own cpuinfo; a torch without these probes offers
    no bfloat16 execution."""
    import torch

    probes = (getattr(torch.cpu, "_is_avx512_bf16_supported", None), getattr(torch.cpu, "_is_amx_tile_supported", None))
    return any(probe is not None and probe() for probe in probes)


class Bf16Embedder:
    """`encode` as sentence-transformers' (the arguments the project uses), in bfloat16, a text at
    a time. Built on a SentenceTransformer loaded on the CPU."""

    batch_invariant = True

    def __init__(self, model) -> None:
        self._model = model
        self.max_seq_length = model.max_seq_length

    def get_sentence_embedding_dimension(self) -> int:
        from actors.embedder import embedding_dim

        return embedding_dim(self._model)

    def encode(self, texts, batch_size: int = 32, convert_to_numpy: bool = True,
               normalize_embeddings: bool = False, show_progress_bar: bool = False) -> np.ndarray:
        """`batch_size` is accepted for sentence-transformers' signature and not used: one pass a text."""
        import torch

        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        out = np.zeros((len(texts), self.get_sentence_embedding_dimension()), dtype=np.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for i, text in enumerate(texts):
                out[i] = self._model.encode([text], batch_size=1, convert_to_numpy=True, show_progress_bar=False)[0]
        if normalize_embeddings:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out[0] if single else out
