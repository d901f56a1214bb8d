"""The manifest of the `memory_v1` query space, its hash, the live-schema check, and the sandbox DSN.

The manifest is built only from checked-in files, never from a database, so every deployment of
a release reports the same hash:

- `sql/query_space/memory_v1_space.json`: the seed's declarative description of the 25 views (comment,
  grain, row key, columns with type, nullability and meaning) and of the 12 functions
  (arguments, result columns, filters, caps). A description is data, so it lives in data: the
  `COMMENT ON` statements of the migration are generated from it (`python -m sql.query_space.query_manifest
  comments`), and `GET /query/space` can return it as it is.
- `sql/migrations/0004_memory_v1.sql`: the SQL of every view and function, cut into sections by
  its `-- @view NAME` / `-- @function NAME` / `-- @support NAME` / `-- @grants` markers. The
  section text is the object's definition in the manifest. A later migration's `@support`,
  `@view` and `@function` sections (0007: what the memory serves; 0016: one read engine) replace
  or extend 0004's.
- `sql/query_space/query_catalog.py`: limits and grammar lists.

`check_live(conn)` compares a database against that: view columns (names, order, types),
comments, function signatures and bodies, and each view's definition as PostgreSQL prints it
(`pg_get_viewdef`), whose fingerprints are recorded in the JSON file per PostgreSQL major version
(`python -m sql.query_space.query_manifest fingerprints DSN` rewrites them after a view changes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from functools import lru_cache
from importlib import resources
from typing import Any

import psycopg

from sql.query_space import query_catalog as catalog

SPACE_FILE = "memory_v1_space.json"
MIGRATION_FILE = "0004_memory_v1.sql"

# digest §1.1, word for word (curly quotes and em dashes included)
HEADLINE = (
    "RememberStack has two deliberately separate truth layers. Claims are immutable source testimony "
    "(\u201cwhat was asserted, by whom, when\u201d); facts\u2014relations and observations\u2014are the "
    "adjudicated worldview (\u201cwhat the system holds or held true\u201d): supersession-adjudicated, "
    "clocked on two time axes (when a fact held in the world, and when the system learned it), "
    "evidence-counted per distinct source\u2014repetition is not corroboration\u2014and contradiction-tracked. "
    "The fact_claim_evidence association is the auditable bridge between the layers, recording which "
    "claims support or contradict each fact. Query claims to inspect testimony; query facts to answer "
    "current or historical truth questions, then follow the bridge to see why the system believes or "
    "believed the fact."
)

_MARKER = re.compile(r"^-- @(view|function|support|comments|grants)\b[ \t]*(\w*)[ \t]*$", re.MULTILINE)


def space_text() -> str:
    return resources.files("sql.query_space").joinpath(SPACE_FILE).read_text(encoding="utf-8")


def migration_text() -> str:
    return resources.files("sql").joinpath("migrations").joinpath(MIGRATION_FILE).read_text(encoding="utf-8")


def later_sections() -> dict[str, dict[str, str]]:
    """The `@support`, `@view` and `@function` sections of the migrations after 0004, in order: a
    later migration that redefines a view, a function or a building block of them (applied
    migrations never change) replaces its text."""
    found: dict[str, dict[str, str]] = {"support": {}, "view": {}, "function": {}}
    directory = resources.files("sql").joinpath("migrations")
    for entry in sorted(directory.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql") and entry.name > MIGRATION_FILE:
            parts = sections(entry.read_text(encoding="utf-8"))
            for kind in found:
                found[kind].update(parts[kind])
    return found


def sections(sql_text: str) -> dict[str, dict[str, str]]:
    """{"view": {name: text}, "function": {...}, "support": {...}, "comments": {"": text},
    "grants": {"": text}} from the migration's markers; a section runs to the next marker."""
    found: dict[str, dict[str, str]] = {"view": {}, "function": {}, "support": {}, "comments": {}, "grants": {}}
    marks = list(_MARKER.finditer(sql_text))
    for mark, following in zip(marks, marks[1:] + [None]):
        end = following.start() if following else len(sql_text)
        body = "\n".join(line.rstrip() for line in sql_text[mark.end():end].strip().splitlines())
        kind, name = mark.group(1), mark.group(2)
        if name in found[kind]:
            raise ValueError(f"migration {MIGRATION_FILE}: two sections for {kind} {name!r}")
        found[kind][name] = body
    return found


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def comments_sql(space: dict[str, Any] | None = None) -> str:
    """The `COMMENT ON` statements for every view, column and function, from the description."""
    space = space or json.loads(space_text())
    lines = []
    for view in space["views"]:
        lines.append(f"COMMENT ON VIEW memory_v1.{view['name']} IS {_sql_literal(view['comment'])};")
        for column in view["columns"]:
            lines.append(f"COMMENT ON COLUMN memory_v1.{view['name']}.{column['name']} IS "
                         f"{_sql_literal(column['comment'])};")
    for function in space["functions"]:
        args = ", ".join(a["type"] for a in function["arguments"])
        lines.append(f"COMMENT ON FUNCTION memory_v1.{function['name']}({args}) IS {_sql_literal(function['summary'])};")
    return "\n".join(lines)


