"""Recursion template, public function placement, per-category quota and argument checks.

Rules 11 to 13 of the seed's order (reference/query-space, "Recursion" and "Public function
placement"), and the argument checks whose place the seed does not give (graph `$1`, one clock,
`k` below 1), run last.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from sqlglot import exp

from sql.query_space.query_catalog import (
    FUNCTIONS,
    GRAPH_FUNCTIONS,
    INTERACTIVE_LIMITS,
    SCHEMA,
    SEARCH_FUNCTIONS,
    SRF_INVOCATIONS_MAX_PER_CATEGORY,
    VIEWS,
)
from sql.query_space.validator_parse import (
    CALL_START,
    QueryRejected,
    call_name,
    folded,
    is_call,
    nodes_of,
)

_MAX_DEPTH = INTERACTIVE_LIMITS["recursion_depth"]

# Positions (0-based) of the clock arguments of the graph functions that take them, by signature.
_CLOCK_POSITIONS = {"graph_neighborhood": (4, 5), "graph_path": (5, 6)}
_CLOCK_NAMES = ("valid_at", "believed_at")


@dataclass(frozen=True)
class FunctionCall:
    """One call of a public function, as written in the statement."""

    name: str  # public function name, e.g. "semantic_claims"
    category: str  # from query_catalog.FUNCTIONS
    ordinal: int  # 0-based order of appearance in the statement
    # Per argument: ("param", n) for $n, ("literal", python value) or ("null", None); a cast is stripped.
    arguments: tuple[tuple[str, object], ...]
    casts: tuple[str | None, ...] = ()  # per argument, the cast type written around it ("uuid", "timestamptz")
    argument_names: tuple[str | None, ...] = ()  # per argument, its name when passed as `name => value`


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _int_literal(node: exp.Expr | None) -> int | None:
    node = _unparen(node) if node is not None else None
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    return None


def _is_depth(node: exp.Expr, qualifiers: set[str | None]) -> bool:
    node = _unparen(node)
    return isinstance(node, exp.Column) and folded(node.this) == "depth" \
        and folded(node.args.get("table")) in qualifiers


def _refs(select: exp.Expr, name: str) -> list[exp.Table]:
    return [table for table in select.find_all(exp.Table)
            if isinstance(table.this, exp.Identifier) and folded(table.this) == name and not table.args.get("db")]


def require_recursion_template(tree: exp.Expr) -> None:
    """Rule 11: at most one recursive CTE, shaped like the seed's template (`unbounded_recursion`).

    >>> from sql.query_space.validator_parse import parse_one
    >>> require_recursion_template(parse_one(
    ...     "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT n FROM r"))
    Traceback (most recent call last):
    ...
    sql.query_space.validator_parse.QueryRejected: unbounded_recursion: the anchor of recursive CTE r must set depth to ...
    """
    def refuse(message: str) -> QueryRejected:
        return QueryRejected("unbounded_recursion", message)

    every = nodes_of(tree)
    if any(isinstance(node, exp.RecursiveWithSearch) for node in every):
        raise refuse("CYCLE and SEARCH clauses are not allowed on a recursive CTE")
    recursive = [with_ for with_ in every if isinstance(with_, exp.With) and with_.args.get("recursive")]
    if not recursive:
        return
    if len(recursive) > 1 or len(recursive[0].expressions) != 1:
        raise refuse("at most one recursive CTE per statement, alone in its WITH RECURSIVE clause")
    cte = recursive[0].expressions[0]
    name = folded(cte.alias_or_name) or ""
    body = cte.this
    if not isinstance(body, exp.Union) or not isinstance(body.this, exp.Select) \
            or not isinstance(body.expression, exp.Select):
        raise refuse(f"recursive CTE {name} must be anchor UNION [ALL] recursive term")
    anchor, term = body.this, body.expression
    if _refs(anchor, name):
        raise refuse(f"the anchor of recursive CTE {name} must not reference it")

    # The depth column: by the CTE's column list when it has one, else by the anchor's names.
    columns = [folded(column) for column in (cte.args["alias"].columns if cte.args.get("alias") else [])]
    if columns:
        position = columns.index("depth") if "depth" in columns else -1
    else:
        names = [folded(projection.alias_or_name) for projection in anchor.expressions]
        position = names.index("depth") if "depth" in names else -1
    if position < 0 or position >= len(anchor.expressions) or _int_literal(anchor.expressions[position].unalias()) != 0:
        raise refuse(f"the anchor of recursive CTE {name} must set depth to the literal 0")

    references = _refs(term, name)
    if len(references) != 1:
        raise refuse(f"the recursive term of {name} must reference it exactly once")
    from_items = [term.args["from_"].this] if term.args.get("from_") else []
    from_items += [join.this for join in term.args.get("joins") or []]
    for item in from_items:
        if item is references[0]:
            continue
        if not (isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier)
                and folded(item.args.get("db")) in (None, SCHEMA) and folded(item.this) in VIEWS):
            raise refuse(f"the recursive term of {name} may join only views")
    if references[0] not in from_items:
        raise refuse(f"the recursive term of {name} must read it in its FROM clause")
    self_names = {None, folded(references[0].alias_or_name)}

    if position >= len(term.expressions):
        raise refuse(f"the recursive term of {name} must emit depth + 1")
    step = _unparen(term.expressions[position].unalias())
    if not (isinstance(step, exp.Add) and (
            (_is_depth(step.this, self_names) and _int_literal(step.expression) == 1)
            or (_is_depth(step.expression, self_names) and _int_literal(step.this) == 1))):
        raise refuse(f"the recursive term of {name} must emit depth + 1 in the depth column")

    # The bound: a top-level AND conjunct `depth < N`, N a literal at most 6. `depth <= N` and a
    # parameter N are not the template ([UNCLEAR] in the seed; read strictly).
    where = term.args.get("where")
    condition = _unparen(where.this) if where is not None else None
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition] if condition else []
    for conjunct in map(_unparen, conjuncts):
        bound = _int_literal(conjunct.expression) if isinstance(conjunct, exp.LT) else None
        if bound is not None and _is_depth(conjunct.this, self_names):
            if bound > _MAX_DEPTH:
                raise refuse(f"recursion depth bound {bound} is over {_MAX_DEPTH}")
            return
    raise refuse(f"the recursive term of {name} needs a top-level condition depth < N "
                 f"(N at most {_MAX_DEPTH}), not inside an OR")


def _top_level_selects(tree: exp.Expr) -> list[exp.Expr]:
    """The top-level SELECT and the bodies of top-level CTEs, where public functions may be FROM items."""
    root = tree
    while isinstance(root, exp.Subquery) and not root.args.get("alias"):
        root = root.this
    selects = [root] if isinstance(root, exp.Select) else []
    with_ = root.args.get("with_")
    if isinstance(with_, exp.With):
        selects += [cte.this for cte in with_.expressions if isinstance(cte.this, exp.Select)]
    return selects


def _argument(call: str, index: int, node: exp.Expr) -> tuple[tuple[str, object], str | None, str | None]:
    """One argument as (kind, value), its cast type and its name; a computed argument is refused."""
    name = None
    if isinstance(node, (exp.Kwarg, exp.PropertyEQ)):
        name, node = folded(node.this), node.expression
    cast = None
    if isinstance(node, exp.Cast) and isinstance(node.args.get("to"), exp.DataType):
        cast, node = node.args["to"].sql("postgres").lower(), node.this
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if isinstance(node, exp.Parameter) and not negative and _int_literal(node.this) is not None:
        return ("param", _int_literal(node.this)), cast, name
    if isinstance(node, exp.Null) and not negative:
        return ("null", None), cast, name
    if isinstance(node, exp.Boolean) and not negative:
        return ("literal", bool(node.this)), cast, name
    if isinstance(node, exp.Literal) and (not negative or not node.is_string):
        if node.is_string:
            return ("literal", node.this), cast, name
        number = Decimal(node.this)
        value: object = int(number) if number == number.to_integral_value() and "." not in node.this \
            and "e" not in node.this.lower() else float(number)
        return ("literal", -value if negative else value), cast, name  # type: ignore[operator]
    if isinstance(node, (exp.RawString, exp.UnicodeString, exp.National)) and not negative:
        return ("literal", node.name), cast, name
    raise QueryRejected("function_placement_not_allowed",
                        f"argument {index + 1} of {call} must be a literal or a parameter, optionally cast")


def require_public_call_placement(tree: exp.Expr) -> list[FunctionCall]:
    """Rule 12: each public call is its own FROM item of the top-level statement or a top-level CTE body."""
    top = _top_level_selects(tree)
    found: list[exp.Expr] = [node for node in nodes_of(tree) if is_call(node) and call_name(node) in FUNCTIONS]
    found.sort(key=lambda node: node.meta[CALL_START])
    calls: list[FunctionCall] = []
    for ordinal, node in enumerate(found):
        name = call_name(node) or ""
        table = node.parent
        if isinstance(table, exp.Table) and isinstance(table.parent, exp.Table):
            raise QueryRejected("function_placement_not_allowed", f"{name} must be its own FROM item, not in ROWS FROM")
        holder = table.parent if isinstance(table, exp.Table) and table.this is node else None
        if not (isinstance(holder, (exp.From, exp.Join)) and holder.this is table and holder.parent in top
                and holder.arg_key in ("from_", "joins")):
            raise QueryRejected("function_placement_not_allowed",
                                f"{name} must be a FROM item of the top-level statement or of a top-level CTE body")
        parts = [_argument(name, index, argument) for index, argument in enumerate(node.expressions)]
        calls.append(FunctionCall(
            name=name, category=FUNCTIONS[name], ordinal=ordinal, arguments=tuple(part[0] for part in parts),
            casts=tuple(part[1] for part in parts), argument_names=tuple(part[2] for part in parts),
        ))
    return calls


def require_category_quota(calls: list[FunctionCall]) -> None:
    """Rule 13: at most 3 calls per category per statement (`quota_exceeded`)."""
    for category, count in Counter(call.category for call in calls).items():
        if count > SRF_INVOCATIONS_MAX_PER_CATEGORY:
            raise QueryRejected("quota_exceeded", f"{count} {category} function calls in one statement; "
                                                  f"at most {SRF_INVOCATIONS_MAX_PER_CATEGORY}")


def _argument_at(call: FunctionCall, position: int, name: str) -> tuple[str, object] | None:
    for index, argument in enumerate(call.arguments):
        argument_name = call.argument_names[index] if index < len(call.argument_names) else None
        if argument_name == name or (argument_name is None and index == position):
            return argument
    return None


def _value(argument: tuple[str, object] | None, parameters: list[object]) -> tuple[bool, object]:
    """Whether an argument is given (not absent, not NULL), and its value when known."""
    if argument is None or argument[0] == "null":
        return False, None
    if argument[0] == "param":
        index = int(argument[1]) - 1  # type: ignore[call-overload]
        value = parameters[index] if 0 <= index < len(parameters) else None
        return value is not None, value
    return True, argument[1]


def require_call_arguments(calls: list[FunctionCall], parameters: list[object]) -> None:
    """Argument checks (`invalid_parameter`): graph `$1`, both clocks or neither, search `k` at least 1."""
    for call in calls:
        if call.name in GRAPH_FUNCTIONS:
            if _argument_at(call, 0, "deployment_id") != ("param", 1):
                raise QueryRejected("invalid_parameter",
                                    f"the first argument of {call.name} must be the parameter $1, this deployment's id")
            if call.name in _CLOCK_POSITIONS:
                given = [_value(_argument_at(call, position, clock), parameters)[0]
                         for position, clock in zip(_CLOCK_POSITIONS[call.name], _CLOCK_NAMES)]
                if given[0] != given[1]:
                    raise QueryRejected("invalid_parameter",
                                        f"{call.name} needs both valid_at and believed_at, or neither")
        if call.name in SEARCH_FUNCTIONS:
            present, k = _value(_argument_at(call, 1, "k"), parameters)
            if isinstance(k, str) and k.strip().lstrip("-").isdigit():
                k = int(k)  # PostgreSQL casts a text parameter to the integer argument
            if present and isinstance(k, (int, float)) and not isinstance(k, bool) and k < 1:
                raise QueryRejected("invalid_parameter", f"k of {call.name} must be at least 1, got {k}")
