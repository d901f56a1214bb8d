"""What a `memory_v1` statement may name and use: relations, functions, operators, casts, syntax.

Rules 6 to 10 of the seed's order (reference/query-space, "What a statement may contain"). Each
rule walks the sqlglot tree and raises `QueryRejected` on the first item outside its allowlist.
Allowlists are by node class, never by re-rendered text, and function names are the spellings
PostgreSQL will look up (see `validator_parse`).
"""

from __future__ import annotations

from sqlglot import exp

from sql.query_space.query_catalog import BUILTIN_FUNCTIONS, FUNCTIONS, SCHEMA, VIEWS
from sql.query_space.validator_parse import (
    CALL_OUTER,
    QueryRejected,
    call_name,
    call_qualifier,
    folded,
    is_call,
    nodes_of,
)

_VIEWS = frozenset(VIEWS)
_BUILTINS = frozenset(name for names in BUILTIN_FUNCTIONS.values() for name in names)

# Call-shaped syntax that PostgreSQL does not look up as a function: judged by later rules.
_SYNTAX_CALLS = frozenset({"any", "all", "some", "exists", "case", "cast", "row", "array"})

# Keywords PostgreSQL evaluates as clock or session values (SQLValueFunction) even without
# parentheses; sqlglot reads some of them (`user`, `current_role`, `system_user`) as columns.
_SQL_VALUE_KEYWORDS = frozenset({
    "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp", "current_role",
    "current_user", "session_user", "user", "system_user", "current_catalog", "current_schema",
})

# Operators of the seed's list, as sqlglot's node classes. `= ANY` is EQ over Any (checked below);
# IN (list) and NOT IN are PostgreSQL's `= ANY` / `<> ALL` in disguise and are read as allowed
# ([UNCLEAR] in the seed; its own parser represents IN (list) with `=`). Unary minus is `-`.
_ALLOWED_OPERATORS: tuple[type[exp.Expr], ...] = (
    exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.DPipe,
    exp.ArrayContainsAll, exp.ArrayContainedBy, exp.ArrayOverlaps, exp.JSONExtract, exp.JSONExtractScalar,
    exp.JSONBExtract, exp.JSONBExtractScalar, exp.RegexpLike, exp.RegexpILike, exp.Like, exp.ILike, exp.Between,
    exp.And, exp.Or, exp.Not, exp.Is, exp.In, exp.Neg, exp.Escape,
)
# Binary/Unary node classes that are syntax rather than operators: qualified names, named
# arguments, COLLATE, parentheses, subscripts.
_NOT_OPERATORS: tuple[type[exp.Expr], ...] = (exp.Dot, exp.Kwarg, exp.PropertyEQ, exp.Collate, exp.Paren)
# Operators sqlglot builds as plain functions.
_FUNCTION_SHAPED_OPERATORS: tuple[type[exp.Expr], ...] = (exp.MatchAgainst,)
_OPERATOR_SYMBOLS: dict[type[exp.Expr], str] = {
    exp.Pow: "^", exp.NullSafeNEQ: "IS DISTINCT FROM", exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.SimilarTo: "SIMILAR TO", exp.MatchAgainst: "@@", exp.Distance: "<->", exp.Operator: "OPERATOR(...)",
    exp.BitwiseLeftShift: "<<", exp.BitwiseRightShift: ">>", exp.BitwiseAnd: "&", exp.BitwiseOr: "|",
    exp.BitwiseXor: "#", exp.BitwiseNot: "~", exp.JSONBContains: "?", exp.JSONBContainsAnyTopKeys: "?|",
    exp.JSONBContainsAllTopKeys: "?&", exp.Overlaps: "OVERLAPS", exp.Glob: "GLOB", exp.All: "ALL",
}

# Cast targets as sqlglot normalises them: `int4`/`integer` → INT, `float4`/`real` → FLOAT,
# `float8` → DOUBLE, `numeric` → DECIMAL, `char(n)` is PostgreSQL's `bpchar`. Arrays of these are
# allowed too: `fetch_chunk_bodies` takes `uuid[]` and graph predicates `text[]` ([UNCLEAR] in the
# seed, which lists element types only).
_T = exp.DataType.Type
_CAST_TYPES = frozenset({
    _T.UUID, _T.TEXT, _T.VARCHAR, _T.BPCHAR, _T.CHAR, _T.BOOLEAN, _T.SMALLINT, _T.INT, _T.BIGINT, _T.DECIMAL,
    _T.FLOAT, _T.DOUBLE, _T.TIMESTAMPTZ, _T.TIMESTAMP, _T.DATE, _T.INTERVAL, _T.JSONB,
})

