"""`corpusmem report [RUN_ID] [--html FILE]`: an import run and the memory it left, as text or as
one self-contained HTML file (its plots embedded as PNG images), for people who do not open
Jupyter. The plots are the notebooks' (`jobs/plots.py`)."""

from __future__ import annotations

import argparse
import base64
import html
import io
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from jobs import analysis, plots
from jobs.settings import Settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the import run (default: the latest)")
    p.add_argument("--html", metavar="FILE", type=Path, help="write a self-contained HTML report with plots")


class RunNotFound(LookupError):
    pass


def main(settings: Settings, args: argparse.Namespace) -> int:
    memory = analysis.Memory(_dsn(settings), settings)
    try:
        run = _run(memory, args.run_id)
    except RunNotFound as err:
        print(f"corpusmem: {err}", file=sys.stderr)
        return 2
    if args.html:
        args.html.write_text(render_html(memory, run), encoding="utf-8")
        print(f"wrote {args.html} (run {run['run_id']})")
    else:
        print(render_text(memory, run))
    return 0


def _dsn(settings: Settings) -> str:
    from sql.store import authority as store

    return store.resolve_dsn(settings)


def _run(memory: analysis.Memory, run_id: str | None) -> dict:
    runs = memory.runs()
    if runs.empty:
        raise RunNotFound("this memory has no import runs yet")
    if run_id is None:
        return runs.iloc[-1].to_dict()
    chosen = runs[runs["run_id"].str.startswith(run_id)]
    if len(chosen) != 1:
        raise RunNotFound(f"{len(chosen)} import runs match {run_id!r} (runs: "
                          + ", ".join(r[:8] for r in runs["run_id"].tail(5)) + ")")
    return chosen.iloc[0].to_dict()


def _summary(run: dict) -> list[tuple[str, object]]:
    return [("run", run["run_id"]), ("status", run["status"]), ("started", run["started_at"]),
            ("finished", run["finished_at"]), ("seconds", None if pd.isna(run["seconds"]) else round(run["seconds"], 1)),
            ("documents seen", run["documents_seen"]), ("new versions", run["new_versions"]),
            ("unchanged", run["unchanged"]), ("failed", run["failed"]), ("chunks", run["chunks"]),
            ("claims", run["claims"]), ("fact decisions", run["fact_decisions"])]


def render_text(memory: analysis.Memory, run: dict) -> str:
    lines = [f"{k:<16} {v}" for k, v in _summary(run)]
    stages = memory.stage_seconds(run["run_id"])
    if not stages.empty:
        lines.append("\nbusy seconds per stage:\n" + stages[["stage", "seconds", "documents_per_second"]]
                     .to_string(index=False, float_format="%.2f"))
    reasons = memory.failure_reasons(run["run_id"])
    lines.append("\nfailures by reason:\n" + (reasons.to_string(index=False) if not reasons.empty else "  none"))
    return "\n".join(lines)


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _table(frame: pd.DataFrame, empty: str, limit: int = 50) -> str:
    if frame.empty:
        return f"<p class='none'>{html.escape(empty)}</p>"
    shown = frame.head(limit).to_html(index=False, escape=True, border=0, na_rep="", float_format="%.2f")
    more = f"<p class='none'>… and {len(frame) - limit} more</p>" if len(frame) > limit else ""
    return shown + more


_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .7em; border-bottom: 1px solid #eee;
text-align: left; vertical-align: top; } th { background: #f6f6f6; } img { max-width: 100%; }
.none { color: #777; }
"""


def render_html(memory: analysis.Memory, run: dict) -> str:
    run_id = run["run_id"]
    entities = memory.entities(1)
    stages = memory.stage_seconds(run_id)
    sections = [
        ("Run", "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                                    for k, v in _summary(run)) + "</table>"),
        ("Throughput per stage", f"<img alt='throughput' src='data:image/png;base64,{_png(plots.throughput(memory, run_id))}'>"
         + _table(stages.drop(columns="run_id"), "no stage timings")),
        ("Failures", f"<img alt='failures' src='data:image/png;base64,{_png(plots.failures(memory, run_id))}'>"
         + _table(memory.failures(run_id)[["item", "stage", "reason", "error"]], "no failures")),
        ("The corpus over time", f"<img alt='corpus' src='data:image/png;base64,{_png(plots.corpus_over_time(memory))}'>"),
        ("Evidence and contradictions",
         f"<img alt='evidence' src='data:image/png;base64,{_png(plots.evidence(memory))}'>"
         + _table(memory.contradictions(), "no contradictions held now")),
    ]
    if not entities.empty:
        name = entities.iloc[0]["canonical_name"]
        sections.append((f"Facts over time: {name} (the entity with the most facts)",
                         f"<img alt='timeline' src='data:image/png;base64,"
                         f"{_png(plots.facts_timeline(memory, entities.iloc[0]['entity_id']))}'>"))
    sections += [
        ("Ambiguous names", _table(memory.ambiguous_names(), "no alias names more than one entity")),
        ("Merge proposals", _table(memory.merge_proposals(), "no merge proposals")),
        ("Cost", _table(memory.costs(), "no model calls were recorded (the rules extractor costs nothing)")),
    ]
    body = "\n".join(f"<h2>{html.escape(title)}</h2>\n{content}" for title, content in sections)
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>corpusmem import report "
            f"{html.escape(run_id[:8])}</title><style>{_STYLE}</style></head><body>\n"
            f"<h1>corpusmem import report</h1><p class='none'>run {html.escape(run_id)}, made {made}</p>\n"
            f"{body}\n</body></html>\n")
