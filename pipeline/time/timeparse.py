"""World time stated in a statement: the claim's window, and relative dates resolved.

`read_time(text, anchor)` reads the times an English statement states and returns the claim's
world-time window (spec "# Time": "World time on claims", "Precision", "Relative dates are
resolved"); `apply_replacements` writes the resolved relative dates into the claim text.

Pure and deterministic: regular expressions and calendar arithmetic only. The anchor is the
document's date (`source_modified_at`, or a conversation turn's timestamp); relative expressions
are resolved against its UTC calendar day and never without it.

Rules (the ones the spec leaves open are marked *decided*):

- Windows are calendar periods with an inclusive end: "in 2025" is 2025-01-01 .. 2025-12-31,
  precision "year"; a week is Monday .. Sunday, precision "day" (there is no week precision).
- A time the text does not state is never invented: no time stated → no window, precision
  "unknown", kind None; the anchor is never used as a fallback for an undated statement.
- Relative expressions ("yesterday", "last Friday", "two days ago", "last year") need the anchor;
  without one they are kept as written in `unresolved`. Vague ones ("a few weeks ago",
  "recently", "earlier this year") are always kept as written and never dated (*decided*:
  "earlier/later this week|month|quarter|year" is vague, since the part of the period is unknown
  and writing the whole period into the text would overstate it).
- Absolute dates without a year ("June 8", "in March", "Q3") take the anchor's year
  (*decided*: no past/future guess from tense); without an anchor they are kept in `unresolved`.
  They are not rewritten in the text: the spec's claim keeps "to June 8" as written.
- Weekdays (*decided*): "last Friday" is the most recent Friday strictly before the anchor's day (and
  "last Friday night" the night of that day);
  "next Monday" / "coming Monday" the soonest Monday strictly after it; "Friday", "on Friday",
  "this Friday" the Friday of the anchor's ISO week (Monday .. Sunday), past or future. A bare
  weekday that recurs or modifies ("every Saturday", "my Saturday morning group", "a busy Monday")
  or opens a name ("Friday Harbor") is no date and is left as written; nor is one set before the
  date it falls on ("Wednesday, March 4, 2026"): that date is the time stated.
  "last/this/next weekend": Saturday .. Sunday of the previous/current/next ISO week.
  "last March" is the most recent March strictly before the anchor's month, "next March" the
  soonest after it, "this March" the March of the anchor's year.
- "N days ago" is the anchor's day minus N; "N weeks ago" minus 7N days (day precision);
  "N months ago" the calendar month N before the anchor's (month precision); "N years ago"
  likewise (year). N is digits, "a"/"an", or one .. twelve. "in N days" is not read (it is as
  often a duration, "done in two days", as an offset); "N days from now" is.
- Rolling windows ("in the last two weeks", "over the next month", "in the past year") are vague:
  they are not calendar periods.
- The window (*decided*): if the first resolved time is one end of a range ("from X to Y",
  "from X until Y", "between X and Y", "since X until Y") the window is the range's hull, X's
  first day .. Y's last day, kind effective_period; otherwise the first resolved time in text
  order decides, read with the word before it:
    "since X"                 → from X's first day, open end, precision "open" (the spec's
                                Precision table: "open — a known start, still ongoing —
                                since 2026-01-14"), kind proposition_validity (the spec's kind
                                table: "Dana has led product since 2024"; see SINCE_KIND);
    "from/starting/as of X"   → from X's first day, no end, X's precision, effective_period
                                (a start without an end that is not "open");
    "until/till/through X"    → until X's last day, no start, X's precision, effective_period;
    "by X"                    → until X's last day, no start, event_time;
    "before X" / "after X"    → until the day before X / from the day after X, event_time;
    otherwise (a point)       → X's first .. last day, event_time; measurement_period instead
                                when the window is longer than one day and the statement
                                carries a figure (digits outside the time expressions):
                                "Q1 billing errors fell to 12".
  A closed range with a figure is a measurement_period too. So in "Dana and I agreed yesterday
  to move the cutover to June 8" the event is "yesterday" (the first stated time); "June 8" is
  another date, stated as written.
  A reschedule ("moved the cutover from June 8 to June 9") is not a range.
- Precision of a closed window is the coarsest of its bounds (instant < day < month < quarter
  < year).
- Replacements (*decided*): every resolved relative expression is replaced, whether or not it
  decides the window. The replacement is the bare absolute form ("2026-03-03", "2026-03",
  "Q1 2026", "2025", "the week of 2026-02-23", "the weekend of 2026-02-28", "the morning of
  2026-03-04") when a preposition or similar word already stands before it ("since yesterday"
  → "since 2026-01-14") or it is possessive ("yesterday's"), or it is the subject at the start
  of a sentence ("Yesterday was busy"); otherwise it takes "on" (days) or "in" (weeks, months,
  quarters, years): "agreed yesterday" → "agreed on 2026-03-03", as in the spec's claim text.
  `iso_dates` lists the YYYY-MM-DD dates a replacement writes (none for "2026-03", "2025").
  Every replacement's text reads back (through read_time) to the same period.
- Not read: times of day without a date ("at 16:30 UTC"), numeric dates other than ISO
  ("03/04/2026" is ambiguous), weekday abbreviations, fiscal years, half years, and a bare
  month abbreviation after "from"/"to"/"and" ("an email from Jan" is a person; "Jan" is read
  after "in", "since", "until", "during", "by" ...). "May" and "March" alone must be
  capitalised. An ISO timestamp with a zone ("2026-03-03T16:30:00Z") is an instant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, timezone

from pipeline.claims.extraction import PRECISIONS, VALID_KINDS

# The kind of "since X" with no end. The spec's only example of it, "Dana has led product since
# 2024", is proposition_validity; a bounded range is effective_period.
SINCE_KIND = "proposition_validity"

# Coarseness of a bound, for "the precision of a window is the coarsest of its bounds".
_RANK = {"instant": 0, "day": 1, "month": 2, "quarter": 3, "year": 4}

_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
           "sep": 9, "oct": 10, "nov": 11, "dec": 12}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

# Month names, full or three-letter (plus "Sept"); a dot after one is read only before a day or
# year ("Sept. 30"), never at the end, where it is the sentence's full stop.
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_NUM = r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ORD = r"(?:st|nd|rd|th)?"
_F = re.IGNORECASE

# --- Vague: relative to an unknown point or of unknown extent; kept as written, never dated. ---
# Checked like every other pattern (leftmost, then longest), so "earlier this year" and
# "the last week" win over the "this year" / "last week" inside them.
VAGUE_RE = re.compile(
    r"\b(?:"
    r"(?:a\s+few|(?:a\s+)?couple\s+(?:of\s+)?|several|some|many|a\s+number\s+of)\s*"
    r"(?:days|weeks|months|years)\s+(?:ago|back)"
    r"|some\s*time\s+(?:ago|back)|a\s+(?:little\s+|long\s+)?while\s+(?:ago|back)"
    r"|a\s+long\s+time\s+ago|long\s+ago|ages\s+ago"
    r"|recently|lately|the\s+other\s+day|(?<!as\s)soon\b(?!\s+as\b)|shortly"
    r"|(?:earlier|later)\s+(?:this|that|in\s+the|next|last)\s+(?:week|month|quarter|year)"
    r"|(?:(?:in|over|during|within|for)\s+)?the\s+(?:last|past|next|coming|following)"
    r"\s+(?:few\s+|couple\s+(?:of\s+)?|several\s+|" + _NUM + r"\s+)?"
    r"(?:days?|weeks?|months?|quarters?|years?)"
    r"|in\s+the\s+coming\s+(?:days|weeks|months|years)|in\s+the\s+near\s+future|in\s+the\s+past"
    r"|currently|at\s+the\s+moment|right\s+now|at\s+present|nowadays|these\s+days"
    r"|at\s+some\s+point|one\s+of\s+these\s+days|someday|over\s+the\s+weekend"
    r")\b", _F)

# --- Absolute: the text names the period itself (a year may still come from the anchor). ---
# ISO date, optionally a time with a zone (then an instant); a time without a zone is dropped.
ISO_RE = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*"
    r"(Z|UTC|[+-]\d{2}:?\d{2}))?(?!\d)", _F)
# ISO year-month, "2026-03": what a resolved "last month" is written as.
ISO_MONTH_RE = re.compile(r"\b(\d{4})-(0[1-9]|1[0-2])\b(?!-\d)")
# "the week of 2026-02-23" and kin: what resolved weeks, weekends and parts of days are written as.
PERIOD_OF_RE = re.compile(
    r"\bthe\s+(week|weekend|morning|afternoon|evening|night)\s+of\s+(\d{4})-(\d{2})-(\d{2})\b", _F)
# "8 June", "8th of June 2026".
DMY_RE = re.compile(r"\b(\d{1,2})" + _ORD + r"(?:\s+of)?\s+(" + _MONTH + r")\b"
                    r"(?:\.?,?\s+(\d{4})\b)?", _F)
# "June 8", "June 8th, 2026"; the day is not followed by more digits ("June 2026" is a month).
MDY_RE = re.compile(r"\b(" + _MONTH + r")\.?\s+(\d{1,2})" + _ORD + r"(?![\d:])\b"
                    r"(?:,?\s+(\d{4})\b)?", _F)
# "March 2026", "Dec. 2025", "March of 2026".
MONTH_YEAR_RE = re.compile(r"\b(" + _MONTH + r")\.?,?\s+(?:of\s+)?(\d{4})\b", _F)
# A month name alone: a date only after a preposition ("in March", "from January"), since
# "may", "march", "Jan", "June" are also words and names; "May"/"March" must be capitalised.
BARE_MONTH_RE = re.compile(r"\b(" + _MONTH + r")\b", _F)
# A year alone: a date only after a preposition ("in 2025", "since 2024"), else it is a number.
# Not the start of a bad ISO date ("2026-02-30") or a numeric date; "2019-2021" is two years.
YEAR_RE = re.compile(r"\b(1[89]\d{2}|2[01]\d{2})\b(?!/\d)(?!-(?!\d{4}\b)\d)")
# The second year of "2019-2021" (or an en dash) stands after a dash, not a preposition.
_YEAR_DASH_RE = re.compile(r"\b\d{4}\s*[-\u2013\u2014]\s*$")
# "Q1", "Q1 2026", "Q3 of 2025", "Q1-2026"; and "2026 Q1"; and "the first quarter of 2026".
QUARTER_RE = re.compile(r"\bQ([1-4])(?:(?:[\s-]+(?:of\s+)?)(\d{4}))?\b", _F)
YEAR_QUARTER_RE = re.compile(r"\b(\d{4})[\s-]?Q([1-4])\b", _F)
ORDINAL_QUARTER_RE = re.compile(
    r"\b(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter(?:\s+of\s+(\d{4}))?\b", _F)

# --- Relative: resolved against the anchor's day. ---
# "the day before yesterday", "yesterday (morning)", "today", "tomorrow", "tonight",
# "last night", "this morning".
DAY_WORD_RE = re.compile(
    r"\b(?:(?P<dby>(?:the\s+)?day\s+before\s+yesterday)|(?P<dat>(?:the\s+)?day\s+after\s+tomorrow)"
    r"|(?P<word>yesterday|today|tomorrow)(?:\s+(?P<part>morning|afternoon|evening|night))?"
    r"|(?P<tonight>tonight)|(?P<lastnight>last\s+night)"
    r"|this\s+(?P<thispart>morning|afternoon|evening))\b", _F)
# "last Friday", "next Monday", "this coming Monday", "Friday" (see the weekday rule above).
WEEKDAY_RE = re.compile(r"\b(?:(last|next|this\s+coming|coming|this|past)\s+)?("
                        + "|".join(_WEEKDAYS) + r")\b(?:\s+(morning|afternoon|evening|night)\b)?", _F)
# "two days ago", "3 weeks ago", "a month ago", "one year back".
AGO_RE = re.compile(r"\b(" + _NUM + r")\s+(day|week|month|year)s?\s+(?:ago|back)\b", _F)
# "three days from now".
FROM_NOW_RE = re.compile(r"\b(" + _NUM + r")\s+(day|week|month|year)s?\s+from\s+(?:now|today)\b",
                         _F)
# "last week", "next month", "this quarter", "the previous year", "current month".
REL_UNIT_RE = re.compile(
    r"\b(?:(?:the\s+)?(previous|current)|(last|next|this|coming))\s+"
    r"(week|weekend|month|quarter|year)\b", _F)
# "last March", "next June", "this December".
REL_MONTH_RE = re.compile(r"\b(last|next|this)\s+(" + _MONTH + r")\b", _F)

# --- Context read from the words around a time expression. ---
# Words after which a resolved date stands bare ("since 2026-01-14"), and after which a bare
# month or year is read as a date at all.
_PREPS = frozenset({
    "since", "until", "till", "til", "by", "from", "to", "before", "after", "on", "of", "between",
    "and", "or", "through", "thru", "in", "during", "as", "than", "early", "late", "mid", "at",
    "for", "around", "circa", "starting", "beginning", "effective", "year", "into", "throughout",
    "within", "about", "versus", "vs"})
# The narrower set after which a bare month abbreviation ("Jan", "Aug") is read as a date.
_ABBREVIATION_PREPS = frozenset({"since", "until", "till", "til", "in", "during", "through", "thru",
                                 "early", "late", "mid", "before", "after", "by", "throughout"})
_LAST_WORD_RE = re.compile(r"([A-Za-z]+)[\s-]*$")
# "early", "mid-", "the end of" between a role word and its time: "since early 2025".
_MOD = r"(?:(?:early|late|mid)[\s-]+|the\s+(?:end|start|beginning|middle)\s+of\s+)?"
SINCE_RE = re.compile(r"\b(?:ever\s+)?since\s+" + _MOD + r"$", _F)
START_RE = re.compile(r"\b(?:from|starting(?:\s+(?:on|in|from))?|beginning(?:\s+(?:on|in))?"
                      r"|as\s+of|effective(?:\s+(?:on|from|as\s+of))?)\s+" + _MOD + r"$", _F)
END_RE = re.compile(r"\b(?:until|till|til|through|thru|up\s+(?:to|until))\s+" + _MOD + r"$", _F)
BY_RE = re.compile(r"\bby\s+" + _MOD + r"$", _F)
BEFORE_RE = re.compile(r"\b(?:before|prior\s+to)\s+" + _MOD + r"$", _F)
AFTER_RE = re.compile(r"\bafter\s+" + _MOD + r"$", _F)
# A range opens with "from", "between" or "since" before its first end ...
RANGE_OPEN_RE = re.compile(r"\b(from|between|since)\s+" + _MOD + r"$", _F)
# ... and joins its ends with "to", "until", "through", "and" or a dash.
RANGE_GAP_RE = re.compile(r"^\s*(to|until|till|til|through|thru|up\s+to|and|-|\u2013|\u2014)\s*"
                          + _MOD + r"$", _F)
# "moved the cutover from June 8 to June 9" is a change of date, not a period.
SHIFT_RE = re.compile(r"\b(?:move[sd]?|moving|postpone[sd]?|postponing|push(?:ed|es)?"
                      r"|delay(?:ed|s)?|shift(?:ed|s)?|reschedule[sd]?|change[sd]?|bump(?:ed|s)?|brought|bring"
                      r"|slip(?:ped|s)?|slid|pull(?:ed|s)?|advanced?)\b(?:\s+\S+){0,5}\s+from\s+"
                      + _MOD + r"$", _F)
# A sentence-initial expression followed by a verb is the subject: "Yesterday was busy."
_SUBJECT_VERB_RE = re.compile(r"^\s+(?:was|is|were|will|has|had|looks|looked|seems|seemed)\b", _F)
_POSSESSIVE_RE = re.compile("^['\u2019]s\\b")  # straight or curly apostrophe
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;\n]\s*|^\W*)$")
# A figure: digits not inside a time expression ("fell to 12", "40%", "$1.5M").
FIGURE_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Replacement:
    start: int                      # span in the input text
    end: int
    original: str                   # the words as written ("yesterday")
    resolved: str                   # what the claim text says instead ("on 2026-03-03")
    iso_dates: tuple[str, ...]      # the YYYY-MM-DD dates `resolved` writes, for the grounding gate


@dataclass(frozen=True)
class TimeReading:
    valid_from: datetime | None     # UTC; first instant of the first day of the period
    valid_until: datetime | None    # UTC; first instant of the last day covered (inclusive end)
    precision: str                  # one of PRECISIONS
    kind: str | None                # one of VALID_KINDS, or None when no time was stated
    replacements: tuple[Replacement, ...]   # relative expressions resolved, for the claim text
    unresolved: tuple[str, ...]     # relative or vague expressions kept as written


@dataclass(frozen=True)
class _Period:
    start: date
    end: date                       # inclusive
    precision: str                  # instant, day, month, quarter, year
    shape: str                      # day, part, week, weekend, month, quarter, year, instant
    label: str                      # the absolute form written into claim text
    iso_dates: tuple[str, ...] = ()
    instant: datetime | None = None


@dataclass
class _Expr:
    start: int
    end: int
    text: str
    category: str                   # "absolute", "relative", "vague"
    absolute: Callable[[int | None], _Period | None] | None = None  # year → period
    needs_year: bool = False        # absolute without a stated year
    relative: Callable[[date], _Period | None] | None = None        # anchor day → period
    period: _Period | None = None   # filled when resolved


# --- Calendar periods ---------------------------------------------------------------------

def _day(d: date) -> _Period:
    return _Period(d, d, "day", "day", d.isoformat(), (d.isoformat(),))


def _part_of_day(d: date, part: str) -> _Period:
    return _Period(d, d, "day", "part", f"the {part} of {d.isoformat()}", (d.isoformat(),))


def _week(d: date) -> _Period:
    monday = d - timedelta(days=d.weekday())
    return _Period(monday, monday + timedelta(days=6), "day", "week",
                   f"the week of {monday.isoformat()}", (monday.isoformat(),))


def _weekend(d: date) -> _Period:
    saturday = d - timedelta(days=d.weekday()) + timedelta(days=5)
    return _Period(saturday, saturday + timedelta(days=1), "day", "weekend",
                   f"the weekend of {saturday.isoformat()}", (saturday.isoformat(),))


def _month(y: int, m: int) -> _Period:
    nxt = date(y + 1, 1, 1) if m == 12 else date(y, m + 1, 1)
    return _Period(date(y, m, 1), nxt - timedelta(days=1), "month", "month", f"{y:04d}-{m:02d}")


def _quarter(y: int, q: int) -> _Period:
    first = _month(y, 3 * q - 2)
    last = _month(y, 3 * q)
    return _Period(first.start, last.end, "quarter", "quarter", f"Q{q} {y}")


def _year(y: int) -> _Period:
    return _Period(date(y, 1, 1), date(y, 12, 31), "year", "year", str(y))


def _add_months(y: int, m: int, n: int) -> tuple[int, int]:
    index = y * 12 + (m - 1) + n
    return index // 12, index % 12 + 1


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _month_number(word: str) -> int:
    return _MONTHS[word.lower()[:3]]


def _number(word: str) -> int:
    w = word.lower()
    return int(w) if w.isdigit() else _NUMBER_WORDS[w]


def _quarter_of(d: date) -> int:
    return (d.month - 1) // 3 + 1


# --- Recognising expressions ----------------------------------------------------------------

def _last_word(text: str, start: int) -> str:
    m = _LAST_WORD_RE.search(text[max(0, start - 40):start])
    return m.group(1).lower() if m else ""


def _after_preposition(text: str, start: int) -> bool:
    return _last_word(text, start) in _PREPS


def _absolute(m: re.Match, fn: Callable[[int | None], _Period | None], year: str | None,
              ) -> _Expr | None:
    """An absolute expression; `year` is the year as written, or None (then it needs one)."""
    if year is not None:
        period = fn(int(year))
        if period is None:          # "February 30, 2026": not a date
            return None
        return _Expr(m.start(), m.end(), m.group(0), "absolute", absolute=lambda _y, p=period: p)
    if fn(2000) is None:            # impossible in any leap year: "June 31"
        return None
    return _Expr(m.start(), m.end(), m.group(0), "absolute", absolute=fn, needs_year=True)


def _relative(m: re.Match, fn: Callable[[date], _Period | None]) -> _Expr:
    return _Expr(m.start(), m.end(), m.group(0), "relative", relative=fn)


def _iso(m: re.Match, text: str) -> _Expr | None:
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    day = _safe_date(y, mo, d)
    if day is None:
        return None
    if m.group(7):
        zone = m.group(7).upper()
        if zone in ("Z", "UTC"):
            tz = UTC
        else:
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
        try:
            moment = datetime(y, mo, d, int(m.group(4)), int(m.group(5)), int(m.group(6) or 0),
                              tzinfo=tz).astimezone(UTC)
        except ValueError:
            return None
        period = _Period(moment.date(), moment.date(), "instant", "instant",
                         moment.isoformat().replace("+00:00", "Z"), (), moment)
        return _Expr(m.start(), m.end(), m.group(0), "absolute", absolute=lambda _y: period)
    # A time without a zone is not an instant we can place; the expression is the date alone.
    return _Expr(m.start(), m.start() + 10, m.group(0)[:10], "absolute",
                 absolute=lambda _y: _day(day))


def _period_of(m: re.Match, text: str) -> _Expr | None:
    d = _safe_date(int(m.group(2)), int(m.group(3)), int(m.group(4)))
    if d is None:
        return None
    what = m.group(1).lower()
    if what == "week":
        period = _week(d)
    elif what == "weekend":
        period = _weekend(d)
    else:
        period = _part_of_day(d, what)
    return _Expr(m.start(), m.end(), m.group(0), "absolute", absolute=lambda _y: period)


def _dmy(m: re.Match, text: str) -> _Expr | None:
    mo, d = _month_number(m.group(2)), int(m.group(1))
    return _absolute(m, lambda y: _day(x) if (x := _safe_date(y, mo, d)) else None, m.group(3))


def _mdy(m: re.Match, text: str) -> _Expr | None:
    if m.group(1) == "may":
        return None                 # "we may 12 …"; "May 12" and "may 2026" are still read
    mo, d = _month_number(m.group(1)), int(m.group(2))
    return _absolute(m, lambda y: _day(x) if (x := _safe_date(y, mo, d)) else None, m.group(3))


def _month_year(m: re.Match, text: str) -> _Expr | None:
    mo = _month_number(m.group(1))
    return _absolute(m, lambda y: _month(y, mo), m.group(2))


def _iso_month(m: re.Match, text: str) -> _Expr | None:
    mo = int(m.group(2))
    return _absolute(m, lambda y: _month(y, mo), m.group(1))


def _bare_month(m: re.Match, text: str) -> _Expr | None:
    word = m.group(1)
    if word.lower() in ("may", "march") and not word[0].isupper():
        return None                 # "we may ship", "they march on"
    if not _after_preposition(text, m.start()):
        return None                 # "Jan said", "June approved"
    if len(word) <= 4 and word.lower() not in ("may", "june", "july") \
            and _last_word(text, m.start()) not in _ABBREVIATION_PREPS:
        return None                 # "an email from Jan": an abbreviation alone is too often a name
    mo = _month_number(word)
    return _absolute(m, lambda y: _month(y, mo), None)


def _bare_year(m: re.Match, text: str) -> _Expr | None:
    if not (_after_preposition(text, m.start()) or _YEAR_DASH_RE.search(text[:m.start()])):
        return None                 # "2025 tickets were closed"
    return _absolute(m, _year, m.group(1))


def _quarter_expr(m: re.Match, text: str) -> _Expr | None:
    q = int(m.group(1))
    return _absolute(m, lambda y: _quarter(y, q), m.group(2))


def _year_quarter(m: re.Match, text: str) -> _Expr | None:
    q = int(m.group(2))
    return _absolute(m, lambda y: _quarter(y, q), m.group(1))


def _ordinal_quarter(m: re.Match, text: str) -> _Expr | None:
    q = {"first": 1, "second": 2, "third": 3, "fourth": 4}.get(m.group(1).lower()) \
        or int(m.group(1)[0])
    return _absolute(m, lambda y: _quarter(y, q), m.group(2))


def _day_word(m: re.Match, text: str) -> _Expr:
    if m.group("dby"):
        return _relative(m, lambda a: _day(a - timedelta(days=2)))
    if m.group("dat"):
        return _relative(m, lambda a: _day(a + timedelta(days=2)))
    if m.group("tonight"):
        return _relative(m, lambda a: _part_of_day(a, "night"))
    if m.group("lastnight"):
        return _relative(m, lambda a: _part_of_day(a - timedelta(days=1), "night"))
    if m.group("thispart"):
        part = m.group("thispart").lower()
        return _relative(m, lambda a: _part_of_day(a, part))
    offset = {"yesterday": -1, "today": 0, "tomorrow": 1}[m.group("word").lower()]
    part = m.group("part")
    if part:
        return _relative(m, lambda a: _part_of_day(a + timedelta(days=offset), part.lower()))
    return _relative(m, lambda a: _day(a + timedelta(days=offset)))


# Before a bare weekday, words that make it no date: a recurrence ("every Saturday morning"), or
# a determiner or possessive whose noun it modifies or is ("my Saturday morning cycling group", "a
# busy Monday ahead", "the Sunday Riley serum").
_WEEKDAY_NOT_A_DATE_AFTER = frozenset("""every each a an the my your our their his her its entire whole busy
typical usual normal regular long lazy any other some one""".split())


def _names_its_date(m: re.Match, text: str) -> bool:
    """A weekday set before the date it falls on ("Wednesday, March 4, 2026", "Friday 2026-01-09",
    "Tuesday the 3rd of March", "Saturday, the morning of 2026-03-07"): it names that date's day,
    and the date is the time stated."""
    after = text[m.end():]
    gap = re.match(r",?\s+", after)
    if gap is None:
        return False
    rest = after[gap.end():]
    if PERIOD_OF_RE.match(rest):
        return True   # "Saturday, the morning of 2026-03-07", as a weekday's part of a day is written
    rest = re.sub(r"^the\s+", "", rest, flags=re.IGNORECASE)
    return any(p.match(rest) for p in (ISO_RE, DMY_RE, MDY_RE))


def _weekday_is_no_date(m: re.Match, text: str) -> bool:
    """A bare weekday that is part of a name, recurs, or modifies a noun after a determiner:
    "Friday Harbor", "Monday.com", "the Sunday Riley serum", "every Wednesday evening", "your
    Saturday morning group". A series' name ("Tune-Up Saturday") is not told from a day ("see
    Maria Friday"), and is read as a day."""
    if _names_its_date(m, text):
        return True
    if re.match(r"\.[A-Za-z]", text[m.end():]):
        return True   # "Monday.com": an address, a product's name
    if re.match(r"\s+(?:morning|afternoon|evening|night)s\b", text[m.end():], re.IGNORECASE):
        return True   # "on Saturday mornings": every one of them
    if m.group(1):
        return False  # "last Friday", "this coming Monday": a day, whatever stands around it
    if _last_word(text, m.start()) in _WEEKDAY_NOT_A_DATE_AFTER:
        return True
    # a capitalised word after it, where no preposition makes it a time: a name ("left Friday
    # Harbor"); "on Friday Maria called" is a day
    return re.match(r" [A-Z][a-z]", text[m.end():]) is not None and not _after_preposition(text, m.start())


