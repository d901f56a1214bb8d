"""Precision and recall of the rules normalizer on a labelled set of claims.

Each labelled line holds a claim's text, its document's topic and the assertions a careful reader
expects; an assertion matches when its kind, names (case-folded, determiners off), predicate and
negation agree. A line is read two ways: the claim alone (`normalize.normalize_claim`, what the
patterns make of the sentence) and as an import reads it, a document of that one claim
(`normalize.version_rows`, where the document's name rules decide which ends are entities).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.facts import names, normalize
from pipeline.time import timeparse

Key = tuple


@dataclass
class Score:
    lines: int = 0
    expected: int = 0
    predicted: int = 0
    matched: int = 0
    misses: list[dict] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0


def _key(item: list | tuple) -> Key:
    if item[0] == "relation":
        negated = len(item) > 4 and item[4] == "negated"
        return ("relation", names.key(item[1]), item[2], names.key(item[3]), negated)
    return ("observation", names.key(item[1]))


def _claim(text: str) -> dict:
    claim = {"claim_text": text, "is_attributed": False, "claim_id": 0, "doc_id": 0, "version_text": text}
    window = timeparse.read_time(text, None)
    if window is not None:
        claim.update(valid_from=window.valid_from, valid_until=window.valid_until, precision=window.precision)
    return claim


def predicted_keys(text: str, topic: str | None) -> list[Key]:
    """The claim alone."""
    out = []
    for a in normalize.normalize_claim(_claim(text), topic):
        if a.kind == "relation":
            out.append(("relation", names.key(a.subject), a.predicate, names.key(a.object or ""), a.negated))
        else:
            out.append(("observation", names.key(a.subject)))
    return out


def document_keys(text: str, topic: str | None) -> list[Key]:
    """The claim as a document of its own: the topic is the document's title."""
    claim = _claim(text) | {"title": topic}
    rows, _ = normalize.version_rows([(claim, normalize.normalize_claim(claim, topic))], lambda c, o: (c, o),
                                     normalize.VERSION)
    return [("relation", r["subject_key"], r["predicate"], r["object_key"], r["negated"]) if r["kind"] == "relation"
            else ("observation", r["subject_key"]) for r in rows]


def score_file(path: Path, as_document: bool = False) -> Score:
    """The file's lines read alone, or each as a document of one claim (`as_document`)."""
    read = document_keys if as_document else predicted_keys
    score = Score()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        expected = {_key(e) for e in row["expected"]}
        predicted = set(read(row["text"], row.get("topic")))
        score.lines += 1
        score.expected += len(expected)
        score.predicted += len(predicted)
        score.matched += len(expected & predicted)
        if expected != predicted:
            score.misses.append({"text": row["text"], "topic": row.get("topic"),
                                 "missing": sorted(map(str, expected - predicted)),
                                 "extra": sorted(map(str, predicted - expected))})
    return score
