"""Facts in and out of PostgreSQL for the adjudicator shards, and the evidence recount.

An adjudicator shard reads one anchor entity's pending assertions and the facts they could
touch (a bounded candidate set, found by slot through indexes, never the entity's whole
history), decides in memory (`pipeline/facts/adjudication.py`), and writes everything that changed
for that entity in one transaction.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from pipeline.facts import adjudication, vocabulary
from pipeline.facts.adjudication import Fact, Incoming, Writes
from pipeline.time.windows import Window
from sql.write.copying import as_uuid, copy_deduplicated, copy_rows

# Candidate facts per pending observation statement found by trigram similarity.
_SIMILAR_STATEMENTS = 8
_RELATION_CANDIDATES = 256

_FACT_COLUMNS = ("fact_id::text, kind, anchor_id::text, subject_id::text, label, valid_from, valid_until,"
                 " valid_precision, window_source, predicate, object_id::text, attribute, value, statement_key,"
                 " contradiction_group::text, superseded_by::text")


# What one entity's adjudication adds goes in by COPY (facts and evidence through a staging table,
# keeping only new keys). One statement per row, 25,000 rows for 1,000 generated notes each bound and
# executed alone, took 3.0 s of the database's statement time; by COPY 1.1 s.
_NEW_FACT_COLUMNS = ("fact_id", "kind", "anchor_id", "subject_id", "predicate", "object_id", "attribute", "value",
                     "statement_key", "label", "valid_from", "valid_until", "valid_precision", "window_source",
                     "contradiction_group", "created_run")
_NEW_FACT_TYPES = ("uuid", "text", "uuid", "uuid", "text", "uuid", "text", "text", "text", "text", "timestamptz",
                   "timestamptz", "text", "text", "uuid", "uuid")
_EVIDENCE_COLUMNS = ("fact_id", "assertion_id", "claim_id", "doc_id", "stance")
_EVIDENCE_TYPES = ("uuid", "uuid", "uuid", "uuid", "text")
_DECISION_COLUMNS = ("fact_id", "subject_kind", "outcome", "method", "confidence", "related_id", "assertion_id",
                     "claim_ids", "decided_by", "features", "rationale", "run_id")
_DECISION_TYPES = ("uuid", "text", "text", "text", "float4", "uuid", "uuid", "uuid[]", "text", "jsonb", "text", "uuid")


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else as_uuid(value)


def pending_anchors(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT anchor_id::text FROM assertions WHERE status = 'pending' AND anchor_id IS NOT NULL"
        " ORDER BY 1").fetchall()]


def pending(conn: psycopg.Connection, anchor_id: str) -> tuple[list[Incoming], list[str]]:
    """The anchor's pending assertions whose claims are current testimony, and the IDs of those
    whose claims stopped being current before they were adjudicated (skipped)."""
    rows = conn.execute(
        "SELECT a.assertion_id::text, a.claim_id::text, a.doc_id::text, a.kind, a.anchor_id::text,"
        " a.subject_id::text, s.canonical_name, a.statement, a.valid_from, a.valid_until, a.valid_precision,"
        " a.window_source, a.asserted_at, a.predicate, a.object_id::text, o.canonical_name, a.attribute,"
        " a.value, a.negated, a.change, CASE WHEN a.ends_key = '*' THEN '*' ELSE a.ends_id::text END,"
        " c.is_current_testimony, a.epoch"
        " FROM assertions a JOIN claims c USING (claim_id) JOIN entities s ON s.entity_id = a.subject_id"
        " LEFT JOIN entities o ON o.entity_id = a.object_id"
        " WHERE a.anchor_id = %s AND a.status = 'pending'", (anchor_id,)).fetchall()
    incoming, skipped = [], []
    for r in rows:
        if not r[21]:
            skipped.append(r[0])
            continue
        incoming.append(Incoming(
            assertion_id=r[0], claim_id=r[1], doc_id=r[2], kind=r[3], anchor_id=r[4], subject_id=r[5],
            subject_name=r[6], statement=r[7], window=Window(r[8], r[9], r[10], r[11]), asserted_at=r[12],
            predicate=r[13], object_id=r[14], object_name=r[15], attribute=r[16], value=r[17], negated=r[18],
            change=r[19], ends_id=r[20], epoch=r[22]))
    incoming.sort(key=adjudication.order_key)
    return incoming, skipped


def candidate_facts(conn: psycopg.Connection, anchor_id: str, incoming: list[Incoming]) -> list[Fact]:
    """The facts these assertions could match, supersede or contradict: by slot, by object, by the
    statement's words; bounded however many facts the entity has."""
    objects = sorted({a.object_id for a in incoming if a.object_id} | {anchor_id})
    movers = sorted({a.subject_id for a in incoming if a.ends_id})
    attrs = sorted({a.attribute for a in incoming if a.attribute})
    keys = sorted({adjudication.statement_key(a.statement) for a in incoming if a.kind == "observation" or a.negated})
    params = {"a": anchor_id, "objects": objects, "movers": movers, "attrs": attrs, "keys": keys,
              "limit": _RELATION_CANDIDATES, "similar": _SIMILAR_STATEMENTS}
    rows = conn.execute(
        f"(SELECT {_FACT_COLUMNS} FROM facts WHERE anchor_id = %(a)s AND invalidated_at IS NULL AND ("
        "   (kind = 'relation' AND (object_id = ANY(%(objects)s::uuid[])"
        "      OR (subject_id = ANY(%(movers)s::uuid[]) AND valid_until IS NULL)))"
        "   OR (kind = 'observation' AND attribute = ANY(%(attrs)s))"
        "   OR (kind = 'observation' AND attribute IS NULL AND statement_key = ANY(%(keys)s)))"
        " ORDER BY ingested_at DESC, fact_id LIMIT %(limit)s)"
        f" UNION (SELECT {_FACT_COLUMNS.replace('fact_id::text', 'f.fact_id::text')} FROM unnest(%(keys)s::text[]) k"
        "   CROSS JOIN LATERAL (SELECT * FROM facts WHERE anchor_id = %(a)s AND invalidated_at IS NULL"
        "     AND kind = 'observation' AND attribute IS NULL AND statement_key %% k"
        "     ORDER BY similarity(statement_key, k) DESC, fact_id LIMIT %(similar)s) f)", params).fetchall()
    facts = {r[0]: Fact(fact_id=r[0], kind=r[1], anchor_id=r[2], subject_id=r[3], label=r[4],
                        window=Window(r[5], r[6], r[7], r[8]), predicate=r[9], object_id=r[10], attribute=r[11],
                        value=r[12], statement_key=r[13], contradiction_group=r[14], superseded_by=r[15])
             for r in rows}
    return [facts[k] for k in sorted(facts, key=lambda k: k)]