def _weekday(m: re.Match, text: str) -> _Expr | None:
    if _weekday_is_no_date(m, text):
        return None
    which = (m.group(1) or "").lower().split()
    which_word = which[-1] if which else ""
    target = _WEEKDAYS.index(m.group(2).lower())
    part = (m.group(3) or "").lower()   # "Thursday morning" is the morning of that day

    def on(d: date) -> _Period:
        # the day of the week the source names stays in the claim beside its date ("on Wednesday,
        # 2023-05-24"): a reader may ask which day it was, and a weekday before its date names it
        period = _part_of_day(d, part) if part else _day(d)
        return replace(period, label=f"{_WEEKDAYS[target].capitalize()}, {period.label}")

    def resolve(a: date) -> _Period:
        if which_word in ("last", "past"):
            back = (a.weekday() - target) % 7 or 7
            return on(a - timedelta(days=back))
        if which_word in ("next", "coming"):
            ahead = (target - a.weekday()) % 7 or 7
            return on(a + timedelta(days=ahead))
        return on(a - timedelta(days=a.weekday()) + timedelta(days=target))
    return _relative(m, resolve)


def _unit_period(unit: str, a: date, n: int) -> _Period:
    """The week/weekend/month/quarter/year `n` steps from the one holding `a`."""
    if unit == "week":
        return _week(a + timedelta(days=7 * n))
    if unit == "weekend":
        return _weekend(a + timedelta(days=7 * n))
    if unit == "month":
        return _month(*_add_months(a.year, a.month, n))
    if unit == "quarter":
        y, mo = _add_months(a.year, 3 * _quarter_of(a) - 2, 3 * n)
        return _quarter(y, _quarter_of(date(y, mo, 1)))
    return _year(a.year + n)


