"""Lexical nomination's document frequencies: read from the copy of ANALYZE's counts kept at each
analysis where those counts are exact and current, counted through the index otherwise, the same
terms and weights either way."""

from __future__ import annotations

import psycopg
import pytest

from sql.store import authority as store

pytestmark = pytest.mark.integration

TERMS = "SELECT term::text, weight FROM memory_v1_private.lexical_terms(%s, %s)"


def read_terms(conn: psycopg.Connection, questions: list[str]) -> list[list[tuple[str, float]]]:
    return [conn.execute(TERMS, (source, q)).fetchall() for source in store.LEXICAL_TABLES for q in questions]


def test_the_kept_counts_give_the_counted_terms_and_a_stale_copy_is_not_read(example_memory_copy):
    with psycopg.connect(example_memory_copy.dsn, autocommit=True) as conn:
        for table in store.LEXICAL_TABLES:
            store.analyse(conn, table)
        kept = conn.execute("SELECT source, exact FROM memory_v1_private.lexical_statistics ORDER BY 1").fetchall()
        assert kept == [("chunks", True), ("claims", True)]   # 11 documents: read whole, nothing pruned
        questions = [r[0] for r in conn.execute("SELECT claim_text FROM claims ORDER BY claim_id LIMIT 25")]
        questions += ["Who owns the billing migration?", "Ravi Dana cutover June", "nothing here matches zyxwv"]
        from_copy = read_terms(conn, questions)
        assert sum(map(len, from_copy)) > 100

        # the copy is what was read: counts doubled in it change the weights
        conn.execute("UPDATE memory_v1_private.lexical_statistics SET shares = ("
                     "SELECT array_agg(s * 2 ORDER BY n) FROM unnest(shares) WITH ORDINALITY u(s, n))")
        assert read_terms(conn, questions) != from_copy
        # a copy of an earlier analysis is not read: every lexeme is counted, as without a copy
        conn.execute("UPDATE memory_v1_private.lexical_statistics SET analysed_at = analysed_at - interval '1 hour'")
        assert read_terms(conn, questions) == from_copy
        conn.execute("DELETE FROM memory_v1_private.lexical_statistics")
        assert read_terms(conn, questions) == from_copy
