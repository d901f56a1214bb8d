"""askers: a question in the first person asks for its asker's words, unless it speaks to the
one it asks; a passage where only an assistant speaks."""

from __future__ import annotations

import pytest

from pipeline.claims.askers import assistant_only, asks_own_words, persons_words


@pytest.mark.parametrize(("question", "own"), [
    ("How many bikes do I own?", True),
    ("Where did I buy my new tennis racket from?", True),
    ("What was my previous occupation?", True),
    ("I received a piece of jewelry last Saturday from whom?", True),
    ("Can you remind me of the restaurant you recommended?", False),   # asks for the assistant's words
    ("What did your last answer say about my bikes?", False),
    ("When did Melanie paint a sunrise?", False),                     # third person
    ("What is the I/O budget of the billing service?", False),        # "I/O" is no pronoun
    ("My sister adopted a puppy: when?", True),
])
def test_a_question_asks_for_its_askers_own_words(question: str, own: bool) -> None:
    assert asks_own_words(question) is own


def test_only_an_assistant_speaks_where_every_speaker_is_an_assistants_role() -> None:
    assert assistant_only(["assistant"])
    assert assistant_only(["Assistant", "AI"])
    assert not assistant_only(["assistant", "user"])
    assert not assistant_only(["Caroline", "Melanie"])
    assert not assistant_only([])   # no speaker known: not an assistant's


def test_a_persons_words_are_those_said_to_an_assistant() -> None:
    assert persons_words("user", {"user", "assistant"})
    assert persons_words("Dana", {"dana", "ai"})
    assert not persons_words("assistant", {"user", "assistant"})   # the assistant's own
    assert not persons_words("Caroline", {"caroline", "melanie"})  # two people: nobody is asking an assistant
    assert not persons_words("user", set())
