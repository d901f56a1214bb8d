"""`bench docs`: the benchmark's own junk rules, and its count of them (the import is the normal one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.bench import docs, docs_quality


@pytest.mark.parametrize("name, reason", [
    ("Use", "imperative"), ("If the on-call engineer", "function_word"), ("--destroy-graph: If", "flag"),
    ("${VAR_NAME} or ${VAR_NAME", "markup"), ('<p align="center">', "markup"), ("Note", "imperative"), ("Consequence", "label"),
    ("precise historical queries without", "clause"), ("Graph Memory is built in", "clause"),
    ("Mem0", None), ("Dana Kim", None), ("Door Dash", None), ("Node.js", None), ("config.js", "markup")])
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


def test_a_readers_names_resolve_as_resolve_entity_finds_them(example_memory, tmp_path: Path) -> None:
    listed = tmp_path / "names.txt"
    listed.write_text("# names noted while reading\nDana\nRavi\n\nRavi  # again\nBilling migraton\nNobody Xyzzy\n",
                      encoding="utf-8")
    assert docs.names_listed(listed) == ["Dana", "Ravi", "Billing migraton", "Nobody Xyzzy"]
    tiers = docs.resolved(example_memory.dsn, docs.names_listed(listed))
    assert tiers["Dana"] == tiers["Ravi"] == "T0" and tiers["Nobody Xyzzy"] is None
    assert tiers["Billing migraton"] in ("T1", "T2")   # misspelt: found by a similar spelling only
    assert docs.names_table(tiers) == {"listed": 4, "exact": 2, "exact_share": 0.5,
                                       "similar_only": ["Billing migraton"], "unknown": ["Nobody Xyzzy"]}
