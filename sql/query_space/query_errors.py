"""The seed's codes for a statement that is refused or fails, with caller-safe messages, and the
mapping of a database error onto them: raw database text never reaches a `QueryResult/v1`.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg

# The caller-safe message of every code a statement can be answered with (never database text).
MESSAGES: dict[str, str] = {
    "invalid_parameter": "the statement's parameters or text are not acceptable",
    "relation_not_allowed": "the statement reads a relation outside the memory_v1 query space",
    "function_not_allowed": "the statement calls a function outside the memory_v1 query space",
    "statement_not_allowed": "the statement tried something a read-only query may not do",
    "schema_version_mismatch": "the database's memory_v1 views do not match this server's manifest; "
                               "an operator must finish the upgrade (migrations)",
    "quota_exceeded": "the statement-seconds budget for this minute is spent; retry later",
    "concurrency_exceeded": "too many statements are running for this caller or deployment; retry later",
    "statement_timeout": "the statement ran past its timeout",
    "lock_timeout": "a lock was not available within the lock timeout",
    "resource_limit": "the statement exceeded a memory, temporary-file or connection limit",
    "execution_error": "the statement failed while running (for example a bad cast of a parameter)",
    "pg_unavailable": "the database is unavailable",
    "p1_unavailable": "the search index could not be searched, or no embedder is configured",
    "graph_unavailable": "a graph function returned no usable status",
    "generation_unavailable": "no usable embedding generation for the requested rows",
    "confirmation_failed": "nominated rows could not be confirmed against the database",
}
# Codes a public function may raise itself, as `code: message` (its own, caller-safe text).
FUNCTION_CODES = ("invalid_parameter", "quota_exceeded", "p1_unavailable", "generation_unavailable",
                  "confirmation_failed", "graph_unavailable", "corpus_body_unavailable", "execution_error")


class Refused(Exception):
    """A statement refused or failed with one of the seed's codes; `message` is caller-safe.
    `rejected`: refused before it ran (`termination_reason` "rejected"), else it failed."""

    def __init__(self, code: str, message: str | None = None, *, rejected: bool = True) -> None:
        super().__init__(f"{code}: {message or MESSAGES.get(code, code)}")
        self.code = code
        self.message = message or MESSAGES.get(code, code)
        self.rejected = rejected


def map_error(err: psycopg.Error) -> tuple[str, str]:
    """The seed's code and a caller-safe message for a database error; never its raw text."""
    primary = (err.diag.message_primary or "") if err.diag else ""
    code, _, rest = primary.partition(":")
    if code in FUNCTION_CODES and rest.strip():
        return code, rest.strip()
    if isinstance(err, pg.QueryCanceled):
        return "statement_timeout", MESSAGES["statement_timeout"]
    if isinstance(err, pg.LockNotAvailable):
        return "lock_timeout", MESSAGES["lock_timeout"]
    if isinstance(err, pg.InsufficientPrivilege | pg.UndefinedTable | pg.InvalidSchemaName | pg.UndefinedFunction):
        # The role refused what the parser let through: say which kind of object, not its name.
        if isinstance(err, pg.UndefinedFunction) or "function" in primary:
            return "function_not_allowed", MESSAGES["function_not_allowed"]
        return "relation_not_allowed", MESSAGES["relation_not_allowed"]
    if isinstance(err, pg.SyntaxError):
        # PostgreSQL's own parser refused what sqlglot accepted; a cursor or a prepared statement
        # holds one query only, so a second statement or a non-query ends here too.
        if "multiple commands" in primary:
            return "multiple_statements", "more than one statement"
        return "parse_error", "the statement does not parse as a PostgreSQL query"
    if isinstance(err, pg.ReadOnlySqlTransaction):
        return "statement_not_allowed", MESSAGES["statement_not_allowed"]
    if isinstance(err, pg.InsufficientResources | pg.ProgramLimitExceeded | pg.OutOfMemory | pg.DiskFull
                  | pg.ConfigurationLimitExceeded | pg.TooManyConnections):
        return "resource_limit", MESSAGES["resource_limit"]
    return "execution_error", MESSAGES["execution_error"]
