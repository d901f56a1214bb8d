#!/usr/bin/env bash
# Import the example corpus with the vllm extractor on this machine's GPU, and report claims/s,
# tokens/s (from the cost ledger) and GPU memory. Also records the real model's answers for the
# two hand-built chunks whose hand-written answers are in tests/fixtures/llm/.
#
#   CORPUSMEM_LLM_MODEL=/models/Qwen3-8B scripts/gpu_extract.sh [--no-record]
#
# CORPUSMEM_LLM_MODEL (required): a local model folder (config.json, weights, tokenizer); nothing is
#   downloaded.
# VENV: the virtual environment to create or reuse (default .venv-gpu; vLLM brings its own CUDA
#   torch, which the CPU-only .venv of `make install` must not get).
# CORPUSMEM_HOME: where the memory goes (default: a fresh folder under .corpusmem-gpu/, so the
#   numbers are this run's alone). With CORPUSMEM_DSN set, only rows written by this run count.
# OUT: where recorded answers and the report go (default .corpusmem-gpu/out-<time>).
set -euo pipefail

cd "$(dirname "$0")/.."

record=1
for arg in "$@"; do
    case "$arg" in
        --no-record) record=0 ;;
        *) echo "usage: CORPUSMEM_LLM_MODEL=<model folder> $0 [--no-record]" >&2; exit 2 ;;
    esac
done

if [ -z "${CORPUSMEM_LLM_MODEL:-}" ]; then
    echo "CORPUSMEM_LLM_MODEL is not set: give a local model folder (config.json, weights, tokenizer)," >&2
    echo "e.g. CORPUSMEM_LLM_MODEL=/models/Qwen3-8B $0 ; nothing is downloaded" >&2
    exit 2
fi
if [ ! -f "$CORPUSMEM_LLM_MODEL/config.json" ]; then
    echo "CORPUSMEM_LLM_MODEL=$CORPUSMEM_LLM_MODEL: no model there (no config.json)" >&2
    exit 2
fi
. scripts/gpu_venv.sh

stamp=$(date -u +%Y%m%dT%H%M%SZ)
export CORPUSMEM_HOME=${CORPUSMEM_HOME:-$PWD/.corpusmem-gpu/home-$stamp}
OUT=${OUT:-$PWD/.corpusmem-gpu/out-$stamp}
mkdir -p "$OUT"
export CORPUSMEM_EXTRACTOR=vllm HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# Peak GPU memory during the run: sample every second in the background, stop it by its PID.
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -l 1 > "$OUT/gpu_memory_mib.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

started_at=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
t0=$(date +%s.%N)
"$VENV/bin/corpusmem" import examples/team --modified-at-from path --extractor vllm | tee "$OUT/import.txt"
t1=$(date +%s.%N)

if [ "$record" = 1 ]; then
    # The same two chunks the hand-written fixtures answer, built by the test that parses them.
    "$PY" - "$OUT" <<'EOF'
import json
import sys
from pathlib import Path

sys.path.insert(0, "tests/pipeline")
import ray

from actors.vllm_extractor import VLLMExtractorConfig, build_claimify_processor, build_selection_processor
from jobs import runtime
from pipeline import llm_io
from test_llm_io import spec_ctx, standup_ctx

out = Path(sys.argv[1]) / "recorded"
out.mkdir(parents=True, exist_ok=True)
config = VLLMExtractorConfig(model_path=runtime.settings().llm_model)
runtime.init_ray()
rows = [{"name": name, "ctx_json": llm_io.ctx_to_json(ctx)}
        for name, ctx in (("standup", standup_ctx()), ("spec", spec_ctx()))]
names = {row["ctx_json"]: row["name"] for row in rows}
# One step at a time: two engines at once would need two GPUs.
selected = build_selection_processor(config)(ray.data.from_items(rows)).take_all()
for row in selected:
    (out / f"{names[row['ctx_json']]}.selection.json").write_text(row.get("selection_text") or "")
claimified = build_claimify_processor(config)(ray.data.from_items(
    [{"ctx_json": r["ctx_json"], "selection_json": r["selection_json"]} for r in selected])).take_all()
for row in claimified:
    (out / f"{names[row['ctx_json']]}.claimify.json").write_text(row.get("claimify_text") or "")
    error = row.get("__inference_error__")
    if error:
        print(f"{names[row['ctx_json']]}: inference error: {error}", file=sys.stderr)
print(f"recorded answers in {out}")
EOF
fi

kill "$sampler" 2>/dev/null || true

"$PY" - "$started_at" "$t0" "$t1" "$OUT" <<'EOF'
import sys
from datetime import datetime

from jobs import runtime
from sql import store

started_at, t0, t1, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
since = datetime.fromisoformat(started_at[:26] + "+00:00")
wall = t1 - t0
with store.connect(store.resolve_dsn(runtime.settings())) as conn:
    claims = conn.execute("SELECT count(*) FROM claims WHERE created_at >= %s", (since,)).fetchone()[0]
    tokens_in, tokens_out, device_seconds, calls = conn.execute(
        "SELECT coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), coalesce(sum(device_seconds), 0),"
        " coalesce(sum(calls), 0) FROM cost_ledger WHERE occurred_at >= %s AND backend = 'vllm'",
        (since,)).fetchone()
samples = [int(line) for line in open(f"{out}/gpu_memory_mib.txt") if line.strip().isdigit()]
lines = [
    f"import wall time      {wall:.1f} s (includes starting Ray and loading the model)",
    f"claims                {claims}  ->  {claims / wall:.2f} claims/s",
    f"model calls           {calls}",
    f"tokens in / out       {tokens_in} / {tokens_out}",
    f"output tokens/s       {tokens_out / wall:.1f} (wall)",
    f"all tokens/s          {(tokens_in + tokens_out) / wall:.1f} (wall)",
    f"engine seconds        {device_seconds:.1f} (per-request engine time summed; requests overlap)",
    f"peak GPU memory       {max(samples) if samples else 'n/a'} MiB (sampled each second)",
]
report = "\n".join(lines)
print(report)
open(f"{out}/report.txt", "w").write(report + "\n")
EOF
echo "GPU memory now:"
nvidia-smi --query-gpu=memory.used --format=csv
echo "report and recordings: $OUT"
