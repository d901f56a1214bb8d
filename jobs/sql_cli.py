"""`corpusmem sql`: read-only SQL over the memory's `memory_v1` query space, run locally (no server)
by the same runner as `POST /query/sql`; saved queries; revalidation after a query-space change.

    corpusmem sql "SELECT count(*) FROM documents_live"
    corpusmem sql "SELECT ... WHERE subject_entity_id = $1::uuid" --param 7f0c...
    corpusmem sql --saved examples.relation_current --param 7f0c...
    corpusmem sql --space          corpusmem sql revalidate

A refused or failed statement prints its code and message and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from typing import Any

from jobs import runtime
from jobs.settings import Settings

REFUSED = 2
_CELL = 60


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("statement", nargs="?", metavar="SQL|revalidate",
                   help="one SELECT / VALUES / WITH ... SELECT statement, or `revalidate` to revalidate saved queries")
    p.add_argument("--param", action="append", default=[], metavar="VALUE",
                   help="the value of $1, $2, ... in order (repeat); JSON when it parses as JSON (10, true, "
                        "[1,2]), else text; a UUID or date is text")
    p.add_argument("--max-rows", type=int, default=None, metavar="N", help="at most N rows (default 200, cap 1000)")
    p.add_argument("--saved", metavar="NAMESPACE.NAME", help="run a saved query, e.g. examples.relation_current")
    p.add_argument("--version", type=int, default=None, help="with --saved: this version, not the active one")
    p.add_argument("--space", action="store_true", help="list the query space: views, functions, saved examples")
    p.add_argument("--json", action="store_true", help="print the whole QueryResult/v1 as JSON")


def parameter(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(settings: Settings, args: argparse.Namespace) -> int:
    from sql.query_space import query_manifest, saved_queries
    from sql.store import authority as store

    dsn = store.resolve_dsn(settings)
    with store.connect(dsn, autocommit=True) as conn:
        store.migrate(conn)
        surface_hash = query_manifest.manifest_hash()
        saved_queries.seed(conn, surface_hash)
        if args.space:
            print(space())
            return 0
        if args.statement == "revalidate" and not args.saved:
            outcome = saved_queries.revalidate(conn, surface_hash)
            for name, status in outcome.items():
                print(f"{name}: {status}")
            print(f"{len(outcome)} saved query version(s) revalidated against {surface_hash[:16]}")
            return REFUSED if "broken" in outcome.values() else 0
        sandbox = sandbox_for(settings, dsn, conn)
        if sandbox is None:
            print(f"corpusmem sql: {NO_DEPLOYMENT}", file=sys.stderr)
            return REFUSED
        params = [parameter(p) for p in args.param]
        if args.saved:
            try:
                saved = find_saved(conn, args.saved, args.version, surface_hash)
            except saved_queries.SavedQueryError as err:
                print(f"refused: {err.code}: {err.message}", file=sys.stderr)
                return REFUSED
            result = run_statement(sandbox, saved["sql"], params, args.max_rows, saved_queries.saved_query_ref(saved))
        elif args.statement:
            result = run_statement(sandbox, args.statement, params, args.max_rows, None)
        else:
            print("corpusmem sql: give a statement, --saved NAME, --space or revalidate", file=sys.stderr)
            return REFUSED
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        print(render(result))
    return 0 if result["termination_reason"] == "completed" else REFUSED


NO_DEPLOYMENT = "this memory has no deployment yet (import something first)"


def sandbox_for(settings: Settings, dsn: str, conn) -> tuple[str, str, Any] | None:
    """The query runner's arguments for the memory at `dsn` (None: it has no deployment yet)."""
    deployment = conn.execute("SELECT deployment_id FROM deployment").fetchone()
    return None if deployment is None else runner_args(settings, dsn, str(deployment[0]))


def find_saved(conn, name: str, version: int | None, surface_hash: str) -> dict[str, Any]:
    """The runnable saved query `namespace.name` (raises `saved_queries.SavedQueryError`)."""
    from sql.query_space import saved_queries

    namespace, _, short = name.partition(".")
    return saved_queries.runnable(conn, namespace, short, version, surface_hash)


def runner_args(settings: Settings, dsn: str, deployment_id: str) -> tuple[str, str, Any]:
    def embed(text: str) -> list[float]:
        return _model(settings, dsn).encode([text], normalize_embeddings=True,
                                            show_progress_bar=False)[0].tolist()
    return dsn, deployment_id, embed


@cache
def _model(settings: Settings, dsn: str) -> Any:
    # Loaded on the first semantic_* call only: most statements never need it.
    from actors.embedder import load_model

    return load_model(runtime.embedding_model(settings, dsn), "cpu")


def run_statement(runner_args: tuple[str, str, Any], sql: str, params: list[Any], max_rows: int | None,
         saved: dict[str, str] | None) -> dict[str, Any]:
    from sql.query_space.query_runner import Caps, QueryRunner

    runner = QueryRunner(*runner_args, pool_size=1)
    try:
        return runner.run(sql, params, caller="cli", saved_query=saved, caps=Caps.interactive(max_rows))
    finally:
        runner.close()


def render(result: dict[str, Any]) -> str:
    """Rows as an aligned table, then one line on what happened; a refusal as its code and message."""
    if result["termination_reason"] != "completed":
        return f"{result['termination_reason']}: {result['error_code']}: {result['error_message']}"
    names = [c["name"] for c in result["columns"]]
    cells = [[_cell(v) for v in row] for row in result["rows"]]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    lines = [" | ".join(n.ljust(w) for n, w in zip(names, widths)),
             "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    note = f"({result['returned_row_count']} row{'s' if result['returned_row_count'] != 1 else ''}"
    if result["truncated"]:
        note += f"; truncated: {result['truncation_reason']}"
    note += f"; {result['elapsed_ms']:.0f} ms)"
    for warning in result["warnings"]:
        note += f"\nwarning: {warning}"
    return "\n".join(lines + [note])


def _cell(value: Any) -> str:
    text = "NULL" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _CELL else text[:_CELL - 1] + "…"


def space() -> str:
    from sql.query_space import query_manifest, saved_queries

    manifest = query_manifest.manifest()
    lines = [f"memory_v1 (surface manifest {query_manifest.manifest_hash()[:16]}…)", "", "views:"]
    for view in manifest.get("views", []):
        lines.append(f"  {view['name']}: {', '.join(c['name'] for c in view.get('columns', []))}")
    lines += ["", "functions:"]
    for function in manifest.get("functions", []):
        args = ", ".join(a["name"] if isinstance(a, dict) else str(a) for a in function.get("arguments", []))
        lines.append(f"  {function['name']}({args}) — {function.get('summary', '')}")
    lines += ["", "saved queries:"]
    for example in saved_queries.examples():
        lines.append(f"  {saved_queries.NAMESPACE}.{example.name} ({example.parameters}) — {example.description}")
    return "\n".join(lines)
