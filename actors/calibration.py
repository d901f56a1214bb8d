"""Which execution `CORPUSMEM_EMBEDDING_EXECUTION=auto` runs the embedding model with on a CPU: a
short calibration on the machine itself, kept for the next runs.

Which execution is fastest depends on the CPU (int8 products with VNNI or AMX, bfloat16 with
AVX-512 BF16 or AMX), the threads, the libraries and the lengths of the texts: on one machine int8
ran at 0.9× torch's speed on 1,000-character pieces and at 1.9× on 100-character ones. So every
execution the model can run here encodes the same generated texts, chunks of the run's length and
claims, in the proportion an import embeds them; `choose` takes the fastest, and an execution
whose vectors differ from torch's only by a margin.

The timing runs in a child process (torch imported, the executions loaded, the process's threads
set, all of it gone with the process) once per model, CPU, thread count and library versions. Its
result is kept as JSON beside the ONNX graphs (`CORPUSMEM_MODEL_CACHE`) and read by later runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from actors import onnx_embedder
from actors.embedder import ModelRef
from actors.executions import SAME_VECTORS_AS_TORCH

# Bump when how the texts are timed changes (their sizes are in the key): every machine then
# calibrates again. 2: the ONNX executions run their passes side by side (`OnnxEmbedder.encode`).
# 3: torch-bf16 encodes a text at a time (`Bf16Embedder.encode`).
VERSION = "3"

# Claims an import embeds per chunk. Measured: 300 generated notes gave 1,227 chunks and 3,814
# claims; the LoCoMo development set 555 and 1,526.
CLAIMS_PER_CHUNK = 3
# The texts timed: chunks from this share of the run's target length up to all of it (LoCoMo's
# chunks at the default 800: 487 to 782 characters, p10 to p90), claims of these characters
# (LoCoMo's 35 to 148, generated notes' 48 to 86).
CHUNK_SHARE = (0.6, 1.0)
CLAIM_CHARS = (35, 150)
# An embedder call holds up to 128 documents' texts, so a token count recurs: per count, 53 claims
# and 6.6 chunks on LoCoMo, 356 claims and 44 chunks on 300 notes. The bfloat16 execution batches
# only texts of one count (8 claims of 30 tokens ran at 4.4x the speed of one alone, 4 chunks of
# 180 tokens at 1.5x, more of them no faster), so the texts timed are groups of one count: two
# counts of claims, a full batch each, and two counts of chunks.
CLAIM_GROUP, CHUNK_GROUP, GROUPS = 32, 4, 2
# Each execution keeps the better of two rounds: on a machine shared with other work some run slow.
ROUNDS = 2

# int8 is chosen only where it takes at most 1/INT8_MARGIN of the time of the fastest other
# execution: its vectors lose recall against torch's (0.008 evidence, 0.009 containment on LoCoMo
# by `bench recall`, near the 0.01 the project allows), and it must encode each text alone (in a
# batch its activations are scaled over the batch-mates, so a vector moved with them), which its
# timing here already pays. Four calibrations of one machine in a row put int8's lead over
# bfloat16 between 1.33x and 1.53x: a smaller win than the margin could be a calibration's noise.
INT8_MARGIN = 1.25
# bfloat16 is chosen only where it takes at most 1/BF16_MARGIN of the time of the faster fp32
# execution: its vectors differ from fp32's (cosine 0.99994 at worst on LoCoMo's turns and chunks,
# recall unchanged), so a memory made with them is pinned to an execution that is fast only on a
# CPU with bfloat16, and that runs on the CPU even where a later import has a GPU.
BF16_MARGIN = 1.10
INT8, BF16 = "onnx-int8", "torch-bf16"

# The CPU features the executions' speed turns on.
_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
_LIBRARIES = ("torch", "onnxruntime", "sentence-transformers", "transformers", "tokenizers")


class CalibrationFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Calibration:
    """Each execution's best seconds on the calibration's chunks and on its claims."""

    key: dict[str, Any]                    # what the timings depend on (`machine_key`)
    seconds: dict[str, dict[str, float]]   # execution → {"chunks": s, "claims": s}
    texts: dict[str, int]                  # {"chunks": n, "claims": n}
    measured_at: str
    cached: bool = False                   # read from the cache, not measured by this process
    # the 1-minute load average as the timing ended (its own threads included) and the CPUs: a
    # machine busy with other work slows some executions more than others
    load: list[float] | None = None

    def per_chunk(self) -> dict[str, float]:
        """Seconds per chunk and its claims: what an import spends, by execution."""
        return {execution: s["chunks"] / self.texts["chunks"] + CLAIMS_PER_CHUNK * s["claims"] / self.texts["claims"]
                for execution, s in self.seconds.items()}

    def summary(self) -> dict[str, Any]:
        """What a run report shows: each execution's seconds per chunk and its claims, and on what."""
        return {"seconds_per_chunk": {e: round(s, 5) for e, s in self.per_chunk().items()},
                "claims_per_chunk": CLAIMS_PER_CHUNK, "threads": self.key["threads"], "cached": self.cached,
                "measured_at": self.measured_at, "load": self.load}


