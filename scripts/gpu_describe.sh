#!/usr/bin/env bash
# Describe generated images (a diagram, a chart, a scanned page) with a vision-language model in
# vLLM on this machine's GPU, through the prompt and parser of pipeline/documents/ocr_describe.py;
# records the model's answers beside the hand-written ones of tests/fixtures/llm/describe.* and
# prints what the parser made of each, with the time per image.
#
#   VLM_MODEL=/models/Qwen2.5-VL-7B-Instruct scripts/gpu_describe.sh
#
# VLM_MODEL (required): a local folder of a multimodal model vLLM serves (config.json, weights,
#   tokenizer, processor); nothing is downloaded.
# VENV: the virtual environment to create or reuse (default .venv-gpu, see scripts/gpu_venv.sh).
# OUT: where the recorded answers go (default .corpusmem-gpu/describe-<time>).
set -euo pipefail

cd "$(dirname "$0")/.."

if [ -z "${VLM_MODEL:-}" ]; then
    echo "VLM_MODEL is not set: give a local multimodal model folder, e.g." >&2
    echo "VLM_MODEL=/models/Qwen2.5-VL-7B-Instruct $0 ; nothing is downloaded" >&2
    exit 2
fi
if [ ! -f "$VLM_MODEL/config.json" ]; then
    echo "VLM_MODEL=$VLM_MODEL: no model there (no config.json)" >&2
    exit 2
fi
. scripts/gpu_venv.sh

OUT=${OUT:-$PWD/.corpusmem-gpu/describe-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"$PY" - "$VLM_MODEL" "$OUT" <<'PYEOF'
import io
import json
import sys
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from vllm import LLM, SamplingParams
from vllm.sampling_params import StructuredOutputsParams

from pipeline.documents.ocr_describe import describe_messages, parse_description, schema

model, out = sys.argv[1], Path(sys.argv[2])
font = ImageFont.load_default(size=28)


def png(image: Image.Image) -> bytes:
    data = io.BytesIO()
    image.save(data, "PNG")
    return data.getvalue()


def diagram() -> Image.Image:
    image = Image.new("RGB", (1200, 500), "white")
    draw = ImageDraw.Draw(image)
    for i, name in enumerate(("Ingest", "Convert", "Write")):
        x = 80 + i * 380
        draw.rectangle((x, 150, x + 240, 260), outline="black", width=4)
        draw.text((x + 40, 190), name, fill="black", font=font)
        if i < 2:
            draw.line((x + 240, 205, x + 380, 205), fill="black", width=4)
    draw.rectangle((460, 350, 700, 460), outline="blue", width=4)
    draw.text((540, 390), "OCR", fill="blue", font=font)
    draw.line((580, 350, 580, 260), fill="blue", width=4)
    return image


def chart() -> Image.Image:
    image = Image.new("RGB", (900, 600), "white")
    draw = ImageDraw.Draw(image)
    draw.line((80, 520, 860, 520), fill="black", width=3)
    draw.line((80, 520, 80, 60), fill="black", width=3)
    for i, (month, value) in enumerate(zip(("Jan", "Feb", "Mar", "Apr", "May", "Jun"), (120, 160, 210, 260, 330, 400))):
        x = 120 + i * 120
        draw.rectangle((x, 520 - value, x + 70, 520), fill="steelblue")
        draw.text((x + 5, 530), month, fill="black", font=font)
    draw.text((300, 20), "Invoices per month", fill="black", font=font)
    return image


def page() -> Image.Image:
    image = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    lines = ["ACME Hotels, Lisbon", "Receipt no. 4471, 12 May 2025", "Guest: Omar Haddad",
             "Two nights, double room: EUR 318.00", "Paid by card."]
    for i, line in enumerate(lines):
        draw.text((100, 120 + i * 60), line, fill="black", font=font)
    return image


images = {"diagram": diagram(), "chart": chart(), "receipt": page()}
llm = LLM(model=model, limit_mm_per_prompt={"image": 1}, max_model_len=8192)
params = SamplingParams(temperature=0.0, max_tokens=400,
                        structured_outputs=StructuredOutputsParams(json=json.dumps(schema())))
conversations = [describe_messages(png(image), "image/png", filename=f"{name}.png", ocr_text="")
                 for name, image in images.items()]
started = time.perf_counter()
answers = llm.chat(conversations, params)
seconds = time.perf_counter() - started
for name, answer in zip(images, answers):
    text = answer.outputs[0].text
    (out / f"describe.{name}.json").write_text(text)
    print(f"{name}: {parse_description(text)}")
print(f"{len(images)} images described in {seconds:.1f} s ({seconds / len(images):.2f} s per image); "
      f"answers recorded in {out}")
PYEOF
