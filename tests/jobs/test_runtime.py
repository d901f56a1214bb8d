"""What a command does while Ray starts (`runtime.Ahead`): the memory's server made ready in a
thread, its error handed over where the command asks for the DSN, and nothing started ahead for
a command that will refuse an embedded server."""

from __future__ import annotations

import threading

import psycopg
import pytest

from jobs import runtime
from jobs.settings import load_settings
from sql.store import authority as store
from sql.store import embedded
from tests.support.memory import dsn_for, unique_name


def test_a_new_databases_tables_are_made_ahead_and_its_dsn_handed_over(pg_admin_dsn, tmp_path):
    name = unique_name("cm_ahead")
    embedded.ensure_database(pg_admin_dsn, name)   # empty: no table yet
    dsn = dsn_for(pg_admin_dsn, name)
    ahead = runtime.authority_ahead(load_settings({}, home=tmp_path / "home", dsn=dsn))
    assert ahead.result() == dsn
    with psycopg.connect(dsn) as conn:
        applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    assert applied == {name for _, name, _ in store.migration_files()}


def test_an_unreachable_server_fails_where_its_dsn_is_asked_for(tmp_path):
    ahead = runtime.authority_ahead(load_settings({}, home=tmp_path / "home",
                                                  dsn="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2"))
    with pytest.raises(store.StoreError, match="cannot connect to PostgreSQL"):
        ahead.result()


def test_nothing_is_started_ahead_for_a_cluster_that_needs_a_shared_server(tmp_path, monkeypatch):
    """A Ray cluster named by RAY_ADDRESS refuses the embedded server (`check_shared`) after Ray
    starts: no memory is made for a command that is refused."""
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    calls = []
    monkeypatch.setattr(store, "prepare", lambda settings: calls.append(threading.current_thread().name) or "dsn")
    ahead = runtime.authority_ahead(load_settings({}, home=tmp_path / "home"))
    assert calls == [] and not (tmp_path / "home").exists()
    assert ahead.result() == "dsn" and calls == [threading.current_thread().name]   # made where asked, not ahead
    monkeypatch.setenv("RAY_ADDRESS", "local")
    assert runtime.authority_ahead(load_settings({}, home=tmp_path / "home")).result() == "dsn"
    assert calls[-1] == "authority"