def _rel_unit(m: re.Match, text: str) -> _Expr:
    word = (m.group(1) or m.group(2)).lower()
    step = {"previous": -1, "last": -1, "current": 0, "this": 0, "next": 1, "coming": 1}[word]
    unit = m.group(3).lower()
    return _relative(m, lambda a: _unit_period(unit, a, step))


def _rel_month(m: re.Match, text: str) -> _Expr | None:
    word = m.group(2)
    if word.lower() in ("may", "march") and not word[0].isupper():
        return None
    which, mo = m.group(1).lower(), _month_number(word)

    def resolve(a: date) -> _Period:
        if which == "this":
            return _month(a.year, mo)
        if which == "last":
            return _month(a.year if mo < a.month else a.year - 1, mo)
        return _month(a.year if mo > a.month else a.year + 1, mo)
    return _relative(m, resolve)


def _offset(m: re.Match, sign: int) -> _Expr:
    n, unit = sign * _number(m.group(1)), m.group(2).lower()

    def resolve(a: date) -> _Period | None:
        try:
            if unit == "day":
                return _day(a + timedelta(days=n))
            if unit == "week":
                return _day(a + timedelta(days=7 * n))
            if unit == "month":
                return _month(*_add_months(a.year, a.month, n))
            return _year(a.year + n)
        except (OverflowError, ValueError):
            return None
    return _relative(m, resolve)


