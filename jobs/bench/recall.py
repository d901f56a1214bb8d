"""`corpusmem bench recall --locomo DIR`: evidence recall of `claims_and_sources_context` on LoCoMo
conversations against retrieval over the raw turns, measured in one run.

Each session becomes a dated Markdown document, the folder is imported through the normal bulk
path (`python -m jobs.import_corpus`, dated by file mtime) into an empty memory, `corpusmem serve`
answers every question over HTTP, and the answer's items (evidence claims, then chunks) are cut
at the character budget. The baselines rank the turns themselves with the same embedding model
(vector), BM25 and their reciprocal rank fusion, cut at the same budget. A memory engine earns its
keep only when it beats retrieval over its own raw material.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jobs import runtime
from jobs.bench import locomo
from jobs.bench import serve as bench_serve
from jobs.bench.locomo import Question, Session, Turn

OPERATION = "claims_and_sources_context"
AS_CLAIM_TEXTS = f"{OPERATION} (claim texts)"
METHODS = (OPERATION, AS_CLAIM_TEXTS, "vector", "bm25", "rrf")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench recall` (`--keep`/`--json` are shared)."""
    parser.add_argument("--locomo", metavar="DIR", type=Path,
                        help="recall: a folder of LoCoMo conversation files (*.json)")
    parser.add_argument("--budget", type=int, default=locomo.BUDGET,
                        help=f"recall: characters of answer context per question (default {locomo.BUDGET})")


def write_documents(sessions: list[Session], folder: Path) -> None:
    """One Markdown document per session, its mtime the session's time (the import dates by it)."""
    folder.mkdir(parents=True, exist_ok=True)
    for session in sessions:
        path = folder / session.filename
        path.write_text(session.markdown(), encoding="utf-8")
        stamp = session.said_at.timestamp()
        os.utime(path, (stamp, stamp))


def import_documents(folder: Path, home: Path) -> float:
    """Import into an empty memory under `home` through the bulk path; the seconds it took."""
    if home.exists():
        raise SystemExit(f"corpusmem bench recall: {home} already holds a memory; pick an empty --keep folder")
    started = time.perf_counter()
    bench_serve.import_into(home, folder, dated_by="mtime")
    return time.perf_counter() - started


def answer_items(answer: dict[str, Any], claim: str = "source_span") -> list[str]:
    """The items of an answer in its order: claims and chunks as its `ranking` orders them (each
    evidence claim, then each chunk, when it has none).

    A claim is counted as its `source_span`, the exact words of the source it stands on: the hit
    rule recognises a turn by its words, and a claim's own text rewrites them ("Maria said that
    …"), so it could never be recognised. `claim="claim_text"` counts the rewritten text instead
    (reported beside it, so that the difference shows)."""
    items = {e["claim_id"]: e[claim] for e in answer.get("evidence", ())}
    items.update((c["chunk_id"], c["chunk_text"]) for c in answer.get("chunks", ()))
    order = [r["item_id"] for r in answer.get("ranking", ()) if r["item_id"] in items]
    return [items[i] for i in order] + [text for i, text in items.items() if i not in set(order)]


def ask_memory(url: str, questions: list[Question]) -> list[dict[str, Any]]:
    import httpx

    out = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for q in questions:
            answer = client.post(f"/operations/{OPERATION}", json={"query": q.text})
            answer.raise_for_status()
            out.append(answer.json())
    return out


def rank_turns(turns: list[Turn], questions: list[Question], model) -> dict[str, list[list[int]]]:
    """For each question, the turns of its own conversation ranked by each baseline, with the
    memory's own embedding model and execution (`model`, a ModelRef)."""
    from actors.embedder import load_model

    model = load_model(model, "cpu")
    vectors = model.encode([t.text for t in turns], batch_size=64, normalize_embeddings=True)
    asked = model.encode([q.text for q in questions], batch_size=64, normalize_embeddings=True)
    by_conversation: dict[str, list[int]] = {}
    for i, t in enumerate(turns):
        by_conversation.setdefault(t.conversation, []).append(i)
    bm25 = {c: locomo.BM25([turns[i].text for i in ids]) for c, ids in by_conversation.items()}
    ranked: dict[str, list[list[int]]] = {"vector": [], "bm25": [], "rrf": []}
    for q, qv in zip(questions, asked):
        ids = by_conversation[q.conversation]
        scores = vectors[ids] @ qv
        vector = [ids[j] for j in sorted(range(len(ids)), key=lambda j: (-scores[j], j))]
        lexical = [ids[j] for j in bm25[q.conversation].rank(q.text)]
        ranked["vector"].append(vector)
        ranked["bm25"].append(lexical)
        ranked["rrf"].append(locomo.rrf(vector, lexical))
    return ranked


