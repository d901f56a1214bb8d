"""The `vllm` normalization pass of the facts phase: the claims waiting for `normalize_relations`
through the normalizer processor on GPU replicas (`actors/vllm_normalizer.py`), into assertions.

    versions ─► NormalizeInputs (25 claims a row) ─► normalize processor ─► the driver puts each
    version's answers together ─► AssertionWriter (assertions, mentions, cost rows)

A version's rows come back in any order, and its assertions are written once all of them are
back: `normalize.version_rows` reads one document's claims together. A row the engine failed on
(Ray's `__inference_error__`) goes through the processor again under the import's `RetryPolicy`,
the rule every call out of the process follows (`actors/retries.py`): its attempts, its backoff
between them. A version with a row that fails every attempt is `dead_letter` at
`normalize_relations` with the reason, and none of its claims is marked read, so the next facts
phase (or `corpusmem retry`) takes all of them up again: no version is left half normalized.
"""

from __future__ import annotations

import time
from typing import Any

from actors.facts_shards import AssertionWriter, NormalizeInputs
from actors.retries import GaveUp, RetryPolicy
from pipeline.facts import normalize_llm

# Versions written per transaction.
_VERSIONS_PER_WRITE = 64


def run(dsn: str, versions: list[str], model_path: str | None, retry: RetryPolicy,
        batch_size: int = 16, device: str = "gpu", **config: Any) -> dict[str, int]:
    """Normalize `versions` with the model at `model_path` (CORPUSMEM_LLM_MODEL); counts of claims
    read, assertions written and versions dead-lettered. `config`: more of the engine's settings
    (`VLLMExtractorConfig`'s fields, as `jobs.extract_llm.vllm_pass` takes them)."""
    import ray

    from actors import vllm_normalizer
    from actors.vllm_extractor import VLLMExtractorConfig

    config = VLLMExtractorConfig(model_path=model_path, device=device, **config).fitted()
    processor = vllm_normalizer.build_normalize_processor(config)
    writer = AssertionWriter(dsn, vllm_normalizer.normalizer_version(config), retry)
    totals = {"claims": 0, "assertions": 0, "dead_letter": 0}
    answered: dict[str, dict[int, dict[str, Any]]] = {}   # version → part → answered row
    done: list[str] = []

    def flush() -> None:
        read = []
        for version_id in done:
            parts = answered.pop(version_id)
            claims, found, costs = [], [], []
            for _, row in sorted(parts.items()):
                claims += normalize_llm.claims_from_json(row["claims_json"])
                found += vllm_normalizer.assertions_from_row(row)
                costs.append(vllm_normalizer.cost_from_row(row, config.model_name))
            read.append((version_id, claims, found, costs))
        done.clear()
        if read:
            for key, n in writer.write(read).items():
                totals[key] += n

    try:
        ds = ray.data.from_items([{"version_id": v} for v in versions])
        ds = ds.map_batches(NormalizeInputs, fn_constructor_kwargs={"dsn": dsn, "retry": retry},
                            compute=ray.data.ActorPoolStrategy(size=1), batch_size=batch_size,
                            batch_format="pyarrow", num_cpus=0.1)
        for attempt in range(1, retry.attempts + 1):
            failed: dict[tuple[str, int], dict[str, Any]] = {}
            errors: dict[str, str] = {}
            for batch in processor(ds).iter_batches(batch_size=None, batch_format="pyarrow"):
                for row in batch.to_pylist():
                    version_id, part = row["version_id"], row["part"]
                    error = vllm_normalizer.inference_error(row)
                    if error:
                        failed[(version_id, part)] = {k: row[k] for k in vllm_normalizer.INPUT_COLUMNS}
                        errors[version_id] = error
                        continue
                    answered.setdefault(version_id, {})[part] = row
                    if len(answered[version_id]) == row["parts"]:
                        done.append(version_id)
                        if len(done) >= _VERSIONS_PER_WRITE:
                            flush()
            flush()
            if not failed:
                break
            if attempt == retry.attempts:
                for version_id, error in sorted(errors.items()):
                    answered.pop(version_id, None)
                    totals["dead_letter"] += writer.dead_letter([version_id], GaveUp(attempt, error))
                break
            time.sleep(retry.delay(attempt))
            # The rows that failed go through the processor again; their versions' answered rows wait.
            ds = ray.data.from_items(list(failed.values()))
    finally:
        writer.close()
    return totals