def _vague(m: re.Match, text: str) -> _Expr:
    return _Expr(m.start(), m.end(), m.group(0), "vague")


# Every pattern with the function that reads a match (None: not a date here).
_PATTERNS: tuple[tuple[re.Pattern, Callable[[re.Match, str], _Expr | None]], ...] = (
    (VAGUE_RE, _vague),
    (ISO_RE, _iso),
    (ISO_MONTH_RE, _iso_month),
    (PERIOD_OF_RE, _period_of),
    (DMY_RE, _dmy),
    (MDY_RE, _mdy),
    (MONTH_YEAR_RE, _month_year),
    (QUARTER_RE, _quarter_expr),
    (YEAR_QUARTER_RE, _year_quarter),
    (ORDINAL_QUARTER_RE, _ordinal_quarter),
    (DAY_WORD_RE, _day_word),
    (WEEKDAY_RE, _weekday),
    (AGO_RE, lambda m, t: _offset(m, -1)),
    (FROM_NOW_RE, lambda m, t: _offset(m, 1)),
    (REL_UNIT_RE, _rel_unit),
    (REL_MONTH_RE, _rel_month),
    (BARE_MONTH_RE, _bare_month),
    (YEAR_RE, _bare_year),
)


def _expressions(text: str) -> list[_Expr]:
    """Time expressions in text order, without overlaps: leftmost first, then longest, then
    the pattern listed first."""
    found: list[tuple[int, int, int, _Expr]] = []
    for order, (pattern, read) in enumerate(_PATTERNS):
        for m in pattern.finditer(text):
            expr = read(m, text)
            if expr is not None:
                found.append((expr.start, -(expr.end - expr.start), order, expr))
    found.sort(key=lambda f: f[:3])
    chosen: list[_Expr] = []
    reached = 0
    for start, _, _, expr in found:
        if start >= reached:
            chosen.append(expr)
            reached = expr.end
    for expr in chosen:
        day = _WEEKDAY_BEFORE.search(text, max(0, expr.start - 16), expr.start) if expr.category == "absolute" else None
        if day and _names_its_date(WEEKDAY_RE.match(text, day.start()), text):
            # a date named by the weekday set before it ("since Friday, 2026-03-06") reads from
            # the weekday: what stands before the weekday stands before the date. Only where the
            # weekday names it: "Friday, 2026-03" is a day and a month, each read on its own
            expr.start, expr.text = day.start(), text[day.start():expr.end]
    return chosen