def choose(seconds: Mapping[str, float], *, same_vectors_as_torch: bool = False) -> str:
    """The execution from each candidate's seconds for the same texts: the faster fp32 one (torch,
    or onnx: torch's vectors); bfloat16 where faster than that by BF16_MARGIN; int8 where faster
    than every other by INT8_MARGIN. `same_vectors_as_torch`: a memory pinned to torch's vectors."""
    fp32 = min((e for e in SAME_VECTORS_AS_TORCH if e in seconds), key=seconds.__getitem__)
    if same_vectors_as_torch:
        return fp32
    chosen = BF16 if BF16 in seconds and seconds[BF16] * BF16_MARGIN < seconds[fp32] else fp32
    if INT8 in seconds and seconds[INT8] * INT8_MARGIN < min(v for e, v in seconds.items() if e != INT8):
        return INT8
    return chosen


def machine_key(model: ModelRef, *, threads: int, batch_size: int, chunk_chars: int) -> dict[str, Any]:
    """What the timings depend on: another value of any of these is calibrated anew."""
    return {"version": VERSION, "timed": [*CHUNK_SHARE, *CLAIM_CHARS, CHUNK_GROUP, CLAIM_GROUP, GROUPS, ROUNDS],
            "model": model.name, "weights": onnx_embedder.weights_digest(Path(model.path)),
            "cpu": _cpu_name(), "cpu_flags": sorted(_cpu_flags() & set(_FLAGS)), "threads": threads,
            "batch_size": batch_size, "chunk_chars": chunk_chars,
            "libraries": {name: _version(name) for name in _LIBRARIES}}


def _kept_at(model: ModelRef, *, threads: int, batch_size: int, chunk_chars: int) -> tuple[Path, dict[str, Any]]:
    key = machine_key(model, threads=threads, batch_size=batch_size, chunk_chars=chunk_chars)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(model.cache).expanduser() / f"calibration-{digest}.json", key


def kept(model: ModelRef, *, threads: int, batch_size: int, chunk_chars: int) -> Calibration | None:
    """The calibration `calibrate` would read without measuring, or None."""
    return _read(*_kept_at(model, threads=threads, batch_size=batch_size, chunk_chars=chunk_chars))


def calibrate(model: ModelRef, *, threads: int, batch_size: int, chunk_chars: int) -> Calibration:
    """The calibration of `model` (its name, path and cache) on this machine: read from
    `model.cache` when made before with the same key, else measured in a child process and kept.
    Processes that ask at once wait for one measurement."""
    from filelock import FileLock

    path, key = _kept_at(model, threads=threads, batch_size=batch_size, chunk_chars=chunk_chars)
    if (found := _read(path, key)) is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if (found := _read(path, key)) is not None:
            return found
        _measure_in_child(model, key, path)
    measured = _read(path, key)
    if measured is None:
        raise CalibrationFailed(f"the calibration wrote no result to {path}")
    return replace(measured, cached=False)


