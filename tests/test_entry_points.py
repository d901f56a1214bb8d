"""Every entry point that starts an import builds its options from the settings the same way:
a setting that shapes an import and is read by one of them but ignored by another fails here.

No Ray and no database: each entry point's options builder is called directly.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from jobs import cli, import_corpus, process, retry, shutdown
from jobs.import_corpus import ImportOptions
from jobs.settings import SETTINGS, Settings, SettingsError, load_settings

# A value other than the default for the settings whose values are constrained or matter here; any
# other setting is swept with the first of `_GUESSES` it accepts.
OTHER = {
    "CORPUSMEM_HOME": "/tmp/elsewhere",
    "CORPUSMEM_DSN": "postgresql://u@h/db",
    "CORPUSMEM_OBJECT_STORE": "s3://bucket/prefix",
    "CORPUSMEM_EMBEDDING_MODEL": "/models/other",
    "CORPUSMEM_EMBEDDING_EXECUTION": "onnx",
    "CORPUSMEM_EMBEDDING_DEVICE": "cpu",
    "CORPUSMEM_EMBED_BATCH_SIZE": "64",
    "CORPUSMEM_CHUNK_TARGET_CHARS": "1200",
    "CORPUSMEM_MAX_FILE_BYTES": "1000",
    "CORPUSMEM_ARCHIVE_MAX_BYTES": "2000",
    "CORPUSMEM_ARCHIVE_MAX_RATIO": "50",
    "CORPUSMEM_ARCHIVE_MAX_MEMBERS": "10",
    "CORPUSMEM_EXTRACTOR": "openai",
    "CORPUSMEM_LLM_MODEL": "served-model",
    "CORPUSMEM_LLM_BASE_URL": "http://127.0.0.1:8001/v1",
    "CORPUSMEM_LLM_DEVICE": "cpu",
    "CORPUSMEM_RETRY_ATTEMPTS": "5",
    "CORPUSMEM_RETRY_BACKOFF_S": "0.5",
    "CORPUSMEM_RETRY_BACKOFF_MAX_S": "9",
    "CORPUSMEM_OCR_MAX_PIXELS": "50000000",
    "CORPUSMEM_CONVERSION_ROUTES": ".log=passthrough",
    "CORPUSMEM_SERVE_CACHE_SHARE": "0.25",
}
_GUESSES = ("7", "true", "false", "0.5", "read:abc", "/tmp/corpusmem-other", "https://app.example.com")


def other_value(env: str) -> str:
    """A value of `env` that parses and differs from its default."""
    if env in OTHER:
        return OTHER[env]
    default = load_settings({})
    field = next(s.field for s in SETTINGS if s.env == env)
    for guess in _GUESSES:
        try:
            parsed = load_settings({env: guess})
        except SettingsError:
            continue
        if getattr(parsed, field) != getattr(default, field):
            return guess
    raise AssertionError(f"no other value found for {env}: give it one in OTHER")


# Every way an import starts: `corpusmem import`, `corpusmem retry`, the processor that drains
# what `POST /ingest` queued.
ENTRY_POINTS: dict[str, Callable[[Settings], ImportOptions]] = {
    "import": lambda s: import_corpus.options_from_args(cli.build_parser().parse_args(["import", "docs"]), s),
    "retry": lambda s: retry.options(s, ("00000000-0000-0000-0000-000000000001",)),
    "POST /ingest processor": lambda s: process.options(s, ("00000000-0000-0000-0000-000000000001",)),
}


@pytest.mark.parametrize("env", [s.env for s in SETTINGS])
def test_a_setting_changes_the_options_of_every_entry_point_or_of_none(env):
    base = {name: build(load_settings({})) for name, build in ENTRY_POINTS.items()}
    varied = {name: build(load_settings({env: other_value(env)})) for name, build in ENTRY_POINTS.items()}
    changed = sorted(name for name in ENTRY_POINTS if varied[name] != base[name])
    assert changed in ([], sorted(ENTRY_POINTS)), f"{env} is read by {changed} and ignored by the others"


@pytest.mark.parametrize("backend", ["rules", "vllm", "openai"])
def test_every_entry_point_runs_the_extractor_and_normalizer_the_setting_names(backend):
    settings = load_settings({"CORPUSMEM_EXTRACTOR": backend, "CORPUSMEM_LLM_MODEL": "m",
                              "CORPUSMEM_LLM_BASE_URL": "http://127.0.0.1:8001/v1"})
    for name, build in ENTRY_POINTS.items():
        extractor = build(settings).extractor
        assert (extractor.backend, extractor.llm_model, extractor.llm_base_url) == (
            backend, "m", "http://127.0.0.1:8001/v1"), name


def test_the_import_flag_overrides_the_setting():
    args = cli.build_parser().parse_args(["import", "--extractor", "rules", "docs"])
    assert import_corpus.options_from_args(args, load_settings({"CORPUSMEM_EXTRACTOR": "openai"})).extractor.backend \
        == "rules"


def test_building_options_takes_no_signals(monkeypatch):
    installed: list[dict] = []
    monkeypatch.setattr(shutdown, "install", lambda **kw: installed.append(kw))
    before = signal.getsignal(signal.SIGINT)
    for build in ENTRY_POINTS.values():
        build(load_settings({}))
    assert installed == [] and signal.getsignal(signal.SIGINT) is before