def _signature(function: dict[str, Any]) -> str:
    """As PostgreSQL's `pg_get_function_identity_arguments` prints it."""
    return ", ".join(f"{a['name']} {a['type']}" for a in function["arguments"])


def _result(function: dict[str, Any]) -> str:
    """As PostgreSQL's `pg_get_function_result` prints it."""
    return "TABLE(" + ", ".join(f"{c['name']} {c['type']}" for c in function["columns"]) + ")"


def _body(section: str) -> str:
    """A function's body: the text between its `$$` quotes, as PostgreSQL stores it (`prosrc`)."""
    match = re.search(r"\$\$(.*?)\$\$", section, re.DOTALL)
    if match is None:
        raise ValueError(f"migration {MIGRATION_FILE}: a function section without a $$ body")
    return match.group(1)


def manifest(space: str | None = None, migration: str | None = None) -> dict[str, Any]:
    """The whole manifest; `space` and `migration` default to the checked-in files."""
    description = json.loads(space if space is not None else space_text())
    parts = sections(migration if migration is not None else migration_text())
    for kind, found in later_sections().items():
        parts[kind].update(found)
    views = []
    for view in description["views"]:
        definition = parts["view"].get(view["name"])
        if definition is None:
            raise ValueError(f"migration {MIGRATION_FILE} has no @view section for {view['name']}")
        views.append({**view, "definition": definition})
    functions = []
    for function in description["functions"]:
        definition = parts["function"].get(function["name"])
        if definition is None:
            raise ValueError(f"migration {MIGRATION_FILE} has no @function section for {function['name']}")
        functions.append({**function, "signature": f"{function['name']}({_signature(function)})",
                          "result": _result(function), "definition": definition})
    if sorted(v["name"] for v in views) != sorted(catalog.VIEWS) or \
            {f["name"]: f["category"] for f in functions} != catalog.FUNCTIONS:
        raise ValueError(f"{SPACE_FILE} and sql/query_space/query_catalog.py name different views or functions")
    return {
        "contract": catalog.MANIFEST_CONTRACT,
        "schema": catalog.SCHEMA,
        "schema_major": catalog.SCHEMA_MAJOR_VERSION,
        "headline": HEADLINE,
        "views": views,
        "functions": functions,
        "support_definitions": parts["support"],
        "sandbox": {"role": catalog.SANDBOX_ROLE, "grants": parts["grants"].get("", "")},
        "limits": {"interactive": dict(catalog.INTERACTIVE_LIMITS)},
        "sql_grammar": {
            "functions": {kind: list(names) for kind, names in catalog.BUILTIN_FUNCTIONS.items()},
            "cast_types": list(catalog.CAST_TYPES),
            "public_functions": list(catalog.FUNCTIONS),
            "srf_categories": dict(catalog.FUNCTIONS),
            "srf_invocations_max_per_category": catalog.SRF_INVOCATIONS_MAX_PER_CATEGORY,
            "recursion_depth_max": catalog.INTERACTIVE_LIMITS["recursion_depth"],
            "reserved_prefixes": list(catalog.RESERVED_PREFIXES),
        },
    }


