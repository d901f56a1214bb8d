"""Whose words a question asks for, where a person talks with an assistant.

A question in the first person ("How many bikes do I own?", "Where did I buy my racket?") asks
what its asker said, did or owns. In a chat between a person and an assistant the asker is the
person, and the assistant's long answers are advice around it: in LongMemEval's chats the
passages that matched such a question best by its words and meaning were most often the middle of
an assistant's answer about the same subject ("Local bike shops ...") rather than the person's
one sentence ("I currently have three bikes"). A question that speaks to the assistant ("the
restaurant you recommended") asks for the assistant's words, and a conversation without an
assistant (two friends, a meeting) is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.claims.segment import speaker_key

# For such a question, what the person said counts three times its fused score, and a chunk in
# which only an assistant speaks half of its own.
OWN_WORDS_WEIGHT = 3.0
ASSISTANT_ONLY_WEIGHT = 0.5

# Speaker names that are an assistant's role, not a person's name (as chat exports write them).
ASSISTANT_ROLES = frozenset({"assistant", "ai", "ai assistant", "bot", "chatbot", "model", "system"})

# "I" standing alone ("I/O" is not the asker), and me, my, mine, myself in either case.
_FIRST_PERSON = re.compile(r"(?<![\w/])I(?:['’](?:m|ve|ll|d))?(?![\w/'’-])|\b[Mm](?:e|y|ine|yself)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


def asks_own_words(question: str) -> bool:
    """Whether `question` is in the first person and not addressed to the one it asks."""
    return bool(_FIRST_PERSON.search(question)) and not _SECOND_PERSON.search(question)


def assistant_only(speakers: Iterable[str]) -> bool:
    """Whether everyone speaking in a passage is an assistant (and someone is)."""
    said = {speaker_key(s) for s in speakers}
    return bool(said) and said <= ASSISTANT_ROLES


def persons_words(speaker: str, chat: Iterable[str]) -> bool:
    """Whether `speaker`'s words in a chat among `chat` (its participants) are a person's, said to
    an assistant."""
    return speaker_key(speaker) not in ASSISTANT_ROLES and bool({speaker_key(s) for s in chat} & ASSISTANT_ROLES)
