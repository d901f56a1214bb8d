"""`corpusmem claims DOC` and `corpusmem why-not DOC "text"`: a document's claims, and why a
sentence of it is not in memory, answered from the audit ledger."""

from __future__ import annotations

import re

from actors.object_store import ObjectStore
from jobs.settings import Settings
from sql.read import claims_queries as q
from sql.store import authority as store


def _window(valid_from, valid_until, precision, kind) -> str:
    if valid_from is None and valid_until is None:
        return "no stated time"
    start = f"{valid_from:%Y-%m-%d}" if valid_from else "…"
    end = f"{valid_until:%Y-%m-%d}" if valid_until else "open"
    return f"{kind or 'time'} {start}..{end} ({precision})"


def _page_lines(page: int | None, first: int | None, last: int | None) -> str:
    """Where an OCR'd claim is on its page: " page 3, lines 4–6"; "" for text that was not OCR'd."""
    if page is None:
        return ""
    return f" page {page}, line {first}" if first == last else f" page {page}, lines {first}–{last}"


def show_claims(settings: Settings, ref: str) -> str:
    with store.connect(store.resolve_dsn(settings)) as conn:
        doc_id, source_ref = q.find_document(conn, ref)
        found = q.latest_version(conn, doc_id)
        if found is None:
            return f"{source_ref}: no converted version yet (see `corpusmem status`)"
        rows = q.claims_of_version(conn, found[0])
    lines = [f"{source_ref} (doc {doc_id}, version {found[0]}): {len(rows)} claims"]
    for start, end, text, span, attributed, asserted, vfrom, vuntil, precision, kind, current, _, *ocr in rows:
        flags = ", ".join(f for f in ("attributed" if attributed else "",
                                      "" if current else "not current") if f)
        said = f"said {asserted:%Y-%m-%d}" if asserted else "undated source"
        lines.append(f"[{start}:{end}]{_page_lines(*ocr)} {text}")
        lines.append(f"    source: {' '.join(span.split())!r}; {said}; {_window(vfrom, vuntil, precision, kind)}"
                     + (f"; {flags}" if flags else ""))
    return "\n".join(lines)


def why_not(settings: Settings, ref: str, text: str) -> str:
    with store.connect(store.resolve_dsn(settings)) as conn:
        doc_id, source_ref = q.find_document(conn, ref)
        found = q.latest_version(conn, doc_id)
        if found is None:
            return f"{source_ref}: no converted version yet, so nothing of it is in memory"
        version_id, key = found
        markdown = ObjectStore(settings.object_store_uri).get(key).decode("utf-8")
        # whitespace in the question matches any run of whitespace in the document
        pattern = re.compile(r"\s+".join(map(re.escape, text.split())), re.IGNORECASE)
        hits = list(pattern.finditer(markdown))
        if not hits:
            return f"{text!r} does not occur in the converted text of {source_ref} (version {version_id})"
        lines = []
        for hit in hits[:5]:
            start, end = hit.span()
            lines.append(f"{source_ref} [{start}:{end}]:")
            claims = q.claims_overlapping(conn, version_id, start, end)
            ledger = q.ledger_overlapping(conn, version_id, start, end)
            lines += [f"  in memory as a claim: {c[0]}" for c in claims]
            lines += [f"  {decision}: {reason or ''}" + (f" ({detail})" if detail and decision != "selection_drop"
                                                          else "") for decision, reason, detail, *_ in ledger]
            if not claims and not ledger:
                chunk = q.chunk_at(conn, version_id, start)
                if chunk is None:
                    lines.append("  not in any chunk (markup between blocks)")
                elif chunk[2] is None:
                    lines.append(f"  chunk {chunk[0]} has not been read by an extractor yet")
                else:
                    lines.append(f"  no statement there: headings, slide markers and table rules are "
                                 f"not statements (chunk {chunk[0]}, section role {chunk[1]})")
    return "\n".join(lines)
