"""The LoCoMo evidence-recall measurement: sessions as documents, questions, the answer context cut
at a character budget, the hit rule, and the baselines over raw turns (vector, BM25, RRF).

Exactly the procedure of `shared/eval/locomo/README.md`, so that figures are comparable across
runs and with the figures measured elsewhere. Pure: no database, no model (the vector baseline
takes the vectors as arguments).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

CATEGORIES = (1, 2, 3, 4)
BUDGET = 2000
MATCH_PREFIX = 60     # characters of a turn's text (collapsed, lower-cased) that identify it
MIN_MATCH = 25        # items shorter than this never match by text
RRF_K = 60
BM25_K1, BM25_B = 1.5, 0.75
_SESSION_TIME = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class Turn:
    conversation: str
    dia_id: str          # "D3:2"
    speaker: str
    text: str            # with " [shares a photo: …]" when the turn has one
    said_at: datetime

    @property
    def line(self) -> str:
        """The turn as its document renders it."""
        return f"[{self.dia_id} | {self.said_at.strftime('%Y-%m-%dT%H:%M:%SZ')}] {self.speaker}: {self.text}"


def session_markdown(title: str, participants: Sequence[str], turns: Sequence[Turn]) -> str:
    """A session as the recall benchmarks render it: its title, who takes part, then each turn's
    line (`Turn.line`), a blank line between them."""
    return f"# {title}\n\nParticipants: {', '.join(participants)}\n" + "".join(f"\n{t.line}\n" for t in turns)


@dataclass(frozen=True)
class Session:
    conversation: str
    number: int
    said_at: datetime
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]

    @property
    def filename(self) -> str:
        return f"locomo-{self.conversation}-session-{self.number:02d}.md"

    def markdown(self) -> str:
        return session_markdown(f"Conversation {self.conversation}, session {self.number}", self.speakers, self.turns)


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int | str         # LoCoMo's 1-4; another genre's question type
    evidence: tuple[str, ...]   # gold turn ids
    answer: str = ""
    asked_at: datetime | None = None   # when it is asked, where the set says (LongMemEval's question_date)


def session_time(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` as UTC."""
    return datetime.strptime(text.strip(), _SESSION_TIME).replace(tzinfo=timezone.utc)


def read_conversation(path: Path) -> tuple[list[Session], list[Question]]:
    """The sessions and the measured questions (categories 1–4 with gold turns) of one file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = path.stem
    speakers = (data["speaker_a"], data["speaker_b"])
    sessions = []
    numbers = sorted(int(k.split("_")[1]) for k in data if re.fullmatch(r"session_\d+", k) and data[k])
    for number in numbers:
        said_at = session_time(data[f"session_{number}_date_time"])
        turns = tuple(Turn(conversation, t["dia_id"], t["speaker"],
                           t["text"] + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else ""),
                           said_at) for t in data[f"session_{number}"])
        sessions.append(Session(conversation, number, said_at, speakers, turns))
    questions = [Question(conversation, q["question"], q["category"], tuple(q["evidence"]), str(q.get("answer", "")))
                 for q in data["qa"] if q.get("category") in CATEGORIES and q.get("evidence")]
    return sessions, questions


def read_folder(folder: Path) -> tuple[list[Session], list[Question]]:
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"corpusmem bench recall: no LoCoMo conversation (*.json) in {folder}")
    sessions: list[Session] = []
    questions: list[Question] = []
    for path in files:
        s, q = read_conversation(path)
        sessions += s
        questions += q
    return sessions, questions


# --- the answer context and the hit rule ----------------------------------------------------

def _collapsed(text: str) -> str:
    return " ".join(text.split()).lower()


def context(items: Iterable[str], budget: int = BUDGET) -> list[str]:
    """The items in their order, each counted whole until the budget is reached, the last cut."""
    out, left = [], budget
    for item in items:
        if left <= 0:
            break
        out.append(item[:left])
        left -= len(item)
    return out


def hit(items: Sequence[str], gold: Sequence[Turn]) -> bool:
    """Whether the context holds a gold turn: its marker, or its text (the first 60 characters of
    one, collapsed and lower-cased, inside the other). A text under 25 characters, an item's or a
    turn's, never matches: "Wow!" would be found everywhere."""
    for turn in gold:
        marker = f"[{turn.dia_id} |"
        own = _collapsed(turn.text)
        for item in items:
            if marker in item:
                return True
            mine = _collapsed(item)
            if len(mine) < MIN_MATCH or len(own) < MIN_MATCH:
                continue
            if own[:MATCH_PREFIX] in mine or mine[:MATCH_PREFIX] in own:
                return True
    return False


