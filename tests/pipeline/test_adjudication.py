"""adjudication: how one incoming assertion changes the facts of the entity that owns it.

Spec: Facts (seed lines 1051-1224, "How a claim changes the facts"), Time (1365-1634),
Contradictions (1802-1942).
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from pipeline.facts.adjudication import (
    CONFIDENCE_FLOOR,
    EntityFacts,
    Fact,
    Incoming,
    fact_id_for,
    group_id_for,
    order_key,
)
from pipeline.facts import vocabulary
from pipeline.time import windows
from pipeline.time.windows import NONE, Window

RAVI, DANA, BILLING, SEARCH, HACKATHON = "ent-ravi", "ent-dana", "ent-billing", "ent-search", "ent-hackathon"
PETER, MARIA, BUG_A, BUG_B = "ent-peter", "ent-maria", "ent-bug-a", "ent-bug-b"
NAMES = {RAVI: "Ravi", DANA: "Dana", BILLING: "billing migration", SEARCH: "search team",
         HACKATHON: "Spring Hackathon", PETER: "Peter", MARIA: "Maria", BUG_A: "bug 4711", BUG_B: "bug 4712"}
EVALUATED = datetime(2026, 9, 23, tzinfo=UTC)


def day(y: int, m: int, d: int, h: int = 0) -> datetime:
    return datetime(y, m, d, h, tzinfo=UTC)


def since(t: datetime) -> Window:
    return Window(t, None, "open", "stated")


def relation(aid: str, subject: str, predicate: str, obj: str, *, anchor: str | None = None, window: Window = NONE,
             said: datetime | None = None, change: bool = False, ends: str | None = None, negated: bool = False,
             epoch: int = 0) -> Incoming:
    return Incoming(assertion_id=aid, claim_id=f"claim-{aid}", doc_id=f"doc-{aid}", kind="relation",
                    anchor_id=anchor or subject, subject_id=subject, subject_name=NAMES[subject],
                    statement=f"{NAMES[subject]} {predicate} {NAMES[obj]}", window=window, asserted_at=said,
                    predicate=predicate, object_id=obj, object_name=NAMES[obj], negated=negated, change=change,
                    ends_id=ends, epoch=epoch)


def observation(aid: str, subject: str, statement: str, *, attribute: str | None = None, value: str | None = None,
                window: Window = NONE, said: datetime | None = None, change: bool = False,
                negated: bool = False) -> Incoming:
    return Incoming(assertion_id=aid, claim_id=f"claim-{aid}", doc_id=f"doc-{aid}", kind="observation",
                    anchor_id=subject, subject_id=subject, subject_name=NAMES[subject], statement=statement,
                    window=window, asserted_at=said, attribute=attribute, value=value, change=change,
                    negated=negated)


def cutover(aid: str, value: str, **kw) -> Incoming:
    return observation(aid, BILLING, f"The billing migration cutover is scheduled for {value}.",
                       attribute="cutover date", value=value, **kw)


def adjudicate(anchor: str, *assertions: Incoming, facts: list[Fact] | None = None) -> EntityFacts:
    state = EntityFacts(anchor, list(facts or []))
    for a in assertions:
        state.decide(a)
    return state


def only(state: EntityFacts, label: str) -> Fact:
    [f] = [f for f in state.facts if f.label == label]
    return f


def decisions_on(state: EntityFacts, fact: Fact) -> list:
    return [d for d in state.writes.decisions if d.fact_id == fact.fact_id]


def evidence_on(state: EntityFacts, fact: Fact) -> list[tuple[str, str]]:
    return [(a.claim_id, stance) for fid, a, stance in state.writes.evidence if fid == fact.fact_id]


# --- add, confirm, adjust --------------------------------------------------------------------------

def test_first_assertion_on_an_entity_without_facts_adds_one_fact_with_its_claim_as_support():
    a = relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15, 10))
    state = adjudicate(RAVI, a)
    [fact] = state.writes.new_facts
    assert fact.label == "Ravi works on billing migration"
    assert (fact.subject_id, fact.predicate, fact.object_id, fact.anchor_id) == (RAVI, "works_on", BILLING, RAVI)
    assert fact.window == since(day(2026, 1, 14))
    [d] = state.writes.decisions
    assert (d.fact_id, d.outcome, d.method, d.claim_ids) == (fact.fact_id, "add", "novelty_gate", ("claim-kick",))
    assert evidence_on(state, fact) == [("claim-kick", "supports")]


def test_a_relation_label_never_carries_its_dates():
    state = adjudicate(RAVI, relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14))))
    [fact] = state.facts
    assert "2026" not in fact.label


def test_the_same_relation_again_is_confirmed_not_duplicated():
    first = relation("kick", RAVI, "works_on", BILLING, said=day(2026, 1, 15))
    again = relation("standup", RAVI, "works_on", BILLING, said=day(2026, 3, 1))
    state = adjudicate(RAVI, first, again)
    [fact] = state.facts
    assert [d.outcome for d in decisions_on(state, fact)] == ["add", "noop"]
    assert state.writes.decisions[-1].claim_ids == ("claim-standup",)
    assert evidence_on(state, fact) == [("claim-kick", "supports"), ("claim-standup", "supports")]
    assert fact.window == NONE


def test_a_confirmation_of_a_loaded_fact_changes_nothing_but_its_evidence():
    loaded = Fact(fact_id="f-1", kind="relation", anchor_id=RAVI, subject_id=RAVI,
                  label="Ravi works on billing migration", window=since(day(2026, 1, 14)), predicate="works_on",
                  object_id=BILLING)
    state = adjudicate(RAVI, relation("standup", RAVI, "works_on", BILLING, said=day(2026, 3, 1)), facts=[loaded])
    assert state.writes.new_facts == []
    assert state.writes.updated == {}
    assert [(d.fact_id, d.outcome) for d in state.writes.decisions] == [("f-1", "noop")]
    assert evidence_on(state, loaded) == [("claim-standup", "supports")]
    assert loaded.window == since(day(2026, 1, 14))


def test_the_same_relation_with_stated_dates_adjusts_an_undated_fact():
    undated = relation("standup", RAVI, "works_on", BILLING, said=day(2026, 1, 10))
    dated = relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15, 10))
    state = adjudicate(RAVI, undated, dated)
    [fact] = state.facts
    assert fact.window == since(day(2026, 1, 14))
    d = state.writes.decisions[-1]
    assert (d.fact_id, d.outcome, d.claim_ids) == (fact.fact_id, "update", ("claim-kick",))
    assert d.features["before"] == {"valid_from": None, "valid_until": None, "valid_precision": "unknown",
                                    "value": None}
    assert d.features["after"] == {"valid_from": "2026-01-14T00:00:00+00:00", "valid_until": None,
                                   "valid_precision": "open", "value": None}
    assert state.writes.updated == {fact.fact_id: fact}
    assert evidence_on(state, fact) == [("claim-standup", "supports"), ("claim-kick", "supports")]


def test_a_finer_date_inside_the_facts_window_narrows_it_and_keeps_the_fact():
    # Different dates do not make two assertions different facts when they agree.
    year = relation("a", RAVI, "participated_in", HACKATHON, window=Window(day(2026, 1, 1), day(2027, 1, 1), "year",
                                                                             "stated"))
    exact = relation("b", RAVI, "participated_in", HACKATHON, window=Window(day(2026, 3, 3), day(2026, 3, 4), "day",
                                                                              "stated"))
    state = adjudicate(RAVI, year, exact)
    [fact] = state.facts
    assert fact.window == Window(day(2026, 3, 3), day(2026, 3, 4), "day", "stated")
    assert state.writes.decisions[-1].outcome == "update"


# --- supersession ----------------------------------------------------------------------------------

def test_a_new_leader_closes_the_old_one_at_the_successors_start_not_the_said_on_date():
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, said=day(2026, 1, 20))
    dana = relation("d", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                    said=day(2026, 5, 22))
    state = adjudicate(BILLING, ravi, dana)
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    assert r.anchor_id == d.anchor_id == BILLING
    assert r.window.valid_until == day(2026, 6, 1)
    assert r.superseded_by == d.fact_id
    assert d.window == since(day(2026, 6, 1)) and d.superseded_by is None
    assert r.contradiction_group is None and d.contradiction_group is None
    [closing] = [x for x in decisions_on(state, r) if x.outcome == "update"]
    assert closing.related_id == d.fact_id
    assert closing.features["after"]["valid_until"] == "2026-06-01T00:00:00+00:00"
    assert closing.features["successor"] == d.fact_id
    assert state.writes.updated[r.fact_id] is r


def test_after_supersession_current_returns_only_the_successor_and_history_both():
    state = adjudicate(BILLING,
                       relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, said=day(2026, 1, 20)),
                       relation("d", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                                said=day(2026, 5, 22)))
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    # (which time questions then select each is memory_v1's rule: tests/sql/test_window_match.py)
    assert not windows.holds_at(r.window, EVALUATED) and windows.holds_at(d.window, EVALUATED)
    assert d.window == since(day(2026, 6, 1))
    assert all(f.window.valid_from is None or f.window.valid_from <= EVALUATED for f in (r, d))   # history: both


def test_an_undated_handover_closes_the_old_leader_at_the_documents_day():
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, said=day(2026, 1, 20))
    dana = relation("d", DANA, "other:leads", BILLING, anchor=BILLING, change=True,
                    window=windows.said_on(day(2026, 5, 22, 9)), said=day(2026, 5, 22, 9))
    state = adjudicate(BILLING, ravi, dana)
    r = only(state, "Ravi leads billing migration")
    assert r.window.valid_until == day(2026, 5, 22)
    assert r.superseded_by == only(state, "Dana leads billing migration").fact_id


def test_when_the_successors_stated_start_arrives_the_predecessor_is_reclosed_there():
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, said=day(2026, 1, 20))
    now_dana = relation("d1", DANA, "other:leads", BILLING, anchor=BILLING, change=True,
                        window=windows.said_on(day(2026, 6, 12)), said=day(2026, 6, 12))
    since_june = relation("d2", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                          said=day(2026, 6, 20))
    state = adjudicate(BILLING, ravi, now_dana, since_june)
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    assert d.window == since(day(2026, 6, 1))
    assert r.window.valid_until == day(2026, 6, 1)
    assert r.superseded_by == d.fact_id


def test_a_holder_named_before_the_successor_began_ends_at_that_start():
    # Dana's lead from 1 June is already a fact; a note from 22 May says Ravi leads billing.
    dana = relation("d", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                    said=day(2026, 5, 1))
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, said=day(2026, 5, 22))
    state = adjudicate(BILLING, dana, ravi)
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    assert r.window.valid_until == day(2026, 6, 1)
    assert r.superseded_by == d.fact_id
    assert r.contradiction_group is None and d.contradiction_group is None


def test_an_earlier_holder_learned_after_its_successor_is_closed_at_the_successors_start():
    dana = relation("d", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                    said=day(2026, 6, 12))
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 1, 14)),
                    said=day(2026, 1, 15))
    state = adjudicate(BILLING, dana, ravi)   # e.g. the retro was ingested in an earlier run than the kickoff
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    assert r.contradiction_group is None and d.contradiction_group is None
    assert r.window.valid_until == day(2026, 6, 1)
    assert r.superseded_by == d.fact_id


def test_two_leaders_from_the_same_day_contradict():
    # "two different owners of the same task at the same time" (seed 1819-1820).
    ravi = relation("r", RAVI, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                    said=day(2026, 5, 1))
    dana = relation("d", DANA, "other:leads", BILLING, anchor=BILLING, window=since(day(2026, 6, 1)),
                    said=day(2026, 5, 2))
    state = adjudicate(BILLING, ravi, dana)
    r, d = only(state, "Ravi leads billing migration"), only(state, "Dana leads billing migration")
    assert r.contradiction_group == d.contradiction_group is not None
    assert r.superseded_by is None and d.superseded_by is None


def test_many_valued_relations_to_different_objects_do_not_replace_each_other():
    state = adjudicate(RAVI,
                       relation("a", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14))),
                       relation("b", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1))))
    billing = only(state, "Ravi works on billing migration")
    assert billing.window == since(day(2026, 1, 14)) and billing.superseded_by is None
    assert all(f.contradiction_group is None for f in state.facts)


@pytest.mark.parametrize("predicate", ["assigned_to", "decided_by"])
def test_one_person_holds_many_assignments_and_decisions_without_rivalry(predicate: str):
    # "bug 4711 is assigned to Peter" and "bug 4712 is assigned to Peter": Peter can have many bugs.
    # Both land on one shard here (anchored on Peter) so that a wrong cardinality would show.
    state = adjudicate(PETER,
                       relation("a", BUG_A, predicate, PETER, anchor=PETER, window=since(day(2026, 1, 14))),
                       relation("b", BUG_B, predicate, PETER, anchor=PETER, window=since(day(2026, 6, 1))))
    assert len(state.facts) == 2
    assert all(f.superseded_by is None and f.contradiction_group is None and f.window.valid_until is None
               for f in state.facts)
    assert vocabulary.cardinality(predicate) == "one_per_subject"


def test_a_bug_reassigned_to_someone_else_closes_the_earlier_assignment():
    peter = relation("p", BUG_A, "assigned_to", PETER, window=since(day(2026, 1, 14)))
    maria = relation("m", BUG_A, "assigned_to", MARIA, window=since(day(2026, 6, 1)))
    state = adjudicate(BUG_A, peter, maria)
    p, m = only(state, "bug 4711 is assigned to Peter"), only(state, "bug 4711 is assigned to Maria")
    assert p.superseded_by == m.fact_id and p.window.valid_until == day(2026, 6, 1)
    assert m.window == since(day(2026, 6, 1))


def test_a_move_closes_the_earlier_relation_at_the_moves_date():
    # Kickoff 2026-01-15: "Ravi has been on the billing migration since 2026-01-14."
    # Retro 2026-06-12: "Ravi moved from the billing migration to the search team on 1 June."
    kickoff = relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15, 10))
    retro = relation("retro", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), said=day(2026, 6, 12, 14),
                     change=True, ends=BILLING)
    state = adjudicate(RAVI, kickoff, retro)
    billing, search = only(state, "Ravi works on billing migration"), only(state, "Ravi works on search team")
    assert (billing.window.valid_from, billing.window.valid_until) == (day(2026, 1, 14), day(2026, 6, 1))
    assert billing.superseded_by == search.fact_id
    assert search.window == since(day(2026, 6, 1))
    # The retro's claim is said-on evidence of the billing fact too (the seed's three-clocks table).
    assert evidence_on(state, billing) == [("claim-kick", "supports"), ("claim-retro", "supports")]
    # The worked example, queried on 2026-09-23.
    assert not windows.holds_at(billing.window, EVALUATED) and windows.holds_at(search.window, EVALUATED)
    assert windows.holds_at(billing.window, day(2026, 3, 1))


def test_a_move_that_names_nothing_it_ends_leaves_the_earlier_relation_open():
    state = adjudicate(RAVI,
                       relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14))),
                       relation("also", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), change=True))
    assert only(state, "Ravi works on billing migration").window.valid_until is None


def test_a_move_from_anything_closes_every_earlier_relation_of_that_predicate():
    state = adjudicate(RAVI,
                       relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14))),
                       relation("retro", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), change=True,
                                ends="*"))
    assert only(state, "Ravi works on billing migration").window.valid_until == day(2026, 6, 1)


def test_world_time_order_lets_a_move_close_a_relation_it_arrived_before():
    kickoff = relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15, 10))
    retro = relation("retro", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), said=day(2026, 6, 12, 14),
                     change=True, ends=BILLING)
    state = adjudicate(RAVI, *sorted([retro, kickoff], key=order_key))
    assert only(state, "Ravi works on billing migration").window.valid_until == day(2026, 6, 1)


# --- contradictions --------------------------------------------------------------------------------

def test_two_cutover_dates_for_the_same_cutover_form_a_contradiction_group():
    spec = cutover("spec", "2026-06-08", said=day(2026, 4, 10))
    standup = cutover("standup", "2026-06-15", said=day(2026, 4, 28))
    state = adjudicate(BILLING, spec, standup)
    a = only(state, "The billing migration cutover is scheduled for 2026-06-08.")
    b = only(state, "The billing migration cutover is scheduled for 2026-06-15.")
    assert len(state.writes.new_facts) == 2
    assert a.contradiction_group == b.contradiction_group == group_id_for(a.fact_id, b.fact_id)
    assert state.writes.groups == [a.contradiction_group]
    [on_a] = [d for d in decisions_on(state, a) if d.outcome == "contradict"]
    [on_b] = [d for d in decisions_on(state, b) if d.outcome == "contradict"]
    assert (on_a.related_id, on_b.related_id) == (b.fact_id, a.fact_id)
    assert on_a.features["group_id"] == on_b.features["group_id"] == a.contradiction_group
    # Both sides stay current.
    assert a.window == b.window == NONE and a.superseded_by is None and b.superseded_by is None
    assert windows.holds_at(a.window, EVALUATED) and windows.holds_at(b.window, EVALUATED)


def test_a_third_disagreeing_value_joins_the_same_group():
    state = adjudicate(BILLING, cutover("a", "2026-06-08"), cutover("b", "2026-06-15"), cutover("c", "2026-06-22"))
    groups = {f.contradiction_group for f in state.facts}
    assert len(state.facts) == 3 and len(groups) == 1 and None not in groups
    assert len(state.writes.groups) == 1


def test_a_date_change_supersedes_the_earlier_value_instead_of_contradicting():
    spec = cutover("spec", "2026-06-08", said=day(2026, 4, 10))
    moved = cutover("moved", "2026-06-15", said=day(2026, 4, 20, 15), change=True,
                    window=windows.said_on(day(2026, 4, 20, 15)))
    state = adjudicate(BILLING, spec, moved)
    old = only(state, "The billing migration cutover is scheduled for 2026-06-08.")
    new = only(state, "The billing migration cutover is scheduled for 2026-06-15.")
    assert old.superseded_by == new.fact_id
    assert old.window.valid_until == day(2026, 4, 20)
    assert old.contradiction_group is None and new.contradiction_group is None
    assert state.writes.groups == []
    assert "contradict" not in [d.outcome for d in state.writes.decisions]
    assert not windows.holds_at(old.window, EVALUATED) and windows.holds_at(new.window, EVALUATED)
    assert new.window.valid_from is not None and new.window.precision == "open"


def test_a_month_and_a_day_in_it_are_the_same_cutover():
    state = adjudicate(BILLING, cutover("a", "2026-06"), cutover("b", "2026-06-08"))
    [fact] = state.facts
    assert fact.contradiction_group is None
    assert "contradict" not in [d.outcome for d in state.writes.decisions]
    assert evidence_on(state, fact) == [("claim-a", "supports"), ("claim-b", "supports")]
    # The finer value is kept.
    assert fact.value == "2026-06-08"
    assert fact.label == "The billing migration cutover is scheduled for 2026-06-08."
    assert state.writes.decisions[-1].outcome == "update"


def test_a_coarser_value_after_a_finer_one_only_confirms_it():
    state = adjudicate(BILLING, cutover("a", "2026-06-08"), cutover("b", "2026-06"))
    [fact] = state.facts
    assert fact.value == "2026-06-08"
    assert state.writes.decisions[-1].outcome == "noop"


def test_different_non_date_values_contradict():
    a = observation("a", BILLING, "The billing migration owner team is payments.", attribute="owner team",
                    value="payments")
    b = observation("b", BILLING, "The billing migration owner team is platform.", attribute="owner team",
                    value="platform")
    state = adjudicate(BILLING, a, b)
    assert len(state.facts) == 2
    assert len({f.contradiction_group for f in state.facts} - {None}) == 1


def test_a_denial_of_an_existing_relation_attaches_as_contradicting_evidence():
    approved = relation("yes", RAVI, "other:approved", BILLING, said=day(2026, 3, 1))
    denied = relation("no", RAVI, "other:approved", BILLING, said=day(2026, 3, 5), negated=True)
    state = adjudicate(RAVI, approved, denied)
    [fact] = state.facts
    assert len(state.writes.new_facts) == 1
    assert evidence_on(state, fact) == [("claim-yes", "supports"), ("claim-no", "contradicts")]
    last = state.writes.decisions[-1]
    assert (last.fact_id, last.outcome, last.claim_ids) == (fact.fact_id, "contradict", ("claim-no",))
    assert fact.window == NONE and fact.superseded_by is None and fact.contradiction_group is None


def test_a_denial_with_nothing_to_dispute_never_creates_the_relation_it_denies():
    state = adjudicate(RAVI, relation("no", RAVI, "other:approved", BILLING, negated=True))
    [fact] = state.facts
    assert fact.kind == "observation" and fact.predicate is None and fact.object_id is None
    assert evidence_on(state, fact) == [("claim-no", "supports")]


# --- confidence floor ------------------------------------------------------------------------------

def test_the_default_floor_is_075():
    assert CONFIDENCE_FLOOR == 0.75


def test_a_free_observation_with_wording_below_the_floor_becomes_its_own_fact():
    first = observation("a", DANA, "Dana believes the June date is too tight.")
    second = observation("b", DANA, "Dana believes the June date is risky.")   # 4 of 7 words: 0.57
    state = adjudicate(DANA, first, second)
    assert len(state.facts) == 2
    assert [d.outcome for d in state.writes.decisions] == ["add", "add"]
    assert all(f.contradiction_group is None for f in state.facts)


def test_a_free_observation_with_wording_exactly_at_the_floor_merges():
    first = observation("a", DANA, "Dana prefers weekly releases.")
    second = observation("b", DANA, "Dana prefers weekly.")                     # 3 of 4 words: 0.75
    state = adjudicate(DANA, first, second)
    [fact] = state.facts
    d = state.writes.decisions[-1]
    assert (d.outcome, d.method, d.confidence) == ("noop", "statement_match", 0.75)
    assert evidence_on(state, fact) == [("claim-a", "supports"), ("claim-b", "supports")]


def test_a_free_observation_just_below_the_floor_does_not_merge():
    first = observation("a", DANA, "Dana prefers small weekly billing releases.")
    second = observation("b", DANA, "Dana prefers small weekly search releases.")  # 5 of 7 words: 0.71
    state = adjudicate(DANA, first, second)
    assert len(state.facts) == 2
    assert {f.label for f in state.facts} == {first.statement, second.statement}


def test_a_raised_floor_keeps_a_close_match_apart():
    first = observation("a", DANA, "Dana prefers weekly releases.")
    second = observation("b", DANA, "Dana prefers weekly.")                     # 0.75
    state = EntityFacts(DANA, [], floor=0.8)
    state.decide(first)
    state.decide(second)
    assert len(state.facts) == 2


def test_the_same_wording_about_another_subject_is_another_fact():
    state = adjudicate(DANA, observation("a", DANA, "Prefers weekly releases."),
                       replace(observation("b", RAVI, "Prefers weekly releases."), anchor_id=DANA))
    assert len(state.facts) == 2


# --- distinct events -------------------------------------------------------------------------------

def test_the_same_relation_in_two_disjoint_stated_periods_is_two_facts():
    y2025 = Window(day(2025, 1, 1), day(2026, 1, 1), "year", "stated")
    y2026 = Window(day(2026, 1, 1), day(2027, 1, 1), "year", "stated")
    state = adjudicate(RAVI, relation("a", RAVI, "participated_in", HACKATHON, window=y2025),
                       relation("b", RAVI, "participated_in", HACKATHON, window=y2026))
    assert len(state.facts) == 2
    assert {f.window for f in state.facts} == {y2025, y2026}
    assert [d.outcome for d in state.writes.decisions] == ["add", "add"]


def test_two_wins_with_equal_wording_in_different_years_stay_two_facts():
    # "Two wins of the same tournament in different years are two facts" (seed 1156-1159).
    w2025 = observation("a", RAVI, "Ravi won the Spring Hackathon.",
                        window=Window(day(2025, 4, 1), day(2025, 4, 2), "day", "stated"))
    w2026 = observation("b", RAVI, "Ravi won the Spring Hackathon.",
                        window=Window(day(2026, 4, 1), day(2026, 4, 2), "day", "stated"))
    state = adjudicate(RAVI, w2025, w2026)
    assert len(state.facts) == 2
    assert {f.window.valid_from for f in state.facts} == {day(2025, 4, 1), day(2026, 4, 1)}


# --- order and determinism -------------------------------------------------------------------------

def test_order_key_puts_world_time_before_said_on_time():
    retro = relation("z-retro", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), said=day(2026, 6, 12))
    standup = relation("a-standup", RAVI, "works_on", BILLING, said=day(2026, 6, 5))   # undated: its said-on day
    kickoff = relation("m-kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15))
    assert sorted([standup, retro, kickoff], key=order_key) == [kickoff, retro, standup]


def test_order_key_breaks_ties_by_assertion_id_not_arrival():
    a = cutover("a", "2026-06-08", said=day(2026, 4, 10))
    b = cutover("b", "2026-06-15", said=day(2026, 4, 10))
    assert sorted([b, a], key=order_key) == sorted([a, b], key=order_key) == [a, b]


def _corpus() -> list[Incoming]:
    return [
        relation("kick", RAVI, "works_on", BILLING, window=since(day(2026, 1, 14)), said=day(2026, 1, 15, 10)),
        relation("standup", RAVI, "works_on", BILLING, said=day(2026, 3, 1)),
        relation("retro", RAVI, "works_on", SEARCH, window=since(day(2026, 6, 1)), said=day(2026, 6, 12, 14),
                 change=True, ends=BILLING),
        relation("h25", RAVI, "participated_in", HACKATHON,
                 window=Window(day(2025, 1, 1), day(2026, 1, 1), "year", "stated")),
        relation("h26", RAVI, "participated_in", HACKATHON,
                 window=Window(day(2026, 1, 1), day(2027, 1, 1), "year", "stated")),
        relation("h26d", RAVI, "participated_in", HACKATHON,
                 window=Window(day(2026, 3, 3), day(2026, 3, 4), "day", "stated")),
        observation("oncall", RAVI, "Ravi is the on-call engineer for billing incidents.", said=day(2026, 3, 1)),
        observation("oncall2", RAVI, "Ravi is the on-call engineer for billing.", said=day(2026, 3, 1)),
        observation("c1", RAVI, "Ravi's review day is 2026-06-08.", attribute="review day", value="2026-06-08",
                    said=day(2026, 4, 10)),
        observation("c2", RAVI, "Ravi's review day is 2026-06-15.", attribute="review day", value="2026-06-15",
                    said=day(2026, 4, 10)),
        observation("c3", RAVI, "Ravi's review day is 2026-06.", attribute="review day", value="2026-06",
                    said=day(2026, 4, 10)),
    ]


def _outcome(assertions: list[Incoming]) -> tuple:
    state = adjudicate(RAVI, *sorted(assertions, key=order_key))
    facts = sorted((f.fact_id, f.label, f.window, f.value, f.contradiction_group, f.superseded_by)
                   for f in state.facts)
    decisions = [(d.fact_id, d.outcome, d.related_id) for d in state.writes.decisions]
    return facts, decisions, tuple(state.writes.groups)


def test_shuffled_arrival_gives_the_same_facts_after_world_time_ordering():
    expected = _outcome(_corpus())
    facts = expected[0]
    labels = [f[1] for f in facts]
    assert labels.count("Ravi works on billing migration") == 1
    assert labels.count("Ravi participated in Spring Hackathon") == 2
    assert len(expected[2]) == 1   # one contradiction group, over the review day
    rng = random.Random(20260923)
    for _ in range(8):
        shuffled = _corpus()
        rng.shuffle(shuffled)
        assert _outcome(shuffled) == expected


# --- identity --------------------------------------------------------------------------------------

def test_fact_ids_are_stable_for_the_same_assertion():
    assert fact_id_for("assertion-1") == fact_id_for("assertion-1")
    assert fact_id_for("assertion-1") == fact_id_for("assertion-1", 0)
    assert fact_id_for("assertion-1") != fact_id_for("assertion-2")


def test_a_claim_that_comes_back_after_removal_gets_a_new_fact_id():
    assert fact_id_for("assertion-1", 1) != fact_id_for("assertion-1")
    assert fact_id_for("assertion-1", 1) != fact_id_for("assertion-1", 2)
    assert fact_id_for("assertion-1", 1) == fact_id_for("assertion-1", 1)


def test_rerunning_the_same_assertions_creates_the_same_fact_ids():
    def run(epoch: int = 0) -> list[str]:
        return [f.fact_id for f in adjudicate(RAVI, relation("kick", RAVI, "works_on", BILLING, epoch=epoch),
                                              relation("retro", RAVI, "works_on", SEARCH, epoch=epoch)).facts]

    assert run() == run()
    assert run() == [fact_id_for("kick"), fact_id_for("retro")]
    assert set(run(epoch=1)).isdisjoint(run())


def test_a_contradiction_group_id_does_not_depend_on_which_side_came_first():
    assert group_id_for("f-a", "f-b") == group_id_for("f-b", "f-a")
    assert group_id_for("f-a", "f-b") != group_id_for("f-a", "f-c")
