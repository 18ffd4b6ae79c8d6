"""PDF extractor: one citable :class:`Unit` per page, with pypdf.

pypdf is imported inside :func:`extract` so that ``docindex --help`` never pays
for it. Every failure leaves as an :class:`ExtractionError` with a skip reason.

Time is bounded per page, not per file (issue #23): pages are read one at a
time, each under its own alarm (``ExtractLimits.page_timeout_s``); a page that
takes longer is left out and counted in ``page_errors``, and when the whole
file passes its budget (``timeout_s`` plus ``pdf_seconds_per_page`` a page, at
most ``pdf_timeout_s``) the pages read so far are kept and the file is
``truncated``. So a 1,000-page manual indexes completely, and a pathological
one keeps what could be read. Opening the file (the xref, repairs) has the
office budget ``timeout_s``. The alarm shares SIGALRM with any timer already
running (a caller's own deadline still fires on time).

With OCR on (issue #36), pages whose text layer has under ``MIN_PAGE_CHARS``
characters and that hold an image are rendered by pypdfium2 and read by
tesseract (``ocr.py``), with OCR's own page and file budgets.
"""

from __future__ import annotations

import io
import logging
import math
import re
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import FrameType

    from PIL.Image import Image
    from pypdf import PdfReader

from docindex.errors import ExtractionError
from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.ocr import (
    DPI,
    MIN_PAGE_CHARS,
    OcrBudget,
    OcrSettings,
    PageCache,
    fit,
    unavailable_message,
)
from docindex.models import Extracted, Unit

_BLANK_RUN = re.compile(r"\n{4,}")
_TRAILING_WS = re.compile(r"[ \t\f\v]+$", re.MULTILINE)


def ocr_page(image: Image, budget: OcrBudget) -> str | None:
    """One page's OCR text, normalised; None when it ran past its time budget."""
    text = budget.read(image)
    return None if text is None else normalize_text(text)


def normalize_text(text: str) -> str:
    """Normalise extracted text: LF line ends, no NULs, no trailing spaces.

    CRLF, CR, vertical tab and the Unicode line/paragraph separators become
    ``\\n`` (so ``str.splitlines`` and ``split("\\n")`` agree on line numbers),
    trailing spaces are stripped from each line, runs of more than two blank
    lines collapse to two, and leading/trailing blank lines are dropped.

    Args:
        text: raw text from a parser.

    Returns:
        The normalised text.
    """
    text = text.replace("\r\n", "\n").replace("\x00", "")
    for sep in ("\r", "\v", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        if sep in text:
            text = text.replace(sep, "\n")
    text = _TRAILING_WS.sub("", text)
    text = _BLANK_RUN.sub("\n\n\n", text)
    return text.strip("\n")


def describe_error(exc: BaseException) -> str:
    """A one-line, bounded message for an unexpected parser exception."""
    lines = str(exc).strip().splitlines()
    message = lines[0][:200] if lines else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract the text layer of a PDF, one unit per page.

    Pages without text are left out (their numbers are kept on the others);
    pages beyond ``limits.max_pages`` are dropped and recorded in
    ``meta["truncated"]``.

    Args:
        data: the raw bytes of the file.
        name: the file name, used in messages only.
        limits: bounds for this file (pages, characters).

    Returns:
        The extracted pages with ``page`` set (1-based), ``kind="pdf"`` and the
        metadata title when there is one.

    Raises:
        ExtractionError: ``encrypted`` when the empty password does not open the
            file, ``no-text-layer`` when no page has text (scanned, needs OCR),
            ``corrupt`` for anything pypdf cannot parse.
    """
    # pypdf reports recoverable damage through logging (even at ERROR level, e.g.
    # "Advanced encoding ... not implemented yet") and warnings. Our tests turn
    # warnings into errors and the core never prints, so both are silenced; real
    # failures still arrive as exceptions.
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _extract(data, name, limits)
        except ExtractionError:
            raise
        except RecursionError:
            raise ExtractionError("corrupt", "PDF objects nested too deeply") from None
        except MemoryError:
            raise ExtractionError("too-large", "PDF needs too much memory") from None
        except Exception as exc:
            raise _classify(exc) from None


def _classify(exc: Exception) -> ExtractionError:
    """Map a pypdf exception to a skip reason."""
    from pypdf.errors import DependencyError, FileNotDecryptedError

    if isinstance(exc, FileNotDecryptedError):
        return ExtractionError("encrypted", "PDF is encrypted (password required)")
    if isinstance(exc, DependencyError):
        return ExtractionError("encrypted", f"PDF encryption not supported: {exc}")
    return ExtractionError("corrupt", describe_error(exc))


class _Overtime(BaseException):
    """Raised by the page alarm; a BaseException so pypdf's handlers let it pass."""


class _Alarm:
    """SIGALRM budgets for one step at a time, nested inside any running timer.

    Off the main thread (or without ``setitimer``) nothing is armed and only
    the between-page checks bound the time.
    """

    def __init__(self) -> None:
        self.armed = False
        self.outer_due = False

    def __enter__(self) -> _Alarm:
        if not hasattr(signal, "setitimer"):
            return self
        if threading.current_thread() is not threading.main_thread():
            return self
        self.outer_handler = signal.getsignal(signal.SIGALRM)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        self.outer_end = time.monotonic() + left if left else math.inf
        signal.signal(signal.SIGALRM, self._fire)
        self.armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.outer_handler)
        if self.outer_end != math.inf:  # give the caller's timer its time back
            left = max(self.outer_end - time.monotonic(), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left)

    @contextmanager
    def budget(self, seconds: float) -> Iterator[None]:
        """Raise :class:`_Overtime` if the block runs longer than ``seconds``."""
        if not self.armed:
            yield
            return
        outer_left = self.outer_end - time.monotonic()
        self.outer_due = outer_left <= seconds
        signal.setitimer(signal.ITIMER_REAL, max(min(seconds, outer_left), 0.001))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        if self.outer_due and callable(self.outer_handler):
            self.outer_handler(signum, frame)  # the caller's deadline came first
        raise _Overtime


