"""`corpusmem costs [--since T] [--csv FILE]`: tokens and device seconds per run, stage, backend
and model, from the cost ledger (`sql/read/cost_queries.py`, which `GET /ops/cost-export/v1`
reads too)."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import datetime, timezone
from pathlib import Path

from jobs import runtime
from jobs.settings import Settings
from sql.read import cost_queries
from sql.store import authority as store


class CostsError(ValueError):
    """A bad argument; the message names it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", metavar="T", help="only costs recorded at or after T (YYYY-MM-DD or ISO 8601; "
                                                     "UTC when no offset is given)")
    parser.add_argument("--csv", metavar="FILE", type=Path, help="also write the table to FILE as CSV")


def since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return runtime.instant(text)
    except ValueError:
        raise CostsError(f"--since {text!r} is not a date or an instant (YYYY-MM-DD or ISO 8601)") from None


def main(settings: Settings, args: argparse.Namespace) -> int:
    try:
        start = since(args.since)
        if args.csv is not None and not args.csv.parent.is_dir():
            raise CostsError(f"--csv {args.csv}: folder {args.csv.parent} does not exist")
    except CostsError as err:
        print(f"corpusmem costs: {err}", file=sys.stderr)
        return 2
    with store.connect(store.resolve_dsn(settings)) as conn:
        rows = cost_queries.summary(conn, start)
    print(render(rows, start))
    if args.csv is not None:
        with args.csv.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(cost_queries.SUMMARY_COLUMNS)
            writer.writerows([_csv_value(v) for v in row] for row in rows)
        print(f"wrote {len(rows)} rows to {args.csv}", file=sys.stderr)
    return 0


def _csv_value(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def render(rows: list[tuple], start: datetime | None) -> str:
    """One line per run, stage, backend and model, then the totals per stage."""
    scope = f" since {start.isoformat()}" if start else ""
    if not rows:
        return f"no costs recorded{scope}"
    lines = [f"costs{scope} (device seconds are the models' busy time; tokens as the models counted them):",
             f"  {'run':<8} {'started':<19} {'stage':<20} {'backend':<10} {'model':<32} {'calls':>8} "
             f"{'tokens in':>10} {'tokens out':>10} {'device s':>9}"]
    totals: dict[str, list[float]] = {}
    for run, started, stage, backend, model, _, calls, tokens_in, tokens_out, seconds, _, _ in rows:
        when = started.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if started else "-"
        lines.append(f"  {(run or '-')[:8]:<8} {when:<19} {stage:<20} {backend:<10} {model[-32:]:<32} {calls:>8} "
                     f"{tokens_in:>10} {tokens_out:>10} {seconds:>9.2f}")
        total = totals.setdefault(stage, [0, 0, 0, 0.0])
        for i, value in enumerate((calls, tokens_in, tokens_out, seconds)):
            total[i] += value
    lines.append("  per stage:")
    for stage, (calls, tokens_in, tokens_out, seconds) in sorted(totals.items()):
        lines.append(f"    {stage:<20} {int(calls):>8} calls {int(tokens_in):>10} tokens in {int(tokens_out):>10} "
                     f"tokens out {seconds:>9.2f} device s")
    return "\n".join(lines)
