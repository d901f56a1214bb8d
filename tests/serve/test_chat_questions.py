"""A question in the first person, over a memory of chats between a person and an assistant: what
the person said (their claims, the chunks they speak in) outranks the assistant's long answers
around it (`pipeline/claims/askers.py`),
unless the question speaks to the assistant; a conversation between two people is ranked as
before. In process (FastAPI app, real embedder, no Ray Serve)."""

from __future__ import annotations

import pytest

from tests.support import apps
from tests.support.memory import do_import, dsn_for, write

pytestmark = pytest.mark.integration

# The assistant's answer about bikes spans several chunks; the person's one sentence about their
# own bikes sits between two of its parts.
_ADVICE = "\n\n".join(
    f"{n}. **{topic}:** Bike {topic.lower()} matters for every bike: a bike shop can check your bike's "
    f"{topic.lower()}, and a bike club will know which bike {topic.lower()} suits your bikes best."
    for n, topic in enumerate(["Frames", "Wheels", "Brakes", "Gears", "Tyres", "Saddles", "Locks", "Racks",
                               "Lights", "Chains", "Pedals", "Helmets"], start=1))
CHAT = ("# Chat 7, session 1\n\nParticipants: user, assistant\n\n"
        "[q7s1:1 | 2023-05-21T19:50:00Z] user: What should I know about looking after bikes?\n\n"
        f"[q7s1:2 | 2023-05-21T19:50:00Z] assistant: Here is what matters for bikes:\n\n{_ADVICE}\n\n"
        "[q7s1:3 | 2023-05-21T19:51:00Z] user: Thanks. By the way, I currently own three bikes, "
        "a road bike, a gravel bike and a folding one.\n\n"
        f"[q7s1:4 | 2023-05-21T19:51:00Z] assistant: Then more about bikes:\n\n{_ADVICE}\n")
FRIENDS = ("# Ride, session 1\n\nParticipants: Caroline, Melanie\n\n"
           "[D1:1 | 2023-05-08T13:56:00Z] Caroline: I bought two new bikes for the club rides.\n\n"
           "[D1:2 | 2023-05-08T13:57:00Z] Melanie: Bikes for the club? Which bike shop sold them?\n")


@pytest.fixture(scope="module")
def api(pg_admin_dsn, template_db, ray_local, tmp_path_factory, embed):
    from jobs.settings import load_settings
    from sql.store import embedded

    root = tmp_path_factory.mktemp("chat-questions")
    embedded.ensure_database(pg_admin_dsn, "cm_chat_questions", template=template_db)
    settings = load_settings({"CORPUSMEM_CHUNK_TARGET_CHARS": "400"}, home=root / "home",
                             dsn=dsn_for(pg_admin_dsn, "cm_chat_questions"), object_store=str(root / "objects"))
    report = do_import(settings, write(root / "docs", {"2023-05-21-chat.md": CHAT, "2023-05-08-ride.md": FRIENDS}),
                       modified_at_from="path")
    assert report.counts["failed"] == 0
    yield from apps.client(settings, embed)


def ranked_chunks(api, query: str) -> list[dict]:
    response = api.post("/operations/claims_and_sources_context", json={"query": query})
    assert response.status_code == 200, response.text
    body = response.json()
    chunks = {c["chunk_id"]: c for c in body["chunks"]}
    ranked = [{**chunks[r["item_id"]], **r} for r in body["ranking"] if r["item_id"] in chunks]
    assert [c["chunk_id"] for c in ranked] == [c["chunk_id"] for c in body["chunks"]], "the chunks follow the ranking"
    return ranked


def test_the_person_s_own_words_outrank_the_assistant_s_answer_for_a_first_person_question(api):
    ranked = ranked_chunks(api, "How many bikes do I own?")
    own = next(n for n, c in enumerate(ranked) if "I currently own three bikes" in c["chunk_text"])
    demoted = [n for n, c in enumerate(ranked) if "assistant_only" in c["signals"]]
    assert demoted, "some chunks hold only the assistant's answer"
    # fused alone, four parts of the answer came before it; now only a chunk where the person speaks does
    assert all("user:" in c["chunk_text"] for c in ranked[:own]) and own < min(demoted)
    for n in demoted:   # a chunk in the middle of the answer: no turn opens in it, the one before is the assistant's
        assert "user:" not in ranked[n]["chunk_text"]
        assert ranked[n]["signals"]["assistant_only"] < 0
        assert ranked[n]["score"] == pytest.approx(sum(ranked[n]["signals"].values()))


def test_what_the_person_said_comes_first_among_the_claims(api):
    response = api.post("/operations/claims_and_sources_context", json={"query": "How many bikes do I own?"})
    body = response.json()
    ranked = [r for r in body["ranking"] if r["item_id"] in {e["claim_id"] for e in body["evidence"]}]
    assert [r["item_id"] for r in ranked] == [e["claim_id"] for e in body["evidence"]], "the claims follow the ranking"
    first = next(e for e in body["evidence"] if e["claim_id"] == ranked[0]["item_id"])
    assert "three bikes" in first["source_span"] and ranked[0]["signals"]["own_words"] > 0
    # the person's claims are their turns' (q7s1:1 and q7s1:3), never the assistant's advice
    own = [e for e in body["evidence"] if "own_words" in next(r for r in ranked if r["item_id"] == e["claim_id"])["signals"]]
    assert own and all(e["source_span"] in CHAT.split("assistant:")[0] + CHAT.split("[q7s1:3")[1].split("[q7s1:4")[0]
                       for e in own)


def test_a_question_to_the_assistant_and_a_chat_between_two_people_rank_as_fused(api):
    for query in ("Which bike shop did you say can check my bike's brakes?", "Which bike shop sold Caroline her bikes?"):
        assert not [c for c in ranked_chunks(api, query) if "assistant_only" in c["signals"]], query
        body = api.post("/operations/claims_and_sources_context", json={"query": query}).json()
        assert not [r for r in body["ranking"] if "own_words" in r["signals"]], query
    # in the first person too, a conversation without an assistant keeps its place
    ranked = ranked_chunks(api, "Did I buy two new bikes for the club rides?")
    friends = [c for c in ranked if "Caroline:" in c["chunk_text"]]
    assert friends and not [c for c in friends if "assistant_only" in c["signals"]]
    body = api.post("/operations/claims_and_sources_context", json={"query": "Did I buy two new bikes for the club rides?"}).json()
    caroline = {e["claim_id"] for e in body["evidence"] if "club" in e["source_span"]}
    assert caroline and not [r for r in body["ranking"] if r["item_id"] in caroline and "own_words" in r["signals"]]
