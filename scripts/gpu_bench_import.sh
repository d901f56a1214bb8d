#!/usr/bin/env bash
# `corpusmem bench import` on this machine's GPU: the same table as on a CPU machine, with the
# embedder actors on the GPU (CORPUSMEM_EMBEDDING_EXECUTION=auto picks torch there) and the
# floor encoded on the GPU too.
#
#   scripts/gpu_bench_import.sh [--docs N] [--locomo DIR] [any other `bench import` option]
#
# VENV: the virtual environment to create or reuse (default .venv-gpu, shared with
#   scripts/gpu_extract.sh: vLLM brings its own CUDA torch, which the CPU .venv must not get).
# OUT: where the table and its JSON go (default .corpusmem-gpu/bench-import-<time>).
set -euo pipefail

cd "$(dirname "$0")/.."

. scripts/gpu_venv.sh
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'torch sees no GPU')"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$PWD/.corpusmem-gpu/bench-import-$stamp}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 CORPUSMEM_EMBEDDING_EXECUTION=${CORPUSMEM_EMBEDDING_EXECUTION:-auto}
"$VENV/bin/corpusmem" bench import --keep "$OUT/work" --json "$OUT/bench_import.json" "$@" | tee "$OUT/bench_import.txt"
echo "table and figures in $OUT" >&2
