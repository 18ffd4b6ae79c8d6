"""Optional OCR (issue #36): text from scanned PDF pages and images, with Tesseract.

The engine is Debian's (or Homebrew's) ``tesseract`` command, run once per
page with the page image on its standard input. A command, not a binding: a
page that takes longer than its budget is killed (``subprocess`` timeout),
which a C call inside the worker could not be, and the user's own language
packs are the ones used. Pages are rendered by pypdfium2 and images decoded
by Pillow (the ``ocr`` extra), imported only when a page needs OCR.

OCR is opt-in (``ocr = true`` or ``scan --ocr``). When a file needs it and it
is off or cannot run, :func:`unavailable_message` says why and how to turn it
on, and the file is skipped as ``no-text-layer``.
"""

from __future__ import annotations

import functools
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.errors import ExtractionError, install_hint
from docindex.models import OCR_OFF as OFF_MESSAGE

if TYPE_CHECKING:
    from PIL.Image import Image

#: Languages used with ``eng`` when ``ocr_languages`` is not set, if installed.
CJK_LANGUAGES = ("chi_sim", "chi_tra", "jpn", "kor")
#: A PDF page with fewer non-blank characters in its text layer than this (and
#: an image on it) is read by OCR: a scan with a "Scanned by" stamp still is.
MIN_PAGE_CHARS = 32
DPI = 300
_CJK = (
    "\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
)


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """What a scan asks of OCR; ``ExtractLimits.ocr`` carries it to the worker.

    Attributes:
        enabled: ``ocr = true`` or ``scan --ocr``.
        languages: Tesseract language codes asked for; empty means ``eng`` plus
            whichever of :data:`CJK_LANGUAGES` are installed.
        page_timeout_s: wall-clock budget for one page; a slower one is killed
            and left out (``page_errors``).
        file_timeout_s: the most OCR of one file may take; past it the pages
            read so far are kept and the file is ``truncated``.
        max_pixels: the rendered page or decoded image is scaled down to at most
            this many pixels (a 20,000 x 20,000 scan must not take gigabytes).
        scan_timeout_s: the most OCR a whole scan may take (#45).
        scan_until: when that time ends (``time.time()``; 0: no bound). Past
            it, what still needs OCR waits for the next scan.
    """

    enabled: bool = False
    languages: tuple[str, ...] = ()
    page_timeout_s: float = 60.0
    file_timeout_s: float = 600.0
    max_pixels: int = 12_000_000
    scan_timeout_s: float = 3600.0
    scan_until: float = 0.0

    def scan_spent(self) -> str | None:
        """Why OCR must not start now (the scan's OCR time is over), else None."""
        if self.scan_until and time.time() >= self.scan_until:
            return (
                f"this scan's OCR time ({self.scan_timeout_s:g} s, "
                "ocr_scan_timeout_s) ran out; the next scan reads it"
            )
        return None


@dataclass(slots=True)
class OcrBudget:
    """The time OCR of one file may still take, and why pages were stopped (#45).

    A page gets ``page_timeout_s`` but never more than the file's budget
    (``file_timeout_s``) or the scan's (``scan_until``) has left; a message
    says which bound stopped it and after how long, not a limit that did not
    apply ("over 60 s" for a page killed at 24 s).
    """

    settings: OcrSettings
    started: float = field(default_factory=time.monotonic)
    stopped: list[str] = field(default_factory=list)  # why each slow page stopped

    def _ends(self) -> tuple[float, str]:
        """(monotonic time OCR of this file must end, the bound that sets it)."""
        s = self.settings
        end = self.started + s.file_timeout_s
        why = f"the file's OCR time ({s.file_timeout_s:g} s, ocr_timeout_s)"
        if s.scan_until:
            scan_end = time.monotonic() + (s.scan_until - time.time())
            if scan_end < end:
                end = scan_end
                why = (
                    f"this scan's OCR time ({s.scan_timeout_s:g} s, ocr_scan_timeout_s)"
                )
        return end, why

    def left(self) -> float:
        """Seconds OCR of this file may still run (<= 0: none)."""
        return self._ends()[0] - time.monotonic()

    def spent(self) -> str:
        """Why the file's OCR stops here: the bound that ran out."""
        return f"{self._ends()[1]} ran out"

    def by_scan(self) -> bool:
        """True when the scan's bound, not the file's, is the one running out."""
        return "scan" in self._ends()[1]

    def read(self, image: Image) -> str | None:
        """OCR one page within the budget; None (and the reason kept) if stopped."""
        left = self.left()
        page_limit = self.settings.page_timeout_s
        limit = min(page_limit, left)
        began = time.monotonic()
        try:
            return read_image(image, self.settings, limit)
        except ExtractionError as exc:
            if exc.reason != "timeout":
                raise
        took = time.monotonic() - began
        if limit >= page_limit:
            why = f"the page limit ({page_limit:g} s, ocr_page_timeout_s)"
        else:
            why = self._ends()[1]
        self.stopped.append(f"stopped after {took:.0f} s at {why}")
        return None

    def errors(self) -> str:
        """The ``page_errors`` note for the stopped pages ("" for none)."""
        if not self.stopped:
            return ""
        kinds = sorted(set(self.stopped), key=self.stopped.index)
        pages = "1 page" if len(self.stopped) == 1 else f"{len(self.stopped)} pages"
        return f"OCR of {pages} {'; '.join(kinds[:3])}"