_WEEKDAY_BEFORE = re.compile(r"\b(?:" + "|".join(_WEEKDAYS) + r"),?\s+(?:the\s+)?$", _F)


# --- Resolution ------------------------------------------------------------------------------

def _anchor_day(anchor: datetime | None) -> date | None:
    if anchor is None:
        return None
    if anchor.tzinfo is None or anchor.utcoffset() is None:
        raise ValueError("anchor must be timezone-aware (UTC)")
    return anchor.astimezone(UTC).date()


def _resolve(expr: _Expr, anchor: date | None, year: int | None = None) -> _Period | None:
    if expr.category == "relative":
        return expr.relative(anchor) if anchor is not None else None
    if expr.category == "absolute":
        if not expr.needs_year:
            return expr.absolute(None)
        if year is None and anchor is not None:
            year = anchor.year
        return expr.absolute(year) if year is not None else None
    return None


def _resolve_range(first: _Expr, second: _Expr, anchor: date | None) -> None:
    """Resolve the two ends of a range; a missing year is borrowed from the other end
    ("from January to May 2026"), one earlier or later if the range would run backwards."""
    if first.needs_year and not second.needs_year:
        second.period = _resolve(second, anchor)
        if second.period is not None:
            y = second.period.end.year
            first.period = _resolve(first, anchor, y)
            if first.period is not None and first.period.start > second.period.end:
                first.period = _resolve(first, anchor, y - 1)
        return
    first.period = _resolve(first, anchor)
    if second.needs_year and first.period is not None:
        y = first.period.start.year
        second.period = _resolve(second, anchor, y)
        if second.period is not None and second.period.end < first.period.start:
            second.period = _resolve(second, anchor, y + 1)
    else:
        second.period = _resolve(second, anchor)


