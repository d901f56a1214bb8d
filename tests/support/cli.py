"""`corpusmem ARGV...` run in the test's own process, against a test's memory."""

from __future__ import annotations

import pytest

from jobs.settings import Settings


def corpusmem(settings: Settings, monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    """`corpusmem ARGV...` in this process (its Ray is the session's), with this memory's settings."""
    from jobs import cli

    for env, value in (("CORPUSMEM_DSN", settings.dsn), ("CORPUSMEM_OBJECT_STORE", settings.object_store_uri),
                       ("CORPUSMEM_HOME", str(settings.home)),
                       ("CORPUSMEM_RETRY_ATTEMPTS", str(settings.retry_attempts)),
                       ("CORPUSMEM_RETRY_BACKOFF_S", str(settings.retry_backoff_s))):
        monkeypatch.setenv(env, value)
    return cli.main(list(argv))
