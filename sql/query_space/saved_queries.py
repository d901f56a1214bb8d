"""The saved-query registry: seeding the 18 shipped `examples.*` queries, listing, describing,
picking the version a run may use, and revalidating after the query space changed.

The shipped SQL lives in `sql/query_space/saved/examples.sql`. A version runs only while its status is
exactly `active` and it was validated against the running manifest hash; a hash change moves
every active version to `pending_revalidation` until `revalidate` checks it again.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
import sqlglot
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from sqlglot import exp

from sql.query_space import validator

NAMESPACE = "examples"
STATUSES = ("draft", "pending_revalidation", "active", "deprecated", "disabled", "broken")
SHIPPED = "shipped_example"
SYSTEM_PRINCIPAL = "corpusmem:release"
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
# Any constant works; it only keeps two processes from seeding at once.
_SEED_LOCK = 0x73617664  # "savd"

SUMMARY_FIELDS = ("query_id", "namespace", "name", "version", "status", "description", "origin", "assurance",
                  "query_hash", "validated_surface_manifest_hash")
DETAIL_FIELDS = SUMMARY_FIELDS + ("sql", "parameter_schema", "declared_result_schema", "declared_interpretation",
                                  "default_limits", "validation_report", "author_principal", "approver_principal")


class SavedQueryError(Exception):
    """A saved query that cannot be described or run; `code` is the seed's, `status` its HTTP status."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Example:
    name: str
    description: str
    parameters: str
    sql: str


def examples() -> list[Example]:
    """The shipped examples, in file order."""
    text = resources.files("sql.query_space").joinpath("saved", "examples.sql").read_text(encoding="utf-8")
    found: list[Example] = []
    for block in re.split(r"^-- name: ", text, flags=re.MULTILINE)[1:]:
        lines = block.splitlines()
        meta = {"name": lines[0].strip()}
        body = []
        for line in lines[1:]:
            key, sep, value = line.removeprefix("-- ").partition(": ")
            if line.startswith("-- ") and sep and key in ("description", "parameters") and not body:
                meta[key] = value.strip()
            else:
                body.append(line)
        found.append(Example(meta["name"], meta.get("description", ""), meta.get("parameters", ""),
                             "\n".join(body).strip()))
    return found


def placeholder_count(sql: str) -> int:
    """The highest `$n` in a statement (what a revalidation binds placeholders for)."""
    tree = sqlglot.parse_one(sql, read="postgres")
    return max((int(p.this.name) for p in tree.find_all(exp.Parameter) if p.this.name.isdigit()), default=0)


def check(sql: str, surface_hash: str) -> tuple[str, str, dict[str, Any]]:
    """(status, query_hash, validation_report) of one version against the running manifest."""
    placeholders = [None] * placeholder_count(sql)
    try:
        statement = validator.validate(sql, placeholders)
    except validator.QueryRejected as rejection:
        # A listed version always carries some hash (the client requires one): the text's own.
        fallback = validator.statement_hash(sql, placeholders) or hashlib.sha256(sql.encode()).hexdigest()
        return "broken", fallback, {
            "valid": False, "code": rejection.code, "message": rejection.message,
            "surface_manifest_hash": surface_hash}
    return "active", statement.query_hash, {
        "valid": True, "surface_manifest_hash": surface_hash, "placeholder_count": len(placeholders),
        "referenced_views": list(statement.referenced_views),
        "referenced_functions": list(statement.referenced_functions)}


def seed(conn: psycopg.Connection, surface_hash: str) -> list[str]:
    """Install the shipped examples that are missing or changed; return the names written.

    Never overwrites a same-name query that is not a shipped example, and never re-enables a
    shipped query an operator disabled. A changed shipped text becomes a new version that
    deprecates the one it replaces. After a manifest change every active version moves to
    `pending_revalidation`; the shipped examples are revalidated here, the others wait."""
    written = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SEED_LOCK,))
        mark_pending(conn, surface_hash)
        for example in examples():
            rows = conn.execute(
                "SELECT version, sql, status, origin FROM saved_queries WHERE namespace = %s AND name = %s"
                " ORDER BY version", (NAMESPACE, example.name)).fetchall()
            if any(origin != SHIPPED or status == "disabled" for _, _, status, origin in rows):
                continue
            if rows and rows[-1][1] == example.sql:
                continue
            status, query_hash, report = check(example.sql, surface_hash)
            if rows and status == "active":
                conn.execute("UPDATE saved_queries SET status = 'deprecated', updated_at = now()"
                             " WHERE namespace = %s AND name = %s AND status IN ('active', 'pending_revalidation')",
                             (NAMESPACE, example.name))
            conn.execute(
                "INSERT INTO saved_queries (query_id, namespace, name, version, sql, description, status, origin,"
                " assurance, parameter_schema, declared_interpretation, query_hash, validated_surface_manifest_hash,"
                " validation_report, author_principal, approver_principal)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, '{}', %s, %s, %s, %s, %s, %s)",
                (uuid.uuid4(), NAMESPACE, example.name, (rows[-1][0] + 1) if rows else 1, example.sql,
                 example.description, status, SHIPPED, SHIPPED, f"parameters: {example.parameters}", query_hash,
                 surface_hash, Jsonb(report), SYSTEM_PRINCIPAL, SYSTEM_PRINCIPAL))
            written.append(example.name)
        # The release validated its own examples against its own manifest: they come back at once.
        # Every other version stays pending until an operator revalidates it.
        revalidate(conn, surface_hash, origin=SHIPPED)
    return written


