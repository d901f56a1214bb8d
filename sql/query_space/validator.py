"""The `memory_v1` statement validator: one read-only statement inside the query space, or a coded refusal.

Checks run in the seed's order (reference/query-space, "What a statement may contain"); the first
rule a statement breaks decides its code. This is the first layer only: statements still run as a
role that can read `memory_v1` and nothing else, in a read-only transaction with timeouts.

>>> validate("SELECT count(*) FROM documents_live").referenced_functions
('count',)
>>> validate("SELECT * FROM pg_catalog.pg_class")
Traceback (most recent call last):
...
sql.query_space.validator_parse.QueryRejected: relation_not_allowed: relation pg_catalog.pg_class is not in memory_v1
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sql.query_space.query_catalog import INTERACTIVE_LIMITS, RESERVED_PREFIXES
from sql.query_space.validator_calls import (
    FunctionCall,
    require_call_arguments,
    require_category_quota,
    require_public_call_placement,
    require_recursion_template,
)
from sql.query_space.validator_grammar import (
    require_allowed_casts,
    require_allowed_functions,
    require_allowed_operators,
    require_allowed_syntax,
    require_memory_v1_relations,
)
from sql.query_space.validator_parse import (
    ParseError,
    QueryRejected,
    TokenError,
    nesting_problem,
    nodes_of,
    parse_tokens,
    split_statements,
    strip_order_by_using,
    tokenize,
)

__all__ = ["FunctionCall", "QueryRejected", "ValidatedStatement", "statement_hash", "validate"]

_SQL_TEXT_BYTES = INTERACTIVE_LIMITS["sql_text_bytes"]
_PARAMETERS_COUNT = INTERACTIVE_LIMITS["parameters_count"]
_PARAMETERS_BYTES = INTERACTIVE_LIMITS["parameters_bytes"]

_STATEMENT_STARTS = (TokenType.SELECT, TokenType.VALUES, TokenType.WITH, TokenType.L_PAREN)
# Read-only roots; anything else (DML, DDL, COPY, SET, a `Command` sqlglot fell back to) is refused.
_ROOTS = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)
_WRITE_OR_UTILITY = (exp.DML, exp.DDL, exp.Command, exp.Copy, exp.Set, exp.Transaction, exp.Commit,
                     exp.Rollback, exp.Pragma, exp.Use, exp.Describe)
_STRING_TOKENS = frozenset({
    TokenType.STRING, TokenType.BYTE_STRING, TokenType.HEREDOC_STRING, TokenType.RAW_STRING,
    TokenType.NATIONAL_STRING, TokenType.UNICODE_STRING, TokenType.HEX_STRING, TokenType.BIT_STRING,
})


@dataclass(frozen=True)
class ValidatedStatement:
    """A statement that passed every rule, with what the runner and the result need to know."""

    sql: str  # the statement as given: it is what runs
    query_hash: str  # sha256 hex of the normalized statement and the parameters' JSON types
    referenced_views: tuple[str, ...]  # sorted, unique, without schema prefix
    referenced_functions: tuple[str, ...]  # sorted, unique: public functions and built-ins called
    public_calls: tuple[FunctionCall, ...]
    ordered_result: bool  # the top-level statement has ORDER BY
    placeholder_count: int


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _require_sizes(sql: str, parameters: Sequence[object]) -> list[object]:
    """SQL text and parameter caps (`invalid_parameter`).

    The seed does not place these in its order; they run first so that the parser never sees more
    than 64 KiB (a 100,000-element IN list is refused here in microseconds).
    """
    if not isinstance(sql, str):
        raise QueryRejected("invalid_parameter", "sql must be a string")
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, Sequence):
        raise QueryRejected("invalid_parameter", "parameters must be an array")
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > _SQL_TEXT_BYTES:
        raise QueryRejected("invalid_parameter", f"SQL text is {size} bytes; at most {_SQL_TEXT_BYTES}")
    if len(parameters) > _PARAMETERS_COUNT:
        raise QueryRejected("invalid_parameter", f"{len(parameters)} parameters; at most {_PARAMETERS_COUNT}")
    try:
        encoded = json.dumps(list(parameters), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise QueryRejected("invalid_parameter", f"parameters must be JSON values ({error})") from None
    if len(encoded.encode("utf-8", "surrogatepass")) > _PARAMETERS_BYTES:
        raise QueryRejected("invalid_parameter", f"parameters are over {_PARAMETERS_BYTES} bytes encoded")
    return list(parameters)


@dataclass(frozen=True)
class _Front:
    """Rules 1 to 3 up to the tree, for one text: computed once, shared by `statement_hash` and `validate`."""

    statement_count: int
    first_keyword: str  # the first token of the one statement, upper-cased ("" unless exactly one)
    tokens: tuple[Token, ...]  # the one statement's tokens
    tree: exp.Expr | None
    order_by_using: tuple[str, ...]  # operators of `ORDER BY … USING`, taken out so that sqlglot can parse
    parse_error: str | None  # why the text does not parse; None when it does
    normalized: str  # the statement's tokens, case-folded where PostgreSQL folds; "" when it does not parse


def _normalized(tokens: Sequence[Token]) -> str:
    """The statement without comments or layout, keywords and unquoted names folded to lower case."""
    return json.dumps([
        (token.token_type.name,
         token.text if token.token_type in _STRING_TOKENS or token.token_type == TokenType.IDENTIFIER
         else token.text.lower())
        for token in tokens
    ], ensure_ascii=False, separators=(",", ":"))


def _parse(statement: list[Token], sql: str) -> tuple[exp.Expr, tuple[str, ...]]:
    """The tree, and any `ORDER BY … USING` operators taken out so that sqlglot can parse it."""
    problem = nesting_problem(statement)
    if problem:
        raise QueryRejected("parse_error", f"the statement is {problem}")
    try:
        try:
            return parse_tokens(statement, sql), ()
        except ParseError as error:
            first = error.errors[0] if error.errors else {}
            where = f" at line {first.get('line')}, column {first.get('col')}" if first.get("line") else ""
            reason = first.get("description") or "invalid syntax"
            message = f"the statement does not parse as PostgreSQL{where}: {reason}"
            kept, removed = strip_order_by_using(statement)
            if removed:
                try:
                    return parse_tokens(kept, sql), tuple(removed)
                except ParseError:
                    pass
            raise QueryRejected("parse_error", message) from None
    except RecursionError:
        raise QueryRejected("parse_error", "the statement is nested too deeply to parse") from None


# The runner asks for the hash and then validates the same text: parse it once.
@functools.lru_cache(maxsize=2)
def _front(sql: str) -> _Front:
    try:
        statements = split_statements(tokenize(sql))
    except TokenError:
        return _Front(0, "", (), None, (), "the statement does not parse as PostgreSQL "
                                              "(unterminated string, identifier or comment)", "")
    if len(statements) != 1:
        return _Front(len(statements), "", (), None, (), "the text holds no statement" if not statements else None, "")
    statement = statements[0]
    try:
        tree, order_by_using = _parse(statement, sql)
    except QueryRejected as rejection:
        return _Front(1, statement[0].text.upper(), tuple(statement), None, (), rejection.message, "")
    return _Front(1, statement[0].text.upper(), tuple(statement), tree, order_by_using, None, _normalized(statement))


def reject_write_nodes(tree: exp.Expr) -> None:
    """Rule 2 on the tree: no DML anywhere (writable CTEs), no SELECT INTO, row locks or TABLESAMPLE."""
    if not isinstance(tree, _ROOTS):
        raise QueryRejected("statement_not_allowed", f"only SELECT, VALUES or WITH … SELECT; got {tree.key.upper()}")
    for node in nodes_of(tree):
        if isinstance(node, _WRITE_OR_UTILITY):
            raise QueryRejected("statement_not_allowed", f"{node.key.upper()} is not allowed; statements are read-only")
        if isinstance(node, exp.Into):
            raise QueryRejected("statement_not_allowed", "SELECT INTO is not allowed")
        if isinstance(node, exp.Lock):
            raise QueryRejected("statement_not_allowed", "row locks (FOR UPDATE, FOR SHARE, ...) are not allowed")
        if isinstance(node, exp.TableSample):
            raise QueryRejected("statement_not_allowed", "TABLESAMPLE is not allowed")


def reject_nul(sql: str, tree: exp.Expr, statement: list[Token]) -> None:
    """Rule 3, the rest of it: no NUL byte, in the text or produced by an escape (E'\\0')."""
    if "\x00" in sql or any(
            isinstance(node, (exp.Literal, exp.ByteString)) and "\x00" in node.name for node in nodes_of(tree)):
        raise QueryRejected("parse_error", "the statement contains a NUL byte")
    for token, following in itertools.pairwise(statement):
        # PostgreSQL reads `$1` as one token; sqlglot also takes `$ 1`.
        if token.token_type == TokenType.PARAMETER and (
                following.token_type != TokenType.NUMBER or following.start != token.end + 1):
            raise QueryRejected("parse_error", "a placeholder must be written $n")


def reject_reserved_names(statement: list[Token]) -> None:
    """Rule 4: no name may start with a reserved prefix (`__rememberstack_`, `__corpusmem_`)."""
    for token in statement:
        if token.token_type not in _STRING_TOKENS and token.text.lower().startswith(RESERVED_PREFIXES):
            raise QueryRejected("statement_not_allowed", f"the name {token.text} uses a reserved prefix")


def require_placeholders(tree: exp.Expr, parameters: list[object]) -> int:
    """Rule 5: placeholders contiguous from $1, and exactly as many parameters as the highest one."""
    numbers: set[int] = set()
    for parameter in (node for node in nodes_of(tree) if isinstance(node, exp.Parameter)):
        literal = parameter.this
        if not (isinstance(literal, exp.Literal) and not literal.is_string and literal.this.isdigit()):
            raise QueryRejected("invalid_parameter", f"placeholder {parameter.sql('postgres')} is not $n")
        numbers.add(int(literal.this))
    highest = max(numbers, default=0)
    missing = sorted(set(range(1, highest + 1)) - numbers)
    if 0 in numbers or missing:
        gap = "$0 is not a placeholder" if 0 in numbers else f"${missing[0]} is missing"
        raise QueryRejected("invalid_parameter", f"placeholders must be contiguous from $1: {gap}")
    if len(parameters) != highest:
        raise QueryRejected("invalid_parameter",
                            f"the highest placeholder is ${highest} but {len(parameters)} parameters were given")
    return highest


def _hash(normalized: str, parameters: Sequence[object]) -> str:
    payload = json.dumps({"statement": normalized, "parameter_types": [_json_type(value) for value in parameters]},
                         sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def statement_hash(sql: str, parameters: Sequence[object] = ()) -> str:
    """`query_hash` for any text; "" unless it is one statement that parses (rejections report it too)."""
    if not isinstance(sql, str) or len(sql.encode("utf-8", "surrogatepass")) > _SQL_TEXT_BYTES:
        return ""  # never parse more than the text cap allows
    front = _front(sql)
    if not front.normalized:
        return ""
    return _hash(front.normalized, list(parameters) if isinstance(parameters, Sequence) else [])


def _ordered(tree: exp.Expr) -> bool:
    while isinstance(tree, exp.Subquery) and not tree.args.get("alias"):
        tree = tree.this
    return tree.args.get("order") is not None


def validate(sql: str, parameters: Sequence[object] = ()) -> ValidatedStatement:
    """Check one statement against the query space; raises `QueryRejected` with the first broken rule's code."""
    values = _require_sizes(sql, parameters)
    front = _front(sql)
    if front.statement_count > 1:  # rule 1
        raise QueryRejected("multiple_statements", f"{front.statement_count} statements; send exactly one")
    if front.first_keyword and front.tokens[0].token_type not in _STATEMENT_STARTS:  # rule 2, before parsing
        raise QueryRejected("statement_not_allowed",
                            f"{front.first_keyword} statements are not allowed; only SELECT, VALUES or WITH … SELECT")
    if front.tree is None:  # rule 3
        raise QueryRejected("parse_error", front.parse_error or "the statement does not parse as PostgreSQL")
    tree, statement = front.tree, list(front.tokens)
    try:
        reject_write_nodes(tree)  # rule 2
        reject_nul(sql, tree, statement)  # rule 3
        reject_reserved_names(statement)  # rule 4
        placeholder_count = require_placeholders(tree, values)  # rule 5
        views = require_memory_v1_relations(tree)  # rule 6
        functions = require_allowed_functions(tree)  # rule 7
        require_allowed_operators(tree, list(front.order_by_using))  # rule 8
        require_allowed_casts(tree)  # rule 9
        require_allowed_syntax(tree)  # rule 10
        require_recursion_template(tree)  # rule 11
        calls = require_public_call_placement(tree)  # rule 12
        require_category_quota(calls)  # rule 13
        require_call_arguments(calls, values)
    except RecursionError:  # a tree too deep for a rule: sqlglot's own limit, see validator_parse
        raise QueryRejected("parse_error", "the statement is nested too deeply to parse") from None
    return ValidatedStatement(
        sql=sql,
        query_hash=_hash(front.normalized, values),
        referenced_views=tuple(sorted(set(views))),
        referenced_functions=tuple(sorted(set(functions))),
        public_calls=tuple(calls),
        ordered_result=_ordered(tree),
        placeholder_count=placeholder_count,
    )

