"""Running one `memory_v1` statement in the sandbox and answering with a `QueryResult/v1`.

The validator is the first layer; PostgreSQL is the last word: every statement runs as the
sandbox role (it can read `memory_v1` and nothing else), in one read-only repeatable-read
transaction with the seed's timeouts and memory caps, and its rows are fetched through a
server-side cursor that never reads past the row cap. Every outcome, refusals included, is a
complete `QueryResult/v1` dict; raw database detail never reaches `error_message`.

Admission (concurrent statements and statement-seconds per minute, per caller and per
deployment) is `sql.admission`'s controller under `STATEMENTS`, the seed's limits; its
refusals are `concurrency_exceeded` and `quota_exceeded`. Error codes are `query_errors`'s,
value conversions `query_values`'s, and invocation records `query_telemetry`'s.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from sql.admission import Admission, NotAdmitted, Policy
from sql.query_space import query_catalog as catalog
from sql.query_space import query_manifest, validator
from sql.query_space.query_errors import Refused, map_error
from sql.query_space.query_telemetry import graph_invocation, json_list, semantic_invocation
from sql.query_space.query_values import adapt, encoded_size, json_safe, row_size, type_name
from sql.store.authority import HNSW_EF_SEARCH

_log = logging.getLogger(__name__)
LIMITS = catalog.INTERACTIVE_LIMITS
# The seed's admission of statements: concurrent statements and statement-seconds per minute.
STATEMENTS = Policy(caller_in_flight=LIMITS["concurrent_per_caller"],
                    deployment_in_flight=LIMITS["concurrent_per_deployment"],
                    caller_seconds=LIMITS["statement_seconds_per_caller_minute"],
                    deployment_seconds=LIMITS["statement_seconds_per_deployment_minute"])
# The seed's code for each limit of `STATEMENTS` that can refuse a statement.
_NOT_ADMITTED = {"in_flight": "concurrency_exceeded", "seconds": "quota_exceeded"}

# Path rows after the row cap are still read (not kept) so the terminal status row is never lost.
_GRAPH_STATUS_SCAN = 10_000


@dataclass(frozen=True)
class Caps:
    """The caps one statement runs under (reported as `limits`)."""

    row_cap: int = LIMITS["rows_default"]
    byte_cap: int = LIMITS["bytes_default"]
    statement_timeout_ms: int = LIMITS["statement_timeout_ms_default"]

    @classmethod
    def interactive(cls, max_rows: int | None = None, *, byte_cap: int | None = None,
                    statement_timeout_ms: int | None = None) -> Caps:
        """A caller may lower a limit or raise it up to the hard cap, never past it."""
        rows = LIMITS["rows_default"] if max_rows is None else max(0, min(max_rows, LIMITS["rows_cap"]))
        nbytes = LIMITS["bytes_default"] if byte_cap is None else max(1, min(byte_cap, LIMITS["bytes_cap"]))
        timeout = LIMITS["statement_timeout_ms_default"] if statement_timeout_ms is None else \
            max(1, min(statement_timeout_ms, LIMITS["statement_timeout_ms_cap"]))
        return cls(rows, nbytes, timeout)

    def as_limits(self) -> dict[str, Any]:
        return {"row_cap": self.row_cap, "byte_cap": self.byte_cap,
                "statement_timeout_ms": self.statement_timeout_ms, "analytical_tier": False}


class QueryRunner:
    """Runs statements for one deployment. `owner_dsn` reaches the authority as its owner (for the
    manifest check); statements themselves run on connections of the sandbox role."""

    def __init__(self, owner_dsn: str, deployment_id: str, embed: Callable[[str], Any] | None = None, *,
                 admission: Admission | None = None, pool_size: int = LIMITS["concurrent_per_deployment"],
                 check_manifest: bool = True) -> None:
        self.owner_dsn = owner_dsn
        self.deployment_id = str(deployment_id)
        self.embed = embed
        self.admission = admission or Admission(STATEMENTS)
        self.surface_manifest_hash = query_manifest.manifest_hash()
        self._check_manifest = check_manifest
        self._manifest_problem: str | None = None
        self._manifest_checked = False
        self._manifest_lock = threading.Lock()
        self._pool = ConnectionPool(query_manifest.sandbox_dsn(owner_dsn), min_size=0, max_size=pool_size,
                                    open=False, timeout=5, name="sandbox",
                                    kwargs={"autocommit": False, "row_factory": tuple_row})
        self._pool_lock = threading.Lock()
        self._grains = _grain_tags()

    def close(self) -> None:
        self._pool.close()

    # -- public entry points -------------------------------------------------------------

    def run(self, sql: str, parameters: Sequence[Any] = (), *, max_rows: int | None = None, caller: str = "open",
            saved_query: dict[str, str] | None = None, caps: Caps | None = None) -> dict[str, Any]:
        """Validate, admit and run one statement; always a complete QueryResult/v1 dict."""
        return self._answer(sql, list(parameters), caps or Caps.interactive(max_rows), caller, saved_query,
                            explain=False)

    def explain(self, sql: str, parameters: Sequence[Any] = (), *, caller: str = "open") -> dict[str, Any]:
        """Validate, admit and plan one statement without running it: one row, the JSON plan."""
        return self._answer(sql, list(parameters), Caps.interactive(), caller, None, explain=True)

    def execute(self, statement: Any, parameters: Sequence[Any], caps: Caps, *, explain: bool = False,
                saved_query: dict[str, str] | None = None) -> dict[str, Any]:
        """The execution step alone, for a statement the validator accepted (no admission, no
        validation): the sandbox role and the transaction settings are all that guard it."""
        started = _utcnow()
        clock = time.perf_counter()
        base = self._base(statement.query_hash, caps, started, saved_query, statement)
        try:
            return self._execute(statement, list(parameters), caps, base, clock, explain)
        except Refused as refusal:
            return self._refusal(base, refusal, clock, rejected=refusal.rejected)

    # -- steps ---------------------------------------------------------------------------

    def _answer(self, sql: str, parameters: list[Any], caps: Caps, caller: str,
                saved_query: dict[str, str] | None, *, explain: bool) -> dict[str, Any]:
        started = _utcnow()
        clock = time.perf_counter()
        base = self._base(validator.statement_hash(sql, parameters), caps, started, saved_query, None)
        try:
            _check_sizes(sql, parameters)
            try:
                statement = validator.validate(sql, parameters)
            except validator.QueryRejected as rejection:
                raise Refused(rejection.code, rejection.message) from None
            base.update(self._base(statement.query_hash, caps, started, saved_query, statement))
            self._check_graph_deployment(statement, parameters)
            self._check_live_manifest()
            # Embedding happens before admission: the budgets count database time only.
            vectors = {} if explain else self._query_vectors(statement, parameters)
            try:
                ticket = self.admission.enter(caller)
            except NotAdmitted as refused:
                raise Refused(_NOT_ADMITTED[refused.reason]) from None
            try:
                return self._execute(statement, parameters, caps, base, clock, explain, vectors)
            finally:
                self.admission.leave(ticket)
        except Refused as refusal:
            return self._refusal(base, refusal, clock, rejected=refusal.rejected)

    def _base(self, query_hash: str, caps: Caps, started: datetime, saved_query: dict[str, str] | None,
              statement: Any | None) -> dict[str, Any]:
        views = list(statement.referenced_views) if statement is not None else []
        functions = list(statement.referenced_functions) if statement is not None else []
        return {
            "contract": "QueryResult/v1", "grade": "exploratory_tabular", "request_id": str(uuid.uuid4()),
            "deployment_id": self.deployment_id, "surface_manifest_hash": self.surface_manifest_hash,
            "query_space_schema": catalog.SCHEMA, "query_hash": query_hash, "query_language": "sql",
            "saved_query": saved_query, "referenced_views": views, "referenced_functions": functions,
            "source_grain_tags": sorted({self._grains[v] for v in views if v in self._grains}),
            "columns": [], "rows": [], "returned_row_count": 0, "returned_byte_count": 0,
            "limits": caps.as_limits(), "truncated": False, "truncation_reason": None,
            "exact_total_known": False, "exact_total": None,
            "ordered_result": bool(getattr(statement, "ordered_result", False)), "empty_result": True,
            "negative_kind": None, "execution_started_at": started.isoformat(), "evaluated_at": None,
            "pg_snapshot_at": None, "elapsed_ms": 0.0, "termination_reason": "completed", "error_code": None,
            "error_message": None, "warnings": [], "semantic_invocations": [], "graph_invocations": [],
        }

    def _refusal(self, base: dict[str, Any], refusal: Refused, clock: float, *, rejected: bool) -> dict[str, Any]:
        base.update(columns=[], rows=[], returned_row_count=0, returned_byte_count=0, empty_result=True,
                    termination_reason="rejected" if rejected else "failed", error_code=refusal.code,
                    error_message=refusal.message, elapsed_ms=_elapsed(clock))
        return base

    def _check_graph_deployment(self, statement: Any, parameters: list[Any]) -> None:
        for call in statement.public_calls:
            if call.category != "graph":
                continue
            first = call.arguments[0] if call.arguments else None
            if first != ("param", 1) or not parameters or str(parameters[0]).lower() != self.deployment_id.lower():
                raise Refused("invalid_parameter", f"{call.name}: the first argument must be the parameter $1, "
                                                   "bound to this deployment's id")

    def _check_live_manifest(self) -> None:
        if not self._check_manifest:
            return
        with self._manifest_lock:
            if not self._manifest_checked:
                try:
                    with psycopg.connect(self.owner_dsn, connect_timeout=5) as conn:
                        self._manifest_problem = query_manifest.check_live(conn)
                        _warn_if_the_sandbox_may_set_config(conn)
                except psycopg.OperationalError as err:
                    _log.warning("manifest check: cannot reach the database: %s", err)
                    raise Refused("pg_unavailable", rejected=False) from None
                self._manifest_checked = True
                if self._manifest_problem:
                    _log.error("memory_v1 differs from the manifest: %s", self._manifest_problem)
        if self._manifest_problem:
            raise Refused("schema_version_mismatch")

    def _connection(self) -> Any:
        with self._pool_lock:
            if self._pool.closed:
                self._pool.open(wait=False)
        return self._pool.connection()

    def _execute(self, statement: Any, parameters: list[Any], caps: Caps, base: dict[str, Any], clock: float,
                 explain: bool, vectors: dict[str, list[float]] | None = None) -> dict[str, Any]:
        graph = any(call.category == "graph" for call in statement.public_calls)
        timeout_ms = min(caps.statement_timeout_ms, LIMITS["statement_timeout_ms_graph"]) if graph \
            else caps.statement_timeout_ms
        if timeout_ms != caps.statement_timeout_ms:
            caps = Caps(caps.row_cap, caps.byte_cap, timeout_ms)
            base["limits"] = caps.as_limits()
        if vectors is None:
            vectors = {} if explain else self._query_vectors(statement, parameters)
        values = [adapt(p) for p in parameters]
        try:
            with self._connection() as conn:
                try:
                    return self._in_transaction(conn, statement, values, vectors, caps, base, clock, explain)
                finally:
                    if not conn.broken:
                        conn.rollback()   # never commit: a read-only statement leaves nothing behind
        except PoolTimeout:
            # The pool says only that no connection came: busy connections, or no database at all.
            try:
                psycopg.connect(self._pool.conninfo, connect_timeout=2).close()
            except psycopg.OperationalError:
                raise Refused("pg_unavailable", rejected=False) from None
            raise Refused("resource_limit", "no sandbox connection became free in time", rejected=False) from None
        except psycopg.OperationalError as err:
            _log.warning("sandbox connection failed: %s", err)
            raise Refused("pg_unavailable", rejected=False) from None

    def _query_vectors(self, statement: Any, parameters: list[Any]) -> dict[str, list[float]]:
        texts: list[str] = []
        for call in statement.public_calls:
            if not call.name.startswith("semantic_") or not call.arguments:
                continue
            # the query text: the argument named `query`, else the first (`query => $1` may come later)
            names = list(call.argument_names)
            kind, value = call.arguments[names.index("query") if "query" in names else 0]
            if kind == "param":
                value = parameters[int(value) - 1]
            if isinstance(value, str) and value not in texts:
                texts.append(value)
        if not texts:
            return {}
        if self.embed is None:
            raise Refused("p1_unavailable", "no embedder is configured for semantic search", rejected=False)
        try:
            return {text: [float(x) for x in self.embed(text)] for text in texts}
        except Exception as err:  # the embedder is a separate deployment: its failure is the seed's 503
            _log.warning("query embedding failed: %s", err)
            raise Refused("p1_unavailable", rejected=False) from None

    def _in_transaction(self, conn: psycopg.Connection, statement: Any, values: list[Any],
                        vectors: dict[str, list[float]], caps: Caps, base: dict[str, Any], clock: float,
                        explain: bool) -> dict[str, Any]:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        try:
            # the statement's snapshot and clock, in UTC whatever the server's own time zone
            snapshot = conn.execute("SELECT now()").fetchone()[0].astimezone(UTC)
            # SET LOCAL, not set_config: the sandbox role may not call set_config (migration 0008),
            # and a statement cannot issue a command. Every setting a memory_v1 function reads is
            # set here, so nothing a role or session default holds reaches the statement.
            settings = (
                ("statement_timeout", f"{caps.statement_timeout_ms}ms"),
                ("lock_timeout", f"{LIMITS['lock_timeout_ms']}ms"),
                ("idle_in_transaction_session_timeout", f"{LIMITS['idle_in_transaction_timeout_ms']}ms"),
                ("work_mem", f"{LIMITS['work_mem_kib']}kB"),
                ("max_parallel_workers_per_gather", "0"),
                ("search_path", catalog.SCHEMA),
                ("TimeZone", "UTC"),
                # the API's value: a search function's HNSW scan could otherwise nominate only 40
                ("hnsw.ef_search", str(HNSW_EF_SEARCH)),
                ("corpusmem.evaluated_at", snapshot.isoformat()),
                ("corpusmem.query_vectors", json.dumps(vectors)),
                ("corpusmem.search_candidates", "0"),
                ("corpusmem.chunk_body_bytes", "0"),
                ("corpusmem.semantic_invocations", "[]"),
                ("corpusmem.graph_invocations", "[]"),
                # Graph functions report their terminal status here and need not emit it as a row:
                # a statement that does not select row_kind could not tell that row apart.
                ("corpusmem.graph_status_rows", "omit"),
            )
            # One round trip: without parameters psycopg sends the commands as one simple query.
            conn.execute(pgsql.SQL("; ").join(
                pgsql.SQL("SET LOCAL {} = {}").format(pgsql.Identifier(*name.split(".")), pgsql.Literal(value))
                for name, value in settings))
            if explain:
                return self._explain(conn, statement, values, base, snapshot, clock)
            return self._fetch(conn, statement, values, caps, base, snapshot, clock)
        except psycopg.Error as err:
            if conn.broken:
                raise   # the connection itself failed: pg_unavailable
            code, message = map_error(err)
            raise Refused(code, message, rejected=False) from None

    def _explain(self, conn: psycopg.Connection, statement: Any, values: list[Any], base: dict[str, Any],
                 snapshot: datetime, clock: float) -> dict[str, Any]:
        cur = psycopg.RawCursor(conn)
        # Prepared: the extended protocol runs exactly one statement, whatever the text holds.
        cur.execute("EXPLAIN (FORMAT JSON) " + statement.sql, values, prepare=True)
        plan = cur.fetchone()[0]
        rows = [[json_safe(plan)]]
        base.update(columns=[{"name": "QUERY PLAN", "type": "json", "nullable": True}], rows=rows,
                    returned_row_count=1, returned_byte_count=encoded_size(rows), empty_result=False,
                    pg_snapshot_at=snapshot.isoformat(), elapsed_ms=_elapsed(clock))
        return base

    def _fetch(self, conn: psycopg.Connection, statement: Any, values: list[Any], caps: Caps,
               base: dict[str, Any], snapshot: datetime, clock: float) -> dict[str, Any]:
        cur = psycopg.RawServerCursor(conn, "corpusmem_statement")
        cur.execute(statement.sql, values)   # DECLARE ... CURSOR: one query, extended protocol
        columns = [{"name": d.name, "type": type_name(conn, d.type_code), "nullable": True}
                   for d in cur.description or []]
        names = [c["name"] for c in columns]
        kind_at = names.index("row_kind") if "row_kind" in names and any(
            call.category == "graph" for call in statement.public_calls) else None
        rows: list[list[Any]] = []
        statuses: list[dict[str, Any]] = []
        size, truncation = 2, None
        # One FETCH of at most row cap + 1 rows: the statement timeout bounds the whole read.
        batch = cur.fetchmany(caps.row_cap + 1)
        exhausted = len(batch) <= caps.row_cap
        for raw in batch:
            row = [json_safe(v) for v in raw]
            if kind_at is not None and row[kind_at] == "status":
                statuses.append(dict(zip(names, row)))
                continue
            if len(rows) >= caps.row_cap:
                truncation = "row_cap"
                break
            added = row_size(row) + (1 if rows else 0)
            if size + added > caps.byte_cap:
                truncation = "byte_cap"
                break
            rows.append(row)
            size += added
        if kind_at is not None and not exhausted:
            for raw in cur.fetchmany(_GRAPH_STATUS_SCAN):
                if raw[kind_at] == "status":
                    statuses.append(dict(zip(names, [json_safe(v) for v in raw])))
                else:
                    truncation = truncation or "row_cap"
        cur.close()
        invocations = conn.execute(
            "SELECT current_setting('corpusmem.semantic_invocations', true),"
            " current_setting('corpusmem.graph_invocations', true)").fetchone()
        semantic = [semantic_invocation(i) for i in json_list(invocations[0])]
        graph_calls = [c for c in statement.public_calls if c.category == "graph"]
        graphs = [graph_invocation(i, n, graph_calls) for n, i in enumerate(json_list(invocations[1]))] or \
            [graph_invocation(s, n, graph_calls) for n, s in enumerate(statuses)]
        warnings = [f"{g['function']} (call {g['ordinal']}) reached its {g['truncation_reason']}"
                    for g in graphs if g["truncation_reason"]]
        if truncation is None:
            truncation = next((g["truncation_reason"] for g in graphs if g["truncation_reason"]), None)
        sources = set(statement.referenced_views) | {c.name for c in statement.public_calls}
        at_one_instant = bool(sources) and sources <= set(catalog.EVALUATED_AT_SOURCES)
        base.update(columns=columns, rows=rows, returned_row_count=len(rows), returned_byte_count=encoded_size(rows),
                    truncated=truncation is not None, truncation_reason=truncation, empty_result=not rows,
                    evaluated_at=snapshot.isoformat() if at_one_instant else None,
                    pg_snapshot_at=snapshot.isoformat(), warnings=warnings, semantic_invocations=semantic,
                    graph_invocations=graphs, elapsed_ms=_elapsed(clock))
        return base


def _warn_if_the_sandbox_may_set_config(conn: psycopg.Connection) -> None:
    """Migration 0008 takes set_config from the sandbox role only where a superuser migrated; on
    any other server the validator alone keeps a statement from changing its own settings."""
    may = conn.execute("SELECT CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = %s) THEN"
                       " has_function_privilege(%s, 'pg_catalog.set_config(text, text, boolean)', 'EXECUTE') END",
                       (catalog.SANDBOX_ROLE, catalog.SANDBOX_ROLE)).fetchone()[0]
    if may:
        _log.warning("the sandbox role %s can call set_config: a statement the validator let through could change "
                     "its clock, budgets and invocation records; a superuser should run migration 0008's REVOKE",
                     catalog.SANDBOX_ROLE)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _elapsed(clock: float) -> float:
    return round((time.perf_counter() - clock) * 1000, 3)


def _check_sizes(sql: str, parameters: list[Any]) -> None:
    if len(sql.encode("utf-8", "surrogatepass")) > LIMITS["sql_text_bytes"]:
        raise Refused("invalid_parameter", f"the SQL text is over {LIMITS['sql_text_bytes']} bytes")
    if len(parameters) > LIMITS["parameters_count"]:
        raise Refused("invalid_parameter", f"more than {LIMITS['parameters_count']} parameters")
    if len(json.dumps(parameters, default=str).encode()) > LIMITS["parameters_bytes"]:
        raise Refused("invalid_parameter", f"the parameters are over {LIMITS['parameters_bytes']} bytes encoded")


def _grain_tags() -> dict[str, str]:
    """{view: grain tag} from the manifest (`source_grain_tags` of a result)."""
    views = query_manifest.manifest().get("views", [])
    tags = {}
    for view in views:
        tag = view.get("grain_tag") or view.get("source_grain_tag") or view.get("grain")
        if isinstance(tag, str) and " " not in tag:
            tags[view["name"]] = tag
    return tags