# The seed's syntax elements as sqlglot node classes (`sql_grammar.statement_node_classes`).
# [UNCLEAR] in the seed and allowed here, being read-only: INTERSECT/EXCEPT, OFFSET/FETCH,
# aggregate FILTER, DISTINCT ON, LATERAL subqueries (LATERAL functions fail placement).
STATEMENT_NODE_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery, exp.From, exp.Join, exp.Where,
    exp.Group, exp.GroupingSets, exp.Rollup, exp.Cube, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset,
    exp.Fetch, exp.LimitOptions, exp.Window, exp.WindowSpec, exp.Distinct, exp.With, exp.CTE,
    exp.RecursiveWithSearch, exp.TableAlias, exp.Table, exp.Alias, exp.Column, exp.Identifier, exp.Star,
    exp.Literal, exp.Null, exp.Boolean, exp.Parameter, exp.Case, exp.If, exp.Tuple, exp.Array, exp.Bracket,
    exp.Slice, exp.Collate, exp.Kwarg, exp.PropertyEQ, exp.Cast, exp.DataType, exp.DataTypeParam, exp.Interval,
    exp.Var, exp.RawString, exp.ByteString, exp.HexString, exp.BitString, exp.UnicodeString, exp.National,
    exp.Filter, exp.Lateral, exp.Exists, exp.Any, exp.Paren, exp.Dot, exp.JSONPath, exp.JSONPathKey,
    exp.JSONPathRoot, exp.JSONPathSubscript,
) + _ALLOWED_OPERATORS


def _string_continuation(node: exp.Expr) -> bool:
    """`'a'` newline `'b'`: PostgreSQL joins adjacent string literals; sqlglot builds a Concat."""
    return isinstance(node, exp.Concat) and not is_call(node) and all(
        isinstance(part, exp.Literal) and part.is_string for part in node.expressions)


def _display(schema: str | None, name: str | None) -> str:
    return f"{schema}.{name}" if schema else str(name)


def visible_ctes(table: exp.Table) -> set[str]:
    """CTE names that a bare table reference can resolve to, following PostgreSQL's scoping.

    A CTE sees the CTEs listed before it in its WITH clause, and with RECURSIVE every CTE of the
    clause, itself included; the query body sees all of them; inner WITH clauses shadow outer ones.
    """
    names: set[str] = set()
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = node.expressions
            if node.args.get("recursive"):
                names.update(folded(cte.alias_or_name) or "" for cte in ctes)
            else:
                for cte in ctes:
                    if cte is child:
                        break
                    names.add(folded(cte.alias_or_name) or "")
        else:
            with_ = node.args.get("with_") or node.args.get("with")
            if isinstance(with_, exp.With) and with_ is not child:
                names.update(folded(cte.alias_or_name) or "" for cte in with_.expressions)
        child, node = node, node.parent
    return names


def require_memory_v1_relations(tree: exp.Expr) -> list[str]:
    """Rule 6: only the 25 views (bare or `memory_v1.`) and the statement's own CTEs are read.

    Returns the views referenced, without schema.

    >>> from sql.query_space.validator_parse import parse_one
    >>> require_memory_v1_relations(parse_one("SELECT * FROM pg_catalog.pg_class"))
    Traceback (most recent call last):
    ...
    sql.query_space.validator_parse.QueryRejected: relation_not_allowed: relation pg_catalog.pg_class is not in memory_v1
    """
    views: list[str] = []
    for table in (node for node in nodes_of(tree) if isinstance(node, exp.Table)):
        if not isinstance(table.this, exp.Identifier):
            continue  # a function FROM item or ROWS FROM: judged by the function rules
        name = folded(table.this)
        schema = folded(table.args.get("db"))
        if table.args.get("catalog") is not None:
            raise QueryRejected("relation_not_allowed",
                                f"relation {table.sql('postgres')} is not in {SCHEMA}")
        if schema is None and name in visible_ctes(table):
            continue
        if schema in (None, SCHEMA) and name in _VIEWS and not table.args.get("only"):
            views.append(name)  # type: ignore[arg-type]
            continue
        raise QueryRejected("relation_not_allowed", f"relation {_display(schema, name)} is not in {SCHEMA}")
    return views


