"""Which facts a time question selects, and whether each match is confirmed or possible: the read
API asks memory_v1's rules of world time (`may_hold`, `window_complete`) through
`read_queries.MATCHED_FACT_COLUMNS` with the question's span (`TimeQuery.span`), on the seed's
worked example.

Spec: Facts (seed lines 1051-1224), Time (1365-1634).
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from pipeline.time.windows import NONE, Window, said_on
from serve.retrieval.facts import BadTimeQuery, TimeQuery, result_from_row
from sql.read.read_queries import MATCHED_FACT_COLUMNS

pytestmark = pytest.mark.integration

EVALUATED = datetime(2026, 9, 23, tzinfo=UTC)       # the worked example's "now"
RETRO = datetime(2026, 6, 12, 14, 0, tzinfo=UTC)    # the spec's retro notes


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


BILLING = Window(day(2026, 1, 14), day(2026, 6, 1), "day", "stated")     # Ravi works on billing migration
SEARCH = Window(day(2026, 6, 1), None, "open", "stated")                 # Ravi works on search team
ON_CALL = NONE                                                           # Ravi is on-call (no date)


@pytest.fixture
def conn(memory):
    with psycopg.connect(memory.dsn) as c:
        yield c


def temporal_match(conn: psycopg.Connection, w: Window, mode: str, **instants: datetime) -> str | None:
    """The fact of window `w` read for the question, as the read API reads a fact row."""
    row = conn.execute(
        f"SELECT {MATCHED_FACT_COLUMNS} FROM (SELECT gen_random_uuid() AS fact_id, 'relation' AS kind, 'f' AS label,"
        " 1 AS evidence_count, %(vf)s::timestamptz AS valid_from, %(vu)s::timestamptz AS valid_until,"
        " %(p)s::text AS valid_precision, now() AS ingested_at, NULL::timestamptz AS invalidated_at,"
        " NULL::uuid AS contradiction_group, 'supported' AS support, %(s)s::text AS window_source) f",
        {"vf": w.valid_from, "vu": w.valid_until, "p": w.precision, "s": w.source,
         **TimeQuery(mode, **instants).span(EVALUATED)}).fetchone()
    fact = result_from_row(row)
    return fact and fact.temporal_match


@pytest.mark.parametrize(("mode", "args", "expected"), [
    ("current", {}, (None, "confirmed", "possible")),
    ("at", {"at": day(2026, 3, 1)}, ("confirmed", None, "possible")),
    ("overlap", {"start": day(2026, 5, 15), "end": day(2026, 6, 15)}, ("confirmed", "confirmed", "possible")),
    ("history", {}, ("confirmed", "confirmed", "possible")),
])
def test_the_worked_example_table(conn, mode, args, expected):
    assert tuple(temporal_match(conn, w, mode, **args) for w in (BILLING, SEARCH, ON_CALL)) == expected


def test_a_fact_holds_from_its_start_and_not_at_its_exclusive_end(conn):
    assert temporal_match(conn, BILLING, "at", at=day(2026, 1, 14)) == "confirmed"
    assert temporal_match(conn, BILLING, "at", at=datetime(2026, 5, 31, 23, tzinfo=UTC)) == "confirmed"
    assert temporal_match(conn, BILLING, "at", at=day(2026, 6, 1)) is None
    assert temporal_match(conn, SEARCH, "at", at=day(2026, 6, 1)) == "confirmed"


def test_overlap_range_is_inclusive_at_both_ends(conn):
    # A fact that starts on the range's last instant overlaps it.
    assert temporal_match(conn, SEARCH, "overlap", start=day(2026, 5, 1), end=day(2026, 6, 1)) == "confirmed"
    # A fact whose exclusive end is the range's first instant does not.
    assert temporal_match(conn, BILLING, "overlap", start=day(2026, 6, 1), end=day(2026, 7, 1)) is None
    # A range entirely before a fact does not overlap it.
    assert temporal_match(conn, SEARCH, "overlap", start=day(2026, 1, 1), end=day(2026, 5, 31)) is None


def test_history_leaves_out_facts_that_begin_after_now(conn):
    future = Window(day(2027, 1, 1), None, "open", "stated")
    assert temporal_match(conn, future, "history") is None
    assert temporal_match(conn, future, "current") is None


def test_a_partial_window_that_is_not_ruled_out_is_only_possible(conn):
    end_only = Window(None, day(2026, 12, 1), "day", "stated")
    start_only = Window(day(2026, 3, 1), None, "month", "stated")
    for w in (end_only, start_only):
        assert temporal_match(conn, w, "current") == "possible"
        assert temporal_match(conn, w, "history") == "possible"


def test_a_partial_window_is_still_ruled_out_by_its_known_end(conn):
    ended = Window(None, day(2026, 6, 1), "day", "stated")
    assert temporal_match(conn, ended, "current") is None
    assert temporal_match(conn, ended, "at", at=day(2026, 3, 1)) == "possible"


def test_an_open_window_read_from_the_document_date_is_confirmed(conn):
    w = said_on(RETRO)
    assert temporal_match(conn, w, "current") == "confirmed"
    assert temporal_match(conn, w, "at", at=day(2026, 6, 11)) is None


def test_an_unknown_time_mode_is_refused():
    with pytest.raises(BadTimeQuery):
        TimeQuery("sometime")
