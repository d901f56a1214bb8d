"""The analysis API over the example memory: each frame agrees with the memory it reads, a deleted
document's rows are absent from every frame, and the HTML report has its sections and images."""

from __future__ import annotations

import base64
import io
import re
from datetime import datetime, timezone

import matplotlib.image
import psycopg
import pytest

from jobs import analysis, plots, report
from jobs.cli import main as cli
from sql.write import reconcile

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def memory(example_memory) -> analysis.Memory:
    return analysis.Memory(example_memory.dsn, example_memory)


def _one(dsn: str, sql: str):
    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchone()[0]


def test_the_import_frames_agree_with_the_run(memory, example_report):
    runs = memory.runs()
    assert len(runs) == 1 and runs.iloc[0]["run_id"] == example_report.run_id
    assert runs.iloc[0]["documents_seen"] == 11 and runs.iloc[0]["failed"] == 0
    stages = memory.stage_seconds()
    # `ocr` ran too (on by default), with nothing to read in this corpus
    assert list(stages["stage"]) == ["read", "ingest", "convert", "ocr", "structure", "chunk", "extract", "embed",
                                     "write"]
    assert (stages["seconds"] > 0).all() and (stages["documents_per_second"] > 0).all()
    assert memory.failures().empty and memory.failure_reasons().empty
    # the rules extractor calls no model: the embedder's seconds are the only cost
    assert list(memory.costs()["stage"]) == ["embed"]


def test_documents_claims_and_the_ledger(memory):
    docs = memory.documents()
    assert len(docs) == 11
    assert set(docs.loc[docs["said_on"].isna(), "title"]) == {"oncall-roster"}   # no date in its path
    assert memory.documents_over_time()["documents"].sum() == 10                 # undated left out
    assert memory.documents_over_time("D")["documents"].sum() == 10
    per_doc = memory.claims_per_document()
    assert per_doc["claims"].sum() == _one(memory.dsn, "SELECT count(*) FROM memory_v1.claims_live")
    assert list(per_doc["claims"]) == sorted(per_doc["claims"], reverse=True)
    drops = memory.drop_reasons()
    assert drops["rows"].sum() == _one(memory.dsn, "SELECT count(*) FROM extraction_ledger")
    assert "selection_drop" in set(drops["decision"])


def test_an_entitys_facts_their_fates_and_what_was_believed(memory):
    now = datetime(2026, 7, 1, tzinfo=timezone.utc)
    facts = memory.entity_facts("Ravi", now=now)
    labels = dict(zip(facts["label"], facts["status"]))
    assert labels["Ravi works on search team"] == "current"          # from 2026-06-01, open
    assert labels["Ravi works on billing migration"] == "past"       # until 2026-06-01
    assert facts.set_index("label").loc["Ravi works on billing migration", "superseded"]
    assert "possible" in labels.values()
    believed = memory.believed(on=datetime.now(timezone.utc), about="2026-03-01")
    assert "Ravi works on billing migration" in set(believed.loc[believed["match"] == "true", "label"])
    assert "Ravi works on search team" not in set(believed["label"])
    assert memory.believed(on="2020-01-01", about="2026-03-01").empty   # nothing was imported yet
    with pytest.raises(analysis.AmbiguousEntity, match="0 entities"):
        memory.entity("Nobody Atall")
    assert memory.entity(memory.entity("Ravi")[0]) == memory.entity("Ravi")


def test_evidence_contradictions_names_and_the_graph(memory):
    evidence = memory.fact_evidence()
    assert len(evidence) == _one(memory.dsn, "SELECT count(*) FROM memory_v1.facts_current")
    assert (evidence["documents"] <= evidence["evidence"]).all()
    assert memory.evidence_distribution()["facts"].sum() == len(evidence)
    assert set(memory.contradictions().columns) >= {"contradiction_group", "label", "evidence", "supported_by"}
    assert set(memory.ambiguous_names().columns) == {"alias", "entities", "names"}
    assert len(memory.merge_proposals()) == _one(memory.dsn, "SELECT count(*) FROM merge_proposals")
    around = memory.neighbourhood("Ravi")
    assert ("Ravi", "works_on", "search team", True) in set(
        zip(around["subject"], around["predicate"], around["object"], around["current"]))


def test_sql_goes_through_the_query_space(memory):
    top = memory.sql("SELECT fact_label, evidence_count FROM memory_v1.facts_current "
                     "ORDER BY evidence_count DESC, fact_label LIMIT 3")
    assert list(top.columns) == ["fact_label", "evidence_count"] and len(top) == 3
    with pytest.raises(analysis.QueryRefused) as refused:
        memory.sql("SELECT * FROM documents")
    assert refused.value.code == "relation_not_allowed"
    entity_id, _ = memory.entity("Ravi")
    assert "Ravi works on search team" in set(memory.saved("examples.relation_current", entity_id)["fact_label"])


def test_a_deleted_documents_rows_are_absent_from_every_frame(example_memory_copy):
    memory = analysis.Memory(example_memory_copy.dsn, example_memory_copy)
    docs = memory.documents()
    gone = docs[docs["title"] == "2026-01-15-kickoff"].iloc[0]
    only_there = set(memory.single_source_claims().query("title == @gone.title")["claim_text"])
    assert only_there
    with psycopg.connect(memory.dsn, autocommit=True) as conn:
        reconcile.delete_document(conn, gone["doc_id"])
    assert gone["doc_id"] not in set(memory.documents()["doc_id"])
    assert gone["title"] not in set(memory.single_source_claims()["title"])
    assert memory.drop_reasons()["rows"].sum() == _one(
        memory.dsn, "SELECT count(*) FROM extraction_ledger x JOIN memory_v1.documents_live d"
                    " ON d.current_version_id = x.version_id")
    assert memory.claims_per_document()["claims"].sum() == _one(memory.dsn, "SELECT count(*) FROM memory_v1.claims_live")
    # facts only the deleted document supported are retracted: no longer held, marked in the history
    held = set(memory.fact_evidence()["label"])
    ravi = memory.entity_facts("Ravi")
    assert not (set(ravi.loc[ravi["status"] == "retracted", "label"]) & held)
    assert memory.documents_over_time()["documents"].sum() == 9


def test_the_html_report_has_its_sections_and_every_image_decodes(memory, tmp_path):
    run = report._run(memory, None)
    page = report.render_html(memory, run)
    for section in ("Run", "Throughput per stage", "Failures", "The corpus over time", "Evidence and contradictions",
                    "Facts over time: ", "Ambiguous names", "Merge proposals", "Cost"):
        assert f"<h2>{section}" in page, section
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(images) == 5
    for data in images:
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(data)), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.std() > 0   # not blank
    assert not re.search(r"<script|<link|src=['\"]http", page)   # self-contained: nothing fetched


def test_report_command_text_html_and_an_unknown_run(example_memory, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("CORPUSMEM_DSN", example_memory.dsn)
    monkeypatch.setenv("CORPUSMEM_HOME", str(example_memory.home))
    assert cli(["report"]) == 0
    out = capsys.readouterr().out
    assert "documents seen   11" in out and "busy seconds per stage" in out and "failures by reason:\n  none" in out
    assert cli(["report", "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    assert cli(["report", "ffffffff"]) == 2
    assert "0 import runs match 'ffffffff'" in capsys.readouterr().err


def test_each_plot_draws_something(memory):
    for figure in (plots.throughput(memory), plots.failures(memory), plots.corpus_over_time(memory),
                   plots.evidence(memory), plots.facts_timeline(memory, "Ravi"), plots.neighbourhood(memory, "Ravi")):
        assert figure.axes and figure.axes[0].get_title()