def _ranges(text: str, exprs: list[_Expr]) -> dict[int, int]:
    """Index of a range's first end → index of its second end."""
    pairs: dict[int, int] = {}
    i = 0
    while i < len(exprs) - 1:
        first, second = exprs[i], exprs[i + 1]
        if "vague" not in (first.category, second.category):
            before = text[:first.start]
            opener = RANGE_OPEN_RE.search(before)
            gap = RANGE_GAP_RE.match(text[first.end:second.start])
            if opener and gap and not SHIFT_RE.search(before):
                opens, joins = opener.group(1).lower(), gap.group(1).lower()
                dash = joins in ("-", "\u2013", "\u2014")  # hyphen, en dash, em dash
                if dash or (joins == "and") == (opens == "between"):
                    pairs[i] = i + 1
                    i += 2
                    continue
        i += 1
    return pairs


def _role(text: str, expr: _Expr) -> str:
    before = text[:expr.start]
    if SHIFT_RE.search(before):     # "moved the cutover from June 8": a date, not a start
        return "point"
    for name, pattern in (("since", SINCE_RE), ("start", START_RE), ("end", END_RE),
                          ("by", BY_RE), ("before", BEFORE_RE), ("after", AFTER_RE)):
        if pattern.search(before):
            return name
    return "point"


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _lower(p: _Period) -> datetime:
    return p.instant if p.instant is not None else _midnight(p.start)


