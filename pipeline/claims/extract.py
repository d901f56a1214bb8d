"""From chunks to claims for a batch of document versions: contexts, the two model steps, the gate.

`extract_batch` runs Selection for every chunk of the batch at once, then Claimify (which sees the
names earlier chunks of the same document introduced), then the grounding gate on every draft;
it fills each row's `claims` and `ledger` and returns what the model calls cost. A chunk whose text an earlier version already
read with the same extractor takes that version's claims (same `claim_id`, spans moved to the new
offsets) and is not shown to any model.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from dataclasses import asdict
from typing import Any

from pipeline.claims import grounding, segment
from pipeline.documents.structure import SILENT_ROLES
from pipeline.claims.extraction import (
    CallCost,
    ChunkContext,
    ClaimifyResult,
    DraftClaim,
    Extractor,
    LedgerEntry,
    SelectionResult,
)

NAMESPACE = uuid.UUID("9d6b1c2e-3f4a-4b5c-8d7e-1a2b3c4d5e6f")

Row = dict[str, Any]


def claim_id_for(extractor: str, doc_id: str, chunk_text_hash: str, rel_start: int, claim_text: str) -> str:
    """Fixed by what was said where: re-running the same extractor on the same passage of the
    same document gives the same ID, and a different document never shares it."""
    return str(uuid.uuid5(NAMESPACE, f"claim\x00{extractor}\x00{doc_id}\x00{chunk_text_hash}\x00"
                                     f"{rel_start}\x00{claim_text}"))


def build_context(row: Row, chunk_index: int) -> ChunkContext:
    chunk = row["chunks"][chunk_index]
    section = next((s for s in row["sections"] if s["ord"] == chunk["section_ord"]), None)
    spans = [(c["char_start"], c["char_end"]) for c in row["chunks"]]
    return ChunkContext(
        version_id=row["version_id"], chunk_ord=chunk["ord"], title=row["title"] or "",
        header=segment.document_header(row["markdown"], row["title"] or ""),
        asserted_at=row["source_modified_at"], section_role=section["role"] if section else "body",
        passages=tuple(segment.context_passages(row["markdown"], spans, chunk_index)))


def states_nothing(row: Row, chunk: Row) -> bool:
    """True for a chunk of a section whose role states nothing (a table's rows): no extractor is
    shown it, so it gives no claim whatever the backend."""
    section = next((s for s in row["sections"] if s["ord"] == chunk["section_ord"]), None)
    return section is not None and section["role"] in SILENT_ROLES


def reusable(row: Row, extractor: str) -> dict[str, list[Row]]:
    """Prior claims by chunk text, for chunks the same extractor already read."""
    found: dict[str, list[Row]] = defaultdict(list)
    for prior in row["prior_claims"] or []:
        if prior["extractor"] == extractor:
            found[prior["chunk_text_hash"]].append(prior)
    return found


def reused_claims(chunk: Row, priors: list[Row]) -> list[Row]:
    out = []
    for prior in priors:
        if prior["claim_id"] is None:
            continue  # the chunk was read and yielded no claim
        start = chunk["char_start"]
        out.append(_claim_row(
            claim_id=prior["claim_id"], chunk_ord=chunk["ord"], claim_text=None, source_span=None,
            char_start=start + prior["rel_start"], char_end=start + prior["rel_end"],
            evidence_spans=[{"char_start": start + s["char_start"], "char_end": start + s["char_end"]}
                            for s in prior["rel_evidence"]],
            reused=True))
    return out


def _claim_row(**values: Any) -> Row:
    row = dict.fromkeys(("claim_id", "chunk_ord", "claim_text", "source_span", "char_start", "char_end",
                         "evidence_spans", "is_attributed", "valid_from", "valid_until", "precision",
                         "kind", "added_context", "entailment_self_verdict", "extractor", "embedding",
                         "reused"))
    row.update(values)
    return row


def cost_row(cost: CallCost, stage: str = "extract_claims") -> Row:
    return {"stage": stage, "backend": cost.backend, "model": cost.model, "calls": cost.calls,
            "tokens_in": cost.tokens_in, "tokens_out": cost.tokens_out, "device_seconds": cost.device_seconds}


def _ledger_row(ctx: ChunkContext, entry: LedgerEntry) -> Row:
    return {"chunk_ord": ctx.chunk_ord, "decision": entry.decision, "reason": entry.reason,
            "detail": entry.detail, "char_start": entry.char_start, "char_end": entry.char_end}


def _selection_ledger(ctx: ChunkContext, selection: SelectionResult) -> list[LedgerEntry]:
    entries = []
    for s in selection.statements:
        passage = ctx.passage(s.label)
        if passage is None:
            continue
        if s.outcome == "drop":
            entries.append(LedgerEntry("selection_drop", passage.char_start, passage.char_end, s.reason,
                                       passage.text[:200]))
        elif s.outcome == "keep_flagged":
            entries.append(LedgerEntry("selection_keep_flagged", passage.char_start, passage.char_end,
                                       s.reason, passage.text[:200]))
    return entries


def _draft_to_claim(row: Row, ctx: ChunkContext, chunk: Row, draft: DraftClaim,
                    spans: tuple[tuple[int, int], ...], extractor: str) -> Row:
    start, end = spans[0]
    return _claim_row(
        claim_id=claim_id_for(extractor, row["doc_id"], chunk["text_hash"], start - chunk["char_start"],
                              draft.claim_text),
        chunk_ord=ctx.chunk_ord, claim_text=draft.claim_text, source_span=ctx.passage(draft.cited[0]).text,
        char_start=start, char_end=end,
        evidence_spans=[{"char_start": s, "char_end": e} for s, e in spans],
        is_attributed=draft.is_attributed, valid_from=draft.valid_from, valid_until=draft.valid_until,
        precision=draft.precision, kind=draft.kind,
        added_context=json.dumps([asdict(a) for a in draft.added_context]),
        entailment_self_verdict=draft.entailment_self_verdict, extractor=extractor, reused=False)


def extract_batch(rows: list[Row], extractor: Extractor) -> list[CallCost]:
    """Fill `claims` and `ledger` of every row (rows with outcome process/resume), in place."""
    contexts: list[tuple[Row, Row, ChunkContext]] = []
    for row in rows:
        row["claims"], row["ledger"] = [], []
        read_before = reusable(row, extractor.version)
        for index, chunk in enumerate(row["chunks"]):
            if states_nothing(row, chunk):
                continue
            if chunk["text_hash"] in read_before:
                row["claims"].extend(reused_claims(chunk, read_before[chunk["text_hash"]]))
            else:
                contexts.append((row, chunk, build_context(row, index)))
        row["prior_claims"] = None
    if not contexts:
        return []

    selections, costs = extractor.select([ctx for _, _, ctx in contexts])
    # Claimify may use the names that earlier chunks of the same document introduced.
    introduced: dict[str, list[tuple[str, str]]] = defaultdict(list)
    enriched = []
    for (row, _, ctx), selection in zip(contexts, selections):
        enriched.append(ChunkContext(**{**ctx.__dict__, "introduced": tuple(introduced[row["version_id"]])}))
        introduced[row["version_id"]].extend(
            (name, f"chunk {ctx.chunk_ord} {label}") for name, label in selection.introduced)
    results, more_costs = extractor.claimify(enriched, selections)

    for (row, chunk, _), ctx, selection, result in zip(contexts, enriched, selections, results):
        land(row, chunk, ctx, selection, result, extractor.version)
    return costs + more_costs


def land(row: Row, chunk: Row, ctx: ChunkContext, selection: SelectionResult, result: ClaimifyResult,
         extractor: str) -> None:
    """Gate every draft of one chunk; append its claims and ledger rows to the row."""
    entries = _selection_ledger(ctx, selection)
    for omitted in result.omitted:
        passage = ctx.passage(omitted.label)
        if passage is not None:
            entries.append(LedgerEntry("claimify_omitted", passage.char_start, passage.char_end,
                                       omitted.cause, passage.text[:200]))
    words = grounding.vocabulary(ctx) if result.drafts else None
    for draft in result.drafts:
        verdict = grounding.check(ctx, selection, draft, words)
        origin = ctx.passage(draft.cited[0]) if draft.cited else None
        at = (origin.char_start, origin.char_end) if origin else (chunk["char_start"], chunk["char_start"])
        if not verdict.passed:
            entries.append(LedgerEntry("grounding_rejected", *at, verdict.check,
                                       f"{verdict.detail}: {draft.claim_text[:200]}"))
            continue
        if draft.added_context:
            entries.append(LedgerEntry("decontext_edit", *at, None,
                                       "; ".join(f"{a.origin}: {a.text}" for a in draft.added_context)))
        claim = _draft_to_claim(row, ctx, chunk, draft, verdict.evidence_spans, extractor)
        if all(c["claim_id"] != claim["claim_id"] for c in row["claims"]):
            row["claims"].append(claim)
    row["ledger"].extend(_ledger_row(ctx, e) for e in entries)