def require_allowed_functions(tree: exp.Expr) -> list[str]:
    """Rule 7: public functions (bare or `memory_v1.`) and the built-in allowlist (bare or `pg_catalog.`).

    Returns the function names called (public and built-in).
    """
    called: list[str] = []
    for node in nodes_of(tree):
        if is_call(node):
            name = call_name(node) or ""
            if name in _SYNTAX_CALLS:
                continue
            schema, malformed = call_qualifier(node)
            allowed_schemas: tuple[str | None, ...] = ()
            if name in FUNCTIONS:
                allowed_schemas = (None, SCHEMA)
            elif name in _BUILTINS:
                allowed_schemas = (None, "pg_catalog")
            if malformed or schema not in allowed_schemas:
                raise QueryRejected("function_not_allowed", f"function {_display(schema, name)} is not allowed")
            called.append(name)
            for outer in node.meta.get(CALL_OUTER, ()):
                if outer not in _BUILTINS:
                    raise QueryRejected("function_not_allowed", f"function {outer} is not allowed")
        elif isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier) \
                and not node.this.quoted and node.name.lower() in _SQL_VALUE_KEYWORDS:
            raise QueryRejected("function_not_allowed", f"function {node.name.lower()} is not allowed")
        elif isinstance(node, exp.Func) and not isinstance(node, (exp.Binary, exp.Unary, exp.Predicate)) \
                and not isinstance(node, _FUNCTION_SHAPED_OPERATORS) and not _string_continuation(node) \
                and not isinstance(node, (exp.Cast, exp.Array, exp.Case, exp.If)):
            # A function sqlglot built from special syntax (UNNEST, a clock or session keyword).
            name = node.name if isinstance(node, exp.Anonymous) else node.sql_name().lower()
            raise QueryRejected("function_not_allowed", f"function {name} is not allowed")
    return called


def _operator_text(node: exp.Expr) -> str:
    symbol = _OPERATOR_SYMBOLS.get(type(node))
    if symbol:
        return symbol
    if isinstance(node, exp.Operator):
        return f"OPERATOR({node.args.get('operator')})"
    return node.key.upper()


def require_allowed_operators(tree: exp.Expr, order_by_using: list[str]) -> None:
    """Rule 8: the seed's operator list; anything else, `ORDER BY … USING` included, is refused."""
    for node in nodes_of(tree):
        if is_call(node):
            name = call_name(node)
            if name == "any" and not isinstance(node.parent, exp.EQ):
                raise QueryRejected("operator_not_allowed", "operator ANY is only allowed as = ANY")
            if name in ("all", "some"):
                raise QueryRejected("operator_not_allowed", f"operator {name.upper()} is not allowed")
            continue
        if isinstance(node, exp.Any) and not isinstance(node.parent, exp.EQ):
            raise QueryRejected("operator_not_allowed", "operator ANY is only allowed as = ANY")
        operator_like = isinstance(node, (exp.Binary, exp.Unary, exp.Predicate, *_FUNCTION_SHAPED_OPERATORS))
        if operator_like and not isinstance(node, _NOT_OPERATORS + _ALLOWED_OPERATORS + (exp.Any, exp.Exists)):
            raise QueryRejected("operator_not_allowed", f"operator {_operator_text(node)} is not allowed")
    if order_by_using:
        raise QueryRejected("operator_not_allowed",
                            f"operator {order_by_using[0]} in ORDER BY ... USING is not allowed")


def _cast_type_allowed(data_type: exp.Expr) -> bool:
    if not isinstance(data_type, exp.DataType):
        return False  # regclass, oid and other object identifiers
    if data_type.this == _T.ARRAY:
        return bool(data_type.expressions) and all(_cast_type_allowed(inner) for inner in data_type.expressions)
    return data_type.this in _CAST_TYPES


def require_allowed_casts(tree: exp.Expr) -> None:
    """Rule 9: `::`, CAST and typed literals only to the seed's types (and arrays of them)."""
    for cast in (node for node in nodes_of(tree) if isinstance(node, exp.Cast)):
        target = cast.args.get("to")
        if not _cast_type_allowed(target):
            shown = target.sql("postgres") if target is not None else "?"
            raise QueryRejected("operator_not_allowed", f"cast to {shown} is not allowed")


def require_allowed_syntax(tree: exp.Expr) -> None:
    """Rule 10: every node is one of the seed's syntax elements (`WITHIN GROUP` is not)."""
    for node in nodes_of(tree):
        if is_call(node) or _string_continuation(node):
            continue  # a call already judged by rule 7; its arguments are still walked
        if not isinstance(node, STATEMENT_NODE_CLASSES):
            label = "WITHIN GROUP" if isinstance(node, exp.WithinGroup) else node.key.upper()
            raise QueryRejected("statement_not_allowed", f"{label} is not allowed in a {SCHEMA} statement")

