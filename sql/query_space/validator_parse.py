"""Tokenising and parsing a `memory_v1` statement with sqlglot, keeping what PostgreSQL will see.

sqlglot normalises function names into typed classes (`char_length` and `length` both become
`Length`), so a name allowlist over the tree alone would let spellings through that PostgreSQL
treats as different functions. The parser here records, on every node built from a function
call, the name token exactly as written; the validator checks that spelling.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

# Meta keys set on nodes built from a function call: the name as written and whether it was quoted.
CALL_NAME = "corpusmem_call_name"
CALL_QUOTED = "corpusmem_call_quoted"
CALL_START = "corpusmem_call_start"
# Spellings of enclosing calls whose builder handed back this same node (none do in sqlglot 30.30;
# kept so that such a call could never skip the name check).
CALL_OUTER = "corpusmem_call_outer"
_NODES = "corpusmem_nodes"

# sqlglot's recursive-descent parser needs many Python frames per nesting level, and its
# subscript parsing is quadratic in a chain's length; past these the statement is refused as
# unparsable instead of exhausting the stack or the CPU. PostgreSQL arrays have at most 6 dimensions.
MAX_NESTING = 24
MAX_CHAINED_SUBSCRIPTS = 6

# Wrappers sqlglot puts around a call (`f(x) OVER (...)`, `f(x) FILTER (...)`, `... WITHIN GROUP`).
_CALL_WRAPPERS = (exp.Window, exp.Filter, exp.WithinGroup, exp.IgnoreNulls, exp.RespectNulls)


class QueryRejected(Exception):
    """A statement refused by the query space: `code` is the seed's SQL query code, `message` is safe to show."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class _RecordingParser(Postgres.Parser):
    """The PostgreSQL parser, plus the source spelling of every function call on the node it builds."""

    def _parse_function_call(  # type: ignore[no-untyped-def]
        self, functions=None, anonymous=False, optional_parens=True, any_token=False,
    ):
        token = self._curr
        node = super()._parse_function_call(functions, anonymous, optional_parens, any_token)
        if node is not None and token is not None:
            target = node
            while isinstance(target, _CALL_WRAPPERS) and isinstance(target.this, exp.Expr):
                target = target.this
            quoted = token.token_type == TokenType.IDENTIFIER
            if CALL_NAME not in target.meta:
                target.meta[CALL_NAME] = token.text
                target.meta[CALL_QUOTED] = quoted
                target.meta[CALL_START] = token.start
            elif target.meta[CALL_START] != token.start:
                target.meta.setdefault(CALL_OUTER, []).append(token.text if quoted else token.text.lower())
        return node


_DIALECT = Postgres()
# Subscripts stay as written: sqlglot would rewrite `r[1]` to 0-based for other dialects, typing the
# array expression each time (milliseconds per subscript, seconds for a crafted statement).
_DIALECT.INDEX_OFFSET = 0


def tokenize(sql: str) -> list[Token]:
    """Tokens of `sql` as PostgreSQL's lexer would split them; `TokenError` when it cannot be split."""
    return _DIALECT.tokenize(sql)


def split_statements(tokens: list[Token]) -> list[list[Token]]:
    """Non-empty runs of tokens between top-level semicolons (comments are not tokens)."""
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(token)
    return [statement for statement in statements if statement]


def parse_tokens(tokens: list[Token], sql: str) -> exp.Expr:
    """One statement's tree; raises sqlglot's `ParseError` when it does not parse."""
    parser = _RecordingParser(dialect=_DIALECT)
    trees = [tree for tree in parser.parse(tokens, sql) if tree is not None and not isinstance(tree, exp.Semicolon)]
    if len(trees) != 1:
        raise ParseError(f"expected one statement, found {len(trees)}")
    return trees[0]


def nesting_problem(tokens: list[Token]) -> str | None:
    """Why a statement is too deeply nested for the parser, or None.

    >>> nesting_problem(tokenize("SELECT r[1][2] FROM t"))
    >>> nesting_problem(tokenize("SELECT r" + "[1]" * 7))
    'more than 6 subscripts in a row'
    """
    depth = chained = 0
    previous: Token | None = None
    for token in tokens:
        kind = token.token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
            if depth > MAX_NESTING:
                return f"nested more than {MAX_NESTING} levels deep"
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET):
            depth -= 1
        if kind == TokenType.L_BRACKET:
            chained = chained + 1 if previous is not None and previous.token_type == TokenType.R_BRACKET else 1
            if chained > MAX_CHAINED_SUBSCRIPTS:
                return f"more than {MAX_CHAINED_SUBSCRIPTS} subscripts in a row"
        previous = token
    return None


