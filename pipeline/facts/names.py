"""Entity mentions: cleaning a noun phrase into a name, its resolution key, and what is not an entity.

Bare head nouns ("the system", "the cutover") are not entities unless something pins their
referent; the document's topic (read from its title) is what pins a bare subject of a dated
statement ("The cutover is on June 15" in the billing migration notes is about the billing
migration).
"""

from __future__ import annotations

import re
import unicodedata

DETERMINERS = frozenset({"the", "a", "an", "our", "their", "his", "her", "its", "this", "that", "these",
                         "those", "my", "your"})
# Adjectives that do not pin a referent: "the new system" is still just "the system".
GENERIC_MODIFIERS = frozenset({"new", "old", "first", "current", "whole", "final", "next", "last",
                               "same", "other", "entire", "main", "overall"})
PRONOUNS = frozenset({"he", "she", "they", "it", "we", "i", "you", "this", "that", "these", "those",
                      "someone", "everyone", "nobody", "there", "one"})
# Words that name the kind of document, not what it is about.
_GENRE = frozenset({"kickoff", "kick-off", "stand-up", "standup", "notes", "note", "review", "retrospective",
                    "retro", "weekly", "specification", "spec", "plan", "planning", "meeting", "minutes",
                    "sync", "update", "status", "report", "roster", "summary", "agenda", "memo", "log",
                    "transcript", "slides", "deck", "draft", "doc", "document"})
_DATE_WORDS = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}\s+[A-Z][a-z]+\s+\d{4}|[A-Z][a-z]+\s+\d{1,2},?\s+\d{4}|"
    r"[A-Z][a-z]+\s+\d{4}|\d{4}|—|–)\b")
_SPACE = re.compile(r"\s+")
_KEY_DROP = re.compile(r"[^\w\s&+-]")


def clean(phrase: str) -> str:
    """A mention as a name: determiners off the front, punctuation off the ends, one space."""
    words = _SPACE.sub(" ", phrase.strip(" \t\n.,;:!?\"'()[]")).split(" ")
    while len(words) > 1 and words[0].lower() in DETERMINERS:
        words = words[1:]
    name = " ".join(words)
    if name.endswith("'s") or name.endswith("’s"):
        name = name[:-2]
    return name.strip()


def key(name: str) -> str:
    """The resolution key: case-folded, accents and punctuation off, one space."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    return _SPACE.sub(" ", _KEY_DROP.sub(" ", text)).strip()


def is_pronoun(phrase: str) -> bool:
    return key(phrase) in PRONOUNS


def is_bare_head(phrase: str) -> bool:
    """A single lower-case common noun once determiners and generic adjectives are gone."""
    words = [w for w in _SPACE.split(phrase.strip()) if w]
    while words and words[0].lower() in DETERMINERS | GENERIC_MODIFIERS:
        words = words[1:]
    return len(words) == 1 and words[0][:1].islower()


def is_entity(phrase: str) -> bool:
    """Could this noun phrase name an entity at all (not a pronoun, not a bare head noun)?"""
    name = clean(phrase)
    return bool(name) and not is_pronoun(name) and not is_bare_head(phrase) and any(ch.isalpha() for ch in name)


_CAPITALISED_RUN = re.compile(r"(?<![\w'’])[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*")
# Words that open a question or a sentence capitalised, never as a name.
_OPENERS = frozenset({"when", "what", "who", "whom", "whose", "where", "why", "how", "which", "did", "do", "does",
                      "is", "are", "was", "were", "has", "have", "had", "can", "could", "would", "will", "should",
                      "in", "on", "at", "after", "before", "during", "since", "according", "tell", "list", "name"})


def named_in(question: str) -> list[str]:
    """The names a question uses: runs of capitalised words, possessives off, without a question
    word that opens the sentence ("When did Melanie paint a sunrise?" → ["Melanie"])."""
    found = []
    for match in _CAPITALISED_RUN.finditer(question):
        words = match.group(0).split()
        if match.start() == len(question) - len(question.lstrip()) and words[0].lower() in _OPENERS:
            words = words[1:]
        name = clean(" ".join(words))
        if name and is_entity(name) and name not in found:
            found.append(name)
    return found


def first_line(text: str | None) -> str | None:
    """A document's first line of text: its title or first heading, markup and comments off."""
    for line in (text or "").splitlines():
        line = line.strip().lstrip("#").strip()
        if line and not line.startswith("<!--"):
            return line
    return None


def topic_from_title(title: str | None) -> str | None:
    """What a document is about, from its title: "Billing migration: cutover specification" and
    "Billing migration stand-up notes, 20 May 2026" are both about "Billing migration"."""
    if not title:
        return None
    head = title.split(":", 1)[0]
    head = _DATE_WORDS.sub(" ", head).replace(",", " ")
    words = [w for w in _SPACE.split(head.strip()) if w]
    while words and words[-1].lower() in _GENRE:
        words.pop()
    while words and words[0].lower() in DETERMINERS:
        words = words[1:]
    topic = " ".join(words).strip(" -")
    if not topic or not is_entity(topic) or len(words) > 6:
        return None
    if len(words) > 1 and all(w[:1].islower() for w in words[1:]) and not words[0][1:2].isupper():
        topic = topic[:1].lower() + topic[1:]  # a sentence-case title: "Billing migration" is a common noun phrase
    return topic
