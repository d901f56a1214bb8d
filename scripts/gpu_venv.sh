# Sourced by the GPU scripts: checks for an NVIDIA GPU and makes (or reuses) their environment.
# VENV: the virtual environment (default .venv-gpu): vLLM brings its own CUDA torch, which the
#   CPU-only .venv of `make install` must not get. Sets PY to its python.
if ! command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi not found: this script needs an NVIDIA GPU and its driver" >&2
    exit 2
fi
VENV=${VENV:-.venv-gpu}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if [ ! -f "$VENV/.installed-gpu" ] || [ pyproject.toml -nt "$VENV/.installed-gpu" ]; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    # dev: gpu_extract.sh's recording step builds its chunks with the test module that parses the fixtures.
    "$VENV/bin/python" -m pip install --quiet -e ".[gpu,dev]"
    touch "$VENV/.installed-gpu"
fi
PY="$VENV/bin/python"
