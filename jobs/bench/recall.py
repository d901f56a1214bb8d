"""`corpusmem bench recall --locomo DIR | --longmemeval DIR`: what `claims_and_sources_context` hands
an agent on LoCoMo conversations or LongMemEval chats, against retrieval over the raw turns,
measured in one run.

Each session becomes a dated Markdown document, the folder is imported through the normal bulk
path (`python -m jobs.import_corpus`, dated by file mtime) into an empty memory, `corpusmem serve`
answers every question over HTTP, and the answer's items (evidence claims, then chunks) are cut
at the character budget. The baselines rank the turns themselves, each as its document renders
it, with the same embedding model (vector), BM25 and their reciprocal rank fusion, cut at the
same budget. Three figures: evidence recall (a gold turn in the context), answer containment
(the gold answer in the context) and Selection against the observations (which turns got a live
claim), each per conversation: every conversation is the held-out fold of the other two, and
the figure to quote is the mean of the folds. A memory engine earns its keep only when it beats
retrieval over its own raw material.

LongMemEval (`jobs.bench.longmemeval`) follows its own README: every session of every question in
one memory, the baselines over every turn of that memory, the same budget and rules, and three
folds by question index mod 3 instead of conversations; its figures are reported per question
type.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jobs import runtime
from jobs.bench import locomo, longmemeval
from jobs.bench import serve as bench_serve
from jobs.bench.locomo import Question, Session, Turn

OPERATION = "claims_and_sources_context"
AS_CLAIM_TEXTS = f"{OPERATION} (claim texts)"
BASELINES = ("vector", "bm25", "rrf")
METHODS = (OPERATION, AS_CLAIM_TEXTS, *BASELINES)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `bench recall` (`--keep`/`--json` are shared)."""
    parser.add_argument("--locomo", metavar="DIR", type=Path,
                        help="recall: a folder of LoCoMo conversation files (*.json)")
    parser.add_argument("--longmemeval", metavar="DIR", type=Path,
                        help="recall: a folder of LongMemEval question files (*.json), e.g. its oracle/")
    parser.add_argument("--budget", type=int, default=locomo.BUDGET,
                        help=f"recall: characters of answer context per question (default {locomo.BUDGET})")


def write_documents(sessions: Sequence[Session | longmemeval.Session], folder: Path) -> None:
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
            # a question is asked when the set says it is: its "two weeks ago" is read against that
            asked = {"asked_at": q.asked_at.isoformat()} if q.asked_at else {}
            answer = client.post(f"/operations/{OPERATION}", json={"query": q.text, **asked})
            answer.raise_for_status()
            out.append(answer.json())
    return out


def rank_turns(turns: list[Turn], questions: Sequence[Question], model, whole_memory: bool = False
               ) -> dict[str, list[list[int]]]:
    """For each question, the turns of its own conversation (every turn, with `whole_memory`)
    ranked by each baseline, with the memory's own embedding model and execution (`model`, a
    ModelRef). Each turn is indexed as its document renders it (marker, time, speaker, text): what
    a retriever over the same documents would index and hand an agent."""
    from actors.embedder import load_model

    model = load_model(model, "cpu")
    vectors = model.encode([t.line for t in turns], batch_size=64, normalize_embeddings=True)
    asked = model.encode([q.text for q in questions], batch_size=64, normalize_embeddings=True)
    def pool(conversation: str) -> str:
        return "" if whole_memory else conversation

    by_conversation: dict[str, list[int]] = {}
    for i, t in enumerate(turns):
        by_conversation.setdefault(pool(t.conversation), []).append(i)
    bm25 = {c: locomo.BM25([turns[i].line for i in ids]) for c, ids in by_conversation.items()}
    ranked: dict[str, list[list[int]]] = {"vector": [], "bm25": [], "rrf": []}
    for q, qv in zip(questions, asked):
        ids = by_conversation[pool(q.conversation)]
        scores = vectors[ids] @ qv
        vector = [ids[j] for j in sorted(range(len(ids)), key=lambda j: (-scores[j], j))]
        lexical = [ids[j] for j in bm25[pool(q.conversation)].rank(q.text)]
        ranked["vector"].append(vector)
        ranked["bm25"].append(lexical)
        ranked["rrf"].append(locomo.rrf(vector, lexical))
    return ranked


def memory_records(home: Path) -> tuple[dict[str, list[int]], dict[str, Any]]:
    """Where the memory's live claims start (by session file) and its last import's counts."""
    from sql.read import bench_queries
    from sql.store import authority as store

    with store.connect(bench_serve._dsn(home)) as conn:
        return bench_queries.live_claim_starts(conn), bench_queries.last_import_report(conn)["counts"]


