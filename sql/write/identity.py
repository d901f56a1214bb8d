"""Merge review: proposals, merges as reversible redirects, and the re-adjudication a merge needs.

The resolver only proposes merges (`merge_proposals`). A person merges one entity into another
(`merge`, or `accept` of a proposal): an `entity_redirects` row, never a rewrite of mentions,
aliases, assertions or facts. Every read follows the standing redirects through the views of
migration 0015 (`memory_v1_private.redirected` is the one rule of identity).

The facts the merged entities own or name are adjudicated again as one entity, by the facts
phase's own rules (`pipeline.facts.adjudication.EntityFacts`) and writer (`facts_store.write`),
from every adjudicated assertion of current testimony, with each entity read as its survivor.
The new facts carry the redirect's id, and the views serve them instead of the earlier facts of
the anchors they re-decided. `unmerge` ends the redirect and retires its facts by a recorded
decision, so the earlier facts are served again: the memory reads exactly as before the merge.

Merges are undone last-in, first-out where they overlap: a later standing merge that touched the
same entities or anchors must be undone first, since its facts were decided with this one in force.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.facts import adjudication
from pipeline.facts.adjudication import Incoming, Writes
from pipeline.time.windows import Window
from sql.store import runs
from sql.write import facts_store, reconcile

# Fact and contradiction-group ids of a merge's adjudication: named by the redirect and the id the
# facts phase would give, so they never collide with the facts phase's own.
NAMESPACE = uuid.UUID("3d2b9a61-6f0e-4c1b-8e57-a4c90d1e7b22")
# One merge or unmerge at a time: each reads the redirects the other may be writing.
_IDENTITY_LOCK = 0x6964656E  # "iden"


class IdentityError(ValueError):
    """A merge-review request that cannot be done; `kind` is `unknown` (no such entity or
    proposal), `conflict` (the memory's state forbids it) or `invalid` (a malformed request)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Entity:
    entity_id: str
    name: str


@dataclass(frozen=True)
class MergeResult:
    redirect_id: int
    survivor: Entity
    merged: Entity
    anchors: int          # entities whose facts were adjudicated again
    assertions: int
    facts: int            # facts the re-adjudication made
    decisions: int


@dataclass(frozen=True)
class UnmergeResult:
    redirect_id: int
    survivor: Entity
    merged: Entity
    facts_retired: int


# --- entities and proposals ----------------------------------------------------------------

def find_entity(conn: psycopg.Connection, ref: str) -> Entity:
    """An entity by its id, else by its exact canonical name, else by an exact spelling of it."""
    ref = ref.strip()
    if not ref:
        raise IdentityError("invalid", "an entity is named by its id or its exact name, not an empty string")
    try:
        as_id = str(uuid.UUID(ref))
    except ValueError:
        as_id = None
    if as_id is not None:
        row = conn.execute("SELECT entity_id::text, canonical_name FROM entities WHERE entity_id = %s",
                           (as_id,)).fetchone()
        if row is None:
            raise IdentityError("unknown", f"no entity {as_id}")
        return Entity(*row)
    for sql in ("SELECT entity_id::text, canonical_name FROM entities WHERE canonical_name = %s ORDER BY 1",
                "SELECT DISTINCT e.entity_id::text, e.canonical_name FROM entity_aliases a JOIN entities e"
                " USING (entity_id) WHERE a.alias = %s ORDER BY 1"):
        rows = conn.execute(sql, (ref,)).fetchall()
        if len(rows) == 1:
            return Entity(*rows[0])
        if rows:
            raise IdentityError("conflict", f"several entities are named {ref!r} ("
                                + ", ".join(r[0] for r in rows) + "): name one by its id")
    raise IdentityError("unknown", f"no entity named {ref!r}")


def proposal_id(entity_id: str, other_id: str) -> str:
    """A proposal is its pair of entities, in the order the table keeps them."""
    a, b = sorted((entity_id, other_id))
    return f"{a}:{b}"


def _pair(pid: str) -> tuple[str, str]:
    try:
        a, b = (str(uuid.UUID(p)) for p in pid.strip().split(":"))
    except ValueError as err:
        raise IdentityError("invalid", f"{pid!r} is not a proposal id (two entity ids joined by ':')") from err
    return tuple(sorted((a, b)))   # type: ignore[return-value]


_PROPOSALS = """
WITH live AS (SELECT m.entity_id, m.doc_id FROM mentions m JOIN memory_v1_private.lineages l USING (doc_id)
              WHERE m.entity_id IS NOT NULL)
SELECT p.entity_id::text, p.other_id::text, p.score, p.reason, p.status, p.proposed_at, p.decided_by, p.decided_at,
       a.canonical_name, b.canonical_name,
       (SELECT coalesce(array_agg(DISTINCT x.alias ORDER BY x.alias), '{}') FROM entity_aliases x
        WHERE x.entity_id = p.entity_id),
       (SELECT coalesce(array_agg(DISTINCT x.alias ORDER BY x.alias), '{}') FROM entity_aliases x
        WHERE x.entity_id = p.other_id),
       (SELECT count(*) FROM live WHERE live.entity_id = p.entity_id),
       (SELECT count(*) FROM live WHERE live.entity_id = p.other_id),
       (SELECT count(DISTINCT live.doc_id) FROM live WHERE live.entity_id = p.entity_id),
       (SELECT count(DISTINCT live.doc_id) FROM live WHERE live.entity_id = p.other_id),
       (SELECT coalesce(array_agg(d.title ORDER BY d.title), '{}') FROM documents d
        WHERE d.doc_id IN (SELECT doc_id FROM live WHERE live.entity_id = p.entity_id)
          AND d.doc_id IN (SELECT doc_id FROM live WHERE live.entity_id = p.other_id))
FROM merge_proposals p
JOIN entities a ON a.entity_id = p.entity_id
JOIN entities b ON b.entity_id = p.other_id
WHERE (%(status)s::text IS NULL OR p.status = %(status)s)
  AND (%(a)s::uuid IS NULL OR (p.entity_id, p.other_id) = (%(a)s, %(b)s))
ORDER BY p.score DESC, p.entity_id, p.other_id
"""


def proposals(conn: psycopg.Connection, status: str | None = None, pid: str | None = None) -> list[dict[str, Any]]:
    """Merge proposals with their evidence: both names, every spelling, live mentions and
    documents of each, the documents that name both, the resolver's score and reason."""
    if status is not None and status not in ("proposed", "accepted", "rejected"):
        raise IdentityError("invalid", f"status {status!r} is not one of proposed, accepted, rejected")
    a, b = _pair(pid) if pid is not None else (None, None)
    out = []
    for r in conn.execute(_PROPOSALS, {"status": status, "a": a, "b": b}):
        out.append({
            "proposal_id": proposal_id(r[0], r[1]), "score": float(r[2]), "reason": r[3], "status": r[4],
            "proposed_at": r[5], "decided_by": r[6], "decided_at": r[7],
            "entities": [
                {"entity_id": r[0], "name": r[8], "aliases": list(r[10]), "mentions": r[12], "documents": r[14]},
                {"entity_id": r[1], "name": r[9], "aliases": list(r[11]), "mentions": r[13], "documents": r[15]}],
            "shared_documents": list(r[16])})
    return out


def _one_proposal(conn: psycopg.Connection, pid: str) -> dict[str, Any]:
    found = proposals(conn, pid=pid)
    if not found:
        raise IdentityError("unknown", f"no merge proposal {pid}")
    return found[0]


def _still_open(p: dict[str, Any]) -> None:
    if p["status"] != "proposed":
        raise IdentityError("conflict", f"proposal {p['proposal_id']} was already {p['status']} by {p['decided_by']}"
                                        f" at {p['decided_at']:%Y-%m-%d %H:%M:%S %Z}")


def reject(conn: psycopg.Connection, pid: str, decided_by: str) -> dict[str, Any]:
    """Mark a proposal rejected, by whom and when; nothing else changes."""
    with conn.transaction():
        _lock(conn)
        p = _one_proposal(conn, pid)
        _still_open(p)
        a, b = _pair(pid)
        conn.execute("UPDATE merge_proposals SET status = 'rejected', decided_by = %s, decided_at = now()"
                     " WHERE entity_id = %s AND other_id = %s", (decided_by, a, b))
    return _one_proposal(conn, pid)


def accept(conn: psycopg.Connection, pid: str, decided_by: str, keep: str | None = None,
           progress: Callable[[int, int], None] | None = None) -> MergeResult:
    """Accept a proposal: merge its pair, keeping `keep` (an entity of the pair; by default the
    one with more live mentions, then the older, then the lower id)."""
    with conn.transaction():
        _lock(conn)
        p = _one_proposal(conn, pid)
        _still_open(p)
        ids = [e["entity_id"] for e in p["entities"]]
        if keep is not None:
            kept = find_entity(conn, keep).entity_id
            if kept not in ids:
                raise IdentityError("invalid", f"{keep!r} is not one of the proposal's entities ({', '.join(ids)})")
        else:
            kept = conn.execute(
                "SELECT e.entity_id::text FROM entities e WHERE e.entity_id = ANY(%s::uuid[]) ORDER BY"
                " (SELECT count(*) FROM mentions m WHERE m.entity_id = e.entity_id) DESC, e.created_at, e.entity_id"
                " LIMIT 1", (ids,)).fetchone()[0]
        away = next(i for i in ids if i != kept)
        return _merge(conn, kept, away, decided_by, f"accepted proposal: {p['reason']} (score {p['score']:.2f})",
                      progress)


def merge(conn: psycopg.Connection, keep: str, away: str, decided_by: str, reason: str = "merged by review",
          progress: Callable[[int, int], None] | None = None) -> MergeResult:
    """Merge `away` into `keep` (ids or exact names), and adjudicate the facts this touches again."""
    with conn.transaction():
        _lock(conn)
        return _merge(conn, find_entity(conn, keep).entity_id, find_entity(conn, away).entity_id, decided_by,
                      reason, progress)


def unmerge(conn: psycopg.Connection, ref: str, undone_by: str, reason: str = "unmerged by review") -> UnmergeResult:
    """End the standing merge of `ref` (the merged-away entity) and retire the facts it made."""
    with conn.transaction():
        _lock(conn)
        merged = find_entity(conn, ref)
        row = conn.execute("SELECT redirect_id, to_entity::text FROM entity_redirects"
                           " WHERE from_entity = %s AND undone_at IS NULL", (merged.entity_id,)).fetchone()
        if row is None:
            raise IdentityError("conflict", f"{merged.name} ({merged.entity_id}) is not merged into another entity")
        redirect_id, to_entity = row
        later = conn.execute(
            "WITH mine AS (SELECT from_entity AS e FROM entity_redirects WHERE redirect_id = %(r)s"
            "              UNION SELECT to_entity FROM entity_redirects WHERE redirect_id = %(r)s"
            "              UNION SELECT anchor_id FROM entity_redirect_anchors WHERE redirect_id = %(r)s)"
            " SELECT f.canonical_name, t.canonical_name FROM entity_redirects l"
            " JOIN entities f ON f.entity_id = l.from_entity JOIN entities t ON t.entity_id = l.to_entity"
            " WHERE l.undone_at IS NULL AND l.redirect_id > %(r)s"
            "   AND (l.from_entity IN (SELECT e FROM mine) OR l.to_entity IN (SELECT e FROM mine)"
            "        OR EXISTS (SELECT 1 FROM entity_redirect_anchors x WHERE x.redirect_id = l.redirect_id"
            "                   AND x.anchor_id IN (SELECT e FROM mine)))"
            " ORDER BY l.redirect_id DESC LIMIT 1", {"r": redirect_id}).fetchone()
        if later is not None:
            raise IdentityError("conflict", f"the later merge of {later[0]} into {later[1]} was decided with this one"
                                            f" in force: unmerge {later[0]} first")
        conn.execute("UPDATE entity_redirects SET undone_at = now(), undone_by = %s, undo_reason = %s"
                     " WHERE redirect_id = %s", (undone_by, reason, redirect_id))
        retired = conn.execute("UPDATE facts SET invalidated_at = now() WHERE redirect_id = %s"
                               " AND invalidated_at IS NULL RETURNING fact_id, kind", (redirect_id,)).fetchall()
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO fact_decisions (fact_id, subject_kind, outcome, method, confidence, decided_by,"
                " features, rationale) VALUES (%s, %s, 'merge_undone', 'identity_review', 1.0, %s, %s, %s)",
                [(f, kind, undone_by, Jsonb({"redirect_id": redirect_id}), f"the merge it was decided under was"
                  f" undone: {reason}") for f, kind in retired])
        a, b = sorted((merged.entity_id, to_entity))
        conn.execute("UPDATE merge_proposals SET status = 'proposed', decided_by = NULL, decided_at = NULL"
                     " WHERE entity_id = %s AND other_id = %s AND status = 'accepted'", (a, b))
        survivor = find_entity(conn, to_entity)
    return UnmergeResult(redirect_id, survivor, merged, len(retired))


def redirects(conn: psycopg.Connection, include_undone: bool = False) -> list[dict[str, Any]]:
    """The merges, newest first: who decided them and when, and who undid them."""
    return [dict(zip(("redirect_id", "merged_id", "merged", "survivor_id", "survivor", "reason", "decided_by",
                      "decided_at", "undone_by", "undone_at", "undo_reason"), r)) for r in conn.execute(
        "SELECT r.redirect_id, r.from_entity::text, f.canonical_name, r.to_entity::text, t.canonical_name, r.reason,"
        " r.decided_by, r.decided_at, r.undone_by, r.undone_at, r.undo_reason FROM entity_redirects r"
        " JOIN entities f ON f.entity_id = r.from_entity JOIN entities t ON t.entity_id = r.to_entity"
        " WHERE %s OR r.undone_at IS NULL ORDER BY r.redirect_id DESC", (include_undone,))]


# --- the merge and its re-adjudication -----------------------------------------------------------

def _lock(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_IDENTITY_LOCK,))


