"""The analysis plots, shared by the notebooks and `corpusmem report --html`: each takes a memory
(`jobs.analysis.Memory`) and returns a matplotlib `Figure` (no pyplot state: the report draws
them without a display, a notebook shows the returned figure)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

# One colour per fate of a fact (`analysis.Memory.entity_facts`' `status`).
STATUS_COLOURS = {"current": "#2a7ab9", "past": "#8fb8de", "future": "#b39ddb", "possible": "#f0b429",
                  "retracted": "#d64545"}


def _figure(width: float = 8, height: float = 4) -> tuple[Figure, object]:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def latest_run(memory) -> str | None:
    runs = memory.runs()
    return None if runs.empty else runs.iloc[-1]["run_id"]


def throughput(memory, run_id: str | None = None) -> Figure:
    """Documents per busy second of each stage of one run (the latest by default)."""
    run_id = run_id or latest_run(memory)
    fig, ax = _figure()
    stages = memory.stage_seconds(run_id) if run_id else pd.DataFrame()
    if stages.empty:
        _empty(ax, "no import run recorded")
        return fig
    ax.bar(stages["stage"], stages["documents_per_second"].fillna(0), color="#2a7ab9")
    ax.set_ylabel("documents per busy second")
    ax.set_title(f"throughput per stage, run {run_id[:8]}")
    ax.set_yscale("log")
    return fig


def failures(memory, run_id: str | None = None) -> Figure:
    """Failures by stage and reason."""
    fig, ax = _figure(8, 3)
    reasons = memory.failure_reasons(run_id)
    if reasons.empty:
        _empty(ax, "no failures")
        ax.set_title("failures by reason")
        return fig
    labels = [f"{r.stage}: {r.reason}" for r in reasons.itertuples()]
    ax.barh(labels[::-1], reasons["failures"][::-1], color="#d64545")
    ax.set_xlabel("failed items")
    ax.set_title("failures by stage and reason")
    return fig


def corpus_over_time(memory, period: str = "M") -> Figure:
    """Live documents per period of their said-on date."""
    fig, ax = _figure(8, 3)
    counts = memory.documents_over_time(period)
    if counts.empty:
        _empty(ax, "no dated documents")
        return fig
    width = {"D": 0.8, "W": 5, "M": 25, "Q": 80, "Y": 300}.get(period, 25)
    ax.bar(counts["period"], counts["documents"], width=width, align="edge", color="#5a9e6f")
    ax.set_ylabel("documents")
    ax.set_title("the corpus over time (said-on dates)")
    fig.autofmt_xdate()
    return fig


# Rows a timeline draws before it summarises the rest: a taller figure is no longer read.
TIMELINE_ROWS = 40


def timeline_rows(facts: pd.DataFrame, rows: int = TIMELINE_ROWS, undated: bool = False
                  ) -> tuple[pd.DataFrame, dict[str, int]]:
    """The facts a timeline draws, in their order, and what it leaves out: `undated`, the
    `possible` facts with no time at all (unless asked for), and `more`, what is left beyond `rows`
    once the rest is ranked: dated facts first, then the best evidenced, then the latest."""
    no_time = (facts["status"] == "possible") & facts["valid_from"].isna() & facts["valid_until"].isna()
    kept = facts if undated else facts[~no_time]
    if len(kept) > rows:
        dated = kept["valid_from"].notna() | kept["valid_until"].notna()
        ranked = kept.assign(_dated=dated, _evidence=kept["evidence"].fillna(0)).sort_values(
            ["_dated", "_evidence", "ingested_at"], ascending=[False, False, False], kind="stable")
        kept = kept.loc[sorted(ranked.index[:rows], key=list(kept.index).index)]
    return kept, {"undated": 0 if undated else int(no_time.sum()),
                  "more": len(facts) - len(kept) - (0 if undated else int(no_time.sum()))}


def facts_timeline(memory, entity: str, now: datetime | None = None, rows: int = TIMELINE_ROWS,
                   undated: bool = False) -> Figure:
    """An entity's facts as world-time windows: one bar per fact from its start to its end (an
    open end runs to the plot's edge), coloured by its fate; superseded facts (a later fact closed
    their window) hatched, retracted ones crossed, `possible` ones (a window partly unknown) with
    a dashed edge. At most `rows` bars (`timeline_rows`): `possible` facts with no time at all are
    folded away unless `undated`, and what is left out is counted under the plot."""
    now = now or datetime.now(timezone.utc)
    every = memory.entity_facts(entity, now=now)
    facts, left_out = timeline_rows(every, rows, undated)
    _, name = memory.entity(entity)
    fig, ax = _figure(10, max(2.5, 0.45 * len(facts) + 1.2))
    folded = [f"{n} {what}" for n, what in ((left_out["undated"], "possible facts without any time (undated=True "
                                             "shows them)"), (left_out["more"], f"more facts beyond the {rows} drawn"))
              if n]
    if folded:
        fig.supxlabel("not drawn: " + "; ".join(folded), fontsize=8, color="#555")
    if facts.empty:
        _empty(ax, f"no facts about {name}" if every.empty else f"no dated facts about {name}")
        return fig
    facts = facts.reset_index(drop=True)
    starts = pd.to_datetime(facts["valid_from"], utc=True)
    ends = pd.to_datetime(facts["valid_until"], utc=True)
    known = pd.concat([starts.dropna(), ends.dropna(), pd.Series([pd.Timestamp(now)])])
    lo, hi = known.min() - timedelta(days=15), known.max() + timedelta(days=15)
    for i, (row, start, end) in enumerate(zip(facts.itertuples(), starts, ends)):
        left = start if not pd.isna(start) else lo
        right = end if not pd.isna(end) else hi
        possible = row.status == "possible"
        ax.barh(i, (right - left).total_seconds() / 86400, left=left, height=0.6,
                color=STATUS_COLOURS[row.status], alpha=0.55 if possible else 0.9,
                hatch="//" if row.superseded else None,
                edgecolor="#333", linestyle="--" if possible else "-", linewidth=0.8)
        if row.status == "retracted":
            ax.plot([left + (right - left) / 2], [i], marker="x", color="#222", markersize=9)
        label = row.label if len(row.label) <= 70 else row.label[:67] + "…"
        ax.text(left, i, f" {label}", va="center", fontsize=8)
    ax.axvline(pd.Timestamp(now), color="#444", linestyle=":", linewidth=1)
    ax.set_yticks([])
    ax.set_xlim(lo, hi)
    ax.set_title(f"{name}: facts over world time (dotted line: evaluated at {now:%Y-%m-%d})")
    handles = [Patch(color=c, label=s) for s, c in STATUS_COLOURS.items() if s in set(facts["status"])]
    if facts["superseded"].any():
        handles.append(Patch(facecolor="white", edgecolor="#333", hatch="//", label="superseded"))
    ax.legend(handles=handles, loc="upper left", fontsize=8, ncols=3)
    fig.autofmt_xdate()
    return fig


def evidence(memory) -> Figure:
    """How many facts rest on 1, 2, 3 ... distinct documents."""
    fig, ax = _figure(6, 3)
    dist = memory.evidence_distribution()
    if dist.empty:
        _empty(ax, "no facts")
        return fig
    ax.bar(dist["evidence"].astype(str), dist["facts"], color="#7e57c2")
    ax.set_xlabel("supporting documents")
    ax.set_ylabel("facts")
    ax.set_title("corroboration: evidence per fact")
    return fig


def neighbourhood(memory, entity: str, hops: int = 2) -> Figure:
    """An entity's neighbourhood as a graph: entities as nodes, the relations the memory holds as
    edges labelled by their predicate: solid when true now, dashed when true at another time,
    red when contested."""
    import networkx as nx

    edges = memory.neighbourhood(entity, hops)
    _, name = memory.entity(entity)
    fig, ax = _figure(9, 6)
    if edges.empty:
        _empty(ax, f"no relations around {name}")
        return fig
    graph = nx.DiGraph()
    for e in edges.itertuples():
        if graph.has_edge(e.subject, e.object):   # several relations between one pair: one edge, all predicates
            d = graph.edges[e.subject, e.object]
            d["predicate"] = ", ".join(sorted({*d["predicate"].split(", "), e.predicate or ""}))
            d["contested"] |= bool(e.contested)
            d["current"] |= bool(e.current)
        else:
            graph.add_edge(e.subject, e.object, predicate=e.predicate or "", contested=bool(e.contested),
                           current=bool(e.current))
    pos = nx.spring_layout(graph, seed=7, k=1.5 / max(1, len(graph) ** 0.5))
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_size=900, edgecolors="#333",
                           node_color=["#f0b429" if n == name else "#bcd4ec" for n in graph.nodes])
    nx.draw_networkx_labels(graph, pos, ax=ax, font_size=8)
    for current in (True, False):
        chosen = [(u, v) for u, v, d in graph.edges(data=True) if d["current"] is current]
        nx.draw_networkx_edges(graph, pos, ax=ax, edgelist=chosen, arrows=True, arrowsize=12, node_size=900,
                               style="solid" if current else "dashed",
                               edge_color=["#d64545" if graph.edges[e]["contested"] else "#555" for e in chosen])
    nx.draw_networkx_edge_labels(graph, pos, ax=ax, font_size=7,
                                 edge_labels={(u, v): d["predicate"] for u, v, d in graph.edges(data=True)})
    ax.set_title(f"{name}: relations within {hops} hop{'s' if hops > 1 else ''} (dashed: not true now)")
    ax.set_axis_off()
    return fig
