"""Builders of scanned pages for the OCR tests and bench/ocr.py (issue #36).

Text is drawn with a real font (DejaVu Sans, Noto Sans CJK from Debian's
fonts-dejavu-core / fonts-noto-cjk, else Pillow's own) onto a white page;
``image_pdf`` wraps pages as an image-only PDF, the way a scanner writes one.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

LATIN_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",)
CJK_FONTS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
)


def font(size: int, cjk: bool = False) -> Any:
    """A TrueType font of ``size`` px: a system one when installed."""
    from PIL import ImageFont

    for path in CJK_FONTS if cjk else LATIN_FONTS:
        if Path(path).is_file():
            return ImageFont.truetype(path, size)
    if cjk:
        return None
    return ImageFont.load_default(size)


def page(
    lines: list[str], *, dpi: int = 300, width_in: float = 8.27,
    height_in: float = 11.69, pt: float = 12, cjk: bool = False,
) -> Any:  # fmt: skip
    """A gray page of ``lines`` at ``dpi``, text of ``pt`` points, 1-inch margins."""
    from PIL import Image, ImageDraw

    size = round(pt * dpi / 72)
    image = Image.new("L", (round(width_in * dpi), round(height_in * dpi)), 255)
    draw = ImageDraw.Draw(image)
    face = font(size, cjk)
    y = dpi
    for line in lines:
        draw.text((dpi, y), line, font=face, fill=0)
        y += round(size * 1.5)
    return image


def strip(lines: list[str], *, px: int = 40, cjk: bool = False) -> Any:
    """A screenshot-sized image: ``lines`` of ``px`` pixel text, cropped to them."""
    from PIL import Image, ImageDraw

    face = font(px, cjk)
    width = max(int(face.getlength(x)) for x in lines) + 2 * px
    image = Image.new("RGB", (width, round(px * 1.5) * len(lines) + 2 * px), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((px, px + i * round(px * 1.5)), line, font=face, fill=(20, 20, 20))
    return image


def image_pdf(pages: list[Any], dpi: int = 300) -> bytes:
    """An image-only PDF (no text layer) of ``pages``, as Pillow writes it."""
    buf = io.BytesIO()
    pages[0].save(buf, "PDF", save_all=True, append_images=pages[1:], resolution=dpi)
    return buf.getvalue()


def encode(image: Any, fmt: str, **options: Any) -> bytes:
    """``image`` saved in ``fmt`` (PNG, JPEG, TIFF, WEBP, GIF)."""
    buf = io.BytesIO()
    image.save(buf, fmt, **options)
    return buf.getvalue()


def mixed_pdf(text_pdf: bytes, scanned_pdf: bytes) -> bytes:
    """The pages of ``text_pdf`` followed by those of ``scanned_pdf`` (pypdf)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for data in (text_pdf, scanned_pdf):
        for p in PdfReader(io.BytesIO(data)).pages:
            writer.add_page(p)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
