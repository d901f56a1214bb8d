"""Waiting for something another thread or process does, with a deadline and a clear failure."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 120.0, what: str = "the condition") -> T:
    """The first truthy answer of `condition`, polled every 50 ms; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def wait_until_serving(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 300) -> None:
    """Until `corpusmem serve` at `url` answers `/healthz`; fails with its log's tail if it exits
    or takes longer than `timeout_s`."""
    deadline = time.time() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.time() > deadline:
            pytest.fail(f"corpusmem serve did not come up:\n{log.read_text()[-3000:]}")
        time.sleep(1)
