"""Images as documents (issue #36): PNG, JPEG, TIFF, WebP, GIF, read by OCR.

Every frame of a TIFF is a page (``page`` set, cited as ``p. N``); a GIF or
an animated WebP gives its first frame. An icon (under :data:`MIN_SIDE`
pixels a side) and an image in which OCR finds no words are skipped as
``no-text-found``; with OCR off or not installed the image is skipped as
``no-text-layer`` with how to turn it on. Pillow is imported only here.

Bounds: an image over ``OcrSettings.max_pixels`` is decoded at a reduced
size (JPEG's draft mode) or scaled down after decoding when that stays
under :data:`MAX_DECODE_FACTOR` times the cap; anything larger is
``too-large`` before a pixel is decoded. Each page has the OCR page budget,
the file the OCR file budget.
"""

from __future__ import annotations

import io
import warnings
from typing import TYPE_CHECKING

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.ocr import (
    OcrBudget,
    OcrSettings,
    PageCache,
    fit,
    unavailable_message,
)
from docindex.ingest.extract.pdf import ocr_page
from docindex.models import Extracted, Unit

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

MIN_SIDE = 48  # an image this small on both sides is an icon
MIN_PIXELS = 48 * 200  # or this few pixels in all (a 16 px tall strip)
MAX_DECODE_FACTOR = 4  # decode at most 4 x max_pixels before scaling down


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """OCR an image, one unit per frame (TIFF) or one unit.

    Raises:
        ExtractionError: ``no-text-layer`` when OCR is off or cannot run,
            ``no-text-found`` for an icon or an image without words,
            ``too-large`` past the pixel bounds, ``corrupt`` when Pillow cannot
            read it, ``timeout`` when every page took too long.
    """
    why_not = unavailable_message(limits.ocr)
    if why_not is None and limits.ocr is not None:
        why_not = limits.ocr.scan_spent()  # the scan's OCR time is over (#45)
    try:
        from PIL import Image
    except ImportError:
        raise ExtractionError("no-text-layer", f"an image; {why_not}") from None
    settings = limits.ocr
    with warnings.catch_warnings():
        # We check the size ourselves below (Pillow warns past ~89 Mpx).
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        image, settings = _opened(data, why_not, settings)
        cap = settings.max_pixels
        frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
        budget = OcrBudget(settings)
        units: list[Unit] = []
        truncated = unread = ""
        slow = 0
        cache = PageCache(data, settings)
        for index in range(min(frames, limits.max_pages)):
            text = cache.get(index)
            if text is not None:
                if text.strip():
                    units.append(
                        Unit(text=text, page=index + 1 if frames > 1 else None)
                    )
                continue
            if budget.left() <= 0:
                if budget.by_scan():  # the next scan reads it (#45)
                    unread = f"{budget.spent()}; the next scan reads it"
                else:
                    truncated = (
                        f"ocr-time:{settings.file_timeout_s:g}s at page {index + 1}"
                    )
                break
            try:
                frame = _frame(image, index, cap)
            except ExtractionError:
                raise
            except Exception as exc:
                raise ExtractionError("corrupt", f"cannot decode: {exc}") from None
            text = ocr_page(frame, budget)
            if text is None:
                slow += 1
                continue
            cache.put(index, text)
            if text.strip():
                units.append(Unit(text=text, page=index + 1 if frames > 1 else None))
        cache.save()
    if budget.by_scan() and budget.left() <= 0 and (slow or unread):
        unread = f"{budget.spent()}; the next scan reads it"
    if not units:
        if unread:
            raise ExtractionError("no-text-layer", f"an image; {unread}")
        if slow:
            raise ExtractionError("timeout", budget.errors())
        raise ExtractionError("no-text-found", "OCR found no words in this image")
    meta: dict[str, str] = {}
    if frames > limits.max_pages:
        truncated = truncated or f"pages:{limits.max_pages}/{frames}"
    if truncated:
        meta["truncated"] = truncated
    if unread:
        meta["no_text_layer"] = f"frames not read: {unread}"
    if slow:
        meta["page_errors"] = budget.errors()
    return Extracted(units=tuple(units), title=None, kind="image", meta=meta)


def _opened(
    data: bytes, why_not: str | None, settings: OcrSettings | None
) -> tuple[PILImage, OcrSettings]:
    """The image, opened (not decoded), when OCR will read it.

    Raises:
        ExtractionError: ``corrupt``, ``too-large``, ``no-text-found`` for an
            icon, ``no-text-layer`` when OCR is off or cannot run.
    """
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
    except Image.DecompressionBombError as exc:
        raise ExtractionError("too-large", str(exc)[:200]) from None
    except Exception as exc:  # not an image, or a damaged header
        raise ExtractionError("corrupt", _unreadable(exc)) from None
    if (width < MIN_SIDE and height < MIN_SIDE) or width * height < MIN_PIXELS:
        raise ExtractionError("no-text-found", f"an icon ({width} x {height} pixels)")
    if why_not is not None or settings is None:
        raise ExtractionError("no-text-layer", f"an image; {why_not}")
    cap = settings.max_pixels
    if width * height > cap * MAX_DECODE_FACTOR and image.format != "JPEG":
        raise ExtractionError(
            "too-large",
            f"{width} x {height} pixels, over the OCR bound of "
            f"{cap * MAX_DECODE_FACTOR:,}",
        )
    return image, settings


def _unreadable(exc: Exception) -> str:
    """Why Pillow could not open an image, without its buffer's repr (#45)."""
    if type(exc).__name__ == "UnidentifiedImageError":
        return "not a readable image: Pillow does not know its format"
    return f"not a readable image: {exc}"


def _frame(image: PILImage, index: int, cap: int) -> PILImage:
    """Frame ``index`` decoded in gray, scaled to at most ``cap`` pixels."""
    from PIL import ImageOps

    image.seek(index)
    width, height = image.size
    if image.format == "JPEG" and width * height > cap:
        scale = fit(width, height, 1.0, cap)
        image.draft("L", (int(width * scale), int(height * scale)))
    frame = (ImageOps.exif_transpose(image) or image).convert("L")
    width, height = frame.size
    if width * height > cap:
        scale = fit(width, height, 1.0, cap)
        frame = frame.resize((max(int(width * scale), 1), max(int(height * scale), 1)))
    return frame
