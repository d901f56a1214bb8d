"""Claims through the real pipeline with the `rules` extractor: stored, grounded, audited, reused."""

from __future__ import annotations

import pytest

from jobs import claims_cli
from tests.support.memory import do_import, rows

pytestmark = pytest.mark.integration


def test_the_example_transcript_yields_the_seeds_claim(example_memory, example_report):
    memory, report = example_memory, example_report
    assert report.counts["failed"] == 0 and report.counts["claims"] > 50

    [(text, span, attributed, asserted, start, end, evidence, precision, vfrom)] = rows(
        memory, "SELECT c.claim_text, c.source_span, c.is_attributed, c.asserted_at::date::text, c.char_start,"
                " c.char_end, c.evidence_spans, c.claim_valid_precision, c.claim_valid_from::date::text"
                " FROM claims c JOIN documents d USING (doc_id) WHERE d.filename = '2026-03-04-standup.md'"
                " AND c.claim_text LIKE '%%cutover%%'")
    assert text == "Ravi said that Dana and Ravi agreed on 2026-03-03 to move the cutover to June 8."
    assert span == "Dana and I agreed yesterday to move the cutover to June 8."
    assert (attributed, asserted, precision, vfrom) == (True, "2026-03-04", "day", "2026-03-03")
    assert evidence[0] == {"char_start": start, "char_end": end}
    # every claim has a vector, an occurrence in its version, and its stages succeeded
    assert rows(memory, "SELECT count(*) = count(embedding) FROM claims")[0][0]
    assert rows(memory, "SELECT count(*) FROM claims c LEFT JOIN claim_occurrences o USING (claim_id, version_id)"
                        " WHERE o.claim_id IS NULL")[0][0] == 0
    assert rows(memory, "SELECT DISTINCT status FROM stage_work WHERE stage IN"
                        " ('extract_claims', 'ground_claims', 'embed_claim')") == [("succeeded",)]
    decisions = dict(rows(memory, "SELECT decision, count(*) FROM extraction_ledger GROUP BY 1"))
    assert decisions.get("selection_drop", 0) > 0 and decisions.get("decontext_edit", 0) > 0
    assert rows(memory, "SELECT count(*) FROM extraction_ledger")[0][0] == report.counts["ledger_rows"]


def test_why_not_answers_from_the_ledger(example_memory):
    memory = example_memory
    answer = claims_cli.why_not(memory, "2026-01-15-kickoff.md", "Ravi leads the billing migration")
    assert "in memory as a claim: Ravi leads the billing migration." in answer
    dropped = claims_cli.why_not(memory, "2026-05-02-billing-spec.html", "Owner")
    assert "selection_drop" in dropped or "no statement there" in dropped
    missing = claims_cli.why_not(memory, "2026-01-15-kickoff.md", "nobody ever wrote this")
    assert "does not occur" in missing
    listing = claims_cli.show_claims(memory, "2026-03-04-standup.md")
    assert "[410:468] Ravi said that Dana and Ravi agreed on 2026-03-03" in listing


def _paragraphs(last: str) -> str:
    body = [f"Section {i}: Ravi reviewed the invoice system for the payments team on Monday. " * 6
            for i in range(4)]
    return "# Billing notes\n\n" + "\n\n".join(body + [last]) + "\n"


# That unchanged passages keep their claims across versions is checked in
# `test_import.py::test_changed_document_gets_a_version_and_reuses_vectors_and_claims_of_unchanged_chunks`,
# on the same imports that check the reuse of their vectors.


def test_a_newer_extractor_reading_a_passage_retires_the_older_claims(memory, ray_local, tmp_path):
    doc = tmp_path / "spec" / "spec.md"
    doc.parent.mkdir()
    doc.write_text(_paragraphs("Dana leads the billing migration."))
    do_import(memory, doc.parent)
    # as if an older extractor had read version 1
    with __import__("psycopg").connect(memory.dsn) as conn:
        conn.execute("UPDATE claims SET extractor = 'rules-0'")
        conn.execute("UPDATE chunks SET extracted_by = 'rules-0'")
    doc.write_text(_paragraphs("Priya leads the billing migration."))
    second = do_import(memory, doc.parent)

    assert second.counts["claims_reused"] == 0  # another extractor's claims are not reused
    status = rows(memory, "SELECT c.is_current_testimony, c.currency_reason, EXISTS (SELECT 1 FROM chunks n"
                          " JOIN versions v ON v.version_id = n.version_id AND v.seq = 2"
                          " WHERE n.text_hash = old.text_hash) FROM claims c JOIN chunks old USING (chunk_id)"
                          " WHERE c.extractor = 'rules-0'")
    # a passage the new extractor read again retires the older claims from it; a passage that
    # changed (and so was not read again) keeps them
    assert any(reread for *_, reread in status) and not all(reread for *_, reread in status)
    for current, reason, reread in status:
        assert (current, reason) == ((False, "reextracted") if reread else (True, None))