def _extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    if b"%PDF-" not in data[:1024]:
        raise ExtractionError("corrupt", "not a PDF file (no %PDF- header)")
    with _Alarm() as alarm:
        return _read_pages(data, limits, alarm)


def _open_pdf(
    data: bytes, limits: ExtractLimits, alarm: _Alarm
) -> tuple[PdfReader, int]:
    """The PDF's reader, decrypted when it opens without a password, and its
    page count.

    Raises:
        ExtractionError: ``encrypted`` (a password is needed), ``timeout``.
    """
    from pypdf import PasswordType, PdfReader

    try:
        with alarm.budget(limits.timeout_s):
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
                raise ExtractionError(
                    "encrypted", "PDF is encrypted (password required)"
                )
            n_pages = len(reader.pages)
    except _Overtime:
        raise ExtractionError(
            "timeout", f"opening the PDF took over {limits.timeout_s:g} s"
        ) from None
    return reader, n_pages


def _read_pages(data: bytes, limits: ExtractLimits, alarm: _Alarm) -> Extracted:
    reader, n_pages = _open_pdf(data, limits, alarm)
    units: list[Unit] = []
    truncated: list[str] = []
    failed = slow = heavy = 0
    chars = content = 0
    sparse: list[tuple[int, str]] = []
    total = _file_budget(limits, n_pages)
    deadline = time.monotonic() + total
    for index in range(n_pages):
        if index >= limits.max_pages:
            truncated.append(f"pages:{limits.max_pages}/{n_pages}")
            break
        if chars >= limits.max_text_chars:
            truncated.append(f"chars:{limits.max_text_chars}")
            break
        left = deadline - time.monotonic()
        budget = min(limits.page_timeout_s, left)
        try:
            if left <= 0:
                raise _Overtime
            with alarm.budget(budget):
                page = reader.pages[index]
                # Decoded bytes are counted before parsing (issue #33): pages
                # may share one huge stream, decoded once but parsed per page.
                size = _content_bytes(page)
                if size > limits.pdf_page_content_bytes:
                    heavy += 1
                    continue
                if content + size > limits.pdf_content_bytes:
                    mb = _mb(limits.pdf_content_bytes)
                    truncated.append(f"content:{mb} at page {index + 1}/{n_pages}")
                    break
                content += size
                raw = page.extract_text()
        except _Overtime:
            if budget < limits.page_timeout_s:  # the file's time ran out
                truncated.append(f"time:{total:g}s at page {index + 1}/{n_pages}")
                break
            slow += 1  # this page is left out; the others are kept
            continue
        except (ExtractionError, RecursionError, MemoryError):
            raise  # ExtractionError: a caller's timeout may fire as one
        except Exception as exc:
            # One damaged page (bad font, broken content stream) should not cost
            # the other pages, but a file where every page fails is corrupt.
            if _is_encryption_error(exc):
                raise
            failed += 1
            continue
        text = normalize_text(raw or "")
        if len("".join(text.split())) < MIN_PAGE_CHARS:
            sparse.append((index, text))  # a scan? OCR may read it (issue #36)
        if text.strip():
            units.append(Unit(text=text, page=index + 1))
            chars += len(text)
    if failed and failed == min(n_pages, limits.max_pages):
        raise ExtractionError("corrupt", f"no page of {n_pages} could be read")
    heavy_note = f"{heavy} over {_mb(limits.pdf_page_content_bytes)} of content"
    if heavy and not units and heavy + failed + slow == min(n_pages, limits.max_pages):
        raise ExtractionError("too-large", f"every page: {heavy_note}")
    if slow and not units:
        raise ExtractionError(
            "timeout", f"every page read took over {limits.page_timeout_s:g} s"
        )
    meta: dict[str, str] = {}  # page_errors of OCR, before those of the layer
    units = _with_scans(data, units, sparse, n_pages, limits, truncated, meta)
    if not units:
        return Extracted(units=(Unit(text=""),), title=None, kind="pdf")
    if truncated:
        meta["truncated"] = ";".join(truncated)
    if failed or slow or heavy:
        errors = [f"{failed} unreadable"] if failed else []
        errors += [f"{slow} over {limits.page_timeout_s:g} s"] if slow else []
        errors += [heavy_note] if heavy else []
        errors += [meta["page_errors"]] if meta.get("page_errors") else []
        meta["page_errors"] = ", ".join(errors)
    return Extracted(units=tuple(units), title=_title(reader), kind="pdf", meta=meta)