def score(questions: Sequence[Question], contexts: dict[str, list[list[str]]], gold: list[list[Turn]],
          budget: int) -> dict[str, dict[str, list[tuple[Question, bool]]]]:
    """Per method, the two measures of every question: evidence recall (a claim counted as its
    source span) and answer containment (a claim counted as its claim text)."""
    out: dict[str, dict[str, list[tuple[Question, bool]]]] = {"evidence": {}, "containment": {}}
    for method in METHODS:
        out["evidence"][method] = [(q, locomo.hit(locomo.context(items, budget), g))
                                   for q, items, g in zip(questions, contexts[method], gold)]
    for method in (OPERATION, *BASELINES):
        items_of = contexts[AS_CLAIM_TEXTS if method == OPERATION else method]
        out["containment"][method] = [(q, locomo.contains_answer(locomo.context(items, budget), q.answer))
                                      for q, items in zip(questions, items_of)]
    return out


def by_fold(scored: dict[str, dict[str, list[tuple[Question, bool]]]], conversations: list[str],
            fold_of: Callable[[Question], str] = lambda q: q.conversation,
            categories: Sequence[int | str] = locomo.CATEGORIES
            ) -> dict[str, dict[str, dict[str, dict[str, float | int]]]]:
    """{measure: {fold: {method: table}}}: each fold (a conversation, or what `fold_of` names) is
    held out from the others, and "mean" is the mean of the folds' figures per method and
    category."""
    folds: dict[str, dict[str, dict[str, dict[str, float | int]]]] = {}
    for measure, methods in scored.items():
        folds[measure] = {c: locomo.recall_table({m: [(q, h) for q, h in rows if fold_of(q) == c]
                                                  for m, rows in methods.items()}, categories)
                          for c in conversations}
        folds[measure]["mean"] = {m: {key: round(sum(folds[measure][c][m][key] for c in conversations)
                                                 / len(conversations), 3)
                                      for key in ("all", *map(str, categories))}
                                  for m in methods}
    return folds


def _ask_a_memory(sessions: Sequence[Session | longmemeval.Session], questions: Sequence[Question], keep: str | None
                  ) -> tuple[Path, float, dict[str, list[int]], dict[str, Any], list[dict[str, Any]], float]:
    """The sessions imported into an empty memory (under --keep or a temp dir) and the questions
    asked over HTTP: (work dir, import seconds, claim starts, import counts, answers, ask seconds)."""
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="corpusmem-bench-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    write_documents(sessions, work / "documents")
    turns = sum(len(s.turns) for s in sessions)
    print(f"importing {len(sessions)} sessions ({turns} turns) into {work / 'home'}", file=sys.stderr, flush=True)
    import_seconds = import_documents(work / "documents", work / "home")
    claim_starts, counts = memory_records(work / "home")
    server, url = bench_serve.start_server(work / "home", work / "serve.log")
    try:
        started = time.perf_counter()
        answers = ask_memory(url, list(questions))
        ask_seconds = time.perf_counter() - started
    finally:
        bench_serve.stop_server(server)
    (work / "answers.json").write_text(json.dumps(answers))   # for reading what missed
    return work, import_seconds, claim_starts, counts, answers, ask_seconds


def bench(args: argparse.Namespace) -> dict[str, Any]:
    if (args.locomo is None) == (getattr(args, "longmemeval", None) is None):
        raise SystemExit("corpusmem bench recall: give exactly one of --locomo DIR (LoCoMo conversations) "
                         "or --longmemeval DIR (LongMemEval questions)")
    if args.longmemeval is not None:
        return bench_longmemeval(args)
    sessions, questions = locomo.read_folder(args.locomo)
    conversations = sorted({s.conversation for s in sessions})
    cited = {(path.stem, t) for path in sorted(args.locomo.glob("*.json")) for t in locomo.observed_turns(path)}
    turns = [t for s in sessions for t in s.turns]
    by_id = {(t.conversation, t.dia_id): t for t in turns}
    gold = [[by_id[(q.conversation, d)] for d in q.evidence if (q.conversation, d) in by_id] for q in questions]
    settings = runtime.settings()
    _, import_seconds, claim_starts, counts, answers, ask_seconds = _ask_a_memory(sessions, questions, args.keep)
    contexts = {OPERATION: [answer_items(a) for a in answers],
                AS_CLAIM_TEXTS: [answer_items(a, "claim_text") for a in answers]}
    model = runtime.embedding_model(settings, None)
    ranked = rank_turns(turns, questions, model)
    for method, rankings in ranked.items():
        contexts[method] = [[turns[i].line for i in ranking] for ranking in rankings]
    scored = score(questions, contexts, gold, args.budget)
    selection = {c: locomo.selection_table([s for s in sessions if s.conversation == c], cited, claim_starts)
                 for c in conversations}
    selection["all"] = locomo.selection_table(sessions, cited, claim_starts)
    return {"conversations": conversations, "sessions": len(sessions),
            "turns": len(turns), "questions": len(questions), "budget": args.budget, "embedding": model.pin,
            "import_seconds": round(import_seconds, 1), "ask_seconds": round(ask_seconds, 1),
            "claims_embedded": counts["claim_vectors_computed"], "chunks_embedded": counts["chunk_vectors_computed"],
            "recall": locomo.recall_table(scored["evidence"]),
            "containment": locomo.recall_table(scored["containment"]),
            "folds": by_fold(scored, conversations), "selection": selection,
            "misses": [{"question": q.text, "category": q.category, "evidence": list(q.evidence)}
                       for q, h in scored["evidence"][OPERATION] if not h]}


