"""`reconcile`: which claims are current testimony, and what that does to the facts they support.

- Living documents: once a new version has its claims, the earlier versions' claims that no
  passage of it carries any more stop being current (`version_superseded`); a claim whose text
  moved to another passage of the same document is still carried.
- Deleting a document ends the currency of all its claims (`version_deleted`) and reconciles the
  facts they supported in the same transaction.
- Every fact those claims touched is recounted, from a persisted watermark over the currency
  events, so a reconcile that was interrupted is finished by the next import or server start. A fact left with no current support is
  retracted (`invalidated_at`, transcript `retracted_source_removal`, `valid_until` untouched)
  when a source stopped saying it, or marked `support: withdrawn` when only a re-reading of
  unchanged bytes lost it; withdrawn facts are still returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.types.json import Jsonb

from pipeline.facts import adjudication
from sql.write.facts_store import recount


class UnknownDocument(LookupError):
    """No live document has this ID."""


# Every writer of testimony_currency_events takes this lock shared for its transaction, and a
# reconcile takes it exclusively: when a reconcile reads the events past its watermark, no
# transaction that could still commit an event with a lower id is open.
RECONCILE_LOCK = 0x7265636F  # "reco"


def hold_for_events(conn: psycopg.Connection | psycopg.Cursor) -> None:
    """Call inside the transaction that records currency events, before it records them."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (RECONCILE_LOCK,))


# (claim_id, version_id): current claims of living documents that their latest finished version
# (`version_id`) no longer carries; a claim whose text moved to another passage is still carried.
# `supersede_living` retires them; `corpusmem check` counts them.
LIVING_SUPERSEDED = (
    "WITH latest AS (SELECT DISTINCT ON (v.doc_id) v.doc_id, v.version_id FROM versions v"
    "                JOIN documents d USING (doc_id) JOIN stage_work w ON w.version_id = v.version_id"
    "                 AND w.stage = 'extract_claims' AND w.status = 'succeeded'"
    "                WHERE d.versioning_mode = 'living' AND d.deleted_at IS NULL AND v.status = 'ready'"
    "                ORDER BY v.doc_id, v.seq DESC)"
    " SELECT c.claim_id, l.version_id FROM claims c JOIN latest l ON c.doc_id = l.doc_id"
    " WHERE c.is_current_testimony"
    " AND NOT EXISTS (SELECT 1 FROM claim_occurrences o WHERE o.claim_id = c.claim_id AND o.version_id = l.version_id)"
    " AND NOT EXISTS (SELECT 1 FROM claim_occurrences o JOIN claims moved ON moved.claim_id = o.claim_id"
    "                 WHERE o.version_id = l.version_id AND moved.claim_text = c.claim_text)")

# (claim_id, is_current, currency_reason) every claim must have: what its latest currency event
# says (every change of currency records one in the same transaction), current when it has none,
# and never current once its document is deleted. `corpusmem check` compares the stored columns.
EXPECTED_CURRENCY = (
    "SELECT c.claim_id, x.is_current,"
    " CASE WHEN NOT x.is_current THEN coalesce(CASE WHEN NOT t.is_current THEN t.reason END, 'version_deleted') END"
    " AS currency_reason"
    " FROM claims c JOIN documents d USING (doc_id)"
    " LEFT JOIN LATERAL (SELECT e.is_current, e.reason FROM testimony_currency_events e"
    "                    WHERE e.claim_id = c.claim_id ORDER BY e.event_id DESC LIMIT 1) t ON true"
    " CROSS JOIN LATERAL (SELECT d.deleted_at IS NULL AND coalesce(t.is_current, true) AS is_current) x")


def supersede_living(conn: psycopg.Connection) -> int:
    """Claims of living documents that their latest finished version no longer carries."""
    with conn.transaction():
        hold_for_events(conn)
        cur = conn.execute(
            f"WITH stale AS ({LIVING_SUPERSEDED}),"
            " gone AS (UPDATE claims c SET is_current_testimony = false, currency_reason = 'version_superseded'"
            "          FROM stale s WHERE c.claim_id = s.claim_id RETURNING c.claim_id, s.version_id)"
            " INSERT INTO testimony_currency_events (claim_id, is_current, reason, version_id)"
            " SELECT claim_id, false, 'version_superseded', version_id FROM gone")
        return cur.rowcount


def restore_currency(conn: psycopg.Connection) -> int:
    """Claims whose stored currency disagrees with `EXPECTED_CURRENCY` (a hand edit, a partial
    restore) take it back, each with a currency event of its own (`review_restored` when current
    again), so the next `reconcile_facts` recounts the facts they touch. Returns how many."""
    with conn.transaction():
        hold_for_events(conn)
        cur = conn.execute(
            f"WITH expected AS ({EXPECTED_CURRENCY}),"
            " fixed AS (UPDATE claims c SET is_current_testimony = x.is_current, currency_reason = x.currency_reason"
            "           FROM expected x WHERE c.claim_id = x.claim_id AND (c.is_current_testimony, c.currency_reason)"
            "           IS DISTINCT FROM (x.is_current, x.currency_reason)"
            "           RETURNING c.claim_id, x.is_current, x.currency_reason)"
            " INSERT INTO testimony_currency_events (claim_id, is_current, reason)"
            " SELECT claim_id, is_current, coalesce(currency_reason, 'review_restored') FROM fixed")
        return cur.rowcount