@dataclass(frozen=True, slots=True)
class Engine:
    """The Tesseract found on this machine."""

    command: str
    version: str
    installed: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def engine() -> Engine | None:
    """The ``tesseract`` command, its version and installed languages (cached).

    Returns:
        None when there is no working ``tesseract`` on the PATH.
    """
    import shutil
    import subprocess  # here: the walker imports this module for OFF_MESSAGE

    command = shutil.which("tesseract")
    if command is None:
        return None
    try:
        version = subprocess.run(
            [command, "--version"], capture_output=True, timeout=10, check=True
        )
        langs = subprocess.run(
            [command, "--list-langs"], capture_output=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = (version.stdout or version.stderr).decode(errors="replace").split("\n")
    found = langs.stdout.decode(errors="replace").split("\n")[1:]
    installed = tuple(sorted(x.strip() for x in found if x.strip() and x != "osd"))
    return Engine(command, first[0].strip(), installed)


def languages(settings: OcrSettings, found: Engine) -> tuple[str, ...]:
    """The languages OCR will use: those asked for (or the default set) that are installed."""
    wanted = settings.languages or ("eng", *CJK_LANGUAGES)
    return tuple(x for x in wanted if x in found.installed)


@functools.lru_cache(maxsize=1)
def _libraries_missing() -> str | None:
    """The first library of the ``ocr`` extra not installed (found, not imported)."""
    from importlib.util import find_spec

    for name, package in (("PIL", "Pillow"), ("pypdfium2", "pypdfium2")):
        if find_spec(name) is None:
            return package
    return None


def unavailable_message(settings: OcrSettings | None) -> str | None:
    """Why OCR cannot run with ``settings``, with how to fix it; None when it can."""
    if settings is None or not settings.enabled:
        return OFF_MESSAGE
    found = engine()
    if found is None:
        return (
            "OCR is on but tesseract is not installed "
            "(apt-get install tesseract-ocr, brew install tesseract)"
        )
    missing = _libraries_missing()
    if missing:
        return f"OCR is on but {missing} is missing: {install_hint('ocr')}"
    if not languages(settings, found):
        asked = "+".join(settings.languages)
        return f"OCR is on but none of its languages ({asked}) is installed"
    return None


def active(settings: OcrSettings | None) -> bool:
    """True when OCR is on and can run."""
    return unavailable_message(settings) is None


class PageCache:
    """OCR text of one file's pages, kept by content hash (issue #36).

    A file's OCR text is computed once per content: a ``reindex``, a copy or a
    move of a scanned file reads the text back instead of running tesseract
    again. One small JSON file per scanned file under the user's cache folder
    (``$XDG_CACHE_HOME/docindex/ocr``), keyed by the file's bytes, the
    languages, the engine version and the pixel bound; unreadable entries are
    ignored and written again.
    """

    def __init__(self, data: bytes, settings: OcrSettings) -> None:
        import hashlib

        from docindex.config import cache_dir

        found = engine()
        key = hashlib.blake2b(data, digest_size=20)
        key.update(
            f"|{'+'.join(languages(settings, found))}|{found.version}"
            f"|{settings.max_pixels}".encode()
            if found
            else b"|"
        )
        digest = key.hexdigest()
        self.path = ocr_cache_dir(cache_dir()) / digest[:2] / f"{digest}.json"
        self.pages: dict[str, str] = {}
        self.dirty = False
        try:
            import json

            loaded = json.loads(self.path.read_text("utf-8"))
            if isinstance(loaded, dict):
                self.pages = {str(k): str(v) for k, v in loaded.items()}
                # Recently used: pruned last. The access time says so; the
                # modification time stays when the entry was written.
                os.utime(self.path, ns=(time.time_ns(), self.path.stat().st_mtime_ns))
        except (OSError, ValueError):
            pass

    def get(self, page: int) -> str | None:
        """The cached text of 0-based ``page``, or None."""
        return self.pages.get(str(page))

    def put(self, page: int, text: str) -> None:
        self.pages[str(page)] = text
        self.dirty = True

    def save(self) -> None:
        """Write the entry (atomically); a cache that cannot be written is no error."""
        if not self.dirty:
            return
        import contextlib
        import json
        import tempfile

        with contextlib.suppress(OSError):
            _private_dirs(self.path.parent)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.pages, fh, ensure_ascii=False)
            os.replace(tmp, self.path)