def _survivor_of(conn: psycopg.Connection, entity_id: str) -> str | None:
    row = conn.execute("SELECT survivor_id::text FROM memory_v1_private.redirected WHERE entity_id = %s",
                       (entity_id,)).fetchone()
    return row[0] if row else None


def _merge(conn: psycopg.Connection, keep: str, away: str, decided_by: str, reason: str,
           progress: Callable[[int, int], None] | None) -> MergeResult:
    if keep == away:
        raise IdentityError("invalid", f"cannot merge entity {keep} into itself")
    survivor, merged = find_entity(conn, keep), find_entity(conn, away)
    if (into := _survivor_of(conn, away)) is not None:
        raise IdentityError("conflict", f"{merged.name} ({away}) is already merged into {find_entity(conn, into).name}"
                                        f" ({into})" + ("" if into == keep else ": unmerge it first"))
    if (into := _survivor_of(conn, keep)) is not None:
        if into == away:
            raise IdentityError("conflict", f"merging {merged.name} into {survivor.name} would make a cycle:"
                                            f" {survivor.name} is merged into {merged.name}")
        raise IdentityError("conflict", f"{survivor.name} ({keep}) is merged into {find_entity(conn, into).name}"
                                        f" ({into}): merge into that entity instead")
    [redirect_id] = conn.execute(
        "INSERT INTO entity_redirects (from_entity, to_entity, reason, decided_by) VALUES (%s, %s, %s, %s)"
        " RETURNING redirect_id", (away, keep, reason, decided_by)).fetchone()
    a, b = sorted((keep, away))
    conn.execute("UPDATE merge_proposals SET status = 'accepted', decided_by = %s, decided_at = now()"
                 " WHERE entity_id = %s AND other_id = %s AND status = 'proposed'", (decided_by, a, b))
    anchors = _anchors(conn, keep)
    assertions = facts = decisions = 0
    for done, anchor in enumerate(anchors):
        got = _readjudicate(conn, redirect_id, anchor)
        assertions, facts, decisions = assertions + got[0], facts + got[1], decisions + got[2]
        if progress is not None:
            progress(done + 1, len(anchors))
    conn.execute("INSERT INTO entity_redirect_anchors (redirect_id, anchor_id) SELECT %s, unnest(%s::uuid[])",
                 (redirect_id, anchors))
    # Vectors for the new facts, from a fact or claim with the same text (same text, same model):
    # most need no model; the rest get theirs at the next facts phase's label step.
    conn.execute("UPDATE facts f SET embedding = o.embedding FROM facts o WHERE f.redirect_id = %s"
                 " AND f.embedding IS NULL AND o.label = f.label AND o.embedding IS NOT NULL", (redirect_id,))
    reconcile.labels_from_claims(conn)
    return MergeResult(redirect_id, survivor, merged, len(anchors), assertions, facts, decisions)


