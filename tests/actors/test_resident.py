"""Resident stage classes: one instance per worker process and set of arguments, kept between
calls, the oldest dropped beyond a bound."""

from __future__ import annotations

import itertools

import pytest

from actors import resident

_built = itertools.count()


class Holder:
    """Stands for a class that opens something costly when built (a connection, a model)."""

    def __init__(self, dsn: str, run_id: str | None = None) -> None:
        self.dsn, self.run_id, self.serial = dsn, run_id, next(_built)

    def __call__(self, batch: list[int]) -> list[int]:
        return [x + self.serial * 0 for x in batch]

    def whoami(self, prefix: str) -> str:
        return f"{prefix}{self.serial}"


@pytest.fixture(autouse=True)
def _empty_process():
    resident._instances.clear()
    yield
    resident._instances.clear()


def test_the_same_arguments_find_the_instance_built_first_and_others_build_their_own() -> None:
    first = resident.instance(Holder, {"dsn": "a", "run_id": "r1"})
    assert resident.instance(Holder, {"run_id": "r1", "dsn": "a"}) is first   # argument order does not matter
    other_run = resident.instance(Holder, {"dsn": "a", "run_id": "r2"})
    other_db = resident.instance(Holder, {"dsn": "b", "run_id": "r1"})
    assert len({id(first), id(other_run), id(other_db)}) == 3


def test_beyond_the_bound_the_least_recently_used_instance_is_dropped() -> None:
    kept = resident.instance(Holder, {"dsn": "kept"})
    for i in range(resident._KEPT - 1):
        resident.instance(Holder, {"dsn": f"db{i}"})
    assert resident.instance(Holder, {"dsn": "kept"}) is kept    # used again: now the newest
    resident.instance(Holder, {"dsn": "one more"})
    assert len(resident._instances) == resident._KEPT
    assert resident.instance(Holder, {"dsn": "kept"}) is kept
    assert resident.instance(Holder, {"dsn": "db0"}).serial > kept.serial   # db0 was dropped and built again


def test_a_batch_function_is_named_after_its_class_and_calls_the_kept_instance() -> None:
    run = resident.batches(Holder, {"dsn": "a"})
    assert run.__name__ == "Holder"   # what Ray Data names the operator: MapBatches(Holder)
    assert run([1, 2]) == [1, 2]
    assert resident.call(Holder, {"dsn": "a"}, "whoami", "#") == f"#{resident.instance(Holder, {'dsn': 'a'}).serial}"
    assert len(resident._instances) == 1