def write(conn: psycopg.Connection, anchor_id: str, writes: Writes, adjudicated: list[str], skipped: list[str],
          run_id: str) -> None:
    """Everything one entity's adjudication changed, in one transaction."""
    new_ids = {f.fact_id for f in writes.new_facts}
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany("INSERT INTO contradiction_groups (group_id) VALUES (%s) ON CONFLICT DO NOTHING",
                        [(g,) for g in writes.groups])
        copy_deduplicated(cur, "facts", _NEW_FACT_COLUMNS, _NEW_FACT_TYPES, (
            (_uuid(f.fact_id), f.kind, _uuid(f.anchor_id), _uuid(f.subject_id), f.predicate, _uuid(f.object_id),
             f.attribute, f.value, f.statement_key, f.label, f.window.valid_from, f.window.valid_until,
             f.window.precision, f.window.source, _uuid(f.contradiction_group), _uuid(run_id))
            for f in writes.new_facts))
        cur.executemany(
            "UPDATE facts SET valid_from = %s, valid_until = %s, valid_precision = %s, window_source = %s,"
            " value = %s, label = %s, contradiction_group = %s, superseded_by = %s,"
            " embedding = CASE WHEN label = %s THEN embedding END WHERE fact_id = %s",
            [(f.window.valid_from, f.window.valid_until, f.window.precision, f.window.source, f.value, f.label,
              f.contradiction_group, f.superseded_by, f.label, f.fact_id)
             for f in [u for u in writes.updated.values() if u.fact_id not in new_ids]
             + [n for n in writes.new_facts if n.superseded_by]])
        copy_deduplicated(cur, "fact_evidence", _EVIDENCE_COLUMNS, _EVIDENCE_TYPES, (
            (_uuid(fact_id), _uuid(a.assertion_id), _uuid(a.claim_id), _uuid(a.doc_id), stance)
            for fact_id, a, stance in writes.evidence))
        copy_rows(cur, "fact_decisions", _DECISION_COLUMNS, _DECISION_TYPES, (
            (_uuid(d.fact_id), d.kind, d.outcome, d.method, d.confidence, _uuid(d.related_id), _uuid(d.assertion_id),
             [_uuid(c) for c in d.claim_ids], adjudication.DECIDED_BY, d.features, d.rationale, _uuid(run_id))
            for d in writes.decisions))
        cur.execute("UPDATE assertions SET status = 'adjudicated' WHERE assertion_id = ANY(%s::uuid[])", (adjudicated,))
        cur.execute("UPDATE assertions SET status = 'skipped' WHERE assertion_id = ANY(%s::uuid[])", (skipped,))
        touched = sorted(new_ids | set(writes.updated) | {fact_id for fact_id, _, _ in writes.evidence})
        recount(cur, touched)
        cur.execute("UPDATE entities SET profile_stale = true WHERE entity_id IN"
                    " (SELECT subject_id FROM facts WHERE fact_id = ANY(%s::uuid[])"
                    "  UNION SELECT object_id FROM facts WHERE fact_id = ANY(%s::uuid[]) AND object_id IS NOT NULL)",
                    (touched, touched))


