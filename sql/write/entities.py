"""Entities, aliases, mentions and identity events: the SQL side of resolution.

During a run, a resolver shard sees the entities and spellings that existed before the run, and
those added in this run under the mention keys it owns (`resolved_key`): what another shard
creates concurrently is invisible to it, so the outcome does not depend on how keys were spread
over shards. Near-spellings created in the same run under different keys become merge
proposals afterwards (`propose_merges`), never silent merges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.facts import resolution
from pipeline.facts.resolution import Candidate

_VISIBLE = "(a.added_run IS DISTINCT FROM %(run)s OR a.resolved_key = %(key)s)"


def unresolved(conn: psycopg.Connection) -> dict[str, list[dict[str, Any]]]:
    """Mentions not yet bound to an entity, by key; each key's mentions in said-on, document order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for key, doc_id, surface, claim_id, asserted_at in conn.execute(
            "SELECT mention_key, doc_id::text, surface, claim_id::text, asserted_at FROM mentions"
            " WHERE entity_id IS NULL ORDER BY mention_key, asserted_at NULLS FIRST, doc_id, surface"):
        out.setdefault(key, []).append({"doc_id": doc_id, "surface": surface, "claim_id": claim_id,
                                        "asserted_at": asserted_at})
    return out


def spelling_candidates(conn: psycopg.Connection, key: str, run_id: str) -> list[Candidate]:
    """T0, T1 and T2: the entities whose spellings (as this key's shard sees them) match `key`.
    They change only when a spelling is added (`bind` says when), so a shard reuses them over a
    key's documents."""
    params = {"key": key, "run": run_id, "limit": resolution.CANDIDATE_LIMIT,
              "nominate": resolution.SPELLING_NOMINATE}
    found: dict[str, Candidate] = {}
    for entity_id, in conn.execute(
            f"SELECT DISTINCT a.entity_id::text FROM entity_aliases a WHERE a.alias_key = %(key)s AND {_VISIBLE}"
            " ORDER BY 1 LIMIT %(limit)s", params):
        found[entity_id] = Candidate(entity_id, "T0", 1.0)
    for entity_id, score in conn.execute(
            f"SELECT a.entity_id::text, max(similarity(a.alias_key, %(key)s)) FROM entity_aliases a"
            f" WHERE a.alias_key %% %(key)s AND similarity(a.alias_key, %(key)s) >= %(nominate)s AND {_VISIBLE}"
            " GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %(limit)s", params):
        found.setdefault(entity_id, Candidate(entity_id, "T1", float(score)))
    for entity_id, in conn.execute(
            f"SELECT DISTINCT a.entity_id::text FROM entity_aliases a"
            f" WHERE a.dm_codes && daitch_mokotoff(%(key)s) AND a.alias_key <> %(key)s AND {_VISIBLE}"
            " ORDER BY 1 LIMIT %(limit)s", params):
        found.setdefault(entity_id, Candidate(entity_id, "T2", 1.0))
    return list(found.values())


def profile_scores(conn: psycopg.Connection, entity_ids: list[str], claim_ids: list[str]) -> dict[tuple[str, str], float]:
    """T3 for many mentions at once: {(entity_id, claim_id): cosine of the entity's profile with the
    claim's vector}, for the entities that have a profile and the claims that have a vector."""
    if not entity_ids or not claim_ids:
        return {}
    return {(e, c): float(score) for e, c, score in conn.execute(
        "SELECT e.entity_id::text, c.claim_id::text, 1 - (e.profile_embedding <=> c.embedding)"
        " FROM entities e, claims c WHERE e.entity_id = ANY(%s::uuid[]) AND c.claim_id = ANY(%s::uuid[])"
        " AND e.profile_embedding IS NOT NULL AND c.embedding IS NOT NULL", (entity_ids, claim_ids))}


def profiled(conn: psycopg.Connection, entity_ids: list[str]) -> set[str]:
    """Those of `entity_ids` that have a profile (entities new in a run get theirs at its end)."""
    if not entity_ids:
        return set()
    return {r[0] for r in conn.execute("SELECT entity_id::text FROM entities WHERE entity_id = ANY(%s::uuid[])"
                                       " AND profile_embedding IS NOT NULL", (entity_ids,))}


def alias_keys(conn: psycopg.Connection, entity_ids: list[str]) -> set[tuple[str, str]]:
    """(entity_id, alias_key) of every spelling the entities have, whoever added it: what an insert
    of a spelling would conflict with."""
    if not entity_ids:
        return set()
    return {(e, k) for e, k in conn.execute("SELECT entity_id::text, alias_key FROM entity_aliases"
                                            " WHERE entity_id = ANY(%s::uuid[])", (entity_ids,))}


