"""The extractor interface: Selection, then Claimify, then the grounding gate, per chunk.

Backends (`rules`, `vllm`, `openai`) implement `Extractor`: they see labelled passages, never
offsets, and answer with passage labels. The engine turns labels into character spans and the
grounding gate (`pipeline/claims/grounding.py`) decides what is stored. Every decision that keeps a
statement out of memory, or changes its wording, becomes a `LedgerEntry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

DROP_REASONS = ("opinion", "advice", "hypothetical", "generic", "question", "intro", "conclusion",
                "no_info", "ambiguous", "references_boilerplate")
SELECTION_OUTCOMES = ("keep", "keep_flagged", "drop")
PRECISIONS = ("instant", "day", "month", "quarter", "year", "open", "unknown")
VALID_KINDS = ("event_time", "effective_period", "measurement_period", "proposition_validity")
LEDGER_DECISIONS = ("selection_drop", "selection_keep_flagged", "decontext_edit", "claimify_omitted",
                    "grounding_rejected")
# Where a piece of text Claimify added came from.
CONTEXT_ORIGINS = ("header", "target", "neighbour", "introduced", "speaker", "date_resolution")

Outcome = Literal["keep", "keep_flagged", "drop"]


@dataclass(frozen=True)
class Passage:
    """A labelled statement the engine shows a model: a sentence, or one conversation turn."""

    label: str                      # "P3": what the model cites
    char_start: int                 # absolute offsets into document.md
    char_end: int
    text: str                       # document.md[char_start:char_end]
    in_target: bool                 # inside the target chunk; else a permitted neighbour
    speaker: str | None = None      # conversation turns: who spoke
    turn_time: datetime | None = None  # conversation turns: the turn's own timestamp (UTC)
    turn_id: str | None = None


@dataclass(frozen=True)
class ChunkContext:
    """Everything a backend may read for one target chunk, and nothing else."""

    version_id: str
    chunk_ord: int
    title: str
    header: str                     # the document header: title, participants, first lines
    asserted_at: datetime | None    # the version's source_modified_at
    section_role: str
    passages: tuple[Passage, ...]   # target passages and permitted neighbours, in document order
    introduced: tuple[tuple[str, str], ...] = ()  # (name, label of the passage that introduced it)

    @property
    def target(self) -> tuple[Passage, ...]:
        return tuple(p for p in self.passages if p.in_target)

    def passage(self, label: str) -> Passage | None:
        return next((p for p in self.passages if p.label == label), None)


@dataclass(frozen=True)
class Selected:
    label: str
    outcome: Outcome
    reason: str | None = None       # a DROP_REASONS entry for drops; a short note for flags


@dataclass(frozen=True)
class SelectionResult:
    statements: tuple[Selected, ...]            # exactly one per target passage
    introduced: tuple[tuple[str, str], ...] = ()  # (name, label): people, organisations, works, events


@dataclass(frozen=True)
class AddedContext:
    text: str
    origin: str                     # a CONTEXT_ORIGINS entry
    label: str | None = None        # the passage it came from, when it came from one


@dataclass(frozen=True)
class DraftClaim:
    """What Claimify proposes; nothing here is trusted until the grounding gate passes it."""

    claim_text: str
    cited: tuple[str, ...]          # passage labels, origin first
    is_attributed: bool = False
    valid_from: datetime | None = None
    valid_until: datetime | None = None   # inclusive
    precision: str = "unknown"
    kind: str | None = None
    resolved_dates: tuple[str, ...] = ()  # ISO dates the claim resolved and wrote into its text
    added_context: tuple[AddedContext, ...] = ()
    entailment_self_verdict: str | None = None  # stored for audit, decides nothing


@dataclass(frozen=True)
class Omitted:
    label: str
    cause: str


@dataclass(frozen=True)
class CallCost:
    backend: str
    model: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    device_seconds: float = 0.0


@dataclass(frozen=True)
class ClaimifyResult:
    drafts: tuple[DraftClaim, ...]
    omitted: tuple[Omitted, ...] = ()


@dataclass(frozen=True)
class LedgerEntry:
    decision: str                   # a LEDGER_DECISIONS entry
    char_start: int
    char_end: int
    reason: str | None = None       # drop reason, failed check, omission cause
    detail: str | None = None


class Extractor(Protocol):
    """A backend. Both calls take a batch of chunks so GPU and HTTP backends can batch them."""

    name: str
    version: str

    def select(self, chunks: list[ChunkContext]) -> tuple[list[SelectionResult], list[CallCost]]: ...

    def claimify(self, chunks: list[ChunkContext], selections: list[SelectionResult]
                 ) -> tuple[list[ClaimifyResult], list[CallCost]]: ...