# --- answer containment ---------------------------------------------------------------------
# Does the context already hold the gold answer? Applied alike to every method, claims counted by
# their claim_text. Dates are compared as dates at the precision the answer names; a relative
# answer ("the week before 9 June 2023") is held by a context naming its anchor day or a day of
# the period it means; any other answer by its content words.

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_YEAR = r"(1[89]\d\d|20\d\d)"
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?[\W_]{0,2}([A-Za-z]{3,})\.?,?\s*" + _YEAR + r"\b")
_MONTH_DAY_YEAR = re.compile(r"\b([A-Za-z]{3,})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+" + _YEAR + r"\b")
_MONTH_YEAR = re.compile(r"\b([A-Za-z]{3,})[.,]?\s*" + _YEAR + r"\b")
_ISO_DAY = re.compile(r"\b" + _YEAR + r"-(\d{2})-(\d{2})")
_ISO_MONTH = re.compile(r"\b" + _YEAR + r"-(\d{2})\b(?!-)")
_BARE_YEAR = re.compile(r"\b" + _YEAR + r"\b")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(r"\b(day|week|weekend|" + "|".join(_WEEKDAYS) + r")\s+(before|after|of)\b", re.IGNORECASE)
# What a relative answer's period is, in days around its anchor (start, end inclusive): a week
# "before" reaches back to the Monday of the previous ISO week.
_PERIODS = {("day", "before"): (-1, -1), ("day", "after"): (1, 1), ("week", "before"): (-13, -1),
            ("week", "after"): (1, 13), ("weekend", "before"): (-8, -1), ("weekend", "after"): (1, 8),
            ("weekend", "of"): (-3, 3), ("week", "of"): (-6, 6)}
_STOPWORDS = frozenset("""a an the and or of in on at to for from by with as is are was were be been it its his
her their he she they them him i me my we our you your this that these those there some any about also
into onto over after before during while than then so not no yes do does did has have had""".split())
_NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
                 "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "once": "1",
                 "twice": "2"}
# the share of an answer's content words the context must hold (all of one or two, 2 of 3, ...)
CONTENT_SHARE = 2 / 3


def _month(word: str) -> int | None:
    """A month from its name, its abbreviation or a misspelling of it ("Janury"): first 3 letters."""
    prefix = word[:3].lower()
    return _MONTHS.index(prefix) + 1 if prefix in _MONTHS else None


def _day(year: str, month: int | None, day: str) -> date | None:
    try:
        return date(int(year), month, int(day)) if month else None
    except ValueError:
        return None