# `evidence_count` of the fact `{fact}` (a column or expression in the enclosing query): distinct
# documents whose current testimony supports it; the contradicting side counted apart. Repetition,
# versions and re-extraction never add. `recount` stores it; `corpusmem check` compares with it.
EVIDENCE_COUNTS = ("SELECT count(DISTINCT e.doc_id) FILTER (WHERE e.stance = 'supports') AS supports,"
                   " count(DISTINCT e.doc_id) FILTER (WHERE e.stance = 'contradicts') AS contradicts"
                   " FROM fact_evidence e JOIN claims c USING (claim_id)"
                   " WHERE e.fact_id = {fact} AND c.is_current_testimony")


def recount(cur: psycopg.Cursor, fact_ids: list[str]) -> None:
    """Store `EVIDENCE_COUNTS` on these facts."""
    cur.execute(
        "UPDATE facts f SET evidence_count = coalesce(t.supports, 0), contradicting_count = coalesce(t.contradicts, 0)"
        " FROM (SELECT id AS fact_id, s.supports, s.contradicts FROM unnest(%s::uuid[]) id"
        f"       LEFT JOIN LATERAL ({EVIDENCE_COUNTS.format(fact='id')}) s ON true) t"
        " WHERE f.fact_id = t.fact_id", (fact_ids,))


def one_per_object() -> list[str]:
    return sorted(vocabulary.ONE_PER_OBJECT)


def stats(conn: psycopg.Connection, run_id: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE outcome = 'add'), count(*) FILTER (WHERE outcome = 'noop'),"
        " count(*) FILTER (WHERE outcome = 'update'), count(*) FILTER (WHERE outcome = 'contradict')"
        " FROM fact_decisions WHERE run_id = %s", (run_id,)).fetchone()
    return {"decisions": row[0], "add": row[1], "noop": row[2], "update": row[3], "contradict": row[4]}
