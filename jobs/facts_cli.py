"""`corpusmem facts NAME|TEXT` and `corpusmem delete DOC`: what the memory holds true, in a time
mode, and deleting a document (every version) with the reconciliation that follows."""

from __future__ import annotations

import argparse
from datetime import datetime

from jobs import runtime
from jobs.settings import Settings
from serve.retrieval import facts as facts_retrieval
from sql.read import claims_queries, facts_queries
from sql.store import authority as store
from sql.write import reconcile


def add_facts_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="NAME|TEXT", help="an entity's name, else words of the facts' labels")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--at", metavar="DATE", help="facts true at this instant (YYYY-MM-DD or ISO, UTC if naive)")
    mode.add_argument("--overlap", nargs=2, metavar=("FROM", "TO"), help="facts overlapping this range")
    mode.add_argument("--history", action="store_true", help="facts that began at or before now")
    p.add_argument("--now", metavar="DATE", help="evaluate as of this instant instead of the clock")
    p.add_argument("-k", type=int, default=20, help="at most this many facts (default 20)")


def _instant(text: str) -> datetime:
    """A date or ISO instant from the command line; a bare date means its first instant, UTC."""
    try:
        return runtime.instant(text)
    except ValueError as err:
        raise SystemExit(f"corpusmem facts: {text!r} is not a date (YYYY-MM-DD or ISO 8601)") from err


def time_query(args: argparse.Namespace) -> facts_retrieval.TimeQuery:
    if args.at:
        return facts_retrieval.TimeQuery("at", at=_instant(args.at))
    if args.overlap:
        return facts_retrieval.TimeQuery("overlap", start=_instant(args.overlap[0]), end=_instant(args.overlap[1]))
    return facts_retrieval.TimeQuery("history" if args.history else "current")


def _day(t: datetime | None) -> str:
    if t is None:
        return "…"
    return f"{t:%Y-%m-%d}" if (t.hour, t.minute, t.second) == (0, 0, 0) else t.isoformat()


def render_fact(f: facts_retrieval.FactResult) -> list[str]:
    v = f.validity
    end = "open" if v["valid_precision"] == "open" else _day(v["valid_until"])
    window = "no stated time" if v["valid_from"] is None and v["valid_until"] is None else \
        f"{_day(v['valid_from'])} → {end} ({v['valid_precision']})"
    flags = "" if f.support == "current" else f"  support: {f.support}"
    lines = [f"  {f.label}", f"      {window}; {f.temporal_match}; evidence from {f.evidence_count} "
             f"document{'s' if f.evidence_count != 1 else ''}{flags}"]
    if f.contradiction:
        for other in f.contradiction["co_members"]:
            lines.append(f"      contradicted by: {other['label']} ({other['evidence_count']} document"
                         f"{'s' if other['evidence_count'] != 1 else ''})")
    return lines


def show_facts(settings: Settings, args: argparse.Namespace) -> str:
    time = time_query(args)
    now = _instant(args.now) if args.now else None
    async def ask(conn: facts_queries.Conn) -> tuple[list[tuple[str, str, str]], facts_retrieval.FactsAnswer]:
        candidates = [c for c in await facts_queries.find_entities(conn, args.query) if c[2] == "T0"]
        if candidates:
            return candidates, await facts_retrieval.facts(conn, entity_ids=[c[0] for c in candidates], time=time,
                                                      k=args.k, now=now)
        return candidates, await facts_retrieval.facts(conn, text=args.query, time=time, k=args.k, now=now)

    candidates, answer = facts_queries.read(store.resolve_dsn(settings), ask)
    if candidates:
        head = ", ".join(f"{name} ({eid[:8]})" for eid, name, _ in candidates)
        lines = [f"facts about {head}" + (" — several entities share this name" if len(candidates) > 1 else "")]
    else:
        lines = [f"facts matching {args.query!r}"]
    scope = answer.temporal_scope
    lines[0] += f", time mode {scope['mode']}" + (f" at {_day(scope['at'])}" if scope["at"] else "") + \
        (f" {_day(scope['from'])}..{_day(scope['to'])}" if scope["from"] else "") + \
        f", evaluated at {_day(scope['evaluated_at'])}:"
    if answer.negative:
        lines.append(f"  ({answer.negative['kind']}: {answer.negative['explanation']})")
    for f in answer.facts:
        lines += render_fact(f)
    if answer.truncated:
        lines.append("  … more facts exist; raise -k")
    return "\n".join(lines)


def delete(settings: Settings, ref: str) -> str:
    """Delete a document (all versions) and reconcile the facts it supported."""
    with store.connect(store.resolve_dsn(settings), autocommit=True) as conn:
        doc_id, source_ref = claims_queries.find_document(conn, ref)
        deletion = reconcile.delete_document(conn, doc_id)
    counts = deletion.reconciled
    return (f"deleted {source_ref} (doc {doc_id}): {deletion.claims_retired} claims no longer current; "
            f"{counts['recounted']} facts recounted, {counts['retracted']} retracted")
