"""The nine claims the recorded normalization answers (`tests/fixtures/llm/normalize_*.json`) were
written for, and those answers: the rule-based and the LLM normalizer's tests read the same ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.support.paths import FIXTURES

SAID = datetime(2026, 6, 12, 14, tzinfo=UTC)
TOPIC = "billing migration"
# (claim text, is attributed), in the order of the answers' labels C1..C9.
TEXTS = [
    ("Ravi moved from the billing migration to the search team on 1 June.", False),
    ("The cutover is on June 15.", False),
    ("Dana believes the June date is too tight.", True),
    ("Priya and Marco work on the invoice rewrite.", False),
    ("Dana Kim sponsors the invoice rewrite.", False),
    ("He reviews every schema change.", False),
    ("Ravi is the on-call engineer for billing incidents.", False),
    ("The launch moves to October.", False),
    ("Northwind Health employs Kenji as a data engineer.", False),
]


def recorded(name: str) -> dict:
    """The recorded chat completion `normalize_<name>.json`."""
    return json.loads((FIXTURES / "llm" / f"normalize_{name}.json").read_text(encoding="utf-8"))


def content(name: str) -> str:
    """The message content of the recorded chat completion `normalize_<name>.json`."""
    return recorded(name)["choices"][0]["message"]["content"]
