"""Store options, filters and read plans of `import-vectors` (no store, no Ray needed)."""

from __future__ import annotations

import pytest

from actors.sources import datasource, files, lance
from actors.sources.stores import StoreOptions, StoreUnavailable, matches, parse_filter


def test_store_options_name_their_collection_and_a_default_source_kind():
    assert StoreOptions("qdrant", "http://q:6333", "notes").default_source_kind == "qdrant:notes"
    assert StoreOptions("parquet", "export/").default_source_kind == "parquet"
    with pytest.raises(StoreUnavailable, match="needs --collection"):
        StoreOptions("chroma", "db/")
    with pytest.raises(StoreUnavailable, match="needs --table"):
        StoreOptions("pgvector", "postgresql://x/y")
    with pytest.raises(StoreUnavailable, match="unknown store 'milvus'"):
        StoreOptions("milvus", "x")


def test_filters_are_field_equals_value_or_one_of_values():
    wanted = parse_filter('{"metadata.team": "ops", "year": [2025, 2026]}')
    assert wanted == (("metadata.team", ("ops",)), ("year", (2025, 2026)))
    assert matches({"metadata": {"team": "ops"}, "year": 2026}, wanted)
    assert not matches({"metadata": {"team": "ops"}, "year": 2024}, wanted)
    for bad, message in (("{nope", "not JSON"), ("[1]", "JSON object"), ('{"a": null}', "give a string"),
                         ('{"a": {"b": 1}}', "give a string"), ('{"a": []}', "give a string")):
        with pytest.raises(StoreUnavailable, match=message):
            parse_filter(bad)


class _Listed:
    """A reader that only lists: the plan asks a store for its sources and its count."""

    def __init__(self, sources: list[str], records: int):
        self._sources, self._records = sources, records

    def distinct(self, name: str) -> list[str]:
        return self._sources

    def count(self) -> int:
        return self._records


def test_sources_are_cut_into_groups_of_about_a_few_thousand_records():
    sources = [f"s{i:04d}" for i in range(1000)]
    plan = datasource.plan_reads(StoreOptions("qdrant", "http://q:6333", "c"), _Listed(sources, 20_000), "source",
                                 pushdown=True, parallelism=4)
    assert plan.kind == "sources" and plan.sources == 1000
    assert [s for g in plan.groups for s in g] == sources          # every source once, in order
    assert {len(g) for g in plan.groups[:-1]} == {200}              # 20 records each: 4,000 per group
    assert "1000 sources listed first, read in 5 groups" in plan.describe()
    assert datasource.plan_reads(StoreOptions("qdrant", "http://q:6333", "c"), _Listed(sources, 20_000), "source",
                                 pushdown=False, parallelism=4).kind == "groupby"


def test_lance_predicates_quote_names_and_values():
    assert lance.column("metadata.source") == "`metadata`.`source`"
    assert lance.literal("it's") == "'it''s'" and lance.literal(3) == "3" and lance.literal(True) == "true"


def test_export_records_keep_their_own_id_or_get_a_stable_digest():
    assert files.record_id({"id": 7, "text": "x"}, "raw") == "7"
    assert files.record_id({"text": "x"}, "raw") == files.record_id({"text": "y"}, "raw") != files.record_id({}, "other")
    assert files.record_id({}, "raw").startswith("sha1:")
