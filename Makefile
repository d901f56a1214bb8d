# The README's two commands: `make demo` and `make test`. Both create the environment first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of torch; an unpinned torch pulls a multi-GB CUDA build.
TORCH_CPU ?= torch==2.13.0

.PHONY: install demo test bench notebooks clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_CPU)"
	$(PY) -m pip install --quiet -e ".[dev,vectordb]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/corpusmem demo

test: install
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q --durations=10

bench: install
	$(VENV)/bin/corpusmem bench import

# JupyterLab on notebooks/ (each opens CORPUSMEM_DSN / CORPUSMEM_HOME, or the example memory)
notebooks: install
	$(PY) -m pip install --quiet -e ".[notebooks]"
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

clean:
	rm -rf $(VENV) .corpusmem