def nodes_of(tree: exp.Expr) -> list[exp.Expr]:
    """Every node of a statement, depth first, walked once and kept on the root for the other rules."""
    found = tree.meta.get(_NODES)
    if found is None:
        found = tree.meta[_NODES] = list(tree.walk(bfs=False))
    return found


def parse_one(sql: str) -> exp.Expr:
    """Tokenise and parse one statement (for tests and doctests)."""
    return parse_tokens(tokenize(sql), sql)


# Tokens that end one ORDER BY item, or the whole clause.
_ORDER_ITEM_END = frozenset({TokenType.COMMA, TokenType.LIMIT, TokenType.OFFSET, TokenType.FETCH, TokenType.FOR,
                             TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT})


def strip_order_by_using(tokens: list[Token]) -> tuple[list[Token], list[str]]:
    """Tokens without `USING <op>` inside ORDER BY clauses, and the operators removed.

    sqlglot cannot parse `ORDER BY a USING <`, which PostgreSQL accepts; the seed makes it
    `operator_not_allowed`, so the validator parses the statement without it and reports it in
    the operator rule.

    >>> kept, ops = strip_order_by_using(tokenize("SELECT a FROM t JOIN u USING (a) ORDER BY a USING <"))
    >>> ops, " ".join(token.text for token in kept)
    (['<'], 'SELECT a FROM t JOIN u USING ( a ) ORDER BY a')
    """
    kept: list[Token] = []
    removed: list[str] = []
    in_order_by: list[bool] = [False]  # one flag per parenthesis depth
    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            in_order_by.append(False)
        elif kind == TokenType.R_PAREN and len(in_order_by) > 1:
            in_order_by.pop()
        elif kind == TokenType.ORDER_BY:
            in_order_by[-1] = True
        elif kind in _ORDER_ITEM_END and kind != TokenType.COMMA:
            in_order_by[-1] = False
        elif kind == TokenType.USING and in_order_by[-1]:
            # The operator (`<`, `OPERATOR(pg_catalog.<)`) runs until a comma, NULLS, a closing
            # parenthesis or a clause keyword at its own depth.
            end, depth = index + 1, 0
            while end < len(tokens):
                following = tokens[end]
                if following.token_type == TokenType.L_PAREN:
                    depth += 1
                elif following.token_type == TokenType.R_PAREN:
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and (following.token_type in _ORDER_ITEM_END or following.text.upper() == "NULLS"):
                    break
                end += 1
            removed.append("".join(token.text for token in tokens[index + 1:end]) or "USING")
            index = end
            continue
        kept.append(token)
        index += 1
    return kept, removed


def folded(identifier: exp.Expr | str | None) -> str | None:
    """An identifier as PostgreSQL resolves it: unquoted names fold to lower case, quoted ones stay."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        return identifier.lower()
    if isinstance(identifier, exp.Identifier):
        return identifier.this if identifier.quoted else identifier.this.lower()
    return identifier.name.lower()


def call_name(node: exp.Expr) -> str | None:
    """The function name as PostgreSQL will look it up, for a node built from a call; None otherwise."""
    name = node.meta.get(CALL_NAME)
    if name is None:
        return None
    return name if node.meta.get(CALL_QUOTED) else name.lower()


def call_qualifier(node: exp.Expr) -> tuple[str | None, bool]:
    """The schema a call is qualified with, and whether the qualification is one PostgreSQL could not take.

    `pg_catalog.lower(x)` is `Dot(pg_catalog, lower(x))`; a function FROM item keeps its schema in
    `Table.db`.
    """
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:
        if isinstance(parent.this, exp.Identifier):
            return folded(parent.this), False
        return None, True
    if isinstance(parent, exp.Table) and parent.this is node:
        if parent.args.get("catalog"):
            return folded(parent.args["catalog"]), True
        return folded(parent.args.get("db")), False
    return None, False


def is_call(node: exp.Expr) -> bool:
    return CALL_NAME in node.meta


__all__ = [
    "CALL_NAME", "ParseError", "QueryRejected", "TokenError", "call_name", "call_qualifier", "folded", "is_call",
    "nesting_problem", "nodes_of", "parse_one", "parse_tokens", "split_statements", "strip_order_by_using", "tokenize",
]