def _read(path: Path, key: dict[str, Any]) -> Calibration | None:
    """The calibration kept at `path` for `key`; None when absent, unreadable or for another key
    (a file left half-written is measured again)."""
    try:
        kept = json.loads(path.read_text())
        if kept["key"] != key:
            return None
        return Calibration(kept["key"], kept["seconds"], kept["texts"], kept["measured_at"], cached=True,
                           load=kept.get("load"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _measure_in_child(model: ModelRef, key: dict[str, Any], path: Path) -> None:
    request = {"model": [model.name, model.path, model.cache], "key": key, "out": str(path)}
    # the child runs this same module: from the folder that holds the `actors` package
    root = Path(__file__).resolve().parent.parent
    try:
        # The child gets a copy of the environment, not the process's own: this runs ahead in a
        # thread while `init_ray` sets Ray's variables, and an exec that read the environment while
        # another thread's setenv moved it failed with EFAULT ("Bad address").
        done = subprocess.run([sys.executable, "-m", "actors.calibration", json.dumps(request)], cwd=root,
                              env=dict(os.environ), capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as err:
        raise CalibrationFailed("the embedding model's calibration ran past 10 minutes; set "
                                "CORPUSMEM_EMBEDDING_EXECUTION to an execution to skip it") from err
    if done.returncode != 0:
        raise CalibrationFailed(f"the embedding model's calibration failed (exit {done.returncode}); set "
                                f"CORPUSMEM_EMBEDDING_EXECUTION to an execution to skip it:\n{done.stderr[-2000:]}")


def candidates(model_path: str) -> list[str]:
    """The executions this machine can run the model with."""
    from actors import bf16_embedder

    onnx = onnx_embedder.supports(Path(model_path))
    return ["torch", *(["onnx"] if onnx else []), *([BF16] if bf16_embedder.native() else []),
            *([INT8] if onnx else [])]


def texts(chunk_chars: int, count_tokens: Callable[[list[str]], list[int]]) -> tuple[list[str], list[str]]:
    """The calibration's chunks and claims, generated the same on every machine: among many of each
    length range, the GROUPS token counts (by the model's tokenizer, `count_tokens`) most of them
    have, CHUNK_GROUP and CLAIM_GROUP texts of each."""
    rng = random.Random(0)
    low, high = int(chunk_chars * CHUNK_SHARE[0]), int(chunk_chars * CHUNK_SHARE[1])
    chunks = [_text(rng, rng.randint(low, high)) for _ in range(60 * CHUNK_GROUP)]
    claims = [_text(rng, rng.randint(*CLAIM_CHARS)) for _ in range(40 * CLAIM_GROUP)]
    return _grouped(chunks, count_tokens, CHUNK_GROUP), _grouped(claims, count_tokens, CLAIM_GROUP)


def _grouped(candidates: list[str], count_tokens: Callable[[list[str]], list[int]], size: int) -> list[str]:
    by_count: dict[int, list[str]] = defaultdict(list)
    for text, count in zip(candidates, count_tokens(candidates)):
        by_count[count].append(text)
    common = sorted(by_count, key=lambda count: (-len(by_count[count]), count))[:GROUPS]
    return [text for count in common for text in by_count[count][:size]]


def measure(model: ModelRef, *, threads: int, batch_size: int, chunk_chars: int) -> dict[str, Any]:
    """Each candidate execution's best seconds, over ROUNDS interleaved rounds, on the chunks and
    on the claims of `texts`; and how many of each were timed."""
    from actors.embedder import load_model

    runs = {execution: load_model(ModelRef(model.name, model.path, execution, model.cache), "cpu", threads)
            for execution in candidates(model.path)}
    tokenizer, limit = runs["torch"].tokenizer, runs["torch"].max_seq_length
    chunks, claims = texts(chunk_chars, lambda group: [len(ids) for ids in tokenizer(
        group, truncation=True, max_length=limit)["input_ids"]])
    for encoder in runs.values():
        encoder.encode(chunks[:2] + claims[:2], batch_size=batch_size)   # the first call allocates
    best = {execution: {"chunks": math.inf, "claims": math.inf} for execution in runs}
    for _ in range(ROUNDS):
        for execution, encoder in runs.items():
            for kind, group in (("chunks", chunks), ("claims", claims)):
                started = time.perf_counter()
                encoder.encode(group, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
                best[execution][kind] = min(best[execution][kind], time.perf_counter() - started)
    return {"seconds": best, "texts": {"chunks": len(chunks), "claims": len(claims)}}


_WORDS = ("the a of to and in that is was for on with as by at from it this be are have has will said about after "
          "before when where which who project team review plan budget release migration billing invoice customer "
          "meeting report design database search mobile platform audit schedule agreed moved reported asked decided "
          "finished started opened closed fixed delayed approved weekend trip photo dog garden painting concert book "
          "hiking pottery dinner family friends school onboarding refactoring reimbursement Kubernetes analytics "
          "latency throughput sprint cutover backlog roadmap vendor's okay, yeah, 3pm 10:30 e-mail co-worker "
          "yesterday tomorrow morning evening week month year March April June October November").split()
_NAMES = "Dana Kim Owen Maya Lena Hugo Joanna Nate Caroline Melanie Jon Gina Audrey Andrew".split()


def _text(rng: random.Random, chars: int) -> str:
    """About `chars` characters of sentences with names, dates and numbers: about 0.23 tokens a
    character for all-MiniLM-L6-v2's tokenizer, between generated notes (0.22) and LoCoMo (0.31)."""
    out = ""
    while len(out) < chars:
        words = [rng.choice(_NAMES), *(rng.choice(_WORDS) for _ in range(rng.randint(6, 16)))]
        if rng.random() < 0.4:
            words.insert(rng.randint(1, len(words)), f"{rng.randint(1, 28)} {rng.choice(('May', 'July'))} "
                                                     f"{rng.randint(2019, 2025)}")
        if rng.random() < 0.3:
            words.insert(0, f"[{rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}]")
        if rng.random() < 0.3:
            words.insert(rng.randint(1, len(words)), str(rng.randint(2, 999)))
        out += " ".join(words) + rng.choice((".", ".", "!", "?")) + " "
    return out[:chars].rsplit(" ", 1)[0] + "."


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (Linux); empty elsewhere."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break
            name, _, value = line.partition(":")
            fields[name.strip()] = value.strip()
    except OSError:
        pass
    return fields


def _cpu_name() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    return set(_cpuinfo().get("flags", "").split())


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def main(request: str) -> None:
    """The child: measure, and write the result where the parent reads it (whole or not at all)."""
    asked = json.loads(request)
    name, path, cache = asked["model"]
    key = asked["key"]
    measured = measure(ModelRef(name, path, "torch", cache), threads=key["threads"], batch_size=key["batch_size"],
                       chunk_chars=key["chunk_chars"])
    out = Path(asked["out"])
    staging = out.with_name(out.name + f".{os.getpid()}.staging")
    load = [round(os.getloadavg()[0], 2), os.cpu_count()] if hasattr(os, "getloadavg") else None
    staging.write_text(json.dumps({"key": key, **measured, "load": load,
                                   "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}, indent=1))
    os.replace(staging, out)


if __name__ == "__main__":
    main(sys.argv[1])
