"""The actors around the `vllm` extraction: `LoadContexts` turns versions waiting for extraction
into one row per chunk to read (and lands, itself, the chunks an earlier version already read);
`LandClaims` gates the model's answers, embeds the claims and writes them.

Between the two run the Selection and Claimify processors (`actors/vllm_extractor.py`), which
keep only `ctx_json`, `reports_json` and their own columns; the context carries `version_id` and
`chunk_ord`, which is all `LandClaims` needs to find the chunk again.

As stages of the import (after `write`), `LoadContexts` reads the writer's report rows and hands
them on, one carrier row per batch (`reports_json`, no context), and `LandClaims` gives them back
to the driver with one `EXTRACTED` row for the claims it landed: the driver folds the same rows
as without the LLM. There, a chunk the engine failed on is left pending for the pass that follows
the pipeline (`jobs/extract_llm.py`), which retries it under the run's policy. Read on their own
(that pass), the rows in are version ids and no carrier is made.
"""

from __future__ import annotations

import json
import time

import psycopg
import pyarrow as pa
from pgvector.psycopg import register_vector

from actors.db_writer import REPORT_SCHEMA
from actors.embedder import ModelRef, load_model
from actors.object_store import ObjectStore
from actors.vllm_extractor import claimify_from_row, inference_error, is_carrier
from pipeline import records
from pipeline.claims import extract as claims
from pipeline.claims import llm_io
from pipeline.claims.extraction import CallCost
from sql.read import claims_queries
from sql.write import ingest, writes

CONTEXT_SCHEMA = pa.schema([("ctx_json", pa.string()), ("reports_json", pa.string())])


class LoadContexts:
    def __init__(self, dsn: str, object_store: str, extractor: str) -> None:
        self._conn = psycopg.connect(dsn, autocommit=True)
        register_vector(self._conn)
        self._store = ObjectStore(object_store)
        self._extractor = extractor

    def __call__(self, batch: pa.Table) -> pa.Table:
        out: list[dict] = []
        if "outcome" in batch.column_names:   # the writer's report rows: the import's own stages
            reports = batch.to_pylist()
            out.append({"ctx_json": None, "reports_json": json.dumps(reports, default=str)})
            versions = [r["version_id"] for r in reports if r["version_id"] and records.is_active(r)]
        else:
            versions = batch.column("version_id").to_pylist()
        for version_id in versions:
            found = claims_queries.extraction_inputs(self._conn, version_id)
            row = {"version_id": version_id, "doc_id": found["doc_id"], "title": found["title"],
                   "source_modified_at": found["source_modified_at"],
                   "markdown": self._store.get(found["object_key"]).decode("utf-8"),
                   "sections": [{"ord": s_ord, "role": role} for *_, s_ord, role, _ in found["chunks"]],
                   "chunks": [{"ord": o, "char_start": s, "char_end": e, "text_hash": h, "section_ord": s_ord}
                              for o, s, e, h, s_ord, _, _ in found["chunks"]],
                   "prior_claims": ingest.prior_claims(self._conn, found["doc_id"], version_id),
                   "claims": [], "ledger": [], "costs": []}
            reusable = claims.reusable(row, self._extractor)
            done = {o for o, *_, extracted_by in found["chunks"] if extracted_by == self._extractor}
            with self._conn.transaction(), self._conn.cursor() as cur:
                for index, chunk in enumerate(row["chunks"]):
                    if chunk["ord"] in done:
                        continue  # landed by an earlier, interrupted pass
                    if claims.states_nothing(row, chunk):
                        writes.mark_chunk_extracted(cur, version_id, chunk["ord"], self._extractor)
                    elif chunk["text_hash"] in reusable:
                        row["claims"].extend(claims.reused_claims(chunk, reusable[chunk["text_hash"]]))
                        writes.mark_chunk_extracted(cur, version_id, chunk["ord"], self._extractor)
                    else:
                        out.append({"ctx_json": llm_io.ctx_to_json(claims.build_context(row, index)),
                                    "reports_json": None})
                # Reused claims land here, before this version's other chunks are handed on, so
                # whoever lands the last chunk sees every other chunk marked read.
                writes.write_claims(cur, [row], self._extractor)
                writes.finish_extraction(cur, [version_id])
        return pa.Table.from_pylist(out, schema=CONTEXT_SCHEMA)


class LandClaims:
    def __init__(self, dsn: str, extractor: str, model_label: str, embed_model: ModelRef, embed_device: str,
                 embed_batch_size: int) -> None:
        self._conn = psycopg.connect(dsn, autocommit=True)
        register_vector(self._conn)
        self._extractor = extractor
        self._model_label = model_label
        self._embedder = load_model(embed_model, embed_device)
        self._batch_size = embed_batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        """The carried report rows, then one `EXTRACTED` row: the claims and ledger rows landed."""
        started = time.perf_counter(), time.process_time()
        reports, landed = [], []
        for row in batch.to_pylist():
            if row.get("reports_json"):
                reports += json.loads(row["reports_json"])
            if is_carrier(row) or inference_error(row):
                continue   # a failed chunk stays pending: the pass after the pipeline retries it
            landed.append(self._target(row))
        todo = [c for t in landed for c in t["claims"]]
        if todo:
            vectors = self._embedder.encode([c["claim_text"] for c in todo], batch_size=self._batch_size,
                                            normalize_embeddings=True, show_progress_bar=False)
            for claim, vector in zip(todo, vectors):
                claim["embedding"] = vector.astype("<f4").tobytes()
        if landed:
            with self._conn.transaction(), self._conn.cursor() as cur:
                writes.write_claims(cur, landed, self._extractor)
                for t in landed:
                    writes.mark_chunk_extracted(cur, t["version_id"], t["chunk_ord"], self._extractor)
                writes.finish_extraction(cur, sorted({t["version_id"] for t in landed}))
        extracted = {"outcome": records.EXTRACTED, "chunks": len(landed), "claims": len(todo),
                     "ledger_rows": sum(len(t["ledger"]) for t in landed), "s_extract": time.perf_counter() - started[0],
                     "c_extract": time.process_time() - started[1]}
        return pa.Table.from_pylist([_report_row(r) for r in (*reports, extracted)], schema=REPORT_SCHEMA)

    def _target(self, row: dict) -> dict:
        """An answered chunk as the writer's target: its claims through the gate, its ledger, costs."""
        ctx, selection, result, cost = claimify_from_row(row, self._model_label)
        doc_id, chunk_start, text_hash, asserted_at = claims_queries.chunk_keys(self._conn, ctx.version_id, ctx.chunk_ord)
        target = {"version_id": ctx.version_id, "doc_id": doc_id, "source_modified_at": asserted_at,
                  "chunk_ord": ctx.chunk_ord, "claims": [], "ledger": [], "costs": []}
        chunk = {"ord": ctx.chunk_ord, "char_start": chunk_start, "text_hash": text_hash}
        claims.land(target, chunk, ctx, selection, result, self._extractor)
        selection_cost = CallCost(cost.backend, cost.model, 1, int(row.get("selection_tokens_in") or 0),
                                  int(row.get("selection_tokens_out") or 0),
                                  float(row.get("selection_device_seconds") or 0.0))
        target["costs"] = [claims.cost_row(c) for c in (selection_cost, cost)]
        return target


def _report_row(report: dict) -> dict:
    """A row of `REPORT_SCHEMA`: a carried one back from JSON (numbers and flags survive it as they
    are), or the `EXTRACTED` row, whose other columns are empty."""
    return {name: report.get(name) for name in REPORT_SCHEMA.names}
