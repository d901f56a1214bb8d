"""windows: a fact's world-time window, read from its claim (which facts a time question selects:
tests/sql/test_window_match.py).

Spec: Facts (seed lines 1051-1224), Time (1365-1634).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.time import windows
from pipeline.time.windows import (
    NONE,
    Window,
    better,
    for_assertion,
    from_claim,
    said_on,
)

KICKOFF = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)  # the spec's kickoff notes
RETRO = datetime(2026, 6, 12, 14, 0, tzinfo=UTC)    # the spec's retro notes


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


# --- a claim's inclusive end becomes a fact's exclusive end --------------------------------------

def test_in_2025_is_the_year_with_an_exclusive_end():
    # "in 2025": claim_valid_from 2025-01-01, claim_valid_until 2025-12-31, precision year.
    w = from_claim(day(2025, 1, 1), day(2025, 12, 31), "year")
    assert w == Window(day(2025, 1, 1), day(2026, 1, 1), "year", "stated")
    assert w.as_dict() == {"valid_from": "2025-01-01T00:00:00+00:00", "valid_until": "2026-01-01T00:00:00+00:00",
                           "valid_precision": "year"}


def test_a_day_ends_at_the_next_midnight():
    w = from_claim(day(2026, 6, 1), day(2026, 6, 1), "day")
    assert (w.valid_from, w.valid_until, w.precision) == (day(2026, 6, 1), day(2026, 6, 2), "day")


@pytest.mark.parametrize(("first", "last", "precision", "until"), [
    (day(2026, 3, 1), day(2026, 3, 31), "month", day(2026, 4, 1)),        # "in March 2026"
    (day(2026, 4, 1), day(2026, 6, 30), "quarter", day(2026, 7, 1)),      # "in Q2 2026"
    (day(2024, 2, 1), day(2024, 2, 29), "month", day(2024, 3, 1)),        # a leap February
])
def test_month_and_quarter_end_at_the_first_instant_after_them(first, last, precision, until):
    w = from_claim(first, last, precision)
    assert (w.valid_from, w.valid_until, w.precision) == (first, until, precision)


def test_an_instant_lasts_one_second():
    t = datetime(2026, 3, 3, 16, 30, tzinfo=UTC)       # "the deploy finished at 16:30 UTC"
    w = from_claim(t, t, "instant")
    assert (w.valid_from, w.valid_until, w.precision) == (t, t + timedelta(seconds=1), "instant")


def test_open_stays_open_with_no_end():
    w = from_claim(day(2026, 1, 14), None, "open")       # "since 2026-01-14"
    assert w == Window(day(2026, 1, 14), None, "open", "stated")


def test_unknown_precision_gives_no_window_even_with_bounds():
    assert from_claim(day(2026, 1, 14), day(2026, 1, 14), "unknown") == NONE
    assert from_claim(None, None, "unknown") == NONE
    assert not NONE.known


def test_no_bounds_gives_no_window_whatever_the_precision():
    assert from_claim(None, None, "day") == NONE


def test_an_end_without_a_start_stays_partial():
    w = from_claim(None, day(2025, 12, 31), "year")
    assert (w.valid_from, w.valid_until) == (None, day(2026, 1, 1))
    assert w.known


def test_a_start_without_an_end_that_is_not_open_stays_partial():
    w = from_claim(day(2026, 3, 1), None, "month")
    assert (w.valid_from, w.valid_until, w.precision) == (day(2026, 3, 1), None, "month")
    assert w.known


@settings(max_examples=60, deadline=None)
@given(st.dates(min_value=datetime(1990, 1, 1).date(), max_value=datetime(2100, 1, 1).date()),
       st.integers(min_value=0, max_value=400))
def test_a_stated_day_range_holds_through_its_last_day_and_not_after(first, length):
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    last = start + timedelta(days=length)
    w = from_claim(start, last, "day")
    assert windows.holds_at(w, start)
    assert windows.holds_at(w, last + timedelta(hours=23, minutes=59, seconds=59))
    assert not windows.holds_at(w, last + timedelta(days=1))
    assert not windows.holds_at(w, start - timedelta(seconds=1))


# --- the window an assertion gives its fact ------------------------------------------------------

def test_a_dated_move_starts_an_open_window_on_its_day():
    # "Ravi moved from the billing migration to the search team on 1 June" (event_time, day).
    w = for_assertion(day(2026, 6, 1), day(2026, 6, 1), "day", "event_time", RETRO, applies=True, change=True)
    assert w == Window(day(2026, 6, 1), None, "open", "stated")


def test_an_undated_change_starts_at_the_documents_day():
    # "Dana now leads billing", in a note said at 2026-06-12 14:00.
    w = for_assertion(None, None, "unknown", None, RETRO, applies=True, change=True)
    assert w == Window(day(2026, 6, 12), None, "open", "said_on")


def test_an_undated_change_with_no_document_date_stays_undated():
    assert for_assertion(None, None, "unknown", None, None, applies=True, change=True) == NONE


def test_an_undated_statement_never_borrows_the_said_on_time():
    # Seed 1433-1435: no fallback to the said-on time; an undated statement stays undated.
    assert for_assertion(None, None, "unknown", None, RETRO, applies=True, change=False) == NONE


def test_a_claim_window_that_does_not_describe_the_assertion_gives_no_window():
    # A claim that mentions a 2019 hire and a 1990 founding does not give both facts its dates.
    w = for_assertion(day(2019, 1, 1), day(2019, 12, 31), "year", "event_time", KICKOFF, applies=False,
                      change=False)
    assert w == NONE


def test_a_change_whose_claim_window_does_not_apply_starts_at_the_documents_day():
    w = for_assertion(day(2019, 1, 1), day(2019, 12, 31), "year", "event_time", RETRO, applies=False,
                      change=True)
    assert w == Window(day(2026, 6, 12), None, "open", "said_on")


def test_a_state_that_begins_on_a_date_and_never_ends_is_open():
    # "Dana will lead billing from 1 June": a start, no end, an effective period.
    w = for_assertion(day(2026, 6, 1), None, "day", "effective_period", KICKOFF, applies=True, change=False)
    assert w == Window(day(2026, 6, 1), None, "open", "stated")


def test_an_event_keeps_its_stated_window():
    # "Ravi merged the schema change on 2026-03-03."
    w = for_assertion(day(2026, 3, 3), day(2026, 3, 3), "day", "event_time", KICKOFF, applies=True, change=False)
    assert w == Window(day(2026, 3, 3), day(2026, 3, 4), "day", "stated")


def test_a_stated_period_keeps_both_ends():
    # "Ravi worked on the billing migration from January to May."
    w = for_assertion(day(2026, 1, 1), day(2026, 5, 31), "month", "effective_period", RETRO, applies=True,
                      change=False)
    assert w == Window(day(2026, 1, 1), day(2026, 6, 1), "month", "stated")


def test_said_on_reads_the_documents_day_not_its_hour():
    assert said_on(KICKOFF) == Window(day(2026, 1, 15), None, "open", "said_on")


BILLING = Window(day(2026, 1, 14), day(2026, 6, 1), "day", "stated")     # Ravi works on billing migration


# --- better: which window an adjustment gives a fact --------------------------------------------

def test_a_stated_window_beats_none():
    stated = Window(day(2026, 1, 14), None, "open", "stated")
    assert better(NONE, stated) == stated


def test_a_stated_window_beats_one_read_from_the_document_date():
    guessed = said_on(RETRO)                                   # "Dana now leads billing", said 12 June
    stated = Window(day(2026, 6, 1), None, "open", "stated")   # "Dana has led billing since 1 June"
    assert better(guessed, stated) == stated


def test_a_stated_window_keeps_the_end_a_document_dated_window_already_had():
    guessed = Window(day(2026, 6, 12), day(2026, 8, 1), "day", "said_on")
    stated = Window(day(2026, 6, 1), None, "open", "stated")
    got = better(guessed, stated)
    assert (got.valid_from, got.valid_until, got.source) == (day(2026, 6, 1), day(2026, 8, 1), "stated")


def test_a_document_dated_window_never_replaces_a_stated_one():
    stated = Window(day(2026, 6, 1), None, "open", "stated")
    assert better(stated, said_on(RETRO)) is None


def test_a_later_document_date_never_moves_an_earlier_one():
    # "Dana now leads billing" said on 12 June, then again on 20 June: she led from 12 June.
    assert better(said_on(RETRO), said_on(datetime(2026, 6, 20, tzinfo=UTC))) is None


def test_no_window_never_replaces_a_window():
    stated = Window(day(2026, 6, 1), None, "open", "stated")
    assert better(stated, NONE) is None
    assert better(NONE, NONE) is None


def test_the_same_window_again_adds_nothing():
    assert better(BILLING, Window(day(2026, 1, 14), day(2026, 6, 1), "day", "stated")) is None


def test_a_finer_window_inside_a_coarser_one_narrows_it():
    june = from_claim(day(2026, 6, 1), day(2026, 6, 30), "month")
    june_8 = from_claim(day(2026, 6, 8), day(2026, 6, 8), "day")
    assert better(june, june_8) == june_8


def test_a_coarser_window_never_widens_a_finer_one():
    june = from_claim(day(2026, 6, 1), day(2026, 6, 30), "month")
    june_8 = from_claim(day(2026, 6, 8), day(2026, 6, 8), "day")
    assert better(june_8, june) is None


def test_a_finer_window_outside_the_coarser_one_does_not_narrow_it():
    june = from_claim(day(2026, 6, 1), day(2026, 6, 30), "month")
    july_2 = from_claim(day(2026, 7, 2), day(2026, 7, 2), "day")
    assert better(june, july_2) is None


def test_a_stated_start_fills_the_missing_start_of_an_end_only_window():
    end_only = Window(None, day(2026, 6, 2), "day", "stated")
    got = better(end_only, Window(day(2026, 1, 14), None, "open", "stated"))
    assert (got.valid_from, got.valid_until) == (day(2026, 1, 14), day(2026, 6, 2))


def test_a_stated_end_fills_the_missing_end_of_a_start_only_window():
    start_only = Window(day(2026, 1, 14), None, "day", "stated")     # a start, no end, not open
    stated = from_claim(day(2026, 1, 14), day(2026, 5, 31), "day")  # "from 14 January to 31 May"
    got = better(start_only, stated)
    assert got is not None
    assert (got.valid_from, got.valid_until) == (day(2026, 1, 14), day(2026, 6, 1))


# --- closing a window at a successor's start -----------------------------------------------------

def test_closing_an_open_window_at_a_midnight_gives_a_day_end():
    closed = windows.closed_at(Window(day(2026, 1, 14), None, "open", "stated"), day(2026, 6, 1))
    assert (closed.valid_from, closed.valid_until, closed.precision) == (day(2026, 1, 14), day(2026, 6, 1), "day")
    assert not windows.holds_at(closed, day(2026, 9, 23))


def test_closing_at_a_time_of_day_gives_an_instant_end():
    end = datetime(2026, 6, 1, 16, 30, tzinfo=UTC)
    closed = windows.closed_at(NONE, end)
    assert (closed.valid_until, closed.precision) == (end, "instant")
