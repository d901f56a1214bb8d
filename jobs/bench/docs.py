"""`corpusmem bench docs --docs DIR`: what a memory made from documentation holds that a reader
would call junk, measured on a folder of real documentation pages.

The folder is imported through the normal bulk path into an empty memory; then, through
`memory_v1` (what a reader is served), every live entity is judged by `docs_quality.junk_entity`
and every live claim by `docs_quality.on_code` on its source span. The rules are the benchmark's
own, apart from the pipeline's. The baseline is what the same rules find in the text itself:
every capitalised run of words of the documents as a naive name finder would take it, so the
entity figure is read against the junk a reader meets without the memory's name rules. A seeded
draw of entities and of relations is printed for a person to judge.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from jobs.bench import docs_quality
from jobs.bench import serve as bench_serve

SAMPLE = 50
# a capitalised run as a name finder without rules takes it: "Use the", "If", "Graph Memory"
_CAPITALISED_RUN = re.compile(r"(?<![\w'’`])[A-Z][\w'’&-]*(?:\.[\w'’&-]+)*(?:[ \t]+[A-Z][\w'’&-]*(?:\.[\w'’&-]+)*)*")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs-dir", metavar="DIR", type=Path,
                        help="docs: a folder of documentation pages (Markdown, HTML, ...)")
    parser.add_argument("--sample", type=int, default=SAMPLE,
                        help=f"docs: entities and relations drawn for reading (default {SAMPLE})")
    parser.add_argument("--names", metavar="FILE", type=Path,
                        help="docs: names a reader wrote down from the pages, one a line ('#' comments): "
                             "how many the memory resolves, as resolve_entity does")


def names_listed(path: Path) -> list[str]:
    """The names of a reader's list: one a line, blank lines and `#` comments skipped, each once."""
    found: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        name = line.split("#", 1)[0].strip()
        if name and name not in found:
            found.append(name)
    return found


def resolved(dsn: str, listed: list[str]) -> dict[str, str | None]:
    """Each name's best tier as `resolve_entity` finds it (T0 an exact spelling, T1 a similar
    one, T2 a similar sound), None where the memory knows no such entity."""
    import asyncio

    import psycopg

    from sql.read import facts_queries

    async def ask() -> dict[str, str | None]:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            return {n: next((tier for _, _, tier in await facts_queries.find_entities(conn, n)), None)
                    for n in listed}
    return asyncio.run(ask())


def names_table(tiers: dict[str, str | None]) -> dict[str, Any]:
    exact = [n for n, t in tiers.items() if t == "T0"]
    return {"listed": len(tiers), "exact": len(exact), "exact_share": round(len(exact) / max(1, len(tiers)), 3),
            "similar_only": [n for n, t in tiers.items() if t in ("T1", "T2")],
            "unknown": [n for n, t in tiers.items() if t is None]}


def text_runs(folder: Path) -> list[str]:
    """Every distinct capitalised run of words in the folder's text files."""
    runs: set[str] = set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".md", ".mdx", ".txt")):
        runs.update(m.group() for m in _CAPITALISED_RUN.finditer(path.read_text(encoding="utf-8", errors="replace")))
    return sorted(runs)


def memory_rows(home: Path) -> dict[str, Any]:
    from sql.read import bench_queries
    from sql.store import authority as store

    with store.connect(bench_serve._dsn(home)) as conn:
        return bench_queries.docs_memory(conn)


def junk_table(names: list[str]) -> dict[str, Any]:
    reasons = Counter(docs_quality.junk_entity(n) for n in names)
    junk = sum(c for r, c in reasons.items() if r is not None)
    return {"entities": len(names), "junk": junk, "junk_share": round(junk / max(1, len(names)), 3),
            "reasons": {r: c for r, c in reasons.most_common() if r is not None}}


def bench(args: argparse.Namespace) -> dict[str, Any]:
    if args.docs_dir is None or not args.docs_dir.is_dir():
        raise SystemExit("corpusmem bench docs: give a folder of documentation pages with --docs-dir DIR")
    if args.names is not None and not args.names.is_file():
        raise SystemExit(f"corpusmem bench docs: --names {args.names} is no file (one name a line)")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-docs-"))
    home = work / "home"
    if home.exists():
        raise SystemExit(f"corpusmem bench docs: {home} already holds a memory; pick an empty --keep folder")
    work.mkdir(parents=True, exist_ok=True)
    print(f"importing {args.docs_dir} into {home}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    bench_serve.import_into(home, args.docs_dir, dated_by="path")
    import_seconds = time.perf_counter() - started
    rows = memory_rows(home)
    listed = names_table(resolved(bench_serve._dsn(home), names_listed(args.names))) if args.names else None
    names = [name for name, _ in rows["entities"]]
    spans = rows["claim_spans"]
    on_code = [s for s in spans if docs_quality.on_code(s)]
    draw = random.Random(args.seed)
    entities = draw.sample(rows["entities"], min(args.sample, len(rows["entities"])))
    relations = draw.sample(rows["relations"], min(args.sample, len(rows["relations"])))
    return {"folder": str(args.docs_dir), "documents": rows["documents"], "import_seconds": round(import_seconds, 1),
            "memory": junk_table(names), "text_runs": junk_table(text_runs(args.docs_dir)),
            "claims": len(spans), "claims_on_code": len(on_code),
            "claims_on_code_share": round(len(on_code) / max(1, len(spans)), 3),
            "relations": len(rows["relations"]), "observations": rows["observations"],
            "drawn_entities": [{"name": n, "mentions": c, "junk": docs_quality.junk_entity(n)} for n, c in entities],
            "drawn_relations": [{"fact_label": label} for label in relations], "names": listed,
            "code_claims_example": on_code[:10]}


def render(results: dict[str, Any]) -> str:
    memory, runs = results["memory"], results["text_runs"]
    lines = [f"{results['folder']}: {results['documents']} documents imported in {results['import_seconds']:.1f} s", "",
             f"junk entities (rules in jobs/bench/docs_quality.py): {memory['junk']} of {memory['entities']} "
             f"= {memory['junk_share']:.3f} (target ≤ 0.05)",
             "  by reason: " + (", ".join(f"{r} {c}" for r, c in memory["reasons"].items()) or "none"),
             f"  baseline, every capitalised run of the text as a name: {runs['junk']} of {runs['entities']} "
             f"= {runs['junk_share']:.3f}",
             f"claims on code: {results['claims_on_code']} of {results['claims']} = "
             f"{results['claims_on_code_share']:.3f} (target ≤ 0.02)",
             f"facts: {results['relations']} relations, {results['observations']} observations", ""]
    if results.get("names"):
        names = results["names"]
        lines += [f"names a reader wrote down: {names['exact']} of {names['listed']} resolve exactly = "
                  f"{names['exact_share']:.3f} (target ≥ 0.9)",
                  "  only by a similar spelling or sound: " + (", ".join(names["similar_only"]) or "none"),
                  "  unknown: " + (", ".join(names["unknown"]) or "none"), ""]
    lines += [f"{len(results['drawn_entities'])} entities drawn (name, live mentions, junk by the rules):"]
    lines += [f"  {e['name']!r:50} {e['mentions']:>4}  {e['junk'] or ''}" for e in results["drawn_entities"]]
    lines += ["", f"{len(results['drawn_relations'])} relations drawn:"]
    lines += [f"  {r['fact_label']}" for r in results["drawn_relations"]]
    if results["code_claims_example"]:
        lines += ["", "claims on code (first ten source spans):"]
        lines += [f"  {s[:110]!r}" for s in results["code_claims_example"]]
    return "\n".join(lines)
