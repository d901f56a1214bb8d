"""SQL of the read API beyond facts themselves: evidence samples and totals, context hits.

Every read runs on an async psycopg connection (the API's pools); `fetch`, `fetch_one` and
`fetch_dicts` are the three shapes a read takes. What may be served is never restated here:
every read names, through `servable`, one of the views that decide it (migrations 0004, 0007).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from sql.ids import child_id

Conn = psycopg.AsyncConnection

# The view that decides, for each kind of row, whether the memory serves it, and the key it is
# asked by. A reading is asked by (doc_id, version_id): the document lets PostgreSQL work out that
# one document's current version instead of every document's.
_SERVABLE = {
    "document": ("doc_id", "memory_v1_private.lineages"),           # live documents
    "content": ("doc_id, version_id", "memory_v1_private.current_content"),  # their current readings
    "claim": ("claim_id", "memory_v1_private.live_claims"),          # current testimony
    "visible_claim": ("claim_id", "memory_v1_private.visible_claims"),  # any testimony of a live document
    "fact": ("fact_id", "memory_v1_private.believed_facts"),         # held now
    "visible_fact": ("fact_id", "memory_v1_private.visible_facts"),  # with surviving provenance, any belief
    "entity": ("entity_id", "memory_v1_private.entity_provenance"),
}


def servable(kind: str, alias: str, column: str | None = None) -> str:
    """The condition that the row `alias` (by its `column`, else by the kind's key columns) is
    servable as a `kind`: the deciding view asked about that row alone.

    `OFFSET 0` keeps the question a correlated subplan, run for each row with the row's key
    pushed into the view's indexes. As a semi-join (`IN`, or `EXISTS` without the fence) the
    planner, which misjudges how many rows the views hold, computed the whole view first: 847 ms
    to confirm 200 nominated facts of a memory of 29,151, against 6.8 ms asked one by one."""
    key, view = _SERVABLE[kind]
    columns = [c.strip() for c in (column or key).split(",")]
    match = " AND ".join(f"s.{k.strip()} = {alias}.{c}" for k, c in zip(key.split(","), columns, strict=True))
    return f"EXISTS (SELECT 1 FROM {view} s WHERE {match} OFFSET 0)"


def ocr_citation(alias: str) -> str:
    """A LATERAL join, `ocr`, naming the OCR'd lines that the span of the row `alias` (its
    `version_id`, `char_start` and `char_end` in that version's document.md) covers, on the first
    page it touches: `ocr.page`, `ocr.first_line`, `ocr.last_line`, all null for text that was
    not OCR'd. (A page is a section of its own, so a chunk, and a claim in it, never spans two.)
    `corpusmem claims` and the read API's evidence cite "page 3, lines 4–6" by this one rule."""
    # The page first, then its lines by their key: a span's lines found among all of a version's
    # by the span index alone cost 1 ms a claim on 300-page scans, against 0.03 ms this way.
    return ("LEFT JOIN LATERAL (SELECT l.page, min(l.line) AS first_line, max(l.line) AS last_line"
            " FROM ocr_pages p JOIN ocr_lines l ON l.version_id = p.version_id AND l.page = p.page"
            f" WHERE p.version_id = {alias}.version_id AND p.char_start < {alias}.char_end"
            f" AND p.char_end > {alias}.char_start AND l.char_start < {alias}.char_end"
            f" AND l.char_end > {alias}.char_start GROUP BY l.page ORDER BY l.page LIMIT 1) ocr ON true")


async def fetch(conn: Conn, sql: str, params: Any = None) -> list[tuple]:
    cur = await conn.execute(sql, params)
    return await cur.fetchall()


async def fetch_one(conn: Conn, sql: str, params: Any = None) -> tuple | None:
    cur = await conn.execute(sql, params)
    return await cur.fetchone()


async def fetch_dicts(conn: Conn, sql: str, params: Any = None) -> list[dict[str, Any]]:
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(sql, params)
        return await cur.fetchall()

# A claim as evidence, where it was said (`c`, `d`) and, through `ocr_citation('c')`, on which
# OCR'd page and lines (null for text that was not OCR'd).
_CLAIM_COLUMNS = (
    "c.claim_id, c.doc_id, c.chunk_id, c.claim_text, c.source_span, c.char_start, c.char_end, c.is_attributed,"
    " c.is_current_testimony, c.evidence_spans, c.asserted_at, c.claim_valid_from, c.claim_valid_until,"
    " c.claim_valid_precision, c.claim_valid_kind, d.title AS document_title, d.source_kind,"
    " CASE WHEN ocr.page IS NOT NULL THEN jsonb_build_object('page', ocr.page, 'first_line', ocr.first_line,"
    " 'last_line', ocr.last_line) END AS ocr_citation")


async def fact_evidence(conn: Conn, facts: list[tuple[str, str]], *, per_stance: int, cap: int
                        ) -> tuple[list[dict], list[dict], list[dict]]:
    """For each (fact_id, kind): up to `per_stance` current claims per stance (newest said first),
    at most `cap` claims in all, each claim once; and the exact total per fact and stance."""
    if not facts:
        return [], [], []
    kinds = dict(facts)
    ids = [f for f, _ in facts]
    # One pass over the evidence gives both the sample and the totals: a claim behind several
    # assertions of the same fact counts once.
    sampled = await fetch(
        conn, "SELECT e.fact_id::text, e.claim_id::text, e.stance, e.total FROM"
        " (SELECT e.*, row_number() OVER (PARTITION BY e.fact_id, e.stance"
        "                                 ORDER BY e.asserted_at DESC NULLS LAST, e.claim_id) AS n,"
        "         count(*) OVER (PARTITION BY e.fact_id, e.stance) AS total"
        "  FROM (SELECT DISTINCT e.fact_id, e.claim_id, e.stance, c.asserted_at"
        "        FROM fact_evidence e JOIN memory_v1_private.live_claims c USING (claim_id)"
        "        WHERE e.fact_id = ANY(%s::uuid[])) e) e"
        " WHERE e.n <= %s ORDER BY array_position(%s::uuid[], e.fact_id), e.stance DESC, e.n",
        (ids, per_stance, ids))
    totals = {(f, s): n for f, _, s, n in sampled}
    links, chosen = [], []
    for fact_id, claim_id, stance, _ in sampled:
        if claim_id not in chosen:
            if len(chosen) >= cap:
                continue
            chosen.append(claim_id)
        links.append({"fact_kind": kinds[fact_id], "fact_id": fact_id, "claim_id": claim_id, "stance": stance})
    returned: dict[tuple[str, str], int] = {}
    for link in links:
        key = (link["fact_id"], link["stance"])
        returned[key] = returned.get(key, 0) + 1
    total_rows = [{"fact_kind": kinds[f], "fact_id": f, "stance": s, "returned": returned.get((f, s), 0), "total": n}
                  for (f, s), n in sorted(totals.items(), key=lambda kv: (ids.index(kv[0][0]), kv[0][1]))]
    return links, total_rows, await claims_in_order(conn, chosen)


async def claims_in_order(conn: Conn, ids: list[str], kind: str = "claim") -> list[dict[str, Any]]:
    """The claims among `ids` that are servable as `kind` (`claim`: current testimony;
    `visible_claim`: any testimony of a live document), in the given order."""
    return await fetch_dicts(conn, f"SELECT {_CLAIM_COLUMNS} FROM claims c JOIN documents d USING (doc_id)"
                                   f" {ocr_citation('c')} WHERE c.claim_id = ANY(%s::uuid[]) AND {servable(kind, 'c')}"
                                   " ORDER BY array_position(%s::uuid[], c.claim_id)", (ids, ids))


async def context_hits(conn: Conn, candidates: list[str], context: list[str]) -> dict[str, int]:
    """Current relations linking each candidate to any of the context entities."""
    if not candidates or not context:
        return {}
    return dict(await fetch(
        conn, "SELECT c::text, count(f.fact_id) FROM unnest(%s::uuid[]) c JOIN facts f ON f.kind = 'relation'"
        f" AND {servable('fact', 'f')} AND (f.valid_until IS NULL OR f.valid_until > now())"
        " AND ((f.subject_id = c AND f.object_id = ANY(%s::uuid[])) OR (f.object_id = c AND f.subject_id = ANY(%s::uuid[])))"
        " GROUP BY 1", (candidates, context, context)))


# The columns every fact result is built from (`serve.retrieval.facts.result_from_row`).
FACT_COLUMNS = ("f.fact_id::text, f.kind, f.label, f.evidence_count, f.valid_from, f.valid_until, f.valid_precision,"
                " f.ingested_at, f.invalidated_at, f.contradiction_group::text, f.support, f.window_source")
# Those columns, then whether the fact's window keeps it in a time question and whether that match
# is confirmed rather than possible: memory_v1's rules of world time (0016's `may_hold`, an
# unknown bound open; `window_complete`), which the read API shares rather than restates. A time
# question is a span (`TimeQuery.span`): the window began by `begun_by`, and had not ended at
# `ends_after` (no end condition where that is NULL).
MATCHED_FACT_COLUMNS = (
    FACT_COLUMNS + ", memory_v1_private.may_hold(f.valid_from, NULL, %(begun_by)s)"
    " AND (%(ends_after)s::timestamptz IS NULL OR memory_v1_private.may_hold(NULL, f.valid_until, %(ends_after)s))"
    ", memory_v1_private.window_complete(f.valid_from, f.valid_until, f.valid_precision)")


async def lookup_relations(conn: Conn, *, subject: str | None, predicate: str | None, obj: str | None,
                           at: Any, k: int) -> list[tuple]:
    """Live relations whose window covers `at` (an unknown bound is open on that side), strongest
    evidence first, matched at `at`; k + 1 rows so the caller knows whether more exist."""
    return await fetch(
        conn, f"SELECT {MATCHED_FACT_COLUMNS} FROM facts f WHERE f.kind = 'relation' AND {servable('fact', 'f')}"
        " AND (%(s)s::uuid IS NULL OR f.subject_id = %(s)s::uuid) AND (%(p)s::text IS NULL OR f.predicate = %(p)s)"
        " AND (%(o)s::uuid IS NULL OR f.object_id = %(o)s::uuid)"
        " AND memory_v1_private.may_hold(f.valid_from, f.valid_until, %(at)s)"
        " ORDER BY f.evidence_count DESC, f.ingested_at DESC, f.fact_id LIMIT %(k)s",
        {"s": subject, "p": predicate, "o": obj, "at": at, "k": k + 1, "begun_by": at, "ends_after": at})


async def lookup_observations(conn: Conn, entity_id: str, at: Any, k: int,
                              vector: Any = None) -> list[tuple]:
    order = "f.embedding <=> %(v)b, f.fact_id" if vector is not None else \
        "f.evidence_count DESC, f.ingested_at DESC, f.fact_id"
    return await fetch(
        conn, f"SELECT {MATCHED_FACT_COLUMNS} FROM facts f WHERE f.kind = 'observation' AND {servable('fact', 'f')}"
        " AND f.subject_id = %(e)s AND memory_v1_private.may_hold(f.valid_from, f.valid_until, %(at)s)"
        + (" AND f.embedding IS NOT NULL" if vector is not None else "") +
        f" ORDER BY {order} LIMIT %(k)s",
        {"e": entity_id, "at": at, "k": k + 1, "v": vector, "begun_by": at, "ends_after": at})


async def fact_row(conn: Conn, fact_id: str, span: dict[str, Any]) -> tuple | None:
    """A fact with surviving provenance, retracted or not (the audit path), matched to `span`."""
    return await fetch_one(conn, f"SELECT {MATCHED_FACT_COLUMNS}, f.subject_id::text, f.object_id::text FROM facts f"
                           f" WHERE f.fact_id = %(id)s AND {servable('visible_fact', 'f')}", {"id": fact_id, **span})


async def all_evidence(conn: Conn, fact_id: str) -> list[dict[str, Any]]:
    """Every claim of a live document behind the fact, current testimony or not."""
    return await fetch_dicts(conn, f"SELECT DISTINCT {_CLAIM_COLUMNS} FROM fact_evidence e JOIN claims c USING (claim_id)"
                                   f" JOIN documents d ON d.doc_id = c.doc_id {ocr_citation('c')}"
                                   " WHERE e.fact_id = %s"
                                   f" AND {servable('visible_claim', 'c')}"
                                   " ORDER BY c.asserted_at NULLS LAST, c.claim_id", (fact_id,))


async def sources(conn: Conn, doc_ids: list[str]) -> list[tuple]:
    """Live documents with the object key of their current reading."""
    return await fetch(
        conn, "SELECT l.doc_id, l.title, l.source_kind, r.object_key FROM memory_v1_private.lineages l"
        " LEFT JOIN representations r ON r.version_id = l.current_representation_id"
        " WHERE l.doc_id = ANY(%s::uuid[]) ORDER BY l.doc_id", (doc_ids,))


async def transcript(conn: Conn, fact_id: str, limit: int) -> tuple[list[tuple], int]:
    [total] = await fetch_one(conn, "SELECT count(*) FROM fact_decisions WHERE fact_id = %s", (fact_id,))
    rows = await fetch(
        conn, "SELECT * FROM (SELECT subject_kind, outcome, method, confidence, related_id, decided_by, decided_at,"
        " features || jsonb_build_object('rationale', rationale, 'claim_ids', to_jsonb(claim_ids)), decision_id"
        " FROM fact_decisions WHERE fact_id = %s ORDER BY decision_id DESC LIMIT %s) t ORDER BY decision_id",
        (fact_id, limit))
    return [r[:8] for r in rows], total


_CHUNK_COLUMNS = ("ch.chunk_id, ch.doc_id, ch.version_id, ch.text AS chunk_text, ch.char_start,"
                  " ch.char_end, s.role AS section_role, d.source_kind, d.title AS document_title,"
                  " v.source_modified_at")


async def _chunks(conn: Conn, where: str, params: dict) -> list[dict[str, Any]]:
    rows = await fetch_dicts(
        conn, f"SELECT {_CHUNK_COLUMNS} FROM chunks ch JOIN versions v USING (version_id)"
        " JOIN documents d ON d.doc_id = ch.doc_id JOIN representations r ON r.version_id = ch.version_id"
        f" LEFT JOIN sections s ON s.section_id = ch.section_id WHERE {where}", params)
    for row in rows:  # one conversion per version: its representation is named by the version
        row["representation_id"] = child_id(str(row["version_id"]), "representation", 0)
    return rows


async def nominate(conn: Conn, table: str, channel: str, query: str, vector: Any, k: int,
                   about: list[str] | None = None, dated: bool = False) -> list[str]:
    """Nominated ids of `claims` or `chunks`, best first, from one channel: the question's words
    weighted by rarity (`bm25`, `memory_v1_private.lexical_nominate`) or pgvector cosine distance
    (`semantic`, `memory_v1_private.semantic_nominate`), the query space's nominations too; only
    those about the entities `about` when given, only claims whose world time is known when
    `dated` (semantic)."""
    sql, params = Nomination(table, channel, about, dated).statement(k)
    return [r[0] for r in await fetch(conn, sql, {"q": query, "v": vector, "k": k, **params})]


class Nomination(NamedTuple):
    """One channel, to be read alone (`nominate`) or with others in one statement (`nominate_all`):
    `semantic` or `bm25` over `table`, or `days`, the claims of the days `days` = (first, last),
    inclusive and UTC, by pgvector cosine distance, ties by id: those whose world time starts on
    them and those said on them (migration 0026's two indexes)."""

    table: str
    channel: str
    about: list[str] | None = None
    dated: bool = False
    days: tuple[date, date] | None = None

    def statement(self, k: int, name: str = "") -> tuple[pgsql.Composable, dict[str, Any]]:
        """The channel's statement, and its own parameters under names ending in `name` (the
        question, its vector and `k` are shared: `%(q)s`, `%(v)b`, `%(k)s`)."""
        table, about, first, after = (pgsql.SQL(f"{p}{name}") for p in ("table", "about", "first", "after"))
        if self.channel == "days":
            return pgsql.SQL(
                "SELECT c.claim_id::text FROM claims c"
                " WHERE (c.claim_valid_from >= %({0})s AND c.claim_valid_from < %({1})s"
                "        OR c.asserted_at >= %({0})s AND c.asserted_at < %({1})s) AND c.embedding IS NOT NULL"
                " ORDER BY c.embedding <=> %(v)b, c.claim_id LIMIT %(k)s").format(first, after), {
                f"first{name}": datetime.combine(self.days[0], time.min, UTC),
                f"after{name}": datetime.combine(self.days[1] + timedelta(days=1), time.min, UTC)}
        if self.channel == "bm25":
            sql = pgsql.SQL("SELECT id::text FROM memory_v1_private.lexical_nominate(%({})s, %(q)s, %(k)s,"
                            " %({})s::uuid[]) ORDER BY ord").format(table, about)
            return sql, {f"table{name}": self.table, f"about{name}": self.about or None}
        # The vector travels in binary (`%(v)b`): as text, formatting and parsing its numbers cost
        # more than the index scan itself. The rest is written into the statement: with the table,
        # the count and the restriction as parameters, PostgreSQL planned the function's six
        # branches again at every call (0.4–0.8 ms of a 2.3–2.7 ms nomination); as constants, one
        # branch is left and its prepared plan is kept.
        restriction = pgsql.SQL("%({})s::uuid[]").format(about) if self.about else pgsql.SQL("NULL::uuid[]")
        sql = pgsql.SQL("SELECT id::text FROM memory_v1_private.semantic_nominate({}, %(v)b, {}, {}, {}) ORDER BY ord"
                        ).format(pgsql.Literal(self.table), pgsql.Literal(int(k)), restriction,
                                 pgsql.Literal(bool(self.dated)))
        return sql, {f"about{name}": self.about} if self.about else {}


async def nominate_all(conn: Conn, channels: dict[str, Nomination], query: str, vector: Any,
                       k: int) -> dict[str, list[str]]:
    """Every channel of `channels`, by name, read in one statement. A claims_and_sources_context's
    four to six nominations read as one cost the client 0.8–1.4 ms less and PostgreSQL 0.3–0.8 ms
    less on `bench serve`'s memory, the answers the same bytes."""
    parts, params = [], {"q": query, "v": vector, "k": k}
    for n, nomination in enumerate(channels.values()):
        sql, own = nomination.statement(k, str(n))
        parts.append(pgsql.SQL("ARRAY({})").format(sql))
        params |= own
    row = await fetch_one(conn, pgsql.SQL("SELECT {}").format(pgsql.SQL(", ").join(parts)), params)
    return {name: list(found) for name, found in zip(channels, row)}


async def confirm_claims(conn: Conn, ids: list[str]) -> list[dict[str, Any]]:
    """The nominated claims that are still current testimony of a live document, in the given order."""
    return await claims_in_order(conn, ids)


async def confirm_chunks(conn: Conn, ids: list[str]) -> list[dict[str, Any]]:
    """Nominated chunks of live documents' current readings, in the given order."""
    return await _chunks(conn, f"ch.chunk_id = ANY(%(ids)s::uuid[]) AND {servable('content', 'ch')}"
                         " ORDER BY array_position(%(ids)s::uuid[], ch.chunk_id)", {"ids": ids})


class TurnContext(NamedTuple):
    """What says whose turn a passage of a chunk belongs to (`turn_context`)."""

    opening: str        # the text of its reading's first chunk, where the document's header is
    text: str           # the chunk's own text
    char_start: int     # where the chunk starts in the document
    before: list[str]   # the texts of the chunks before it, nearest first


async def turn_context(conn: Conn, chunk_ids: list[str], back: int) -> dict[str, TurnContext]:
    """For each of `chunk_ids` (chunks of confirmed rows), its `TurnContext` with up to `back`
    chunks before it."""
    out: dict[str, TurnContext] = {}
    for chunk_id, own, ord_, text, char_start in await fetch(
            conn, "SELECT c.chunk_id::text, c.ord, q.ord, q.text, q.char_start FROM chunks c CROSS JOIN LATERAL"
                  " (SELECT q.ord, q.text, q.char_start FROM chunks q WHERE q.version_id = c.version_id"
                  "  AND (q.ord = 0 OR q.ord BETWEEN c.ord - %(back)s AND c.ord)) q"
                  " WHERE c.chunk_id = ANY(%(ids)s::uuid[]) ORDER BY 1, 3 DESC", {"ids": chunk_ids, "back": back}):
        found = out.setdefault(chunk_id, TurnContext("", "", 0, []))
        if ord_ == own:
            found = found._replace(text=text, char_start=char_start)
        elif ord_ >= own - back:
            found.before.append(text)
        if ord_ == 0:
            found = found._replace(opening=text)
        out[chunk_id] = found
    return out


async def adjacent_chunks(conn: Conn, chunk_id: str, window: int) -> list[dict[str, Any]] | None:
    """The chunk and its neighbours within `window` in the same reading; None for a chunk that is
    not part of a live document's current reading."""
    row = await fetch_one(conn, f"SELECT version_id, ord FROM chunks ch WHERE chunk_id = %s AND {servable('content', 'ch')}",
                          (chunk_id,))
    if row is None:
        return None
    return await _chunks(conn, f"ch.version_id = %(v)s AND ch.ord BETWEEN %(lo)s AND %(hi)s AND {servable('content', 'ch')}"
                         " ORDER BY ch.ord", {"v": row[0], "lo": row[1] - window, "hi": row[1] + window})


def version_status(alias: str) -> str:
    """A version's status as every read surface lists it (`memory_v1_private.version_status`, 0018):
    one parked for want of a converter route is `parked` (the authority keeps it `converting` with
    its `parked_reason`, which the queue reads)."""
    return f"memory_v1_private.version_status({alias}.status, {alias}.parked_reason)"


async def documents_page(conn: Conn, limit: int, after: str | None, statuses: list[str] | None) -> list[tuple]:
    """(doc_id, title, source_kind, source_ref, created_at, version_id, seq, status, ingested_at,
    error, parked_reason, mime) of live documents and their latest version, whose status is one of
    `statuses` when given."""
    return await fetch(
        conn, f"SELECT d.doc_id, d.title, d.source_kind, d.source_ref, d.created_at, v.version_id, v.seq, v.shown,"
        " v.ingested_at, v.error, v.parked_reason, v.mime FROM documents d JOIN LATERAL"
        f" (SELECT w.*, {version_status('w')} AS shown FROM versions w WHERE w.doc_id = d.doc_id"
        f" ORDER BY w.seq DESC LIMIT 1) v ON true WHERE {servable('document', 'd')}"
        " AND (%(after)s::uuid IS NULL OR d.doc_id > %(after)s::uuid)"
        " AND (%(st)s::text[] IS NULL OR v.shown = ANY(%(st)s))"
        " ORDER BY d.doc_id LIMIT %(n)s", {"after": after, "st": statuses, "n": limit + 1})


# The seed's stage order for readiness.
READINESS_STAGES = ("convert", "structure", "chunk", "embed_chunk", "extract_claims", "ground_claims",
                    "normalize_relations", "adjudicate_observations", "adjudicate_supersession", "embed_claim",
                    "reconcile", "label_relation")


async def stage_statuses(conn: Conn, version_ids: list[str]) -> dict[str, dict[str, tuple]]:
    """{version_id: {stage: (status, finished_at, defer_reason)}} for the versions that exist, in
    the seed's readiness vocabulary: `failed` means a retry is scheduled (`retry_backoff`), and
    work nothing will retry on its own is `dead_letter`, whether it ran out of attempts or failed
    permanently (a corrupt file), so a client stops waiting at once. Work held by an owner that
    died waits to be taken over: `pending`."""
    out: dict[str, dict[str, tuple]] = {}
    for version_id, stage, status, finished, defer in await fetch(
            conn, "SELECT version_id::text, stage, CASE"
            "   WHEN owner_run IS NOT NULL AND NOT run_is_live(owner_run) THEN 'pending'"
            "   WHEN status = 'failed' AND defer_reason IS DISTINCT FROM 'retry_backoff' THEN 'dead_letter'"
            "   ELSE status END,"
            " finished_at, CASE WHEN owner_run IS NOT NULL AND NOT run_is_live(owner_run) THEN NULL"
            "   ELSE defer_reason END"
            " FROM stage_work WHERE version_id = ANY(%s::uuid[])", (version_ids,)):
        out.setdefault(version_id, {})[stage] = (status, finished, defer)
    return out


async def search_indexes_built(conn: Conn, indexes: list[str]) -> bool:
    built = await fetch_one(conn, "SELECT coalesce(bool_and(to_regclass(i) IS NOT NULL), true)"
                                  " FROM unnest(%s::text[]) i", (indexes,))
    return built[0]


async def graph_edges(conn: Conn, frontier: list[str], *, valid_at: Any, believed_at: Any | None,
                      predicates: list[str], limit: int) -> list[tuple]:
    """The walkable relations touching `frontier` (`memory_v1_private.walkable_edges`, which
    memory_v1's graph functions walk too): confirmed at `valid_at`, believed at `believed_at` (None:
    now), not withdrawn; the best-evidenced first, at most `limit`."""
    return await fetch(
        conn, "SELECT e.relation_id, e.subject_id, e.object_id, e.predicate, e.label, e.evidence_count, e.valid_from,"
        " e.valid_until, e.valid_precision, e.ingested_at, e.invalidated_at, e.support"
        " FROM memory_v1_private.walkable_edges(%(v)s::timestamptz,"
        " coalesce(%(b)s::timestamptz, memory_v1_private.evaluated_at()),"
        " %(p)s::text[], %(f)s::uuid[]) e ORDER BY e.evidence_count DESC, e.relation_id LIMIT %(n)s",
        {"f": frontier, "p": predicates or None, "v": valid_at, "b": believed_at, "n": limit})


async def entity_names(conn: Conn, ids: list[str]) -> dict[str, str]:
    """{entity_id: canonical name} of the servable entities among `ids`: any other is unknown."""
    return dict(await fetch(conn, "SELECT e.entity_id::text, e.canonical_name FROM entities e"
                                  f" WHERE e.entity_id = ANY(%s::uuid[]) AND {servable('entity', 'e')}", (ids,)))


async def live_documents(conn: Conn, ids: list[str]) -> set[str]:
    return {r[0] for r in await fetch(conn, "SELECT d.doc_id::text FROM documents d WHERE d.doc_id = ANY(%s::uuid[])"
                                            f" AND {servable('document', 'd')}", (ids,))}