def _upper(p: _Period) -> datetime:
    return p.instant if p.instant is not None else _midnight(p.end)


def _coarsest(*periods: _Period) -> str:
    return max((p.precision for p in periods), key=_RANK.__getitem__)


def _has_figure(text: str, exprs: list[_Expr]) -> bool:
    for m in FIGURE_RE.finditer(text):
        if not any(e.start <= m.start() < e.end for e in exprs):
            return True
    return False


def _replacement(text: str, expr: _Expr) -> Replacement:
    p = expr.period
    assert p is not None
    after = text[expr.end:]
    bare = (_after_preposition(text, expr.start)
            or _POSSESSIVE_RE.match(after) is not None
            or (_SENTENCE_START_RE.search(text[:expr.start]) is not None
                and _SUBJECT_VERB_RE.match(after) is not None))
    if bare:
        resolved = p.label
    else:
        resolved = ("on " if p.shape in ("day", "part", "weekend") else "in ") + p.label
    # a capital stays a capital where it opens the sentence, never for "on" before a weekday's date
    # mid-sentence ("we met Friday" → "we met on 2026-03-06")
    if expr.text[:1].isupper() and resolved[:1].islower() and _SENTENCE_START_RE.search(text[:expr.start]):
        resolved = resolved[0].upper() + resolved[1:]
    return Replacement(expr.start, expr.end, expr.text, resolved, p.iso_dates)


