"""`corpusmem entities`: merge review. The resolver proposes merges; a person decides them.

    corpusmem entities proposals [--status proposed|accepted|rejected] [--json]
    corpusmem entities merge KEEP MERGED [--reason TEXT]
    corpusmem entities unmerge MERGED [--reason TEXT]
    corpusmem entities accept PROPOSAL [--keep ENTITY]
    corpusmem entities reject PROPOSAL
    corpusmem entities merges [--all]

Entities are named by id or exact name; a proposal by its id as `proposals` prints it. Every
decision records who made it (`--by`, default `cli:<login>`) and when.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import Any

from tqdm import tqdm

from jobs.settings import Settings
from sql.store import authority as store
from sql.write import identity


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = sub.add_parser("proposals", help="merge proposals with their evidence")
    p.add_argument("--status", choices=("proposed", "accepted", "rejected"), help="only proposals in this state")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p = sub.add_parser("merge", help="merge MERGED into KEEP (a reversible redirect); facts are decided again")
    p.add_argument("keep", metavar="KEEP", help="the surviving entity: id or exact name")
    p.add_argument("merged", metavar="MERGED", help="the entity merged away: id or exact name")
    p.add_argument("--reason", default="merged by review", help="why, kept with the decision")
    p = sub.add_parser("unmerge", help="undo the merge of MERGED: the memory reads as before it")
    p.add_argument("merged", metavar="MERGED", help="the merged-away entity: id or exact name")
    p.add_argument("--reason", default="unmerged by review", help="why, kept with the decision")
    p = sub.add_parser("accept", help="accept a proposal: merge its two entities")
    p.add_argument("proposal", metavar="PROPOSAL", help="the proposal id (ENTITY_ID:ENTITY_ID)")
    p.add_argument("--keep", metavar="ENTITY", help="which of the two survives (default: the more mentioned)")
    p = sub.add_parser("reject", help="reject a proposal: the two entities stay apart")
    p.add_argument("proposal", metavar="PROPOSAL", help="the proposal id (ENTITY_ID:ENTITY_ID)")
    p = sub.add_parser("merges", help="the standing merges, who decided them and when")
    p.add_argument("--all", action="store_true", help="undone merges too")
    for p in sub.choices.values():
        p.add_argument("--by", default=f"cli:{getpass.getuser()}", help="who decides (default: cli:<login>)")


def main(settings: Settings, args: argparse.Namespace) -> int:
    try:
        with store.connect(store.resolve_dsn(settings), autocommit=True) as conn:
            print(_run(conn, args))
    except identity.IdentityError as err:
        print(f"corpusmem entities: {err}", file=sys.stderr)
        return 2
    return 0


def _run(conn: Any, args: argparse.Namespace) -> str:
    if args.action == "proposals":
        found = identity.proposals(conn, args.status)
        if args.json:
            return json.dumps(found, indent=1, default=str)
        return "\n".join(render_proposal(p) for p in found) if found else "no merge proposals"
    if args.action == "reject":
        return render_proposal(identity.reject(conn, args.proposal, args.by))
    if args.action == "unmerge":
        done = identity.unmerge(conn, args.merged, args.by, args.reason)
        return (f"unmerged {done.merged.name} ({done.merged.entity_id}) from {done.survivor.name}"
                f" ({done.survivor.entity_id}); {done.facts_retired} facts of the merge retired")
    if args.action == "merges":
        rows = identity.redirects(conn, args.all)
        return "\n".join(
            f"{r['merged']} ({r['merged_id']}) → {r['survivor']} ({r['survivor_id']}): {r['reason']};"
            f" by {r['decided_by']} at {r['decided_at']:%Y-%m-%d %H:%M:%S}"
            + (f"; undone by {r['undone_by']} at {r['undone_at']:%Y-%m-%d %H:%M:%S}" if r["undone_at"] else "")
            for r in rows) or "no merges"
    with tqdm(unit="entity", desc="adjudicating", file=sys.stderr, disable=not sys.stderr.isatty(),
              leave=False) as bar:
        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        if args.action == "accept":
            done = identity.accept(conn, args.proposal, args.by, args.keep, progress)
        else:
            done = identity.merge(conn, args.keep, args.merged, args.by, args.reason, progress)
    return (f"merged {done.merged.name} ({done.merged.entity_id}) into {done.survivor.name}"
            f" ({done.survivor.entity_id}); facts of {done.anchors} entities decided again: {done.assertions}"
            f" assertions, {done.facts} facts, {done.decisions} decisions")


def render_proposal(p: dict[str, Any]) -> str:
    a, b = p["entities"]
    lines = [f"{p['proposal_id']}  {p['status']}  score {p['score']:.2f}  {p['reason']}"]
    for e in (a, b):
        lines.append(f"  {e['name']} ({e['entity_id']}): {e['mentions']} mentions in {e['documents']} documents;"
                     f" spelled {', '.join(e['aliases']) or '—'}")
    lines.append("  named together in: " + ("; ".join(p["shared_documents"]) or "no document"))
    if p["decided_by"]:
        lines.append(f"  {p['status']} by {p['decided_by']} at {p['decided_at']:%Y-%m-%d %H:%M:%S}")
    return "\n".join(lines)
