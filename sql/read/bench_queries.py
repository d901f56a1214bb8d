"""The SQL the benchmarks read: what a generated memory holds, and what to ask it."""

from __future__ import annotations

from typing import Any

import psycopg

from sql.read.read_queries import servable

# the floor of `bench serve`: what pgvector alone costs for the nearest claims, with no API,
# confirmation or fusion
BARE_NEAREST_CLAIMS = "SELECT claim_id FROM claims ORDER BY embedding <=> %b LIMIT 10"
# The memory's last import: the run the benchmarks read.
_LAST_RUN = "(SELECT * FROM import_runs ORDER BY started_at DESC LIMIT 1) r"


def claims_if_imported(conn: psycopg.Connection) -> int | None:
    """Claims in the memory if its last import succeeded, else None."""
    if conn.execute("SELECT to_regclass('import_runs') IS NULL").fetchone()[0]:
        return None
    last = conn.execute(f"SELECT r.status FROM {_LAST_RUN}").fetchone()
    if last is None or last[0] != "succeeded":
        return None
    return conn.execute("SELECT count(*) FROM claims").fetchone()[0]


def memory_figures(conn: psycopg.Connection) -> dict[str, int]:
    figures = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # fixed names
               for table in ("claims", "entities", "facts")}
    # deleted documents are never served, so only live ones describe the memory being read
    figures["documents"] = conn.execute(
        f"SELECT count(*) FROM documents d WHERE {servable('document', 'd')}").fetchone()[0]
    return figures


def seeded_questions(conn: psycopg.Connection, count: int, seed: int
                     ) -> tuple[list[tuple[str, str]], list[tuple[str, Any]]]:
    """`count` (entity name, entity id) and `count` (claim text, vector), in a seeded order of
    their ids; no claim text twice (a generated memory repeats its sentences, and a server
    remembers the vectors of the questions it was asked)."""
    names = conn.execute("SELECT canonical_name, entity_id::text FROM entities ORDER BY md5(entity_id::text || %s)"
                         " LIMIT %s", (str(seed), count)).fetchall()
    claims = conn.execute(
        "SELECT claim_text, embedding FROM (SELECT DISTINCT ON (claim_text) claim_text, embedding, claim_id"
        "   FROM claims WHERE embedding IS NOT NULL ORDER BY claim_text, claim_id) c"
        " ORDER BY md5(claim_id::text || %s) LIMIT %s", (str(seed), count)).fetchall()
    return names, claims


def last_import_report(conn: psycopg.Connection) -> Any:
    return conn.execute(f"SELECT r.report FROM {_LAST_RUN}").fetchone()[0]


def encoded_texts(conn: psycopg.Connection) -> dict[str, list[str]]:
    """The distinct texts of the memory's chunks and claims: what its import encoded (no text
    is encoded twice in a run), in a stable order."""
    return {"chunks": [r[0] for r in conn.execute("SELECT DISTINCT text FROM chunks ORDER BY 1")],
            "claims": [r[0] for r in conn.execute("SELECT DISTINCT claim_text FROM claims ORDER BY 1")]}


def last_import_landings(conn: psycopg.Connection) -> list[float]:
    """Seconds from the last import's start at which each of its versions landed (its chunks
    written with their vectors), in order: the pipeline's progress over time."""
    return [float(r[0]) for r in conn.execute(
        f"SELECT extract(epoch FROM w.finished_at - r.started_at) FROM stage_work w, {_LAST_RUN}"
        " WHERE w.stage = 'embed_chunk' AND w.status = 'succeeded' AND w.finished_at >= r.started_at ORDER BY 1")]


def live_claim_starts(conn: psycopg.Connection) -> dict[str, list[int]]:
    """Where each live claim starts, by the file name of its document (through `memory_v1`, so only
    what a reader is served counts)."""
    found: dict[str, list[int]] = {}
    for source_ref, start in conn.execute(
            "SELECT d.source_ref, c.char_start FROM memory_v1.claims_live c "
            "JOIN memory_v1.documents_live d ON d.doc_id = c.doc_id"):
        found.setdefault(source_ref.rsplit("/", 1)[-1], []).append(start)
    return found


def docs_memory(conn: psycopg.Connection) -> dict[str, Any]:
    """What `bench docs` judges, through `memory_v1`: live entities (name, live mentions), live
    claims' source spans, believed relations' labels, and the counts beside them."""
    entities = conn.execute("SELECT canonical_name, live_mention_count FROM memory_v1.entities_current "
                            "ORDER BY canonical_name, entity_id").fetchall()
    spans = [r[0] for r in conn.execute("SELECT source_span FROM memory_v1.claims_live ORDER BY claim_id")]
    # every fact still believed, dated or not (documentation rarely dates what it says)
    facts = conn.execute("SELECT fact_kind, fact_label FROM memory_v1.facts_visible_history"
                         " WHERE invalidated_at IS NULL ORDER BY fact_id").fetchall()
    documents = conn.execute("SELECT count(*) FROM memory_v1.documents_live").fetchone()[0]
    return {"entities": [(n, c) for n, c in entities], "claim_spans": spans, "documents": documents,
            "relations": [label for kind, label in facts if kind == "relation"],
            "observations": sum(kind == "observation" for kind, _ in facts)}
