"""What is said about an entity: the claims that mention it or assert about it, and the chunks
that carry those claims (`memory_v1_private.ids_about`, migrations 0015 and 0027)."""

from __future__ import annotations

import psycopg
import pytest

pytestmark = pytest.mark.integration


def test_the_chunks_about_entities_are_those_that_carry_the_claims_about_them(example_memory):
    with psycopg.connect(example_memory.dsn) as conn:
        entities = [r[0] for r in conn.execute("SELECT entity_id FROM entities ORDER BY canonical_name, entity_id")]
        asked = [[e] for e in entities] + [entities[i:i + 3] for i in range(0, len(entities), 3)]
        carrying = 0
        for about in asked:
            claims = {r[0] for r in conn.execute("SELECT memory_v1_private.ids_about('claims', %s::uuid[])", (about,))}
            chunks = [r[0] for r in conn.execute("SELECT memory_v1_private.ids_about('chunks', %s::uuid[])", (about,))]
            expected = {r[0] for r in conn.execute(
                "SELECT chunk_id FROM claim_occurrences WHERE claim_id = ANY(%s::uuid[])", (list(claims),))}
            assert len(chunks) == len(set(chunks)) and set(chunks) == expected, about
            mentioned = {r[0] for r in conn.execute(
                "SELECT claim_id FROM mentions WHERE entity_id = ANY(%s::uuid[]) UNION SELECT claim_id FROM assertions"
                " WHERE subject_id = ANY(%s::uuid[]) OR object_id = ANY(%s::uuid[])", (about, about, about))}
            assert mentioned <= claims, about
            carrying += bool(chunks)
    assert len(entities) >= 5 and carrying >= len(entities) // 2
