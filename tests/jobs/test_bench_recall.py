"""The LoCoMo recall measurement's pure parts: documents, questions, budget, hit rule, baselines."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from jobs.bench import locomo, recall
from tests.support.locomo import CONVERSATION


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    path = tmp_path / "41.json"
    path.write_text(json.dumps(CONVERSATION))
    return path


def test_sessions_render_as_dated_documents_in_the_measured_layout(conversation, tmp_path):
    sessions, questions = locomo.read_conversation(conversation)
    assert [s.filename for s in sessions] == ["locomo-41-session-01.md", "locomo-41-session-02.md"]
    assert sessions[0].said_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert sessions[0].markdown() == (
        "# Conversation 41, session 1\n\nParticipants: John, Maria\n\n"
        "[D1:1 | 2023-05-08T13:56:00Z] John: I finally finished the marathon in Chicago last weekend!\n\n"
        "[D1:2 | 2023-05-08T13:56:00Z] Maria: Wow! [shares a photo: a photo of a medal]\n")
    # categories 1-4 with gold turns only
    assert [(q.text, q.category, q.evidence) for q in questions] == [
        ("Where did John run a marathon?", 4, ("D1:1",)), ("What is the puppy called?", 1, ("D2:1",))]
    recall.write_documents(sessions, tmp_path / "docs")
    written = tmp_path / "docs" / "locomo-41-session-02.md"
    assert written.stat().st_mtime == datetime(2023, 6, 2, 9, 5, tzinfo=timezone.utc).timestamp()


def test_the_context_counts_items_whole_and_cuts_the_last_at_the_budget():
    assert locomo.context(["a" * 1500, "b" * 800, "c" * 10], budget=2000) == ["a" * 1500, "b" * 500]
    assert locomo.context(["a" * 2000, "b"], budget=2000) == ["a" * 2000]


def test_a_hit_is_a_gold_turns_marker_or_its_words_either_way_round(conversation):
    sessions, _ = locomo.read_conversation(conversation)
    marathon, wow = sessions[0].turns
    assert locomo.hit(["… [D1:1 | 2023-05-08T13:56:00Z] John: …"], [marathon])
    assert locomo.hit(["said:  I finally FINISHED the marathon\nin Chicago last weekend! And more."], [marathon])
    assert locomo.hit(["finished the marathon in Chicago"], [marathon])          # an item inside the turn
    assert not locomo.hit(["the marathon"], [marathon])                           # under 25 characters
    assert not locomo.hit(["[D1:10 | 2023-05-08T13:56:00Z] John: another turn entirely"], [marathon])
    assert not locomo.hit(["Wow! [shares a photo: a photo of a medal] and a lot more text"], [marathon])
    assert not locomo.hit(["Wow! that is a long item that says wow"], [locomo.Turn("41", "D9:9", "M", "Wow!",
                                                                                    wow.said_at)])


def test_bm25_follows_the_formula_and_rrf_fuses_by_rank():
    docs = ["the cat sat on the mat", "a dog chased the cat", "nothing to see here"]
    bm25 = locomo.BM25(docs)
    assert bm25.rank("Cat!") == [1, 0]             # equal tf: the shorter document (5 tokens) first
    assert bm25.rank("dog") == [1]
    assert bm25.rank("elephant") == []
    assert locomo.tokens("It's 2023, OK?") == ["it", "s", "2023", "ok"]
    assert locomo.rrf([1, 2, 3], [3, 1]) == [1, 3, 2]


def test_an_answer_is_its_claims_words_then_its_chunks_and_recall_is_per_category(conversation):
    answer = {"evidence": [{"claim_id": "c1", "source_span": "I finally finished the marathon",
                            "claim_text": "John said that …"}],
              "chunks": [{"chunk_id": "k1", "chunk_text": "[D2:1 | …] Maria: My sister adopted a puppy named Biscuit."}]}
    assert recall.answer_items(answer) == ["I finally finished the marathon",
                                           "[D2:1 | …] Maria: My sister adopted a puppy named Biscuit."]
    assert recall.answer_items(answer, "claim_text")[0] == "John said that …"
    ranked = {**answer, "ranking": [{"item_id": "k1"}, {"item_id": "c1"}]}   # the chunk outranks the claim
    assert recall.answer_items(ranked) == ["[D2:1 | …] Maria: My sister adopted a puppy named Biscuit.",
                                           "I finally finished the marathon"]
    _, questions = locomo.read_conversation(conversation)
    table = locomo.recall_table({"m": [(questions[0], True), (questions[1], False)]})
    assert table["m"]["all"] == 0.5 and table["m"]["4"] == 1.0 and table["m"]["1"] == 0.0
    assert table["m"]["questions"] == 2
