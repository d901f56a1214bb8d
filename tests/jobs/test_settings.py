"""Settings are parsed once, strictly, with errors that name the variable."""

from __future__ import annotations

import pytest

from jobs.settings import SETTINGS, SettingsError, load_settings


def test_defaults_apply_when_unset_or_empty():
    settings = load_settings({"CORPUSMEM_DSN": "", "CORPUSMEM_CHUNK_TARGET_CHARS": " "})
    assert settings.dsn is None
    assert settings.chunk_target_chars == 800
    assert settings.embedding_model == "all-MiniLM-L6-v2"
    assert settings.object_store_uri.endswith("/.corpusmem/objects")


def test_values_are_read_and_typed():
    settings = load_settings({"CORPUSMEM_CHUNK_TARGET_CHARS": "1500", "CORPUSMEM_OBJECT_STORE": "s3://b/p",
                              "CORPUSMEM_SERVE_CACHE_SHARE": "0"})
    assert settings.chunk_target_chars == 1500
    assert settings.serve_cache_share == 0.0
    assert settings.object_store_uri == "s3://b/p"


@pytest.mark.parametrize("env, value", [
    ("CORPUSMEM_CHUNK_TARGET_CHARS", "lots"),
    ("CORPUSMEM_EMBEDDING_DEVICE", "tpu"),
    ("CORPUSMEM_ARCHIVE_MAX_RATIO", "0.5"),
    ("CORPUSMEM_SERVE_CACHE_SHARE", "1.5"),
])
def test_a_bad_value_names_the_variable(env, value):
    with pytest.raises(SettingsError, match=env):
        load_settings({env: value})


def test_every_setting_maps_to_a_field():
    settings = load_settings({})
    for s in SETTINGS:
        assert hasattr(settings, s.field), s.env