def _file_budget(limits: ExtractLimits, n_pages: int) -> float:
    """Seconds a whole PDF may take. The file's budget grows with its pages, so
    a long honest book gets minutes while a short hostile file stays near the
    office timeout."""
    return min(
        limits.pdf_timeout_s,
        limits.timeout_s + limits.pdf_seconds_per_page * min(n_pages, limits.max_pages),
    )


def _with_scans(
    data: bytes, units: list[Unit], sparse: list[tuple[int, str]], n_pages: int,
    limits: ExtractLimits, truncated: list[str], meta: dict[str, str],
) -> list[Unit]:  # fmt: skip
    """``units`` with what OCR reads of the ``sparse`` pages (scans?), when it
    is on; else a mixed PDF's ``meta`` says what OCR would add. Empty only for
    a PDF of no page.

    Raises:
        ExtractionError: ``no-text-found`` (OCR read no word),
            ``no-text-layer`` (every page a scan, OCR off).
    """
    why_not = unavailable_message(limits.ocr) if sparse else None
    if sparse and why_not is None and limits.ocr is not None:
        why_not = limits.ocr.scan_spent()  # the scan's OCR time is over (#45)
    if sparse and why_not is None:
        assert limits.ocr is not None
        units = _with_ocr(data, units, sparse, limits.ocr, truncated, meta)
    elif sparse and units and (scans := _scanned_pages(data, sparse)):
        # A mixed PDF: its text pages are indexed; say what OCR would add.
        meta["no_text_layer"] = f"{scans} of {n_pages} pages are scans; {why_not}"
    if not units and n_pages:
        if why_not is None:
            raise ExtractionError(
                "no-text-found", f"OCR found no words on any of {n_pages} pages"
            )
        raise ExtractionError(
            "no-text-layer",
            f"no text on any of {n_pages} pages (a scan); {why_not}",
        )
    return units


def _mb(size: int) -> str:
    return f"{size / 2**20:.3g} MB"


def _content_bytes(page: object) -> int:
    """The decoded size of a page's content streams (0 when it has none)."""
    contents = page.get_contents()  # type: ignore[attr-defined]
    return 0 if contents is None else len(contents.get_data())


