"""The LongMemEval recall measurement's pure parts: question files, documents, the question filter,
the folds, the scoring of a context and the per-type tables (no Ray, no import)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.bench import locomo, longmemeval, recall


def _question(qid: str, kind: str, sessions: list[list[dict]], dates: list[str], answer: object = "red") -> dict:
    """A question in LongMemEval's released format."""
    return {"question_id": qid, "question_type": kind, "question": f"What about {qid}?", "answer": answer,
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": [f"s{i}" for i in range(len(sessions))],
            "haystack_dates": dates, "haystack_sessions": sessions,
            "answer_session_ids": [f"s{i}" for i in range(len(sessions))]}


def _turn(role: str, content: str, has_answer: bool = False) -> dict:
    return {"role": role, "content": content, "has_answer": has_answer}


UPDATE = _question("ku01", "knowledge-update", [
    [_turn("user", "My bike is blue and I ride it to work every single day.", True),
     _turn("assistant", "Riding to work is great.\n\n1. **Helmet:** always wear one.")],
    [_turn("user", "I repainted my bike, it is red now and I love the colour.", True),
     _turn("assistant", "Red bikes are easy to see in traffic.")],
], ["2023/05/30 (Tue) 23:40", "2023/05/02 (Tue) 08:05"])          # dated out of order
PREFERENCE = _question("pref1", "single-session-preference", [[_turn("user", "I like tea.", True)]],
                       ["2023/04/01 (Sat) 12:00"], answer="The user would prefer tea.")
ABSTAINED = _question("ms02_abs", "multi-session", [[_turn("user", "I have two cats at home.")]],
                      ["2023/04/02 (Sun) 12:00"])
MULTI = _question("ms03", "multi-session", [
    [_turn("user", "I have two cats and a dog at home these days.", True)],
    [_turn("user", "We adopted a third cat last weekend, her name is Mia.", True)],
], ["2023/03/01 (Wed) 09:00", "2023/03/20 (Mon) 18:30"], answer=3)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "oracle"
    root.mkdir()
    for name, data in (("2_ku01.json", UPDATE), ("1_pref1.json", PREFERENCE), ("1_ms02_abs.json", ABSTAINED),
                       ("2_ms03.json", MULTI)):
        (root / name).write_text(json.dumps(data))
    return root


def test_every_session_is_a_dated_document_in_the_measured_layout(folder, tmp_path):
    sessions, _, _, files = longmemeval.read_folder(folder)
    assert files == 4
    # file-name order: 1_ms02_abs (q1), 1_pref1 (q2), 2_ku01 (q3), 2_ms03 (q4); every session goes in
    assert [s.filename for s in sessions] == [
        "longmemeval-ms02_abs-session-01.md", "longmemeval-pref1-session-01.md", "longmemeval-ku01-session-01.md",
        "longmemeval-ku01-session-02.md", "longmemeval-ms03-session-01.md", "longmemeval-ms03-session-02.md"]
    update = sessions[2]
    assert update.said_at == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
    assert update.markdown() == (
        "# Chat ku01, session 1\n\nParticipants: user, assistant\n\n"
        "[q3s1:1 | 2023-05-30T23:40:00Z] user: My bike is blue and I ride it to work every single day.\n\n"
        "[q3s1:2 | 2023-05-30T23:40:00Z] assistant: Riding to work is great.\n\n1. **Helmet:** always wear one.\n")
    assert sessions[3].markdown().splitlines()[4] == (
        "[q3s2:1 | 2023-05-02T08:05:00Z] user: I repainted my bike, it is red now and I love the colour.")
    recall.write_documents(sessions, tmp_path / "docs")
    second = tmp_path / "docs" / "longmemeval-ku01-session-02.md"
    assert second.stat().st_mtime == datetime(2023, 5, 2, 8, 5, tzinfo=UTC).timestamp()
    assert second.read_text() == sessions[3].markdown()


def test_preference_questions_and_abstentions_are_not_asked_and_evidence_is_the_has_answer_turns(folder):
    _, questions, gold, _ = longmemeval.read_folder(folder)
    assert [(q.conversation, q.category, q.index, q.evidence, q.answer) for q in questions] == [
        ("ku01", "knowledge-update", 3, ("q3s1:1", "q3s2:1"), "red"),
        ("ms03", "multi-session", 4, ("q4s1:1", "q4s2:1"), "3")]              # an int answer as text
    assert [[t.dia_id for t in g] for g in gold] == [["q3s1:1", "q3s2:1"], ["q4s1:1", "q4s2:1"]]
    assert longmemeval.measured("x", "temporal-reasoning")
    assert not longmemeval.measured("x_abs", "temporal-reasoning")
    assert not longmemeval.measured("x", "single-session-preference")


def test_folds_are_the_question_index_mod_three():
    assert [longmemeval.Question("q", "t", "multi-session", (), index=i).fold for i in range(1, 8)] == \
        ["1", "2", "0", "1", "2", "0", "1"]


def test_dates_are_read_as_utc_and_a_bad_one_is_an_error():
    assert longmemeval.parse_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
    with pytest.raises(ValueError, match="not a LongMemEval date"):
        longmemeval.parse_date("2023-05-30 23:40")