def bench_longmemeval(args: argparse.Namespace) -> dict[str, Any]:
    """LongMemEval's measurement: one memory of every question's sessions, the baselines over all
    of its turns, folds by question index mod 3, figures per question type."""
    sessions, questions, gold, files = longmemeval.read_folder(args.longmemeval)
    turns = [t for s in sessions for t in s.turns]
    settings = runtime.settings()
    _, import_seconds, _, counts, answers, ask_seconds = _ask_a_memory(sessions, questions, args.keep)
    contexts = {OPERATION: [answer_items(a) for a in answers],
                AS_CLAIM_TEXTS: [answer_items(a, "claim_text") for a in answers]}
    model = runtime.embedding_model(settings, None)
    ranked = rank_turns(turns, questions, model, whole_memory=True)
    for method, rankings in ranked.items():
        contexts[method] = [[turns[i].line for i in ranking] for ranking in rankings]
    scored = score(questions, contexts, gold, args.budget)
    folds = [str(f) for f in range(longmemeval.FOLDS)]
    return {"genre": "longmemeval", "folder": str(args.longmemeval), "files": files, "sessions": len(sessions),
            "turns": len(turns), "questions": len(questions),
            "by_type": {t: sum(q.category == t for q in questions) for t in longmemeval.TYPES},
            "folds_of": {f: sum(q.fold == f for q in questions) for f in folds},
            "budget": args.budget, "embedding": model.pin,
            "import_seconds": round(import_seconds, 1), "ask_seconds": round(ask_seconds, 1),
            "claims_embedded": counts["claim_vectors_computed"], "chunks_embedded": counts["chunk_vectors_computed"],
            "recall": locomo.recall_table(scored["evidence"], longmemeval.TYPES),
            "containment": locomo.recall_table(scored["containment"], longmemeval.TYPES),
            "folds": by_fold(scored, folds, lambda q: q.fold, longmemeval.TYPES),
            "misses": [{"question_id": q.conversation, "type": q.category, "question": q.text,
                        "answer": q.answer, "evidence": list(q.evidence)}
                       for q, h in scored["evidence"][OPERATION] if not h]}


def _table(title: str, rows: dict[str, dict[str, float | int]],
           columns: Sequence[tuple[str, str]] = tuple((f"cat {c}", str(c)) for c in locomo.CATEGORIES),
           width: int = 6) -> list[str]:
    """A method per line: its "all" figure, then one per (head, key) of `columns`."""
    lines = [f"{title:42} {'all':>{width}} " + " ".join(f"{head:>{width}}" for head, _ in columns)]
    for method in (m for m in METHODS if m in rows):
        row = rows[method]
        lines.append(f"  {method:40} {row['all']:>{width}.3f} "
                     + " ".join(f"{row[key]:>{width}.3f}" for _, key in columns))
    return lines


def _lead(rows: dict[str, dict[str, float | int]], key: str = "all") -> tuple[str, float]:
    best = max(BASELINES, key=lambda m: rows[m][key])
    return best, rows[OPERATION][key] - rows[best][key]