def read_time(text: str, anchor: datetime | None) -> TimeReading:
    """The world time `text` states, read against the document date `anchor` (aware UTC)."""
    anchor_day = _anchor_day(anchor)
    exprs = _expressions(text)
    pairs = _ranges(text, exprs)
    seconds = set(pairs.values())
    for i, expr in enumerate(exprs):
        if i in pairs:
            _resolve_range(expr, exprs[pairs[i]], anchor_day)
        elif i not in seconds:
            expr.period = _resolve(expr, anchor_day)

    replacements = tuple(_replacement(text, e) for e in exprs
                         if e.category == "relative" and e.period is not None)
    unresolved = tuple(e.text for e in exprs if e.period is None)

    valid_from: datetime | None = None
    valid_until: datetime | None = None
    precision, kind = "unknown", None
    figure = _has_figure(text, exprs)
    for i, expr in enumerate(exprs):
        p = expr.period
        if p is None:
            continue
        if i in pairs and exprs[pairs[i]].period is not None:
            q = exprs[pairs[i]].period
            valid_from, valid_until = min(_lower(p), _lower(q)), max(_upper(p), _upper(q))
            precision = _coarsest(p, q)
            kind = "measurement_period" if figure else "effective_period"
            break
        role = "end" if i in seconds else _role(text, expr)
        if i in pairs and role not in ("since", "start"):
            role = "start"
        if role == "since":
            valid_from, precision, kind = _lower(p), "open", SINCE_KIND
        elif role == "start":
            valid_from, precision, kind = _lower(p), p.precision, "effective_period"
        elif role == "end":
            valid_until, precision, kind = _upper(p), p.precision, "effective_period"
        elif role == "by":
            valid_until, precision, kind = _upper(p), p.precision, "event_time"
        elif role == "before":
            valid_until = p.instant or _midnight(p.start - timedelta(days=1))
            precision, kind = p.precision, "event_time"
        elif role == "after":
            valid_from = p.instant or _midnight(p.end + timedelta(days=1))
            precision, kind = p.precision, "event_time"
        else:
            valid_from, valid_until, precision = _lower(p), _upper(p), p.precision
            longer_than_a_day = p.instant is None and p.end > p.start
            kind = "measurement_period" if figure and longer_than_a_day else "event_time"
        break

    assert precision in PRECISIONS and (kind is None or kind in VALID_KINDS)
    return TimeReading(valid_from, valid_until, precision, kind, replacements, unresolved)


# What a resolved relative date writes: a day, a month or a year ("2026-03-03", "2026-03", "2025").
_WRITTEN_PERIOD = re.compile(r"\b\d{4}(?:-\d{2}(?:-\d{2})?)?\b")


def written_periods(reading: TimeReading) -> tuple[str, ...]:
    """The days, months and years a reading's replacements write, in text order."""
    return tuple(d for r in reading.replacements for d in _WRITTEN_PERIOD.findall(r.resolved))


def apply_replacements(text: str, replacements: Sequence[Replacement]) -> str:
    """`text` with each replacement's span rewritten; spans must match and must not overlap."""
    out: list[str] = []
    cursor = 0
    for r in sorted(replacements, key=lambda r: (r.start, r.end)):
        if r.start < cursor:
            raise ValueError(f"overlapping replacements at {r.start}")
        if text[r.start:r.end] != r.original:
            raise ValueError(f"replacement {r.original!r} does not match the text at {r.start}")
        out.append(text[cursor:r.start])
        out.append(r.resolved)
        cursor = r.end
    out.append(text[cursor:])
    return "".join(out)


# A question that asks for a time: its answer is a date, so claims whose world time is known
# answer it best ("When did Melanie paint a sunrise?", "What year did John start?").
_ASKS_WHEN = re.compile(r"^\W*(?:when|what\s+(?:date|day|year|month|time|week)|which\s+(?:date|day|year|month|week)|"
                        r"how\s+long\s+ago|in\s+what\s+(?:year|month)|since\s+when)\b", re.IGNORECASE)


def asks_when(question: str) -> bool:
    """Whether a question asks when something happened or holds."""
    return bool(_ASKS_WHEN.search(question))


# Counting back in weeks or months names a day only roughly ("four weeks ago" of a Tuesday is
# about the Saturday before or after): a day it resolves to is widened by half its unit.
_ROUGHLY_BACK = re.compile(r"\b(?:weeks?|months?)\s+(?:ago|back|earlier|before)\b", re.IGNORECASE)
_ROUGH_SLACK = {"week": 3, "month": 15}


# "A couple of days ago", "a few weeks ago": days the rules leave unresolved in a statement, where
# the claim keeps its words; a question asks about a span of them (a couple: one to three units
# back; a few: two to five).
_SOME_BACK = re.compile(r"\ba\s+(couple|few)\s+(?:of\s+)?(day|week|month)s?\s+ago\b", re.IGNORECASE)
_SOME = {"couple": (1, 3), "few": (2, 5)}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}


def question_period(question: str, asked: datetime) -> tuple[date, date] | None:
    """The days a question asks about, its time read against the instant it is asked ("What did I
    do two weeks ago?" asked on 2023-05-05 asks about 2023-04-21, widened to 2023-04-18 …
    2023-04-24 since weeks counted back are rough; "last Saturday", "in May 2023", "on 4 March"
    name their days exactly; "a couple of days ago" one to three days back), first and last
    inclusive; None when it names no time. A time that runs on ("since March") runs to the day it
    is asked."""
    reading = read_time(question, asked)
    asked_day = asked.astimezone(UTC).date()
    if reading.valid_from is None and reading.valid_until is None:
        some = _SOME_BACK.search(question)
        if some is None:
            return None
        (fewest, most), unit = _SOME[some.group(1).lower()], _UNIT_DAYS[some.group(2).lower()]
        return asked_day - timedelta(days=most * unit), asked_day - timedelta(days=fewest * unit)
    first = reading.valid_from.date() if reading.valid_from else None
    last = reading.valid_until.date() if reading.valid_until else asked_day
    if first is None or first > last:
        return None   # "before May": no first day to read from
    rough = [m.group(0).split()[0].lower().rstrip("s") for r in reading.replacements
             for m in [_ROUGHLY_BACK.search(r.original)] if m]
    # a whole month ("a month ago" is last month) is no rough day
    slack = max((_ROUGH_SLACK[unit] for unit in rough), default=0) if first == last else 0
    return first - timedelta(days=slack), last + timedelta(days=slack)
