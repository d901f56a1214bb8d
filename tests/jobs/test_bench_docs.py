"""`bench docs`: the benchmark's own junk rules, and its count of them (the import is the normal one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.bench import docs, docs_quality


@pytest.mark.parametrize("name, reason", [
    ("Use", "imperative"), ("If the on-call engineer", "function_word"), ("--destroy-graph: If", "flag"),
    ("${VAR_NAME} or ${VAR_NAME", "markup"), ('<p align="center">', "markup"), ("Note", "imperative"), ("Consequence", "label"),
    ("precise historical queries without", "clause"), ("Graph Memory is built in", "clause"),
    ("Mem0", None), ("Dana Kim", None), ("Door Dash", None)])
def test_junk_rules(name: str, reason: str | None) -> None:
    assert docs_quality.junk_entity(name) == reason


@pytest.mark.parametrize("span, code", [
    ("node_uuid: str) -> list[EntityEdge]: ...", True), ("@abstractmethod async def search(self)", True),
    ("pip install mem0ai", True), ("Mem0 stores memories for agents.", False),
    ("Call `client.add()` with the messages.", False)])
def test_claims_on_code(span: str, code: bool) -> None:
    assert docs_quality.on_code(span) is code


def test_the_junk_table_and_the_baseline_of_capitalised_runs(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Use the Mem0 API. If you want, ask Dana Kim.\n", encoding="utf-8")
    assert docs.text_runs(tmp_path) == ["Dana Kim", "If", "Mem0 API", "Use"]
    table = docs.junk_table(docs.text_runs(tmp_path))
    assert table == {"entities": 4, "junk": 2, "junk_share": 0.5, "reasons": {"function_word": 1, "imperative": 1}}