@dataclass
class Binds:
    """The verdicts of a key's documents, written together (`write`): one document's verdict is
    the entity (created if new), its spellings, the mentions and the identity event."""

    key: str
    run_id: str
    entities: list[tuple[str, str, str]] = field(default_factory=list)    # (entity_id, canonical name, run)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    mentions: list[tuple[str, str, str]] = field(default_factory=list)    # (entity_id, doc_id, surface)
    events: list[tuple] = field(default_factory=list)
    proposals: list[tuple[str, str, float, str]] = field(default_factory=list)

    def add(self, *, mentions: list[dict[str, Any]], entity_id: str, created: bool, verdict: str, step: str,
            found: list[Candidate]) -> None:
        if created:  # named by its fullest spelling: "Dana Kim", not the "Dana" that stood for it
            canonical = max(mentions, key=lambda m: (m["alias_key"] == self.key, len(m["surface"]), m["surface"]))
            self.entities.append((entity_id, canonical["surface"], self.run_id))
        self.aliases += [{"e": entity_id, "alias": m["surface"], "alias_key": m["alias_key"], "key": self.key,
                          "run": self.run_id} for m in mentions]
        self.mentions += [(entity_id, m["doc_id"], m["surface"]) for m in mentions]
        m = mentions[0]
        self.events.append((m["doc_id"], self.key, m["surface"], entity_id, verdict, step,
                            Jsonb([c.as_dict() for c in found]), resolution.RESOLVER_VERSION, self.run_id))

    def propose(self, entity_id: str, other_id: str, score: float, reason: str) -> None:
        a, b = sorted((entity_id, other_id))
        self.proposals.append((a, b, score, reason))

    def write(self, conn: psycopg.Connection) -> None:
        """Everything added so far, in one pipeline of statements (the caller's transaction), then
        forgotten. A spelling the entity already has conflicts and is skipped. A spelling with no
        Latin letter ("μ", "東京") has no Daitch–Mokotoff code (the function gives NULL): it is
        written with none, and so never matches by sound."""
        if not self.events:
            return
        with conn.cursor() as cur:
            if self.entities:
                cur.executemany("INSERT INTO entities (entity_id, canonical_name, created_run) VALUES (%s, %s, %s)"
                                " ON CONFLICT DO NOTHING", self.entities)
            cur.executemany(
                "INSERT INTO entity_aliases (entity_id, alias, alias_key, dm_codes, resolved_key, added_run)"
                " VALUES (%(e)s, %(alias)s, %(alias_key)s, coalesce(daitch_mokotoff(%(alias_key)s), '{}'), %(key)s,"
                " %(run)s)"
                " ON CONFLICT DO NOTHING", _distinct(self.aliases, lambda a: (a["e"], a["alias_key"])))
            entity_ids, doc_ids, surfaces = zip(*self.mentions)
            cur.execute("UPDATE mentions m SET entity_id = v.e FROM unnest(%s::uuid[], %s::uuid[], %s::text[])"
                        " AS v(e, d, s) WHERE m.doc_id = v.d AND m.mention_key = %s AND m.surface = v.s",
                        (list(entity_ids), list(doc_ids), list(surfaces), self.key))
            with cur.copy("COPY identity_events (doc_id, mention_key, surface, entity_id, verdict, step, candidates,"
                          " resolver_version, run_id) FROM STDIN") as copy:
                for event in self.events:
                    copy.write_row(event)
            if self.proposals:
                cur.executemany("INSERT INTO merge_proposals (entity_id, other_id, score, reason, run_id)"
                                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                                [(*p, self.run_id) for p in self.proposals])
        self.entities, self.aliases, self.mentions, self.events, self.proposals = [], [], [], [], []


def _distinct(rows: list[dict[str, Any]], key) -> list[dict[str, Any]]:
    """The first row of each key, in order: one statement may not insert a conflicting row twice."""
    seen: set = set()
    return [r for r in rows if not (key(r) in seen or seen.add(key(r)))]


def propose_merges(conn: psycopg.Connection, run_id: str) -> int:
    """Entities created in this run under different keys whose names are near-spellings: recorded
    for review (the shards could not see each other's new entities)."""
    cur = conn.execute(
        "INSERT INTO merge_proposals (entity_id, other_id, score, reason, run_id)"
        " SELECT DISTINCT ON (least(a.entity_id, b.entity_id), greatest(a.entity_id, b.entity_id))"
        " least(a.entity_id, b.entity_id), greatest(a.entity_id, b.entity_id),"
        " similarity(a.alias_key, b.alias_key), 'similar spelling, both new in one run', %(run)s"
        " FROM entity_aliases a JOIN entity_aliases b ON a.alias_key %% b.alias_key AND a.entity_id < b.entity_id"
        " WHERE a.added_run = %(run)s AND b.added_run = %(run)s"
        " AND similarity(a.alias_key, b.alias_key) >= %(score)s"
        " ORDER BY least(a.entity_id, b.entity_id), greatest(a.entity_id, b.entity_id),"
        " similarity(a.alias_key, b.alias_key) DESC ON CONFLICT DO NOTHING",
        {"run": run_id, "score": resolution.PROPOSE_MERGE})
    return cur.rowcount


def bind_assertions(conn: psycopg.Connection, one_per_object: list[str]) -> int:
    """Give pending assertions their entities, and the anchor whose shard owns their slot: the
    object for predicates that hold one value per object (a thing has one leader), else the
    subject."""
    # Correlated lookups through the mentions primary key (doc_id, mention_key, surface).
    one = ("(SELECT m.entity_id FROM mentions m WHERE m.doc_id = a.doc_id AND m.mention_key = a.{}"
           " AND m.entity_id IS NOT NULL ORDER BY m.surface LIMIT 1)")
    cur = conn.execute(
        f"WITH b AS (SELECT a.assertion_id, {one.format('subject_key')} AS s, {one.format('object_key')} AS o,"
        f" {one.format('ends_key')} AS e FROM assertions a WHERE a.status = 'pending' AND a.subject_id IS NULL)"
        " UPDATE assertions a SET subject_id = b.s, object_id = b.o, ends_id = b.e FROM b"
        " WHERE a.assertion_id = b.assertion_id AND b.s IS NOT NULL")
    conn.execute("UPDATE assertions SET anchor_id = CASE WHEN kind = 'relation' AND predicate = ANY(%s)"
                 " THEN object_id ELSE subject_id END WHERE status = 'pending' AND anchor_id IS NULL"
                 " AND subject_id IS NOT NULL", (one_per_object,))
    return cur.rowcount
