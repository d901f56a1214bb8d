"""timeparse: world time stated in a statement, relative dates resolved to absolute ones."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.claims.extraction import PRECISIONS, VALID_KINDS
from pipeline.time.timeparse import (
    Replacement,
    TimeReading,
    _expressions,
    apply_replacements,
    asks_when,
    question_period,
    read_time,
)

WED = datetime(2026, 3, 4, 15, 0, tzinfo=UTC)       # the spec's transcript date, a Wednesday
KICKOFF = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)  # the spec's kickoff notes
RETRO = datetime(2026, 6, 12, 14, 0, tzinfo=UTC)    # the spec's retro notes


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def window(r: TimeReading) -> tuple:
    return r.valid_from, r.valid_until, r.precision, r.kind


def resolved(text: str, anchor: datetime | None) -> str:
    return apply_replacements(text, read_time(text, anchor).replacements)


# --- The spec's examples ------------------------------------------------------------------------

def test_spec_transcript_yesterday_is_the_event_and_june_8_stays_as_written():
    text = "Dana and I agreed yesterday to move the cutover to June 8."
    r = read_time(text, WED)
    assert r.replacements == (Replacement(18, 27, "yesterday", "on 2026-03-03", ("2026-03-03",)),)
    # The first stated time is the event; "June 8" is written as the source wrote it.
    assert window(r) == (day(2026, 3, 3), day(2026, 3, 3), "day", "event_time")
    assert r.unresolved == ()
    assert apply_replacements(text, r.replacements) == \
        "Dana and I agreed on 2026-03-03 to move the cutover to June 8."


def test_spec_kickoff_since_yesterday_is_an_open_start():
    text = "Ravi has been on the billing migration since yesterday."
    r = read_time(text, KICKOFF)
    assert (r.valid_from, r.valid_until) == (day(2026, 1, 14), None)
    assert r.precision == "open"            # Precision table: "since 2026-01-14" is open
    assert r.kind == "proposition_validity"
    assert [(x.original, x.resolved, x.iso_dates) for x in r.replacements] == \
        [("yesterday", "2026-01-14", ("2026-01-14",))]
    assert apply_replacements(text, r.replacements) == \
        "Ravi has been on the billing migration since 2026-01-14."


def test_spec_retro_on_1_june_takes_the_anchor_year():
    r = read_time("Ravi moved from the billing migration to the search team on 1 June.", RETRO)
    assert window(r) == (day(2026, 6, 1), day(2026, 6, 1), "day", "event_time")
    assert r.replacements == () and r.unresolved == ()


def test_spec_in_2025_is_a_year_with_an_inclusive_end():
    for anchor in (None, WED):
        r = read_time("Billing errors were rare in 2025.", anchor)
        assert window(r) == (day(2025, 1, 1), day(2025, 12, 31), "year", "event_time")


def test_spec_q1_billing_errors_is_a_measurement_period():
    r = read_time("Q1 billing errors fell to 12.", datetime(2026, 4, 20, tzinfo=UTC))
    assert window(r) == (day(2026, 1, 1), day(2026, 3, 31), "quarter", "measurement_period")
    assert r.replacements == ()


def test_spec_from_january_to_may_is_an_effective_period():
    r = read_time("Ravi worked on the billing migration from January to May 2026.", None)
    assert window(r) == (day(2026, 1, 1), day(2026, 5, 31), "month", "effective_period")
    # The spec's own example, without a year: the anchor supplies it.
    r = read_time("Ravi worked on the billing migration from January to May.", RETRO)
    assert window(r) == (day(2026, 1, 1), day(2026, 5, 31), "month", "effective_period")


def test_spec_dana_has_led_product_since_2024():
    r = read_time("Dana has led product since 2024.", None)
    assert window(r) == (day(2024, 1, 1), None, "open", "proposition_validity")


def test_spec_event_on_an_iso_date():
    r = read_time("Ravi merged the schema change on 2026-03-03.", None)
    assert window(r) == (day(2026, 3, 3), day(2026, 3, 3), "day", "event_time")


def test_spec_last_friday_in_a_transcript_from_2026_03_04():
    r = read_time("We shipped the fix last Friday.", WED)
    assert window(r) == (day(2026, 2, 27), day(2026, 2, 27), "day", "event_time")
    assert apply_replacements("We shipped the fix last Friday.", r.replacements) == \
        "We shipped the fix on Friday, 2026-02-27."


# --- Relative expressions against a fixed anchor (Wednesday 2026-03-04) ---------------------------

@pytest.mark.parametrize("text, start, end, precision, written", [
    ("It happened today.", (2026, 3, 4), (2026, 3, 4), "day", "It happened on 2026-03-04."),
    ("It happened yesterday.", (2026, 3, 3), (2026, 3, 3), "day", "It happened on 2026-03-03."),
    ("It happens tomorrow.", (2026, 3, 5), (2026, 3, 5), "day", "It happens on 2026-03-05."),
    ("It happened the day before yesterday.", (2026, 3, 2), (2026, 3, 2), "day",
     "It happened on 2026-03-02."),
    ("It happened two days ago.", (2026, 3, 2), (2026, 3, 2), "day", "It happened on 2026-03-02."),
    ("It happened 10 days ago.", (2026, 2, 22), (2026, 2, 22), "day", "It happened on 2026-02-22."),
    ("It happened three weeks ago.", (2026, 2, 11), (2026, 2, 11), "day",
     "It happened on 2026-02-11."),
    ("It happened a month ago.", (2026, 2, 1), (2026, 2, 28), "month", "It happened in 2026-02."),
    ("It happened two years ago.", (2024, 1, 1), (2024, 12, 31), "year", "It happened in 2024."),
    ("It happened last Friday.", (2026, 2, 27), (2026, 2, 27), "day", "It happened on Friday, 2026-02-27."),
    ("It happened last Wednesday.", (2026, 2, 25), (2026, 2, 25), "day",
     "It happened on Wednesday, 2026-02-25."),
    ("It happens next Monday.", (2026, 3, 9), (2026, 3, 9), "day", "It happens on Monday, 2026-03-09."),
    ("It happens next Wednesday.", (2026, 3, 11), (2026, 3, 11), "day",
     "It happens on Wednesday, 2026-03-11."),
    ("It happens on Friday.", (2026, 3, 6), (2026, 3, 6), "day", "It happens on Friday, 2026-03-06."),
    ("It happens this Friday.", (2026, 3, 6), (2026, 3, 6), "day", "It happens on Friday, 2026-03-06."),
    ("It happened on Monday.", (2026, 3, 2), (2026, 3, 2), "day", "It happened on Monday, 2026-03-02."),
    ("It happened last week.", (2026, 2, 23), (2026, 3, 1), "day",
     "It happened in the week of 2026-02-23."),
    ("It happens next week.", (2026, 3, 9), (2026, 3, 15), "day",
     "It happens in the week of 2026-03-09."),
    ("It happens this week.", (2026, 3, 2), (2026, 3, 8), "day",
     "It happens in the week of 2026-03-02."),
    ("It happened last weekend.", (2026, 2, 28), (2026, 3, 1), "day",
     "It happened on the weekend of 2026-02-28."),
    ("It happened last month.", (2026, 2, 1), (2026, 2, 28), "month", "It happened in 2026-02."),
    ("It happens next month.", (2026, 4, 1), (2026, 4, 30), "month", "It happens in 2026-04."),
    ("It happens this month.", (2026, 3, 1), (2026, 3, 31), "month", "It happens in 2026-03."),
    ("It happened last year.", (2025, 1, 1), (2025, 12, 31), "year", "It happened in 2025."),
    ("It happens next year.", (2027, 1, 1), (2027, 12, 31), "year", "It happens in 2027."),
    ("It happens this year.", (2026, 1, 1), (2026, 12, 31), "year", "It happens in 2026."),
    ("It happened last quarter.", (2025, 10, 1), (2025, 12, 31), "quarter",
     "It happened in Q4 2025."),
    ("It happens next quarter.", (2026, 4, 1), (2026, 6, 30), "quarter", "It happens in Q2 2026."),
    ("It happened last March.", (2025, 3, 1), (2025, 3, 31), "month", "It happened in 2025-03."),
    ("It happens next March.", (2027, 3, 1), (2027, 3, 31), "month", "It happens in 2027-03."),
    ("It happened last night.", (2026, 3, 3), (2026, 3, 3), "day",
     "It happened on the night of 2026-03-03."),
    ("It happened yesterday morning.", (2026, 3, 3), (2026, 3, 3), "day",
     "It happened on the morning of 2026-03-03."),
    ("It happens three days from now.", (2026, 3, 7), (2026, 3, 7), "day",
     "It happens on 2026-03-07."),
])
def test_relative_expressions(text, start, end, precision, written):
    r = read_time(text, WED)
    assert (r.valid_from, r.valid_until, r.precision) == (day(*start), day(*end), precision)
    assert r.kind == "event_time"
    assert len(r.replacements) == 1 and r.unresolved == ()
    assert apply_replacements(text, r.replacements) == written


def test_last_weekday_is_strictly_before_the_anchor_day():
    friday = datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    assert read_time("last Friday", friday).valid_from == day(2026, 2, 27)
    assert read_time("next Friday", friday).valid_from == day(2026, 3, 13)
    assert read_time("on Friday", friday).valid_from == day(2026, 3, 6)


def test_quarter_arithmetic_crosses_years():
    r = read_time("Errors peaked last quarter.", KICKOFF)
    assert (r.valid_from, r.valid_until, r.precision) == (day(2025, 10, 1), day(2025, 12, 31),
                                                        "quarter")


def test_anchor_day_is_the_utc_day():
    late = datetime(2026, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 2026-03-05 UTC
    assert read_time("It happened yesterday.", late).valid_from == day(2026, 3, 4)


def test_naive_anchor_is_refused():
    with pytest.raises(ValueError):
        read_time("yesterday", datetime(2026, 3, 4))


# --- No anchor, vague, no time -----------------------------------------------------------------

@pytest.mark.parametrize("text, kept", [
    ("It broke yesterday.", ("yesterday",)),
    ("We shipped last Friday.", ("last Friday",)),
    ("It happened two days ago.", ("two days ago",)),
    ("Revenue fell last year.", ("last year",)),
    ("The cutover is June 8.", ("June 8",)),
    ("The cutover is in March.", ("March",)),
    ("Q3 errors fell to 4.", ("Q3",)),
])
def test_without_an_anchor_relative_and_yearless_dates_stay_unresolved(text, kept):
    r = read_time(text, None)
    assert window(r) == (None, None, "unknown", None)
    assert r.replacements == ()
    assert r.unresolved == kept


@pytest.mark.parametrize("text, kept", [
    ("It broke a few weeks ago.", "a few weeks ago"),
    ("We changed it recently.", "recently"),
    ("That was a while ago.", "a while ago"),
    ("We will ship soon.", "soon"),
    ("It happened some time ago.", "some time ago"),
    ("It happened a couple of months ago.", "a couple of months ago"),
    ("We hired two people earlier this year.", "earlier this year"),
    ("We closed 40 tickets in the last two weeks.", "in the last two weeks"),
    ("We will grow over the next month.", "over the next month"),
    ("He fixed it the other day.", "the other day"),
])
def test_vague_expressions_are_never_dated(text, kept):
    for anchor in (None, WED):
        r = read_time(text, anchor)
        assert window(r) == (None, None, "unknown", None)
        assert r.replacements == ()
        assert r.unresolved == (kept,)


@pytest.mark.parametrize("text", [
    "Ravi is the on-call engineer for billing incidents.",
    "We may ship the fix as soon as possible.",
    "Jan said 2025 tickets were closed.",
    "The soldiers march on.",
    "",
])
def test_no_time_stated_means_no_window_even_with_an_anchor(text):
    r = read_time(text, WED)
    assert r == TimeReading(None, None, "unknown", None, (), ())


# --- Absolute forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, start, end, precision", [
    ("on 2026-03-03", (2026, 3, 3), (2026, 3, 3), "day"),
    ("on June 8, 2026", (2026, 6, 8), (2026, 6, 8), "day"),
    ("on 8 June 2026", (2026, 6, 8), (2026, 6, 8), "day"),
    ("on the 8th of June 2026", (2026, 6, 8), (2026, 6, 8), "day"),
    ("on Sept. 30 2026", (2026, 9, 30), (2026, 9, 30), "day"),
    ("in March 2026", (2026, 3, 1), (2026, 3, 31), "month"),
    ("in Feb 2024", (2024, 2, 1), (2024, 2, 29), "month"),
    ("in Q1 2026", (2026, 1, 1), (2026, 3, 31), "quarter"),
    ("in 2026 Q3", (2026, 7, 1), (2026, 9, 30), "quarter"),
    ("in the fourth quarter of 2025", (2025, 10, 1), (2025, 12, 31), "quarter"),
    ("in 2025", (2025, 1, 1), (2025, 12, 31), "year"),
    ("in mid-2025", (2025, 1, 1), (2025, 12, 31), "year"),
])
def test_absolute_dates_need_no_anchor(text, start, end, precision):
    r = read_time("It shipped " + text + ".", None)
    assert (r.valid_from, r.valid_until, r.precision) == (day(*start), day(*end), precision)
    assert r.replacements == () and r.unresolved == ()


@pytest.mark.parametrize("text, start, end, precision", [
    ("The cutover is on June 8.", (2026, 6, 8), (2026, 6, 8), "day"),
    ("The cutover is on 8 June.", (2026, 6, 8), (2026, 6, 8), "day"),
    ("The cutover is in March.", (2026, 3, 1), (2026, 3, 31), "month"),
    ("We may ship in May.", (2026, 5, 1), (2026, 5, 31), "month"),
    ("Q3 looks busy.", (2026, 7, 1), (2026, 9, 30), "quarter"),
])
def test_a_missing_year_is_the_anchor_year(text, start, end, precision):
    r = read_time(text, WED)
    assert (r.valid_from, r.valid_until, r.precision) == (day(*start), day(*end), precision)
    assert r.replacements == ()     # an absolute date is left as written


def test_an_iso_timestamp_with_a_zone_is_an_instant():
    r = read_time("The deploy finished at 2026-03-03T18:30:00+02:00.", None)
    moment = datetime(2026, 3, 3, 16, 30, tzinfo=UTC)
    assert window(r) == (moment, moment, "instant", "event_time")


def test_impossible_dates_are_not_dates():
    assert read_time("on February 30, 2026", None).precision == "unknown"
    assert read_time("on 2026-02-30", None).precision == "unknown"


# --- Ranges and kinds ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, start, end, precision, kind", [
    ("Ravi led it from 2019 to 2021.", (2019, 1, 1), (2021, 12, 31), "year", "effective_period"),
    ("Ravi led it from June 1 until June 8, 2026.", (2026, 6, 1), (2026, 6, 8), "day",
     "effective_period"),
    ("Ravi led it between March 2025 and 2026.", (2025, 3, 1), (2026, 12, 31), "year",
     "effective_period"),
    ("Ravi led it from November to February 2026.", (2025, 11, 1), (2026, 2, 28), "month",
     "effective_period"),
    ("Ravi led it since 2024 until March 2026.", (2024, 1, 1), (2026, 3, 31), "year",
     "effective_period"),
    ("Ravi led it from 2019-2021.", (2019, 1, 1), (2021, 12, 31), "year", "effective_period"),
    ("Ravi led it from 2019\u20132021.", (2019, 1, 1), (2021, 12, 31), "year", "effective_period"),
    ("Between 2019 and 2021 we had 5 outages.", (2019, 1, 1), (2021, 12, 31), "year",
     "measurement_period"),
])
def test_ranges_are_the_hull_of_their_ends(text, start, end, precision, kind):
    r = read_time(text, None)
    assert window(r) == (day(*start), day(*end), precision, kind)


def test_a_range_with_relative_ends_resolves_both():
    text = "Ravi was out from last Monday to yesterday."
    r = read_time(text, WED)
    # "last Monday" is the most recent Monday strictly before Wednesday 2026-03-04.
    assert window(r) == (day(2026, 3, 2), day(2026, 3, 3), "day", "effective_period")
    assert apply_replacements(text, r.replacements) == "Ravi was out from Monday, 2026-03-02 to 2026-03-03."


def test_a_range_without_an_anchor_keeps_the_end_it_can_read():
    r = read_time("Ravi was out from yesterday until 8 June 2026.", None)
    assert window(r) == (None, day(2026, 6, 8), "day", "effective_period")
    assert r.unresolved == ("yesterday",)


def test_a_reschedule_is_not_a_range():
    r = read_time("They moved the cutover from June 8 to June 9.", WED)
    assert window(r) == (day(2026, 6, 8), day(2026, 6, 8), "day", "event_time")


@pytest.mark.parametrize("text, expected", [
    ("Dana leads product until 2027.", (None, day(2027, 12, 31), "year", "effective_period")),
    ("The policy applies from March 2026.", (day(2026, 3, 1), None, "month", "effective_period")),
    ("The policy applies as of 2026-03-01.", (day(2026, 3, 1), None, "day", "effective_period")),
    ("The migration will be done by June 2026.",
     (None, day(2026, 6, 30), "month", "event_time")),
    ("It shipped before 2026-03-01.", (None, day(2026, 2, 28), "day", "event_time")),
    ("It shipped after March 2026.", (day(2026, 4, 1), None, "month", "event_time")),
    ("Ravi has been on call since early 2025.", (day(2025, 1, 1), None, "open",
                                                 "proposition_validity")),
])
def test_one_sided_windows(text, expected):
    assert window(read_time(text, None)) == expected


def test_measurement_needs_a_figure_and_a_period_longer_than_a_day():
    assert read_time("In March 2026 errors rose to 40.", None).kind == "measurement_period"
    assert read_time("In March 2026 errors rose.", None).kind == "event_time"
    assert read_time("On 2026-03-03 we closed 40 tickets.", None).kind == "event_time"
    assert read_time("We closed 40 tickets last week.", WED).kind == "measurement_period"


def test_the_first_stated_time_decides_and_every_relative_one_is_replaced():
    text = "Yesterday's meeting ran long; tomorrow we ship."
    r = read_time(text, WED)
    assert window(r) == (day(2026, 3, 3), day(2026, 3, 3), "day", "event_time")
    assert [x.iso_dates for x in r.replacements] == [("2026-03-03",), ("2026-03-05",)]
    assert apply_replacements(text, r.replacements) == \
        "2026-03-03's meeting ran long; on 2026-03-05 we ship."


def test_the_first_resolved_time_decides_when_an_earlier_one_is_vague():
    r = read_time("A few weeks ago, on 2026-02-10, we moved.", WED)
    assert window(r)[:2] == (day(2026, 2, 10), day(2026, 2, 10))
    assert r.unresolved == ("A few weeks ago",)


# --- Writing into the claim text -----------------------------------------------------------------

@pytest.mark.parametrize("text, written", [
    ("Yesterday we shipped.", "On 2026-03-03 we shipped."),
    ("Yesterday was busy.", "2026-03-03 was busy."),
    ("Last year was hard.", "2025 was hard."),
    ("We will be done by tomorrow.", "We will be done by 2026-03-05."),
    ("Planned for next week.", "Planned for the week of 2026-03-09."),
    ("Revenue grew late last year.", "Revenue grew late 2025."),
    ("Today or tomorrow.", "On 2026-03-04 or 2026-03-05."),
])
def test_resolved_wording(text, written):
    assert resolved(text, WED) == written


def test_apply_replacements_without_replacements_is_the_identity():
    for text in ("", "Nothing dated here.", "It broke a few weeks ago."):
        assert apply_replacements(text, ()) == text
        assert apply_replacements(text, read_time(text, WED).replacements) == text


def test_apply_replacements_refuses_overlaps_and_mismatches():
    text = "since yesterday"
    good = Replacement(6, 15, "yesterday", "2026-03-03", ("2026-03-03",))
    with pytest.raises(ValueError):
        apply_replacements(text, [good, Replacement(10, 15, "erday", "x", ())])
    with pytest.raises(ValueError):
        apply_replacements(text, [Replacement(0, 5, "until", "x", ())])
    assert apply_replacements(text, [good]) == "since 2026-03-03"


def test_readings_are_deterministic_and_well_typed():
    text = "Dana and I agreed yesterday to move the cutover to June 8."
    assert read_time(text, WED) == read_time(text, WED)
    r = read_time(text, WED)
    assert r.precision in PRECISIONS and r.kind in VALID_KINDS


# --- Properties ----------------------------------------------------------------------------------

RELATIVE = ["today", "yesterday", "tomorrow", "the day before yesterday", "last Friday",
            "next Monday", "on Sunday", "this Thursday", "Saturday morning", "last Friday night", "two days ago", "3 weeks ago",
            "a month ago", "last week", "next week", "this weekend", "last month", "next month",
            "this month", "last year", "next year", "last quarter", "next quarter", "this quarter",
            "last June", "next January", "last night", "this morning", "five days from now"]
PREFIX = ["It happened", "We ship", "Ravi has been on call since", "Dana left", "Planned for"]
anchors = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31),
                       timezones=st.just(UTC))


@settings(max_examples=300, deadline=None)
@given(anchors, st.sampled_from(PREFIX), st.sampled_from(RELATIVE))
def test_resolved_text_reads_back_to_the_same_window(anchor, prefix, phrase):
    text = f"{prefix} {phrase}."
    r = read_time(text, anchor)
    assert len(r.replacements) == 1
    assert r.valid_from is not None
    written = apply_replacements(text, r.replacements)
    again = read_time(written, None)          # the written dates need no anchor
    assert again.replacements == () and again.unresolved == ()
    assert window(again) == window(r)
    for iso in r.replacements[0].iso_dates:
        assert iso in written and date.fromisoformat(iso)


WORDS = ["since", "from", "to", "until", "between", "and", "in", "on", "by", "yesterday", "today",
         "last", "next", "this", "Friday", "week", "month", "year", "quarter", "March", "may",
         "June", "8", "1", "2025", "2026-03-03", "Q1", "ago", "two", "days", "a", "few", "weeks",
         "recently", "the", "day", "before", "of", "moved", "12", "errors", "fell", "'s", ","]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=14), st.one_of(st.none(), anchors))
def test_any_text_gives_a_valid_reading_and_non_overlapping_spans(words, anchor):
    text = " ".join(words)
    r = read_time(text, anchor)
    assert r.precision in PRECISIONS
    assert r.kind is None or r.kind in VALID_KINDS
    if r.kind is None:
        assert (r.valid_from, r.valid_until, r.precision) == (None, None, "unknown")
    else:
        assert r.valid_from is not None or r.valid_until is not None
    if r.valid_from is not None and r.valid_until is not None:
        assert r.valid_from <= r.valid_until
    spans = sorted((x.start, x.end) for x in r.replacements)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    for x in r.replacements:
        assert text[x.start:x.end] == x.original
    if anchor is None:
        assert r.replacements == ()
    apply_replacements(text, r.replacements)


@pytest.mark.parametrize("text", ["An email from Jan arrived.", "we may 12 of them",
                                  "Aug and Jan met."])
def test_month_words_that_are_names_or_verbs_are_not_dates(text):
    assert read_time(text, WED).precision == "unknown"


def test_a_bare_month_abbreviation_after_in_is_a_month():
    r = read_time("The cutover slipped to late Aug.", WED)
    assert (r.valid_from, r.valid_until, r.precision) == \
        (day(2026, 8, 1), day(2026, 8, 31), "month")


@pytest.mark.parametrize("question, when", [
    ("When did Melanie paint a sunrise?", True), ("What year did John start surfing?", True),
    ("In what month did they move?", True), ("How long ago was the trip?", True),
    ("What did John paint?", False), ("Who leads the billing migration?", False)])
def test_a_question_that_asks_when(question: str, when: bool) -> None:
    assert asks_when(question) is when


@pytest.mark.parametrize("question, period", [
    ("I received a piece of jewelry last Saturday from whom?", (date(2026, 2, 28), date(2026, 2, 28))),
    ("What did I cook yesterday?", (date(2026, 3, 3), date(2026, 3, 3))),
    ("What did I buy two weeks ago?", (date(2026, 2, 15), date(2026, 2, 21))),     # 18 Feb, roughly
    ("What did I start a month ago?", (date(2026, 2, 1), date(2026, 2, 28))),       # last month, whole
    ("What did we ship in May 2025?", (date(2025, 5, 1), date(2025, 5, 31))),
    ("What have I read since February?", (date(2026, 2, 1), date(2026, 3, 4))),    # runs to the day asked
    ("What did I cook a couple of days ago?", (date(2026, 3, 1), date(2026, 3, 3))),
    ("Which film did we see a few weeks ago?", (date(2026, 1, 28), date(2026, 2, 18))),
    ("What happened before May?", None), ("How many bikes do I own?", None)])
def test_a_question_names_its_days_against_the_instant_it_is_asked(question: str, period) -> None:
    assert question_period(question, WED) == period


@given(st.integers(min_value=1, max_value=9), st.sampled_from(["days", "weeks", "months"]),
       st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)))
def test_a_question_counting_back_asks_about_a_day_before_it_is_asked_and_holds_that_day(n, unit, asked) -> None:
    first, last = question_period(f"What did I do {n} {unit} ago?", asked)
    back = {"days": timedelta(days=n), "weeks": timedelta(weeks=n)}.get(unit)
    counted = asked.date() - back if back else None
    assert first <= last < asked.date() + timedelta(days=16)
    if counted:
        assert first <= counted <= last and (unit == "weeks" or first == last)


@pytest.mark.parametrize("text", [
    "I just started sculpting classes, every Saturday morning from 10 am to 1 pm.",
    "I'm looking for a new route for my Saturday morning cycling group.",
    "I have a busy Monday ahead.",
    "Apply a few drops of the Sunday Riley serum.",
    "Dana left Friday Harbor.",
    "Monday.com: a work operating system with automated workflows.",
    "We track the sprint in Monday.com now.",
    "I might join a running group that meets on Saturday mornings.",
])
def test_a_weekday_that_recurs_modifies_or_names_is_no_date(text: str):
    # these were written "every On 2026-03-07 morning", "my On 2026-03-07 morning cycling group"
    r = read_time(text, WED)
    assert r.replacements == () and r.valid_from is None


@pytest.mark.parametrize("text", ["We met on Friday, 2026-03 to plan.", "Since Friday, June 2026 we ship daily.",
                                  "Since Friday, 2026-03-06 we ship daily.", "On Saturday, the morning of 2026-03-07."])
def test_a_weekday_and_the_date_after_it_are_never_read_twice(text: str):
    # a weekday that names the date after it makes one expression with it; one that does not
    # ("Friday, 2026-03": a day, then a month) is its own, and the two never overlap
    found = _expressions(text)
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))


@pytest.mark.parametrize(("text", "written"), [
    ("We shipped it Friday.", "We shipped it on Friday, 2026-03-06."),
    ("I'll see Maria Friday.", "I'll see Maria on Friday, 2026-03-06."),
    ("On Friday Maria called.", "On Friday, 2026-03-06 Maria called."),
    ("Friday was busy.", "Friday, 2026-03-06 was busy."),
    ("I went running Saturday morning.", "I went running on Saturday, the morning of 2026-03-07."),
    ("Last Friday night was fun.", "Friday, the night of 2026-02-27 was fun."),
])
def test_a_weekday_that_is_a_day_is_written_with_its_date_and_a_capital_only_at_the_start(text: str, written: str):
    r = read_time(text, WED)
    assert apply_replacements(text, r.replacements) == written


@pytest.mark.parametrize(("text", "on"), [
    ("The launch is on Wednesday, March 4, 2026.", (2026, 3, 4)),
    ("The launch is on Wednesday March 4.", (2026, 3, 4)),
    ("We met on Friday, 2026-01-09.", (2026, 1, 9)),
    ("We met on Friday, the 9th of January.", (2026, 1, 9)),
])
def test_a_weekday_before_the_date_it_falls_on_names_that_date(text: str, on: tuple[int, int, int]):
    # the weekday was read against the document's week: "on 2026-01-14, March 4, 2026", a window of
    # January 14
    r = read_time(text, datetime(2026, 1, 14, tzinfo=UTC))
    assert (r.valid_from, r.valid_until) == (day(*on), day(*on))
    assert r.replacements == ()
