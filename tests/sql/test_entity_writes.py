"""Writing a key's resolution verdicts (`sql.write.entities.Binds`) into a fresh memory."""

from __future__ import annotations

import uuid

import psycopg

from sql.write.entities import Binds


def test_a_spelling_without_a_latin_letter_is_written_with_no_phonetic_code(memory):
    run, doc = str(uuid.uuid4()), str(uuid.uuid4())
    with psycopg.connect(memory.dsn) as conn:
        for key, surface in (("μ", "Μ"), ("dana kim", "Dana Kim")):
            binds = Binds(key=key, run_id=run)
            binds.add(mentions=[{"surface": surface, "alias_key": key, "doc_id": doc}], entity_id=str(uuid.uuid4()),
                      created=True, verdict="new", step="new", found=[])
            binds.write(conn)
        codes = dict(conn.execute("SELECT alias, dm_codes FROM entity_aliases").fetchall())
    assert codes["Μ"] == []
    assert codes["Dana Kim"]                         # a Latin spelling keeps its codes
