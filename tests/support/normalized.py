"""A document of claims read by the rules' normalizer in process, as an import reads a version."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pipeline.facts import normalize


def normalized(texts: Sequence[str], *, page: str | None = None,
               said: datetime | None = None) -> tuple[list[tuple], set[str]]:
    """(kind, subject key, predicate, object key) of each assertion, and the surface of each
    mention, of one document whose claims are `texts`, said at `said`; with `page`, the document's
    whole text is that page (the code it sets, its front matter), else the store gives none."""
    claims = [{"claim_id": f"c{i}", "doc_id": "d", "claim_text": t, "asserted_at": said} for i, t in enumerate(texts)]
    if page is not None:
        for claim in claims:
            claim["version_text"] = page
    rows, mentions = normalize.normalize_version(claims, lambda c, o: f"{c}-{o}")
    return [(r["kind"], r["subject_key"], r["predicate"], r["object_key"]) for r in rows], \
        {m["surface"] for m in mentions}