def render(results: dict[str, Any]) -> str:
    if results.get("genre") == "longmemeval":
        return render_longmemeval(results)
    lines = [f"LoCoMo conversations {', '.join(results['conversations'])}: {results['sessions']} sessions, "
             f"{results['turns']} turns, {results['questions']} questions (categories 1-4), "
             f"budget {results['budget']} characters",
             f"import {results['import_seconds']:.1f} s ({results['claims_embedded']} claim texts and "
             f"{results['chunks_embedded']} chunks embedded); {results['questions']} questions over HTTP in "
             f"{results['ask_seconds']:.1f} s", "",
             "baselines index and return each turn as its document renders it ([D3:2 | time] Speaker: text)", ""]
    folds = results["folds"]
    for measure, title in (("evidence", "evidence recall"), ("containment", "answer containment")):
        lines += _table(f"{title}, mean of the held-out folds", folds[measure]["mean"])
        for c in results["conversations"]:
            best, lead = _lead(folds[measure][c])
            lines.append(f"  fold {c} held out: {OPERATION} {folds[measure][c][OPERATION]['all']:.3f}, "
                         f"best baseline ({best}) {folds[measure][c][best]['all']:.3f}, {lead:+.3f}")
        best, lead = _lead(folds[measure]["mean"])
        lines += [f"  {OPERATION} − best baseline ({best}), mean of folds: {lead:+.3f} (target ≥ +0.10)", ""]
    best, lead = _lead(folds["containment"]["mean"], "2")
    lines += [f"answer containment on time questions (cat 2), mean of folds: {lead:+.3f} over {best} (target ≥ +0.20)",
              "", f"{'Selection against the observations':42} {'cited':>6} {'other':>6} {'claims/turn':>12}"]
    for key, row in results["selection"].items():
        lines.append(f"  {('conversation ' + key) if key != 'all' else 'all':40} {row['observed_with_claim']:>6.3f} "
                     f"{row['other_with_claim']:>6.3f} {row['claims_per_turn']:>12.3f}")
    lines += ["  (share of the turns an observation cites that hold a live claim, target ≥ 0.90; of the "
              "other turns, target ≤ 0.40)", "",
              "(evidence recall counts a claim as its source span, the words it stands on, and the row "
              "'(claim texts)' its rewritten text; answer containment counts claims by their claim text)"]
    return "\n".join(lines)


# Short column heads for LongMemEval's question types.
_TYPE_HEADS = {"temporal-reasoning": "time", "multi-session": "multi", "knowledge-update": "update",
               "single-session-user": "ss-user", "single-session-assistant": "ss-asst"}


_TYPE_COLUMNS = tuple((_TYPE_HEADS[t], t) for t in longmemeval.TYPES)


def render_longmemeval(results: dict[str, Any]) -> str:
    types = ", ".join(f"{_TYPE_HEADS[t]} = {t} {n}" for t, n in results["by_type"].items())
    lines = [f"LongMemEval {results['folder']}: {results['files']} questions, {results['questions']} measured "
             f"(no single-session-preference, no _abs abstention), {results['sessions']} sessions and "
             f"{results['turns']} turns in one memory, budget {results['budget']} characters",
             f"  types: {types}",
             f"import {results['import_seconds']:.1f} s ({results['claims_embedded']} claim texts and "
             f"{results['chunks_embedded']} chunks embedded); {results['questions']} questions over HTTP in "
             f"{results['ask_seconds']:.1f} s", "",
             "baselines index and return every turn of the whole memory as its document renders it "
             "([q<i>s<k>:<t> | time] user: text)",
             "folds: question index i (the q<i> of its markers) mod 3; each fold held out in turn ("
             + ", ".join(f"fold {f}: {n} questions" for f, n in results["folds_of"].items()) + ")", ""]
    folds = results["folds"]
    fold_names = [f for f in folds["evidence"] if f != "mean"]
    for measure, title in (("evidence", "evidence recall"), ("containment", "answer containment")):
        lines += _table(f"{title}, mean of the held-out folds", folds[measure]["mean"], _TYPE_COLUMNS, 7)
        for f in fold_names:
            best, lead = _lead(folds[measure][f])
            lines.append(f"  fold {f} held out: {OPERATION} {folds[measure][f][OPERATION]['all']:.3f}, "
                         f"best baseline ({best}) {folds[measure][f][best]['all']:.3f}, {lead:+.3f}")
        best, lead = _lead(folds[measure]["mean"])
        lines.append(f"  {OPERATION} − best baseline ({best}), mean of folds: {lead:+.3f} (target ≥ +0.10)")
        if measure == "evidence":
            for kind in ("knowledge-update", "multi-session"):
                best, lead = _lead(folds[measure]["mean"], kind)
                lines.append(f"  {kind}: {lead:+.3f} over {best}, mean of folds (target ≥ +0.10)")
        lines.append("")
    lines += [f"evidence never found by {OPERATION}: {len(results['misses'])} of {results['questions']} questions",
              "", "(evidence recall counts a claim as its source span, the words it stands on, and the row "
              "'(claim texts)' its rewritten text; answer containment counts claims by their claim text)"]
    return "\n".join(lines)