def bench(args: argparse.Namespace) -> dict[str, Any]:
    if args.locomo is None:
        raise SystemExit("corpusmem bench recall: give the conversations with --locomo DIR")
    sessions, questions = locomo.read_folder(args.locomo)
    turns = [t for s in sessions for t in s.turns]
    by_id = {(t.conversation, t.dia_id): t for t in turns}
    gold = [[by_id[(q.conversation, d)] for d in q.evidence if (q.conversation, d) in by_id] for q in questions]
    settings = runtime.settings()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    write_documents(sessions, work / "documents")
    print(f"importing {len(sessions)} sessions ({len(turns)} turns) into {work / 'home'}", file=sys.stderr, flush=True)
    import_seconds = import_documents(work / "documents", work / "home")
    server, url = bench_serve.start_server(work / "home", work / "serve.log")
    try:
        started = time.perf_counter()
        answers = ask_memory(url, questions)
        ask_seconds = time.perf_counter() - started
    finally:
        bench_serve.stop_server(server)
    (work / "answers.json").write_text(json.dumps(answers))   # for reading what missed
    contexts = {OPERATION: [answer_items(a) for a in answers],
                AS_CLAIM_TEXTS: [answer_items(a, "claim_text") for a in answers]}
    model = runtime.embedding_model(settings, None)
    ranked = rank_turns(turns, questions, model)
    for method, rankings in ranked.items():
        contexts[method] = [[turns[i].line for i in ranking] for ranking in rankings]
    results = {method: [(q, locomo.hit(locomo.context(items, args.budget), g))
                        for q, items, g in zip(questions, contexts[method], gold)] for method in METHODS}
    return {"conversations": sorted({s.conversation for s in sessions}), "sessions": len(sessions),
            "turns": len(turns), "questions": len(questions), "budget": args.budget, "embedding": model.pin,
            "import_seconds": round(import_seconds, 1), "ask_seconds": round(ask_seconds, 1),
            "recall": locomo.recall_table(results),
            "misses": [{"question": q.text, "category": q.category, "evidence": list(q.evidence)}
                       for q, h in results[OPERATION] if not h]}


def render(results: dict[str, Any]) -> str:
    best = max(("vector", "bm25", "rrf"), key=lambda m: results["recall"][m]["all"])
    lines = [f"LoCoMo conversations {', '.join(results['conversations'])}: {results['sessions']} sessions, "
             f"{results['turns']} turns, {results['questions']} questions (categories 1-4), "
             f"budget {results['budget']} characters",
             f"import {results['import_seconds']:.1f} s; {results['questions']} questions over HTTP in "
             f"{results['ask_seconds']:.1f} s", "",
             f"{'method':42} {'all':>6} " + " ".join(f"{'cat ' + str(c):>6}" for c in locomo.CATEGORIES)]
    for method in METHODS:
        row = results["recall"][method]
        lines.append(f"{method:42} {row['all']:>6.3f} " + " ".join(f"{row[str(c)]:>6.3f}" for c in locomo.CATEGORIES))
    ours, theirs = results["recall"][OPERATION]["all"], results["recall"][best]["all"]
    lines += ["", f"{OPERATION} − best baseline ({best}): {ours - theirs:+.3f} (target ≥ +0.10)",
              "(a claim counts as its source span, the words it stands on; the row '(claim texts)' counts its "
              "rewritten text, which the hit rule cannot recognise)"]
    return "\n".join(lines)

