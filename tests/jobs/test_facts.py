"""Facts through the real pipeline with the `rules` extractor: the seed's scenarios, written as
documents, imported, then asked in each time mode."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from jobs import facts_cli
from jobs.settings import Settings
from serve.retrieval import facts as facts_retrieval
from sql.read import facts_queries
from sql.write import reconcile
from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def ask(memory: Settings, name: str | None = None, text: str | None = None, *, now: datetime,
        time: facts_retrieval.TimeQuery = facts_retrieval.TimeQuery()) -> dict[str, facts_retrieval.FactResult]:
    async def question(conn: facts_queries.Conn) -> facts_retrieval.FactsAnswer:
        ids = [c[0] for c in await facts_queries.find_entities(conn, name) if c[2] == "T0"] if name else None
        return await facts_retrieval.facts(conn, entity_ids=ids, text=text, time=time, now=now, k=100)
    return {f.label: f for f in facts_queries.read(memory.dsn, question).facts}


def window(f: facts_retrieval.FactResult) -> tuple:
    v = f.validity
    return (v["valid_from"] and v["valid_from"].date().isoformat(),
            v["valid_until"] and v["valid_until"].date().isoformat(), v["valid_precision"])


def test_who_leads_the_billing_migration_now_and_in_march(memory, ray_local, tmp_path):
    """The story of "What is a memory system?": kickoff in January, plan in April, retro in June,
    and a February slide deck added in July."""
    write(tmp_path / "docs", {
        "2026-01-15-kickoff.md": "# Billing migration kickoff\n\nRavi leads the billing migration.\n\n"
                                 "Launch is planned for June.\n",
        "2026-04-20-planning.md": "# Billing migration planning\n\nThe launch moves to October.\n\n"
                                  "The invoice system needs a rewrite.\n",
        "2026-06-12-retro.md": "# Billing migration retro\n\nRavi moved to the search team on 1 June.\n\n"
                               "Dana now leads the billing migration.\n"})
    do_import(memory, tmp_path / "docs", modified_at_from="path")
    august = utc(2026, 8, 15)

    now = ask(memory, "billing migration", now=august)
    assert "Dana leads billing migration" in now and "Ravi leads billing migration" not in now
    assert window(now["Dana leads billing migration"]) == ("2026-06-01", None, "open")
    assert now["Dana leads billing migration"].temporal_match == "confirmed"
    march = ask(memory, "billing migration", now=august, time=facts_retrieval.TimeQuery("at", at=utc(2026, 3, 1)))
    assert "Ravi leads billing migration" in march and "Dana leads billing migration" not in march
    assert window(march["Ravi leads billing migration"])[1] == "2026-06-01"

    launch = ask(memory, text="launch", now=august)
    assert list(launch) == ["The billing migration launch is scheduled for 2026-10."]
    assert window(launch["The billing migration launch is scheduled for 2026-10."])[0] == "2026-04-20"
    history = ask(memory, text="launch", now=august, time=facts_retrieval.TimeQuery("history"))
    june = history["The billing migration launch is scheduled for 2026-06."]
    assert window(june)[1] == "2026-04-20" and june.temporal_match == "possible"

    # July: the February slides arrive. They support Ravi's period; who leads now does not change.
    write(tmp_path / "july", {"2026-02-10-review.md": "# Billing migration review\n\n"
                                                      "Ravi leads the billing migration.\n"})
    do_import(memory, tmp_path / "july", modified_at_from="path")
    now = ask(memory, "billing migration", now=august)
    assert "Dana leads billing migration" in now and "Ravi leads billing migration" not in now
    ever = ask(memory, "billing migration", now=august, time=facts_retrieval.TimeQuery("history"))
    assert ever["Ravi leads billing migration"].evidence_count == 2
    assert window(ever["Ravi leads billing migration"])[1] == "2026-06-01"
    # every change is in the transcript, with the window before and after
    outcomes = rows(memory, "SELECT d.outcome, d.features->'after'->>'valid_until' FROM fact_decisions d"
                            " JOIN facts f USING (fact_id) WHERE f.label = 'Ravi leads billing migration'"
                            " ORDER BY d.decision_id")
    assert outcomes[0][0] == "add" and ("update", "2026-06-01T00:00:00+00:00") in outcomes
    assert outcomes[-1][0] == "noop"


def test_three_clocks_and_the_time_mode_table(memory, ray_local, tmp_path):
    write(tmp_path / "docs", {
        "2026-01-15-kickoff.md": "# Billing migration kickoff\n\nRavi has been on the billing migration since yesterday.\n",
        "2026-06-12-retro.md": "# Billing migration retro\n\nRavi moved from the billing migration to the search "
                               "team on 1 June.\n",
        "2026-02-01-roster.md": "# On-call roster\n\nRavi is the on-call engineer for billing incidents.\n"})
    do_import(memory, tmp_path / "docs", modified_at_from="path")
    evaluated = utc(2026, 9, 23)
    billing, search, oncall = ("Ravi works on billing migration", "Ravi works on search team",
                               "Ravi is the on-call engineer for billing incidents.")

    every = ask(memory, "Ravi", now=evaluated, time=facts_retrieval.TimeQuery("history"))
    assert window(every[billing]) == ("2026-01-14", "2026-06-01", "day")
    assert window(every[search]) == ("2026-06-01", None, "open")
    assert window(every[oncall]) == (None, None, "unknown")

    table = {
        facts_retrieval.TimeQuery("current"): {search: "confirmed", oncall: "possible"},
        facts_retrieval.TimeQuery("at", at=utc(2026, 3, 1)): {billing: "confirmed", oncall: "possible"},
        facts_retrieval.TimeQuery("overlap", start=utc(2026, 5, 15), end=utc(2026, 6, 15)):
            {billing: "confirmed", search: "confirmed", oncall: "possible"},
        facts_retrieval.TimeQuery("history"): {billing: "confirmed", search: "confirmed", oncall: "possible"},
    }
    for query, expected in table.items():
        got = ask(memory, "Ravi", now=evaluated, time=query)
        assert {label: got[label].temporal_match for label in (billing, search, oncall) if label in got} == expected, query
    # said-on time is provenance: the retro (12 June) closed the fact at 1 June, the move's date
    said = rows(memory, "SELECT DISTINCT c.asserted_at::date::text FROM fact_evidence e JOIN facts f USING (fact_id)"
                        " JOIN claims c USING (claim_id) WHERE f.label = %s ORDER BY 1", billing)
    assert said == [("2026-01-15",), ("2026-06-12",)]


def test_contradictions_come_with_every_side_and_evidence_counts_documents(memory, ray_local, tmp_path):
    repeated = "\n\n".join(f"## Item {i}\n\nPriya owns the data validation." for i in range(1, 6))
    write(tmp_path / "docs", {
        "2026-05-02-spec.md": "# Billing migration: cutover specification\n\nThe cutover is scheduled for June 8.\n\n"
                              "Marco signs off for finance.\n",
        "2026-05-20-standup.md": "# Billing migration stand-up\n\nThe cutover is on June 15.\n\n" + repeated + "\n",
        "2026-05-21-meeting.md": "# Billing migration meeting\n\nMarco signs off for finance.\n"})
    do_import(memory, tmp_path / "docs", modified_at_from="path")
    now = utc(2026, 5, 25)

    cutover = ask(memory, text="cutover", now=now)
    june8 = cutover["The billing migration cutover is scheduled for 2026-06-08."]
    june15 = cutover["The billing migration cutover is scheduled for 2026-06-15."]
    assert june8.contradiction_group == june15.contradiction_group is not None
    assert [m["label"] for m in june8.contradiction["co_members"]] == [june15.label]
    assert (june8.contradiction["returned"], june8.contradiction["total"]) == (1, 1)
    # asked for one side only, the other still comes inline
    only = ask(memory, text="2026-06-15", now=now)
    assert only[june15.label].contradiction["co_members"][0]["label"] == june8.label

    owns = ask(memory, "Priya", now=now)["Priya owns data validation"]
    claims = rows(memory, "SELECT count(*) FROM fact_evidence e JOIN facts f USING (fact_id) WHERE f.label = %s",
                  owns.label)[0][0]
    assert (claims, owns.evidence_count) == (5, 1)
    marco = ask(memory, "Marco", now=now)
    assert [f.evidence_count for f in marco.values()] == [2]


def test_living_removal_retracts_and_deletion_recounts(memory, ray_local, tmp_path):
    spec = tmp_path / "living" / "spec.md"
    write(spec.parent, {"spec.md": "# Billing migration spec\n\nRavi owns the schema change.\n\n"
                                   "Priya owns data validation.\n"})
    notes = write(tmp_path / "notes", {"2026-05-01-notes.md": "# Billing migration notes\n\n"
                                                              "Priya owns data validation.\n"})
    do_import(memory, spec.parent, living=True, source_kind="notes")
    # the mode and the source kind are recorded on the document
    assert rows(memory, "SELECT source_kind, versioning_mode FROM documents") == [("notes", "living")]
    do_import(memory, notes, modified_at_from="path")
    now = utc(2026, 7, 1)
    assert ask(memory, "Priya", now=now)["Priya owns data validation"].evidence_count == 2

    spec.write_text("# Billing migration spec\n\nPriya owns data validation.\n", encoding="utf-8")
    report = do_import(memory, spec.parent, living=True, source_kind="notes")
    assert report.facts.superseded_claims == 1 and report.facts.reconcile["retracted"] == 1
    assert "Ravi owns schema change" not in ask(memory, "Ravi", now=now, time=facts_retrieval.TimeQuery("history"))
    [(invalidated, until, outcome)] = rows(
        memory, "SELECT f.invalidated_at IS NOT NULL, f.valid_until, d.outcome FROM facts f JOIN fact_decisions d"
                " USING (fact_id) WHERE f.label = 'Ravi owns schema change' AND d.outcome <> 'add'")
    assert (invalidated, until, outcome) == (True, None, "retracted_source_removal")
    assert rows(memory, "SELECT currency_reason FROM claims WHERE claim_text = 'Ravi owns the schema change.'") == [
        ("version_superseded",)]
    # the spec still says the rest: Priya's fact keeps both documents
    assert ask(memory, "Priya", now=now)["Priya owns data validation"].evidence_count == 2

    answer = facts_cli.delete(memory, "2026-05-01-notes.md")
    assert "1 claims no longer current" in answer
    assert ask(memory, "Priya", now=now)["Priya owns data validation"].evidence_count == 1
    with pytest.raises(reconcile.UnknownDocument):
        with psycopg.connect(memory.dsn, autocommit=True) as conn:
            reconcile.delete_document(conn, rows(memory, "SELECT doc_id::text FROM documents"
                                                         " WHERE filename = '2026-05-01-notes.md'")[0][0])
    # sent again after deletion, it is processed as new testimony
    again = do_import(memory, notes, modified_at_from="path")
    assert again.counts["new_versions"] == 1
    assert ask(memory, "Priya", now=now)["Priya owns data validation"].evidence_count == 2


def test_a_reextraction_that_loses_a_claim_withdraws_the_fact(memory, ray_local, tmp_path):
    write(tmp_path / "docs", {"2026-03-01-notes.md": "# Billing migration notes\n\nMarco signs off for finance.\n"})
    do_import(memory, tmp_path / "docs", modified_at_from="path")
    with psycopg.connect(memory.dsn, autocommit=True) as conn:
        # what a newer extractor does to a claim it no longer finds in unchanged bytes
        conn.execute("WITH gone AS (UPDATE claims SET is_current_testimony = false, currency_reason = 'reextracted'"
                     " RETURNING claim_id, version_id) INSERT INTO testimony_currency_events"
                     " (claim_id, is_current, reason, version_id) SELECT claim_id, false, 'reextracted', version_id"
                     " FROM gone")
        counts = reconcile.reconcile_facts(conn, None)
    assert counts["withdrawn"] == 1 and counts["retracted"] == 0
    [fact] = ask(memory, "Marco", now=utc(2026, 4, 1)).values()
    assert (fact.support, fact.evidence_count, fact.validity["invalidated_at"]) == ("withdrawn", 0, None)


def test_an_interrupted_reconcile_is_finished_by_the_next_import(memory, ray_local, tmp_path):
    write(tmp_path / "a", {"2026-03-01-notes.md": "# Vendor notes\n\nMarco signs off for finance.\n"})
    do_import(memory, tmp_path / "a", modified_at_from="path")
    [marco] = [r[0] for r in rows(memory, "SELECT label FROM facts")]
    with psycopg.connect(memory.dsn, autocommit=True) as conn:
        doc = conn.execute("SELECT doc_id FROM documents").fetchone()[0]
        # a deletion whose process died after it recorded the currency events, before the facts
        # were reconciled (what an older build, or a crash between the two steps, leaves)
        conn.execute("UPDATE documents SET deleted_at = now() WHERE doc_id = %s", (doc,))
        conn.execute("UPDATE versions SET status = 'deleted' WHERE doc_id = %s", (doc,))
        conn.execute("WITH gone AS (UPDATE claims SET is_current_testimony = false, currency_reason = 'version_deleted'"
                     " WHERE doc_id = %s RETURNING claim_id, version_id) INSERT INTO testimony_currency_events"
                     " (claim_id, is_current, reason, version_id) SELECT claim_id, false, 'version_deleted', version_id"
                     " FROM gone", (doc,))
    [(believed, count)] = rows(memory, "SELECT invalidated_at IS NULL, evidence_count FROM facts WHERE label = %s",
                               marco)
    assert (believed, count) == (True, 1)   # not reconciled yet
    write(tmp_path / "b", {"2026-03-02-other.md": "# Other notes\n\nPriya owns data validation.\n"})
    report = do_import(memory, tmp_path / "b", modified_at_from="path")
    assert report.facts.reconcile["retracted"] == 1
    [(believed, count)] = rows(memory, "SELECT invalidated_at IS NULL, evidence_count FROM facts WHERE label = %s",
                               marco)
    assert (believed, count) == (False, 0)
    with psycopg.connect(memory.dsn, autocommit=True) as conn:   # nothing is left for the next one
        assert reconcile.reconcile_facts(conn, None)["recounted"] == 0


def test_one_worker_or_four_give_the_same_facts(example_memory, example_memory_four_workers):
    # 1 worker and batches of 4 against 4 workers and batches of 2 (both imports checked that
    # nothing failed)
    query = ("SELECT f.fact_id, f.label, f.valid_from, f.valid_until, f.valid_precision,"
             " f.evidence_count, f.invalidated_at IS NULL,"
             " (SELECT array_agg(o.label ORDER BY o.label) FROM facts o"
             "  WHERE o.contradiction_group = f.contradiction_group)"
             " FROM facts f ORDER BY f.fact_id")
    found = [rows(example_memory, query), rows(example_memory_four_workers, query)]
    assert len(found[0]) > 30 and any(r[7] for r in found[0])
    assert found[0] == found[1]


def test_a_label_that_is_its_claims_text_takes_the_claims_vector(example_memory):
    """label_relation embeds only labels no supporting claim already says word for word."""
    [(facts, from_claims, same, labelled)] = rows(example_memory, (
        "SELECT count(*), count(*) FILTER (WHERE c.claim_id IS NOT NULL),"
        " count(*) FILTER (WHERE c.embedding = f.embedding), count(f.embedding)"
        " FROM facts f LEFT JOIN LATERAL (SELECT c.claim_id, c.embedding FROM fact_evidence e"
        "  JOIN claims c ON c.claim_id = e.claim_id AND c.claim_text = f.label"
        "  WHERE e.fact_id = f.fact_id AND e.stance = 'supports' ORDER BY c.claim_id LIMIT 1) c ON true"
        " WHERE f.invalidated_at IS NULL"))
    assert facts > 30 and labelled == facts
    assert 0 < from_claims < facts   # observations say their claim; relation labels are templates
    assert same == from_claims
    [(report,)] = rows(example_memory, "SELECT report FROM import_runs ORDER BY started_at DESC LIMIT 1")
    vectors = report["facts"]["vectors"]
    assert vectors["fact_vectors_from_claims"] == from_claims
    assert vectors["fact_vectors"] == facts - from_claims


_EVENT_KINDS = ("launch", "review", "cutover", "offsite", "release")
_SAID = ("The {e} {kind} is scheduled for {d:%Y-%m-%d}.", "The {e} {kind} is on {d:%B} {d.day}, {d.year}.")


@pytest.mark.parametrize(("seed", "imports"), [(1, "one"), (2, "later note first"), (3, "earlier note first")])
def test_two_notes_that_date_a_scheduled_event_differently_give_one_contradiction_with_both_sides(
        memory, ray_local, tmp_path, seed, imports):
    """Generated pairs: each event is dated in two notes, days or months apart, the notes written in
    either order, imported together or in two imports (the later note's first or the earlier's)."""
    from datetime import date, timedelta
    import random

    from jobs.bench.synthetic import _CODE_NAMES

    rng = random.Random(seed)
    first, second, events = {}, {}, []
    for e, kind in zip(rng.sample(_CODE_NAMES, 2), rng.sample(_EVENT_KINDS, 2)):
        noted = date(2025, rng.randint(1, 6), rng.randint(1, 28))
        later_note = noted + timedelta(days=rng.randint(1, 40))
        said = noted + timedelta(days=rng.randint(30, 120))
        other = said + timedelta(days=rng.choice((-14, -7, 7, 21, 60)))
        for notes, day, when in ((first, noted, said), (second, later_note, other)):
            text = rng.choice(_SAID).format(e=e, kind=kind, d=when)
            notes[f"{day:%Y-%m-%d}-{e.lower()}-{kind}.md"] = f"# {e} {kind} notes\n\n{text}\n"
        events.append((f"{e} {kind}", {said.isoformat(), other.isoformat()}))
    if imports == "one":
        do_import(memory, write(tmp_path / "notes", {**first, **second}), modified_at_from="path")
    else:
        batches = [write(tmp_path / "earlier", first), write(tmp_path / "later", second)]
        for folder in batches if imports == "earlier note first" else batches[::-1]:
            do_import(memory, folder, modified_at_from="path")

    for event, dates in events:
        found = ask(memory, text=event, now=utc(2026, 1, 1))
        sides = [f for f in found.values() if event in f.label]
        assert {f.label[-11:-1] for f in sides} == dates, (event, list(found), rows(memory, "SELECT claim_text FROM claims"))
        group = {f.contradiction_group for f in sides}
        assert len(group) == 1 and None not in group, (event, [(f.label, f.contradiction_group) for f in sides])
        for f in sides:
            assert [m["label"] for m in f.contradiction["co_members"]] == [o.label for o in sides if o is not f]