def mark_pending(conn: psycopg.Connection, surface_hash: str) -> int:
    """Move every active version validated against another manifest hash to `pending_revalidation`."""
    return conn.execute(
        "UPDATE saved_queries SET status = 'pending_revalidation', updated_at = now()"
        " WHERE status = 'active' AND validated_surface_manifest_hash <> %s", (surface_hash,)).rowcount


def revalidate(conn: psycopg.Connection, surface_hash: str, *, origin: str | None = None) -> dict[str, str]:
    """Validate every pending (or stale active) version against the running manifest: it becomes
    `active` again, or `broken` with the reason in its validation report. {namespace.name vN: status}.
    `origin` limits it to the versions of that origin."""
    outcome: dict[str, str] = {}
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SEED_LOCK,))
        mark_pending(conn, surface_hash)
        for query_id, namespace, name, version, text in conn.execute(
                "SELECT query_id, namespace, name, version, sql FROM saved_queries"
                " WHERE status = 'pending_revalidation' AND (%s::text IS NULL OR origin = %s)"
                " ORDER BY namespace, name, version", (origin, origin)).fetchall():
            status, query_hash, report = check(text, surface_hash)
            conn.execute(
                "UPDATE saved_queries SET status = %s, query_hash = %s, validated_surface_manifest_hash = %s,"
                " validation_report = %s, updated_at = now() WHERE query_id = %s",
                (status, query_hash, surface_hash, Jsonb(report), query_id))
            outcome[f"{namespace}.{name} v{version}"] = status
    return outcome


def list_queries(conn: psycopg.Connection, namespace: str | None = None, status: str | None = None
                 ) -> list[dict[str, Any]]:
    """The seed's listing: without `status`, active versions of queries not disabled; with
    `status=draft`, only the latest draft of each query; ordered by namespace, name, version."""
    wanted = status or "active"
    rows = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {', '.join(SUMMARY_FIELDS)} FROM saved_queries s"
        " WHERE s.status = %(status)s AND (%(namespace)s::text IS NULL OR s.namespace = %(namespace)s)"
        " AND (%(status)s <> 'draft' OR s.version = (SELECT max(d.version) FROM saved_queries d"
        "      WHERE d.namespace = s.namespace AND d.name = s.name AND d.status = 'draft'))"
        " AND (%(explicit)s OR NOT EXISTS (SELECT 1 FROM saved_queries x WHERE x.namespace = s.namespace"
        "      AND x.name = s.name AND x.status = 'disabled'))"
        " ORDER BY s.namespace, s.name, s.version",
        {"status": wanted, "namespace": namespace, "explicit": status is not None}).fetchall()
    return [_public(r) for r in rows]


def describe(conn: psycopg.Connection, namespace: str, name: str, version: int | None = None) -> dict[str, Any]:
    """One version with its SQL: the given one, else the active one, else the newest."""
    row = _version(conn, namespace, name, version)
    return _public(row)


def runnable(conn: psycopg.Connection, namespace: str, name: str, version: int | None,
             surface_hash: str) -> dict[str, Any]:
    """The version a run uses, or the seed's refusal: 404 unknown, 409 disabled / not active,
    409 pending revalidation (also when validated against another manifest hash)."""
    row = _version(conn, namespace, name, version)
    if row["status"] == "pending_revalidation" or (
            row["status"] == "active" and row["validated_surface_manifest_hash"] != surface_hash):
        raise SavedQueryError("saved_query_revalidation_pending",
                              f"{namespace}.{name} v{row['version']} was validated against another query space "
                              "and has not been revalidated (corpusmem sql revalidate)", 409)
    if row["status"] != "active":
        raise SavedQueryError("saved_query_disabled",
                              f"{namespace}.{name} v{row['version']} is {row['status']}, not active", 409)
    return _public(row)


def _version(conn: psycopg.Connection, namespace: str, name: str, version: int | None) -> dict[str, Any]:
    rows = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {', '.join(DETAIL_FIELDS)} FROM saved_queries WHERE namespace = %s AND name = %s"
        " AND (%s::int IS NULL OR version = %s) ORDER BY version", (namespace, name, version, version)).fetchall()
    if not rows:
        which = f"{namespace}.{name}" + (f" version {version}" if version is not None else "")
        raise SavedQueryError("saved_query_not_found", f"no saved query named {which}", 404)
    if version is not None:
        return rows[0]
    if any(r["status"] == "disabled" for r in rows):
        return next(r for r in rows if r["status"] == "disabled")
    live = [r for r in rows if r["status"] in ("active", "pending_revalidation")]
    return (live or rows)[-1]


def _public(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items()}
    out["query_id"] = str(out["query_id"])
    for key in ("parameter_schema", "default_limits", "validation_report", "declared_result_schema"):
        if isinstance(out.get(key), str):
            out[key] = json.loads(out[key])
    return out


def saved_query_ref(row: dict[str, Any]) -> dict[str, str]:
    """The `saved_query` object of a QueryResult (all strings)."""
    return {"query_id": str(row["query_id"]), "namespace": row["namespace"], "name": row["name"],
            "version": str(row["version"]), "query_hash": row["query_hash"]}