def canonical_json(value: Any) -> bytes:
    """The canonical serialisation the hash is taken over: JSON with object keys sorted, no
    insignificant whitespace (`,` and `:` separators), non-ASCII characters written as themselves,
    encoded as UTF-8. List order is kept (column and argument order are part of the contract)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def manifest_hash(value: dict[str, Any] | None = None) -> str:
    """sha256 (64 hex digits) of the canonical serialisation of `value` (default: `manifest()`)."""
    if value is None:
        return _default_hash()
    return hashlib.sha256(canonical_json(value)).hexdigest()


@lru_cache(maxsize=1)
def _default_hash() -> str:
    return hashlib.sha256(canonical_json(manifest())).hexdigest()


# --- the live database against the manifest -----------------------------------------------------

_LIVE_VIEWS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), col_description(c.oid, a.attnum),
       obj_description(c.oid, 'pg_class'), md5(pg_get_viewdef(c.oid, true))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = 'memory_v1' AND c.relkind IN ('v', 'm', 'r', 'p', 'f')
ORDER BY c.relname, a.attnum"""

_LIVE_FUNCTIONS = """
SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid), p.prosrc,
       obj_description(p.oid, 'pg_proc'), p.prosecdef, coalesce(p.proconfig, '{}')
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'memory_v1' ORDER BY 1, 2"""


# Every public function runs as the owner: with a fixed search_path, a name in its body can only
# mean the object the migration meant (pg_temp last, so a temporary object never shadows one).
_SEARCH_PATH = "search_path=pg_catalog, pg_temp"


def _live(conn: psycopg.Connection) -> tuple[list[tuple], list[tuple], int]:
    # pg_get_viewdef qualifies names by the search_path: fix it so every database prints alike
    with conn.transaction():
        # SET LOCAL, not set_config: the sandbox role, which may run this check, cannot call it
        conn.execute("SET LOCAL search_path = pg_catalog")
        views = conn.execute(_LIVE_VIEWS).fetchall()
        functions = conn.execute(_LIVE_FUNCTIONS).fetchall()
        major = int(conn.execute("SELECT current_setting('server_version_num')::int / 10000").fetchone()[0])
    return views, functions, major


def live_fingerprints(conn: psycopg.Connection) -> dict[str, Any]:
    """md5 of each memory_v1 view's definition as this server prints it (for `fingerprints`)."""
    views, _, major = _live(conn)
    return {"pg_major": major, "views": {row[0]: row[5] for row in views}}