@dataclass(frozen=True)
class Deletion:
    claims_retired: int
    reconciled: dict[str, int]   # what `reconcile_facts` did, in the same transaction
    deleted_at: datetime


def delete_document(conn: psycopg.Connection, doc_id: str, run_id: str | None = None) -> Deletion:
    """Delete every version of a document and reconcile the facts it supported, in one
    transaction: its claims stop being current (`version_deleted`), every fact they touched is
    recounted, and facts left without support are retracted before anyone can read the document
    as gone but its facts as standing."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (RECONCILE_LOCK,))
        row = conn.execute("UPDATE documents SET deleted_at = now() WHERE doc_id = %s AND deleted_at IS NULL"
                           " RETURNING deleted_at", (doc_id,)).fetchone()
        if row is None:
            raise UnknownDocument(f"no document {doc_id} (or it is already deleted)")
        conn.execute("UPDATE versions SET status = 'deleted' WHERE doc_id = %s", (doc_id,))
        cur = conn.execute(
            "WITH gone AS (UPDATE claims SET is_current_testimony = false, currency_reason = 'version_deleted'"
            "              WHERE doc_id = %s AND is_current_testimony RETURNING claim_id, version_id)"
            " INSERT INTO testimony_currency_events (claim_id, is_current, reason, version_id)"
            " SELECT claim_id, false, 'version_deleted', version_id FROM gone", (doc_id,))
        return Deletion(cur.rowcount, reconcile_facts(conn, run_id), row[0])


def reconcile_facts(conn: psycopg.Connection, run_id: str | None) -> dict[str, int]:
    """Recount the facts whose claims changed currency since the persisted watermark; retract,
    withdraw or restore them as their support says; advance the watermark, all in one
    transaction. A reconcile that was interrupted is finished by the next one."""
    out = _nothing_reconciled()
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (RECONCILE_LOCK,))
        [mark] = cur.execute("SELECT last_event_id FROM reconcile_watermark FOR UPDATE").fetchone()
        [latest] = cur.execute("SELECT max(event_id) FROM testimony_currency_events WHERE event_id > %s",
                               (mark,)).fetchone()
        if latest is None:
            return out
        fact_ids = [r[0] for r in cur.execute(
            "SELECT DISTINCT e.fact_id::text FROM fact_evidence e JOIN testimony_currency_events t"
            " USING (claim_id) WHERE t.event_id > %s AND t.event_id <= %s", (mark, latest)).fetchall()]
        cur.execute("UPDATE reconcile_watermark SET last_event_id = %s, advanced_at = now()", (latest,))
        if fact_ids:
            _settle(cur, fact_ids, run_id, out)
    return out


def reconcile_named_facts(conn: psycopg.Connection, fact_ids: list[str], run_id: str | None) -> dict[str, int]:
    """Recount these facts and retract, withdraw or restore them as their support says, whatever
    the watermark: for facts whose stored counts disagree with their evidence (`corpusmem check
    --repair`)."""
    out = _nothing_reconciled()
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (RECONCILE_LOCK,))
        if fact_ids:
            _settle(cur, fact_ids, run_id, out)
    return out


def _nothing_reconciled() -> dict[str, int]:
    return {"recounted": 0, "retracted": 0, "retracted_relations": 0, "retracted_observations": 0,
            "withdrawn": 0, "restored": 0}


def _settle(cur: psycopg.Cursor, fact_ids: list[str], run_id: str | None, out: dict[str, int]) -> None:
    """Recount `fact_ids`, then retract, withdraw or restore each as its support says, with a
    transcript row per decision; counts into `out`. Inside the caller's reconcile transaction."""
    recount(cur, fact_ids)
    out["recounted"] = len(fact_ids)
    lost = ("f.fact_id = ANY(%(ids)s::uuid[]) AND f.invalidated_at IS NULL AND f.evidence_count = 0")
    source_spoke = ("EXISTS (SELECT 1 FROM fact_evidence e JOIN claims c USING (claim_id)"
                    " WHERE e.fact_id = f.fact_id AND e.stance = 'supports'"
                    " AND c.currency_reason IN ('version_superseded', 'version_deleted'))")
    retracted = cur.execute(
        f"UPDATE facts f SET invalidated_at = now() WHERE {lost} AND {source_spoke}"
        " RETURNING f.fact_id::text, f.kind, f.valid_from, f.valid_until, f.valid_precision",
        {"ids": fact_ids}).fetchall()
    withdrawn = cur.execute(
        f"UPDATE facts f SET support = 'withdrawn' WHERE {lost} AND f.support = 'current' AND NOT {source_spoke}"
        " RETURNING f.fact_id::text, f.kind", {"ids": fact_ids}).fetchall()
    restored = cur.execute(
        "UPDATE facts f SET support = 'current' WHERE f.fact_id = ANY(%(ids)s::uuid[])"
        " AND f.support = 'withdrawn' AND f.evidence_count > 0 RETURNING f.fact_id::text, f.kind",
        {"ids": fact_ids}).fetchall()
    decisions = (
        [(r[0], r[1], "retracted_source_removal", "the sources that said it stopped saying it",
          {"window": {"valid_from": _iso(r[2]), "valid_until": _iso(r[3]), "valid_precision": r[4]}})
         for r in retracted]
        + [(r[0], r[1], "support_withdrawn", "a re-reading of unchanged sources no longer finds it", {})
           for r in withdrawn]
        + [(r[0], r[1], "support_restored", "current testimony supports it again", {}) for r in restored])
    cur.executemany(
        "INSERT INTO fact_decisions (fact_id, subject_kind, outcome, method, confidence, decided_by,"
        " features, rationale, run_id) VALUES (%s, %s, %s, 'reconcile', 1.0, %s, %s, %s, %s)",
        [(fid, kind, outcome, adjudication.DECIDED_BY, Jsonb(features), why, run_id)
         for fid, kind, outcome, why, features in decisions])
    out.update(retracted=len(retracted), withdrawn=len(withdrawn), restored=len(restored),
               retracted_relations=sum(r[1] == "relation" for r in retracted),
               retracted_observations=sum(r[1] == "observation" for r in retracted))