def _anchors(conn: psycopg.Connection, survivor: str) -> list[str]:
    """The survivor, and (as their survivors) the anchors of every adjudicated assertion that
    names an entity now reading as the survivor: the facts the merge can change."""
    return [r[0] for r in conn.execute(
        "WITH merged AS (SELECT %(s)s::uuid AS entity_id UNION SELECT r.entity_id FROM memory_v1_private.redirected r"
        "                WHERE r.survivor_id = %(s)s)"
        " SELECT coalesce(r.survivor_id, a.anchor_id)::text FROM assertions a"
        " LEFT JOIN memory_v1_private.redirected r ON r.entity_id = a.anchor_id"
        " WHERE a.status = 'adjudicated' AND (a.anchor_id IN (SELECT entity_id FROM merged)"
        "   OR a.subject_id IN (SELECT entity_id FROM merged) OR a.object_id IN (SELECT entity_id FROM merged)"
        "   OR a.ends_id IN (SELECT entity_id FROM merged))"
        " UNION SELECT %(s)s::text ORDER BY 1", {"s": survivor})]


# Every adjudicated assertion of current testimony whose anchor reads as %(a)s, each entity read as
# its survivor (named by the survivor's name): what `facts_store.pending` gives the facts phase.
_INCOMING = """
SELECT a.assertion_id::text, a.claim_id::text, a.doc_id::text, a.kind, %(a)s::text,
       coalesce(rs.survivor_id, a.subject_id)::text, s.canonical_name, a.statement, a.valid_from, a.valid_until,
       a.valid_precision, a.window_source, a.asserted_at, a.predicate, coalesce(ro.survivor_id, a.object_id)::text,
       o.canonical_name, a.attribute, a.value, a.negated, a.change,
       CASE WHEN a.ends_key = '*' THEN '*' ELSE coalesce(re.survivor_id, a.ends_id)::text END, a.epoch
FROM assertions a
JOIN claims c ON c.claim_id = a.claim_id AND c.is_current_testimony
LEFT JOIN memory_v1_private.redirected ra ON ra.entity_id = a.anchor_id
LEFT JOIN memory_v1_private.redirected rs ON rs.entity_id = a.subject_id
LEFT JOIN memory_v1_private.redirected ro ON ro.entity_id = a.object_id
LEFT JOIN memory_v1_private.redirected re ON re.entity_id = a.ends_id
JOIN entities s ON s.entity_id = coalesce(rs.survivor_id, a.subject_id)
LEFT JOIN entities o ON o.entity_id = coalesce(ro.survivor_id, a.object_id)
WHERE a.status = 'adjudicated' AND coalesce(ra.survivor_id, a.anchor_id) = %(a)s::uuid
"""