def named_dates(text: str) -> tuple[set[date], set[tuple[int, int]], set[int]]:
    """(days, (year, month)s, years) a text names, each at the precision it is written with."""
    days: set[date] = set()
    months: set[tuple[int, int]] = set()
    rest = text
    for pattern, order in ((_ISO_DAY, "ymd"), (_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for m in pattern.finditer(rest):
            if order == "ymd":
                y, mo, d = m[1], int(m[2]), m[3]
            elif order == "dmy":
                y, mo, d = m[3], _month(m[2]), m[1]
            else:
                y, mo, d = m[3], _month(m[1]), m[2]
            if (found := _day(y, mo, d)) is not None:
                days.add(found)
        rest = pattern.sub(" ", rest)
    for m in _ISO_MONTH.finditer(rest):
        if 1 <= int(m[2]) <= 12:
            months.add((int(m[1]), int(m[2])))
    for m in _MONTH_YEAR.finditer(rest):
        if (mo := _month(m[1])) is not None:
            months.add((int(m[2]), mo))
    rest = _MONTH_YEAR.sub(lambda m: " " if _month(m[1]) else m[0], _ISO_MONTH.sub(" ", rest))
    years = {int(y) for y in _BARE_YEAR.findall(rest)}
    return days, months, years


def content_words(text: str) -> list[str]:
    """Lower-cased words without stop words, number words as digits, a plural "s" off."""
    out = []
    for token in tokens(text):
        token = _NUMBER_WORDS.get(token, token)
        if token in _STOPWORDS:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]
        if token not in out:
            out.append(token)
    return out


def _period(anchor: date, kind: str, where: str) -> set[date]:
    """The days a relative answer means around its anchor ("the Friday before", "the week of")."""
    if kind in _WEEKDAYS:
        span = range(-7, 0) if where == "before" else range(1, 8) if where == "after" else range(-3, 4)
        return {anchor + timedelta(days=n) for n in span
                if (anchor + timedelta(days=n)).weekday() == _WEEKDAYS.index(kind)}
    start, end = _PERIODS.get((kind, where), (0, 0))
    return {anchor + timedelta(days=n) for n in range(start, end + 1)}


def contains_answer(items: Sequence[str], answer: str) -> bool:
    """Whether the context (its items joined) holds the answer, by the rules above."""
    text = "\n".join(items)
    days, months, years = named_dates(answer)
    if days or months or years:
        held_days, held_months, held_years = named_dates(text)
        held_months |= {(d.year, d.month) for d in held_days}
        held_years |= {y for y, _ in held_months}
        relative = _RELATIVE.search(answer)
        for anchor in days:
            accepted = {anchor}
            if relative:
                accepted |= _period(anchor, relative[1].lower(), relative[2].lower())
            if not accepted & held_days:
                return False
        return all(m in held_months for m in months) and all(y in held_years for y in years)
    wanted = content_words(answer)
    if not wanted:
        return False
    held = set(content_words(text))
    return sum(w in held for w in wanted) >= math.ceil(CONTENT_SHARE * len(wanted) - 1e-9)


# --- Selection against the observations -----------------------------------------------------

def observed_turns(path: Path) -> set[str]:
    """The turn ids the conversation's observations cite (`session_N_observation`: per speaker,
    [fact, turn ids] pairs, the ids one string or a list, separated by commas or semicolons)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cited: set[str] = set()
    for key, by_speaker in data.items():
        if not key.endswith("_observation") or not isinstance(by_speaker, dict):
            continue
        for facts in by_speaker.values():
            for fact in facts:
                ids = fact[1] if len(fact) > 1 else []
                for entry in ids if isinstance(ids, list) else [ids]:
                    cited.update(t for t in re.split(r"[;,\s]+", str(entry)) if t)
    return cited


def turn_spans(session: Session) -> list[tuple[Turn, int, int]]:
    """Each turn with the characters of its line in the session's document."""
    markdown, out, at = session.markdown(), [], 0
    for turn in session.turns:
        start = markdown.index(turn.line, at)
        out.append((turn, start, start + len(turn.line)))
        at = start + len(turn.line)
    return out


def selection_table(sessions: Sequence[Session], cited: set[tuple[str, str]],
                    claim_starts: dict[str, list[int]]) -> dict[str, float | int]:
    """Turns that got a live claim, among the turns an observation cites and among the others;
    `claim_starts` maps a session's filename to where its live claims start, `cited` holds
    (conversation, turn id)."""
    counts = Counter()
    for session in sessions:
        starts = sorted(claim_starts.get(session.filename, ()))
        for turn, start, end in turn_spans(session):
            i = bisect.bisect_left(starts, start)
            has_claim = i < len(starts) and starts[i] < end
            observed = (turn.conversation, turn.dia_id) in cited
            counts[(observed, has_claim)] += 1
            counts["claims"] += bisect.bisect_left(starts, end) - i
    observed_turns_n = counts[(True, True)] + counts[(True, False)]
    other_turns_n = counts[(False, True)] + counts[(False, False)]
    return {"observed_turns": observed_turns_n, "other_turns": other_turns_n,
            "observed_with_claim": round(counts[(True, True)] / max(1, observed_turns_n), 3),
            "other_with_claim": round(counts[(False, True)] / max(1, other_turns_n), 3),
            "claims_per_turn": round(counts["claims"] / max(1, observed_turns_n + other_turns_n), 3)}


# --- the baselines over raw turns -----------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 (k1 1.5, b 0.75) with the IDF that never goes negative,
    log(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's). Written out because the measurement fixes the
    formula, and each library picks its own IDF floor (rank_bm25's epsilon), which moves the
    baseline."""

    def __init__(self, documents: Sequence[str]) -> None:
        self._docs = [Counter(tokens(d)) for d in documents]
        self._lengths = [sum(d.values()) for d in self._docs]
        self._mean = sum(self._lengths) / max(1, len(self._docs))
        frequency = Counter(t for d in self._docs for t in d)
        n = len(self._docs)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def rank(self, query: str) -> list[int]:
        """Document indexes with a positive score, best first (ties by index)."""
        terms = set(tokens(query))
        scores = []
        for i, (doc, length) in enumerate(zip(self._docs, self._lengths)):
            score = 0.0
            for t in terms:
                tf = doc.get(t)
                if tf:
                    norm = tf + BM25_K1 * (1 - BM25_B + BM25_B * length / self._mean)
                    score += self._idf[t] * tf * (BM25_K1 + 1) / norm
            if score > 0:
                scores.append((-score, i))
        return [i for _, i in sorted(scores)]


def rrf(*rankings: Sequence[int], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion (ranks from 1), ties by index."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))


def recall_table(results: dict[str, list[tuple[Question, bool]]], categories: Sequence[int | str] = CATEGORIES
                 ) -> dict[str, dict[str, float | int]]:
    """{method: {"all": recall, "1": …, "2": …, "3": …, "4": …, "questions": n}}, one key per category
    (`str(category)`; NaN for a category no question has)."""
    table = {}
    for method, rows in results.items():
        entry: dict[str, float | int] = {"questions": len(rows),
                                         "all": round(sum(h for _, h in rows) / max(1, len(rows)), 3)}
        for category in categories:
            mine = [h for q, h in rows if q.category == category]
            entry[str(category)] = round(sum(mine) / len(mine), 3) if mine else float("nan")
        table[method] = entry
    return table
