"""Scanned pages the tests render themselves: known sentences drawn by Pillow into PNG, JPEG,
multi-page TIFF and a PDF of images with no text layer; and the character error rate of what came
back. Pillow's own font (`ImageFont.load_default`) is used, so nothing depends on the host's fonts.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

# An A4 page scanned at 150 DPI, its text at about 11 pt: what an office scanner makes. (A strip
# just around the text is enlarged by the detector, which then cuts lines and drops spaces.)
DPI = 150
A4 = (1240, 1754)
FONT_PX = 32
_MARGIN = 100


def render(lines: list[str], font_px: int = FONT_PX, size: tuple[int, int] = A4) -> Image.Image:
    """A white page with `lines` in black, one under the other, from the top left margin."""
    font = ImageFont.load_default(size=font_px)
    step = int(font_px * 1.8)
    page = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(page)
    for i, line in enumerate(lines):
        draw.text((_MARGIN, _MARGIN + i * step), line, fill="black", font=font)
    return page


def photo(size: tuple[int, int] = (1200, 800)) -> Image.Image:
    """A picture with no words in it, as a photo is: sky, a meadow, two hills, the sun and a house."""
    w, h = size
    image = Image.new("RGB", size, (135, 180, 220))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, h * 0.65, w, h), fill=(70, 140, 60))
    draw.ellipse((w * 0.75, h * 0.08, w * 0.88, h * 0.28), fill=(250, 220, 90))
    draw.polygon([(w * 0.17, h * 0.65), (w * 0.35, h * 0.28), (w * 0.53, h * 0.65)], fill=(120, 110, 100))
    draw.polygon([(w * 0.43, h * 0.65), (w * 0.63, h * 0.33), (w * 0.83, h * 0.65)], fill=(100, 95, 90))
    draw.rectangle((w * 0.1, h * 0.75, w * 0.27, h * 0.9), fill=(160, 60, 50))
    draw.polygon([(w * 0.08, h * 0.75), (w * 0.18, h * 0.65), (w * 0.28, h * 0.75)], fill=(90, 40, 30))
    return image


def encode(pages: list[Image.Image], fmt: str) -> bytes:
    """`pages` as one file: PNG and JPEG take the first page, TIFF and PDF all of them (the PDF
    holds the images only, no text layer)."""
    out = io.BytesIO()
    first, rest = pages[0], pages[1:]
    if fmt in ("TIFF", "PDF"):
        first.save(out, fmt, save_all=True, append_images=rest, **({"resolution": float(DPI)} if fmt == "PDF" else {}))
    else:
        first.save(out, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return out.getvalue()


def _distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(expected: str, got: str) -> float:
    """Character error rate: edit distance over the expected length, whitespace runs as one space."""
    expected, got = " ".join(expected.split()), " ".join(got.split())
    return _distance(expected, got) / max(len(expected), 1)