def test_a_context_is_scored_by_locomos_rules_and_tabled_per_type(folder):
    _, questions, gold, _ = longmemeval.read_folder(folder)
    update, multi = questions
    red = gold[0][1]
    context = ["something else entirely, not about any bike or cat", red.line]
    assert locomo.hit(context, gold[0])
    assert locomo.hit(["i repainted my BIKE,   it is red now and I love the colour. Yes."], gold[0])
    assert not locomo.hit(["[q3s2:10 | 2023-05-02T08:05:00Z] user: another turn"], gold[0])
    assert locomo.contains_answer(["The bike is red."], update.answer)
    assert not locomo.contains_answer(["The bike is blue."], update.answer)
    assert locomo.contains_answer(["they have three cats"], multi.answer)
    scored = recall.score(questions, {m: [context, ["nothing at all, said at length here"]] for m in recall.METHODS},
                          gold, budget=2000)
    assert [h for _, h in scored["evidence"][recall.OPERATION]] == [True, False]
    table = locomo.recall_table(scored["evidence"], longmemeval.TYPES)
    row = table[recall.OPERATION]
    assert (row["all"], row["knowledge-update"], row["multi-session"], row["questions"]) == (0.5, 1.0, 0.0, 2)
    assert row["temporal-reasoning"] != row["temporal-reasoning"]            # NaN: no such question
    # the budget cuts the gold turn away when another item fills it
    cut = recall.score(questions, {m: [["x" * 2000, red.line], []] for m in recall.METHODS}, gold, budget=2000)
    assert not cut["evidence"]["vector"][0][1]


def test_folds_report_each_held_out_third_and_their_mean_per_type():
    questions = [longmemeval.Question(f"q{i}", "t", kind, (), "a", index=i)
                 for i, kind in enumerate(["knowledge-update", "multi-session", "knowledge-update"], start=1)]
    hits = [True, False, False]
    scored = {"evidence": {m: list(zip(questions, hits, strict=True)) for m in recall.METHODS}}
    folds = recall.by_fold(scored, ["0", "1", "2"], lambda q: q.fold, longmemeval.TYPES)["evidence"]
    assert folds["1"][recall.OPERATION]["all"] == 1.0 and folds["2"][recall.OPERATION]["all"] == 0.0
    assert folds["mean"][recall.OPERATION]["all"] == round(1 / 3, 3)
    assert folds["mean"][recall.OPERATION]["multi-session"] != folds["mean"][recall.OPERATION]["multi-session"]


def test_a_missing_empty_or_malformed_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no LongMemEval question"):
        longmemeval.read_folder(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no LongMemEval question"):
        longmemeval.read_folder(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    for name, text, reason in (("a.json", "{not json", "no LongMemEval question file"),
                               ("b.json", json.dumps({"question_id": "x"}), "missing question_type"),
                               ("c.json", json.dumps({**MULTI, "haystack_dates": ["2023/03/01 (Wed) 09:00"]}),
                                "1 haystack_dates for 2 haystack_sessions"),
                               ("d.json", json.dumps({**MULTI, "haystack_dates": ["yesterday", "today"]}),
                                "not a LongMemEval date"),
                               ("e.json", json.dumps({**MULTI, "haystack_sessions": [[{"role": "bot", "content": "x"}],
                                                                                      []]}), "role: user|assistant")):
        path = bad / name
        path.write_text(text)
        with pytest.raises(SystemExit, match=reason) as raised:
            longmemeval.read_question(path, 1)
        assert str(path) in str(raised.value)


def test_exactly_one_genre_is_asked_for(tmp_path):
    for locomo_dir, lme_dir in ((None, None), (tmp_path, tmp_path)):
        args = argparse.Namespace(locomo=locomo_dir, longmemeval=lme_dir, keep=None, budget=2000)
        with pytest.raises(SystemExit, match="exactly one of --locomo DIR .* or --longmemeval DIR"):
            recall.bench(args)


def test_the_longmemeval_report_names_folds_leads_and_types():
    methods = recall.METHODS
    row = {"all": 0.5, "questions": 2, **{t: 0.5 for t in longmemeval.TYPES}}
    best = {**row, "all": 0.8, "knowledge-update": 0.9}
    tables = {**{m: row for m in methods}, "bm25": best}
    folds = {measure: {f: tables for f in ("0", "1", "2", "mean")} for measure in ("evidence", "containment")}
    text = recall.render({"genre": "longmemeval", "folder": "oracle", "files": 150, "questions": 129,
                          "sessions": 272, "turns": 3158, "budget": 2000, "by_type": {t: 1 for t in longmemeval.TYPES},
                          "folds_of": {"0": 41, "1": 44, "2": 44}, "import_seconds": 1.0, "ask_seconds": 2.0,
                          "claims_embedded": 3, "chunks_embedded": 4, "folds": folds, "misses": []})
    assert "fold 1 held out: claims_and_sources_context 0.500, best baseline (bm25) 0.800, -0.300" in text
    assert "knowledge-update: -0.400 over bm25, mean of folds (target ≥ +0.10)" in text
    assert "question index i (the q<i> of its markers) mod 3" in text
    assert "LoCoMo" not in text