def _incoming(conn: psycopg.Connection, anchor: str) -> list[Incoming]:
    rows = conn.execute(_INCOMING, {"a": anchor}).fetchall()
    incoming = [Incoming(
        assertion_id=r[0], claim_id=r[1], doc_id=r[2], kind=r[3], anchor_id=r[4], subject_id=r[5], subject_name=r[6],
        statement=r[7], window=Window(r[8], r[9], r[10], r[11]), asserted_at=r[12], predicate=r[13], object_id=r[14],
        object_name=r[15], attribute=r[16], value=r[17], negated=r[18], change=r[19], ends_id=r[20], epoch=r[21])
        for r in rows]
    incoming.sort(key=adjudication.order_key)
    return incoming


def _readjudicate(conn: psycopg.Connection, redirect_id: int, anchor: str) -> tuple[int, int, int]:
    """One anchor's facts decided again from scratch, as the adjudicator shard decides them, and
    written by its writer under the redirect: (assertions, facts, decisions)."""
    runs.lock_entity(conn, anchor)   # the anchor's one decider, as for an adjudicator shard
    incoming = _incoming(conn, anchor)
    state = adjudication.EntityFacts(anchor, [])
    for a in incoming:
        state.decide(a)
    writes = renamed(state.writes, redirect_id)
    facts_store.write(conn, anchor, writes, [], [], None)
    conn.execute("UPDATE facts SET redirect_id = %s WHERE fact_id = ANY(%s::uuid[])",
                 (redirect_id, [f.fact_id for f in writes.new_facts]))
    return len(incoming), len(writes.new_facts), len(writes.decisions)


def renamed(writes: Writes, redirect_id: int) -> Writes:
    """`writes` with every fact and contradiction group it made named under the redirect. The
    adjudication started from no facts, so every fact and group it names is its own."""
    own = {f.fact_id for f in writes.new_facts} | set(writes.groups)

    def name(x: str | None) -> str | None:
        return str(uuid.uuid5(NAMESPACE, f"{redirect_id}\x00{x}")) if x in own else x

    facts = {f.fact_id: replace(f, fact_id=name(f.fact_id), superseded_by=name(f.superseded_by),
                                contradiction_group=name(f.contradiction_group)) for f in writes.new_facts}
    return Writes(
        new_facts=list(facts.values()),
        updated={name(k): facts.get(k, v) for k, v in writes.updated.items()},
        evidence=[(name(f), a, stance) for f, a, stance in writes.evidence],
        decisions=[replace(d, fact_id=name(d.fact_id), related_id=name(d.related_id),
                           features={k: (name(v) if isinstance(v, str) else v) for k, v in d.features.items()})
                   for d in writes.decisions],
        groups=[name(g) for g in writes.groups])