def ocr_cache_dir(base: Path) -> Path:
    """The OCR text cache under the user's cache folder ``base``."""
    return base / "ocr"


def _private_dirs(folder: Path) -> None:
    """Create ``folder`` and the cache folders above it owner-only (0700, #45).

    An entry's name is the hash of a file's bytes: anyone who may list the
    folder learns which files they know were OCR'd. Folders made before #45
    (0755) are narrowed when they are ours.
    """
    top = folder.parent.parent  # .../docindex: ocr/<xx>/ lie below it
    for part in (top, top / "ocr", folder):
        try:
            part.mkdir(mode=0o700, exist_ok=True)
        except FileNotFoundError:
            part.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = part.stat()
        if st.st_mode & 0o077 and st.st_uid == os.getuid():
            os.chmod(part, 0o700)


@dataclass(frozen=True, slots=True)
class CachePruned:
    """What pruning the OCR cache did: entries and bytes removed, and kept."""

    removed: int
    freed_bytes: int
    kept: int
    kept_bytes: int


def prune_cache(base: Path, max_bytes: int) -> CachePruned:
    """Remove the least recently used OCR cache entries until ``max_bytes`` remain.

    Used: read or written (its access time, which a cache hit sets).

    ``max_bytes=0`` empties the cache. Entries another process is writing
    (``*.tmp``) are left alone; one that vanished meanwhile is no error.
    """
    folder = ocr_cache_dir(base)
    entries: list[tuple[float, int, Path]] = []
    for path in folder.glob("*/*.json") if folder.is_dir() else ():
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append((max(st.st_atime, st.st_mtime), st.st_size, path))
    total = sum(size for _, size, _ in entries)
    removed = freed = 0
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
        removed += 1
        freed += size
    return CachePruned(removed, freed, len(entries) - removed, total)


def fit(width: float, height: float, scale: float, max_pixels: int) -> float:
    """``scale`` reduced so ``width x height`` scaled holds at most ``max_pixels``."""
    area = max(width * height, 1.0)
    return min(scale, math.sqrt(max_pixels / area))


def read_image(image: Image, settings: OcrSettings, timeout: float) -> str:
    """OCR one image; its text, with lines that hold no word left out.

    Raises:
        ExtractionError: ``timeout`` when Tesseract took over ``timeout`` seconds
            (it is killed); ``error`` when it failed.
    """
    import io
    import subprocess

    found = engine()
    assert found is not None  # checked by the caller (unavailable_message)
    langs = "+".join(languages(settings, found))
    buf = io.BytesIO()
    gray = image if image.mode in ("L", "1") else image.convert("L")
    gray.save(buf, "PPM")  # PGM: no compression to pay for on either side
    # One thread per tesseract: the scan's workers already use the cores.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    from docindex.ingest.pool import CHILDREN

    command = [found.command, "stdin", "stdout", "-l", langs, "--dpi", str(DPI),
               "--psm", "3"]  # fmt: skip
    try:
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
    except OSError as exc:
        raise ExtractionError("error", f"cannot run tesseract: {exc}") from None
    # Registered while it runs: a worker told to stop kills it (pool.CHILDREN);
    # any exception here (the page budget, Ctrl-C in-process) kills it too.
    CHILDREN.add(child)
    began = time.monotonic()
    try:
        out, err = child.communicate(buf.getvalue(), timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        took = time.monotonic() - began
        raise ExtractionError(
            "timeout", f"OCR of a page stopped after {took:.0f} s (its limit)"
        ) from None
    finally:
        if child.returncode is None:
            child.kill()
            child.wait()
        CHILDREN.discard(child)
    if child.returncode != 0:
        message = err.decode(errors="replace").strip().split("\n")[-1][:200]
        raise ExtractionError("error", f"tesseract failed: {message}")
    return clean(out.decode("utf-8", errors="replace"))


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(spaces between CJK characters, a word) compiled on first use.

    Tesseract writes a space between CJK characters; the n-gram tokenizer
    needs them joined, or a two-character query never matches (issue #36).
    """
    return (
        re.compile(f"(?<=[{_CJK}]) +(?=[{_CJK}])"),
        re.compile(f"\\w\\w|[{_CJK}]"),
    )


def clean(text: str) -> str:
    """Tesseract's text with CJK characters rejoined and wordless lines dropped."""
    cjk_space, wordish = _patterns()
    lines = []
    for line in text.replace("\x0c", "\n").split("\n"):
        line = cjk_space.sub("", line).strip()
        lines.append(line if wordish.search(line) else "")
    return "\n".join(lines)
