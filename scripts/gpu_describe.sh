#!/usr/bin/env bash
# Import generated images and a scanned PDF with visual description on (CORPUSMEM_DESCRIBE_MODEL):
# OCR, then the vision-language model in vLLM on this machine's GPU through the import's describe
# step (actors/vllm_describer.py, a Ray Data LLM processor), then claims. Prints what the model
# wrote for each page as it landed in document.md, records it beside the hand-written answers of
# tests/fixtures/llm/describe.*, and reports the model's calls, tokens and seconds from the cost
# ledger.
#
#   CORPUSMEM_DESCRIBE_MODEL=/models/Qwen2.5-VL-7B-Instruct scripts/gpu_describe.sh
#
# CORPUSMEM_DESCRIBE_MODEL (required): a local folder of a multimodal model vLLM serves
#   (config.json, weights, tokenizer, processor); nothing is downloaded.
# VENV: the virtual environment to create or reuse (default .venv-gpu, see scripts/gpu_venv.sh).
# CORPUSMEM_HOME: where the memory goes (default: a fresh folder under .corpusmem-gpu/).
# OUT: where the corpus, the recorded descriptions and the report go (default
#   .corpusmem-gpu/describe-<time>).
set -euo pipefail

cd "$(dirname "$0")/.."

if [ -z "${CORPUSMEM_DESCRIBE_MODEL:-}" ]; then
    echo "CORPUSMEM_DESCRIBE_MODEL is not set: give a local multimodal model folder, e.g." >&2
    echo "CORPUSMEM_DESCRIBE_MODEL=/models/Qwen2.5-VL-7B-Instruct $0 ; nothing is downloaded" >&2
    exit 2
fi
if [ ! -f "$CORPUSMEM_DESCRIBE_MODEL/config.json" ]; then
    echo "CORPUSMEM_DESCRIBE_MODEL=$CORPUSMEM_DESCRIBE_MODEL: no model there (no config.json)" >&2
    exit 2
fi
. scripts/gpu_venv.sh

stamp=$(date -u +%Y%m%dT%H%M%SZ)
export CORPUSMEM_HOME=${CORPUSMEM_HOME:-$PWD/.corpusmem-gpu/home-describe-$stamp}
OUT=${OUT:-$PWD/.corpusmem-gpu/describe-$stamp}
mkdir -p "$OUT/corpus" "$OUT/recorded"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

# The corpus: a diagram, a chart, a receipt photographed as a JPEG, a photo with no words in it
# (which OCR recognises nothing on, so its document is its description), and a two-page scanned
# PDF (images only, no text layer), drawn here so the run needs nothing but the model.
"$PY" - "$OUT/corpus" <<'PYEOF'
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

out = Path(sys.argv[1])
font = ImageFont.load_default(size=28)


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


def page(lines: list[str]) -> Image.Image:
    image = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((100, 120 + i * 60), line, fill="black", font=font)
    return image


def hills() -> Image.Image:
    image = Image.new("RGB", (1200, 800), (135, 180, 220))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 520, 1200, 800), fill=(70, 140, 60))
    draw.ellipse((900, 64, 1056, 224), fill=(250, 220, 90))
    draw.polygon([(204, 520), (420, 224), (636, 520)], fill=(120, 110, 100))
    draw.polygon([(516, 520), (756, 264), (996, 520)], fill=(100, 95, 90))
    draw.rectangle((120, 600, 324, 720), fill=(160, 60, 50))
    draw.polygon([(96, 600), (216, 520), (336, 600)], fill=(90, 40, 30))
    return image


diagram().save(out / "diagram.png")
hills().save(out / "hills.jpg", quality=90)
chart().save(out / "chart.png")
page(["ACME Hotels, Lisbon", "Receipt no. 4471, 12 May 2025", "Guest: Omar Haddad",
      "Two nights, double room: EUR 318.00", "Paid by card."]).save(out / "receipt.jpg", quality=90)
minutes = [page(["Minutes of the platform council, 3 June 2025", "Present: Grace Liu (chair), Marco Rossi",
                 "The council approved the OCR stage for scanned contracts."]),
           page(["Signed:", "Grace Liu, chair"])]
minutes[0].save(out / "minutes.pdf", "PDF", save_all=True, append_images=minutes[1:], resolution=150.0)
PYEOF

t0=$(date +%s.%N)
"$VENV/bin/corpusmem" import "$OUT/corpus" | tee "$OUT/import.txt"
t1=$(date +%s.%N)

"$PY" - "$OUT" "$t0" "$t1" <<'PYEOF'
import sys
from pathlib import Path

from actors.object_store import ObjectStore
from jobs import runtime
from sql.store import authority as store

out, wall = Path(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2])
settings = runtime.settings()
marker = "\n### Description ("
with store.connect(store.resolve_dsn(settings)) as conn:
    documents = conn.execute(
        "SELECT d.filename, r.object_key, r.converter_version FROM documents d JOIN versions v USING (doc_id)"
        " JOIN representations r USING (version_id) ORDER BY d.filename").fetchall()
    calls, tokens_in, tokens_out, seconds = conn.execute(
        "SELECT coalesce(sum(calls), 0), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0),"
        " coalesce(sum(device_seconds), 0) FROM cost_ledger WHERE stage = 'describe'").fetchone()
    claims = conn.execute("SELECT count(*) FROM claims").fetchone()[0]
described = 0
for filename, key, converter_version in documents:
    markdown = ObjectStore(settings.object_store_uri).get(key).decode("utf-8")
    (out / "recorded" / f"{filename}.md").write_text(markdown)
    sections = markdown.count(marker)
    described += sections
    print(f"--- {filename} ({converter_version}): {sections} page(s) described")
    for part in markdown.split(marker)[1:]:
        print("### Description (" + part.split("\n## Page")[0].rstrip())
report = "\n".join([
    f"import wall time      {wall:.1f} s (includes starting Ray, OCR and loading the model)",
    f"pages described       {described} in {len(documents)} documents",
    f"describe calls        {calls} (one per landed document OCR read)",
    f"tokens in / out       {tokens_in} / {tokens_out}",
    f"engine seconds        {seconds:.1f} (per-request engine time summed; requests overlap)",
    f"claims                {claims}",
])
print(report)
(out / "report.txt").write_text(report + "\n")
PYEOF
echo "corpus, document.md of each document and the report: $OUT"
