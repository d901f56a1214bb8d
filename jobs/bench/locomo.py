"""The LoCoMo evidence-recall measurement: sessions as documents, questions, the answer context cut
at a character budget, the hit rule, and the baselines over raw turns (vector, BM25, RRF).

Exactly the procedure of `shared/eval/locomo/README.md`, so that figures are comparable across
runs and with the figures measured elsewhere. Pure: no database, no model (the vector baseline
takes the vectors as arguments).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
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
        head = (f"# Conversation {self.conversation}, session {self.number}\n\n"
                f"Participants: {', '.join(self.speakers)}\n")
        return head + "".join(f"\n{t.line}\n" for t in self.turns)


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: tuple[str, ...]   # gold turn ids


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
    questions = [Question(conversation, q["question"], q["category"], tuple(q["evidence"]))
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


def recall_table(results: dict[str, list[tuple[Question, bool]]]) -> dict[str, dict[str, float | int]]:
    """{method: {"all": recall, "1": …, "2": …, "3": …, "4": …, "questions": n}}."""
    table = {}
    for method, rows in results.items():
        entry: dict[str, float | int] = {"questions": len(rows),
                                         "all": round(sum(h for _, h in rows) / max(1, len(rows)), 3)}
        for category in CATEGORIES:
            mine = [h for q, h in rows if q.category == category]
            entry[str(category)] = round(sum(mine) / len(mine), 3) if mine else float("nan")
        table[method] = entry
    return table