def _iso(t: datetime | None) -> str | None:
    return t.isoformat() if t else None


# --- label_relation and profiles ----------------------------------------------------------

PROFILE_FACTS = 5


def labels_to_vectorize(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM facts WHERE embedding IS NULL AND invalidated_at IS NULL)"
                        " OR EXISTS (SELECT 1 FROM entities WHERE profile_stale)").fetchone()[0]


def labels_from_claims(conn: psycopg.Connection) -> int:
    """A fact whose label is the text of a claim supporting it takes that claim's vector (the same
    text through the same model): most observation labels are a claim's statement, so most fact
    vectors cost nothing. Returns how many facts it filled."""
    return conn.execute(
        "UPDATE facts f SET embedding = c.embedding FROM ("
        "  SELECT DISTINCT ON (e.fact_id) e.fact_id, c.embedding FROM facts f2"
        "  JOIN fact_evidence e ON e.fact_id = f2.fact_id AND e.stance = 'supports'"
        "  JOIN claims c ON c.claim_id = e.claim_id AND c.claim_text = f2.label AND c.embedding IS NOT NULL"
        "  WHERE f2.embedding IS NULL AND f2.invalidated_at IS NULL ORDER BY e.fact_id, c.claim_id) c"
        " WHERE f.fact_id = c.fact_id").rowcount


def facts_without_vectors(conn: psycopg.Connection, limit: int) -> list[tuple[str, str]]:
    return conn.execute("SELECT fact_id::text, label FROM facts WHERE embedding IS NULL AND invalidated_at IS NULL"
                        " ORDER BY fact_id LIMIT %s", (limit,)).fetchall()


def set_fact_vectors(conn: psycopg.Connection, rows: list[tuple[str, object]]) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany("UPDATE facts SET embedding = %s WHERE fact_id = %s", [(v, f) for f, v in rows])


def stale_profiles(conn: psycopg.Connection, limit: int) -> list[tuple[str, str]]:
    """(entity_id, profile text) for entities whose facts changed: the name and its strongest
    current facts, by evidence, then the latest in world time, then id. Never by when a fact was
    written: that follows the import's batches, and the profile (and its vector, which resolution
    compares mentions with) would differ between two imports of the same corpus."""
    rows = conn.execute(
        "SELECT e.entity_id::text, e.canonical_name, coalesce(array_agg(t.label ORDER BY t.evidence_count DESC,"
        " t.valid_from DESC NULLS LAST, t.fact_id) FILTER (WHERE t.label IS NOT NULL), '{}')"
        " FROM (SELECT entity_id, canonical_name FROM entities WHERE profile_stale ORDER BY entity_id LIMIT %s) e"
        " LEFT JOIN LATERAL (SELECT label, evidence_count, valid_from, fact_id FROM facts f"
        "   WHERE (f.subject_id = e.entity_id OR f.object_id = e.entity_id) AND f.invalidated_at IS NULL"
        "   ORDER BY evidence_count DESC, valid_from DESC NULLS LAST, fact_id LIMIT %s) t ON true"
        " GROUP BY e.entity_id, e.canonical_name ORDER BY e.entity_id", (limit, PROFILE_FACTS)).fetchall()
    return [(entity_id, name + (": " + " ".join(l.rstrip(".") + "." for l in labels) if labels else ""))
            for entity_id, name, labels in rows]


def set_profiles(conn: psycopg.Connection, rows: list[tuple[str, str, object]]) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany("UPDATE entities SET profile = %s, profile_embedding = %s, profile_stale = false"
                        " WHERE entity_id = %s", [(p, v, e) for e, p, v in rows])