def _scanned_pages(data: bytes, sparse: list[tuple[int, str]]) -> int:
    """How many of the text-poor pages hold an image (0 without pypdfium2)."""
    from importlib.util import find_spec

    if find_spec("pypdfium2") is None:
        return 0
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    count = 0
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        return 0
    try:
        for index, _ in sparse:
            page = doc[index]
            try:
                found = page.get_objects(
                    filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4
                )
                count += next(iter(found), None) is not None
            finally:
                page.close()
    except pdfium.PdfiumError:
        pass
    finally:
        doc.close()
    return count


def _keep_longer(
    by_page: dict[int | None, Unit], index: int, layer: str, text: str
) -> None:
    """Page ``index`` gets its OCR text when that has more than its text layer."""
    if len("".join(text.split())) > len("".join(layer.split())):
        by_page[index + 1] = Unit(text=text, page=index + 1)


def _is_encryption_error(exc: Exception) -> bool:
    from pypdf.errors import DependencyError, FileNotDecryptedError

    return isinstance(exc, (FileNotDecryptedError, DependencyError))


def _title(reader: object) -> str | None:
    """The document-information title, or None if absent or unreadable."""
    try:
        meta = reader.metadata  # type: ignore[attr-defined]
        title = meta.title if meta is not None else None
    except ExtractionError:
        raise  # the indexer's timeout
    except Exception:  # unreadable metadata must not cost the text
        return None
    if not isinstance(title, str):
        return None
    title = " ".join(title.replace("\x00", "").split())
    return title or None


def _with_ocr(
    data: bytes, units: list[Unit], sparse: list[tuple[int, str]],
    settings: OcrSettings, truncated: list[str], meta: dict[str, str],
) -> list[Unit]:  # fmt: skip
    """``units`` with the text-poor pages that hold an image read by OCR (issue #36).

    A page's OCR text replaces its text layer when it has more characters
    (a scan with a stamp or a page number); pages without an image (a blank
    page, a short title page) are not rendered. Each page has
    ``settings.page_timeout_s``, the file ``settings.file_timeout_s``; pages
    past the file's budget are left out and the file is ``truncated``.
    """
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    by_page = {u.page: u for u in units}
    budget = OcrBudget(settings)
    slow = unrendered = cut = 0
    cache = PageCache(data, settings)
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:  # pypdf read it, pdfium cannot: keep the text
        meta["page_errors"] = f"OCR could not open the file: {describe_error(exc)}"
        return units
    try:
        for done, (index, layer) in enumerate(sparse):
            cached = cache.get(index)
            if cached is not None:
                _keep_longer(by_page, index, layer, cached)
                continue
            try:
                page = doc[index]
            except pdfium.PdfiumError:
                unrendered += 1
                continue
            try:
                images = page.get_objects(
                    filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4
                )
                if next(iter(images), None) is None:
                    continue
                if budget.left() <= 0:
                    cut = len(sparse) - done
                    if not budget.by_scan():
                        truncated.append(
                            f"ocr-time:{settings.file_timeout_s:g}s at page {index + 1}"
                        )
                    break
                width, height = page.get_size()
                scale = fit(width, height, DPI / 72, settings.max_pixels)
                image = page.render(scale=scale, grayscale=True).to_pil()
            except pdfium.PdfiumError:
                unrendered += 1
                continue
            finally:
                page.close()
            text = ocr_page(image, budget)
            if text is None:
                slow += 1
                continue
            cache.put(index, text)
            _keep_longer(by_page, index, layer, text)
    finally:
        doc.close()
        cache.save()
    if budget.by_scan() and budget.left() <= 0 and (cut or slow):
        # The scan's OCR time ran out, not the file's: the next scan with OCR
        # reads the file again (a no-text-layer record), from the cache (#45).
        meta["no_text_layer"] = (
            f"{cut + slow} scanned pages not read: {budget.spent()}; "
            "the next scan reads them"
        )
    errors = [budget.errors()] if slow else []
    if unrendered:
        errors.append(f"{unrendered} not rendered for OCR")
    if errors:
        meta["page_errors"] = ", ".join(errors)
    return [by_page[p] for p in sorted(by_page, key=lambda p: p or 0)]
