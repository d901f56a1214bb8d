"""The LongMemEval evidence-recall measurement's own parts: its question files read into the recall
bench's sessions, turns and questions, every session as a dated Markdown document, the measured
questions and the folds.

Exactly the procedure of `shared/eval/longmemeval/README.md`: every session of every question goes
into one memory, each turn rendered `[q<i>s<k>:<t> | 2023-05-21T19:50:00Z] user: text` (the
question's index in file-name order, the session's within the question and the turn's within the
session, each from 1). The context budget, the hit rule, answer containment and the baselines are
LoCoMo's (`jobs.bench.locomo`), applied unchanged. Pure: no database, no model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from jobs.bench import locomo

# The question types in the order they are reported; single-session-preference is not measured
# (its answers are rubrics), nor is any abstention (a question id ending in `_abs`).
TYPES = ("temporal-reasoning", "multi-session", "knowledge-update", "single-session-user",
         "single-session-assistant")
UNMEASURED_TYPE = "single-session-preference"
ABSTENTION = "_abs"
FOLDS = 3
PARTICIPANTS = ("user", "assistant")
_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2}) \(\w{3}\) (\d{2}):(\d{2})")
_FIELDS = ("question_id", "question_type", "question", "answer", "haystack_dates", "haystack_sessions")


@dataclass(frozen=True)
class Question(locomo.Question):
    """A measured question; `conversation` is its question id, `category` its type, `evidence` the
    markers of its `has_answer` turns and `index` the `i` of those markers."""

    index: int = 0

    @property
    def fold(self) -> str:
        """The fold that holds it out: its index mod 3, a rule that needs no random draw."""
        return str(self.index % FOLDS)


@dataclass(frozen=True)
class Session:
    question_id: str
    index: int                   # the question's
    number: int                  # the session's within the question, from 1
    said_at: datetime
    turns: tuple[locomo.Turn, ...]

    @property
    def filename(self) -> str:
        return f"longmemeval-{self.question_id}-session-{self.number:02d}.md"

    def markdown(self) -> str:
        return locomo.session_markdown(f"Chat {self.question_id}, session {self.number}", PARTICIPANTS, self.turns)


def parse_date(text: str) -> datetime:
    """`2023/05/30 (Tue) 23:40` as UTC (the set's dates name no zone)."""
    m = _DATE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"not a LongMemEval date (2023/05/30 (Tue) 23:40): {text!r}")
    year, month, day, hour, minute = map(int, m.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def measured(question_id: str, question_type: str) -> bool:
    """Every question but the preference ones (rubrics) and the abstentions."""
    return question_type != UNMEASURED_TYPE and not question_id.endswith(ABSTENTION)


def read_question(path: Path, index: int) -> tuple[list[Session], Question | None, list[locomo.Turn]]:
    """The sessions of one question file, the question when it is measured, and its evidence turns."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        missing = [f for f in _FIELDS if f not in data] if isinstance(data, dict) else list(_FIELDS)
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        dates, sessions_in = data["haystack_dates"], data["haystack_sessions"]
        if len(dates) != len(sessions_in):
            raise ValueError(f"{len(dates)} haystack_dates for {len(sessions_in)} haystack_sessions")
        qid = str(data["question_id"])
        # the day the question is asked, which its "last Saturday" is read against
        asked_at = parse_date(str(data["question_date"])) if "question_date" in data else None
        sessions, gold = [], []
        for number, (stamp, turns_in) in enumerate(zip(dates, sessions_in), start=1):
            said_at = parse_date(stamp)
            turns = []
            for t, turn in enumerate(turns_in, start=1):
                if turn.get("role") not in PARTICIPANTS or not isinstance(turn.get("content"), str):
                    raise ValueError(f"session {number}, turn {t}: a turn is {{role: user|assistant, content: text}}")
                turns.append(locomo.Turn(qid, f"q{index}s{number}:{t}", turn["role"], turn["content"], said_at))
                if turn.get("has_answer"):
                    gold.append(turns[-1])
            sessions.append(Session(qid, index, number, said_at, tuple(turns)))
    except (ValueError, TypeError, AttributeError, KeyError) as exc:   # JSONDecodeError is a ValueError
        raise SystemExit(f"corpusmem bench recall: {path} is no LongMemEval question file: {exc}") from exc
    if not measured(qid, str(data["question_type"])):
        return sessions, None, gold
    question = Question(qid, str(data["question"]), str(data["question_type"]),
                        tuple(t.dia_id for t in gold), str(data["answer"]), index=index,
                        asked_at=asked_at)
    return sessions, question, gold


def read_folder(folder: Path) -> tuple[list[Session], list[Question], list[list[locomo.Turn]], int]:
    """Every question file's sessions (in file-name order), the measured questions, each one's
    evidence turns, and how many questions the folder holds."""
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise SystemExit(f"corpusmem bench recall: no LongMemEval question (*.json) in {folder}")
    sessions: list[Session] = []
    questions: list[Question] = []
    gold: list[list[locomo.Turn]] = []
    for index, path in enumerate(files, start=1):
        mine, question, evidence = read_question(path, index)
        sessions += mine
        if question is not None:
            questions.append(question)
            gold.append(evidence)
    return sessions, questions, gold, len(files)