def check_live(conn: psycopg.Connection, value: dict[str, Any] | None = None) -> str | None:
    """None when the database's memory_v1 matches the manifest, else the first difference."""
    value = value or manifest()
    views, functions, major = _live(conn)
    live_views: dict[str, dict[str, Any]] = {}
    for name, column, type_, column_comment, comment, fingerprint in views:
        entry = live_views.setdefault(name, {"columns": [], "comment": comment, "fingerprint": fingerprint})
        entry["columns"].append((column, type_, column_comment))
    expected_names = [v["name"] for v in value["views"]]
    for name in sorted(set(live_views) - set(expected_names)):
        return f"memory_v1.{name} is not in the manifest"
    fingerprints = json.loads(space_text()).get("fingerprints", {})
    for view in value["views"]:
        name = view["name"]
        live = live_views.get(name)
        if live is None:
            return f"memory_v1.{name} is missing"
        if (live["comment"] or "") != view["comment"]:
            return f"memory_v1.{name}: its comment differs from the manifest"
        expected = [(c["name"], c["type"], c["comment"]) for c in view["columns"]]
        for position, (want, got) in enumerate(zip(expected, live["columns"] + [None] * len(expected)), start=1):
            if got is None:
                return f"memory_v1.{name}: column {want[0]} is missing"
            if want[0] != got[0]:
                return f"memory_v1.{name}: column {position} is {got[0]}, the manifest says {want[0]}"
            if want[1] != got[1]:
                return f"memory_v1.{name}.{want[0]}: type {got[1]}, the manifest says {want[1]}"
            if want[2] != (got[2] or ""):
                return f"memory_v1.{name}.{want[0]}: its comment differs from the manifest"
        if len(live["columns"]) > len(expected):
            return f"memory_v1.{name}: column {live['columns'][len(expected)][0]} is not in the manifest"
        if fingerprints.get("pg_major") == major and fingerprints["views"].get(name) != live["fingerprint"]:
            return f"memory_v1.{name}: its definition differs from the manifest"
    live_functions: dict[str, list[tuple]] = {}
    for row in functions:
        live_functions.setdefault(row[0], []).append(row)
    expected_functions = {f["name"]: f for f in value["functions"]}
    for name in sorted(set(live_functions) - set(expected_functions)):
        return f"memory_v1.{name}() is not in the manifest"
    for name, function in expected_functions.items():
        rows = live_functions.get(name)
        if not rows:
            return f"memory_v1.{name}() is missing"
        if len(rows) > 1:
            return f"memory_v1.{name}() has {len(rows)} overloads"
        _, arguments, result, source, comment, definer, config = rows[0]
        if arguments != _signature(function):
            return f"memory_v1.{name}({arguments}): the manifest says ({_signature(function)})"
        if result != _result(function):
            return f"memory_v1.{name}() returns {result}, the manifest says {_result(function)}"
        if source != _body(function["definition"]):
            return f"memory_v1.{name}(): its body differs from the manifest"
        if (comment or "") != function["summary"]:
            return f"memory_v1.{name}(): its comment differs from the manifest"
        if not definer:
            return f"memory_v1.{name}() is not SECURITY DEFINER"
        if _SEARCH_PATH not in config:
            return f"memory_v1.{name}() does not fix its search_path to {_SEARCH_PATH.split('=', 1)[1]}"
    return None


# --- the sandbox role's connection ------------------------------------------------------------

def sandbox_dsn(owner_dsn: str, password: str | None = None) -> str:
    """The owner's DSN (same host or socket, port, database) for the sandbox role. The embedded
    server trusts local socket connections; a server that wants a password gets `password`, else
    `CORPUSMEM_QUERY_PASSWORD` (the operator sets it on the role: `ALTER ROLE corpusmem_query
    PASSWORD ...`). The owner's password never travels with it."""
    info = psycopg.conninfo.conninfo_to_dict(owner_dsn)
    info["user"] = catalog.SANDBOX_ROLE
    info.pop("password", None)
    password = password or os.environ.get("CORPUSMEM_QUERY_PASSWORD")
    if password:
        info["password"] = password
    for key in ("passfile", "service"):  # they could name the owner's credentials
        info.pop(key, None)
    return psycopg.conninfo.make_conninfo(**info)


def _main(argv: list[str]) -> int:
    if argv[:1] == ["comments"]:
        print(comments_sql())
        return 0
    if argv[:1] == ["hash"]:
        print(manifest_hash())
        return 0
    if argv[:1] == ["fingerprints"] and len(argv) == 2:
        with psycopg.connect(argv[1]) as conn:
            prints = live_fingerprints(conn)
        space = json.loads(space_text())
        space["fingerprints"] = prints
        path = resources.files("sql.query_space").joinpath(SPACE_FILE)
        with open(str(path), "w", encoding="utf-8") as out:
            json.dump(space, out, indent=1, ensure_ascii=False)
            out.write("\n")
        print(f"{len(prints['views'])} view fingerprints for PostgreSQL {prints['pg_major']} written to {path}")
        return 0
    print("usage: python -m sql.query_space.query_manifest comments | hash | fingerprints DSN", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
