"""Read, hash, extract, segment, tokenise and embed one file: the worker side of a scan.

``prepare`` runs in the scan's worker processes (``_prepare_all`` hands the
jobs out in walk order); everything it returns is ready to store, the
stored term counts included (issues #35, #46), so the single writer only inserts.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from docindex.config import Config
from docindex.embed.choice import embedder_for as _embedder
from docindex.embed.ngram import NgramEmbedder
from docindex.errors import ExtractionError, without_addresses
from docindex.ingest.analyze import analyze_document, document_fields
from docindex.ingest.pool import (
    POOL_THRESHOLD,
    ExtractTimeout,
    Workers,
    cpu_budget,
    deadline,
)
from docindex.store import (
    DocTerms,
    EncodedSegments,
    compress_body,
    doc_terms,
    encode_segments,
)
from docindex.text.fields import title_text

if TYPE_CHECKING:  # imported where used: a query needs none of them (issue #7)
    from docindex.ingest.extract import ExtractLimits
    from docindex.ingest.extract.ocr import OcrSettings
    from docindex.models import Extracted
    from docindex.store import EngineRows
    from docindex.store.interface import RowMaker

StopFn = Callable[[], bool]  # true once the caller wants the scan to stop


@dataclass(frozen=True, slots=True)
class Job:
    """One file to prepare: where it is, its stat fingerprint, its known hash.

    ``known_hash`` is the content hash the index holds for it (None for a new
    file or a forced re-index): equal content is not extracted again.
    """

    path: str
    rel_path: str
    root: str
    size: int
    mtime_ns: int
    known_hash: str | None
    ocr_until: float = 0.0  # when the scan's OCR time ends (time.time(), #45)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A file read and processed, ready to store (or a reason it was not)."""

    job: Job
    hash: str = ""
    same: bool = False
    skip: str = ""
    message: str = ""
    kind: str = ""
    title: str | None = None
    meta: dict[str, str] | None = None
    body_z: bytes = b""  # the text, compressed in the worker (store.compress_body)
    segments: EncodedSegments = EncodedSegments()  # in stored form
    fts: tuple[tuple[str, str], ...] = ()
    vectors: tuple[bytes, ...] | None = None
    notes: tuple[tuple[str, str], ...] = ()
    fields: tuple[str, str] = ("", "")  # the document's FTS fields (#21)
    terms: str = ""  # its salient terms (analyze.document_terms)
    doc_terms: DocTerms | None = None  # its stored term counts, made here (#46)
    rows: EngineRows | None = None  # the store's own rows (Index.row_maker, #34)


def _limits(cfg: Config, ocr_until: float = 0.0) -> ExtractLimits:
    from docindex.ingest.extract import ExtractLimits

    return ExtractLimits(
        timeout_s=cfg.extract_timeout_s,
        max_sheet_rows=cfg.max_sheet_rows,
        max_pages=cfg.max_pdf_pages,
        ocr=ocr_settings(cfg, ocr_until),
    )


def ocr_settings(cfg: Config, until: float = 0.0) -> OcrSettings:
    """What ``cfg`` asks of OCR (issue #36); ``until`` ends the scan's OCR time."""
    from docindex.ingest.extract.ocr import OcrSettings

    return OcrSettings(
        enabled=cfg.ocr, languages=cfg.ocr_languages,
        page_timeout_s=cfg.ocr_page_timeout_s, file_timeout_s=cfg.ocr_timeout_s,
        max_pixels=cfg.ocr_max_pixels, scan_timeout_s=cfg.ocr_scan_timeout_s,
        scan_until=until,
    )  # fmt: skip


def prepare(job: Job, cfg: Config, *, bulk: bool = False) -> Prepared:
    """Read, hash, extract, segment, tokenise and embed one file (worker-safe).

    ``bulk`` is True in the scan's worker processes, which import numpy when
    they start: its vector and n-gram paths are then free to use.
    """
    from docindex.ingest.extract import kind_for
    from docindex.ingest.extract.text import looks_binary

    try:
        data = _read_regular(
            job.path, cfg.max_file_bytes + 1, cfg.follow_symlinks, job.root
        )
    except FileNotFoundError:
        return Prepared(job, skip="error", message="file vanished before it was read")
    except IsADirectoryError:
        return Prepared(job, skip="unsupported", message="is a directory")
    except _EscapedError:
        return Prepared(job, skip="symlink", message="became a symlink after the walk")
    except OSError as exc:
        if exc.errno == errno.ELOOP and not cfg.follow_symlinks:
            return Prepared(
                job, skip="symlink", message="became a symlink after the walk"
            )
        return Prepared(job, skip="error", message=f"cannot read: {exc.strerror}")
    if data is None:
        return Prepared(job, skip="unsupported", message="not a regular file")
    if len(data) > cfg.max_file_bytes:
        return Prepared(
            job, skip="too-large", message=f"over {cfg.max_file_bytes} bytes"
        )
    import hashlib  # loads OpenSSL: not for a rescan that reads no file (#24)

    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if job.known_hash == digest:
        return Prepared(job, hash=digest, same=True)
    if not data.strip():
        return Prepared(job, hash=digest, skip="empty", message="the file is blank")
    extra = frozenset(s if s.startswith(".") else f".{s}" for s in cfg.text_extensions)
    opted = os.path.splitext(job.rel_path)[1].lower() in extra
    kind = kind_for(job.rel_path)
    if opted and (kind is None or (kind == "legacy" and not looks_binary(data[:8192]))):
        kind = "txt"  # text_extensions: an SVG, or a Graphviz .dot (not Word's)
    if kind is None:
        if looks_binary(data[:8192]):
            return Prepared(job, hash=digest, skip="binary")
        kind = "txt"  # unknown suffix, content sniffed as text
    budget = cpu_budget(cfg.extract_timeout_s, len(data))
    try:
        extracted = _extract(kind, data, job.rel_path, cfg, budget, job.ocr_until)
    except ExtractTimeout as exc:
        return Prepared(job, hash=digest, skip="timeout", message=f"extraction {exc}")
    except ExtractionError as exc:
        return Prepared(job, hash=digest, skip=exc.reason, message=str(exc))
    except Exception as exc:  # one bad file is a skip reason, never an aborted scan
        return _failed(job, digest, exc)
    try:
        # Segmenting, tokenising and embedding have a budget of their own
        # (issue #33: every step of a file is bounded, Markdown included).
        with deadline(budget):
            return _index_parts(job, digest, extracted, cfg, bulk)
    except ExtractTimeout as exc:
        return Prepared(
            job, hash=digest, skip="timeout", message=f"indexing its text {exc}"
        )
    except Exception as exc:  # the same barrier after extraction (issue #17)
        return _failed(job, digest, exc)


def _failed(job: Job, digest: str, exc: Exception) -> Prepared:
    """A file that raised: an ``error`` skip with the exception's message."""
    message = without_addresses(f"{type(exc).__name__}: {exc}")
    return Prepared(job, hash=digest, skip="error", message=message)


def prepare_bulk(job: Job, cfg: Config) -> Prepared:
    """``prepare`` in a scan's worker process (``bulk``)."""
    return prepare(job, cfg, bulk=True)


def _index_parts(
    job: Job, digest: str, extracted: Extracted, cfg: Config, bulk: bool
) -> Prepared:
    """Segment, tokenise, embed and compress one extracted file."""
    from docindex.ingest.segment import segment_document

    body, segments = segment_document(extracted, job.rel_path, cfg.segment_chars)
    if not segments:
        return Prepared(job, hash=digest, skip="empty", kind=extracted.kind,
                        message=f"no text found in this {extracted.kind} file")  # fmt: skip
    doc_title = title_text(extracted.title, job.rel_path)
    fts, vectors, terms, counts = analyze_document(
        cfg, extracted.title, doc_title, segments, bulk=bulk
    )
    fields = document_fields(cfg, doc_title, (s.heading_path for s in segments))
    return Prepared(
        job, hash=digest, kind=extracted.kind, title=extracted.title,
        meta=_facets(extracted.meta), notes=_notes(extracted.meta),
        body_z=compress_body(body), segments=encode_segments(segments, job.rel_path, body),
        fts=fts, vectors=vectors, fields=fields,
        terms=terms, doc_terms=doc_terms(fields, counts),
    )  # fmt: skip


@functools.lru_cache(maxsize=64)
def _real_root(root: str) -> str:
    """``root`` resolved, with a trailing separator (for a prefix test)."""
    return os.path.join(os.path.realpath(root), "")


class _EscapedError(OSError):
    """The opened file lies outside its root (a folder became a symlink)."""


def _read_regular(
    path: str, limit: int, follow_symlinks: bool, root: str
) -> bytes | None:
    """Up to ``limit`` bytes of ``path``, or None when it is not a regular file.

    Opened non-blocking and checked with fstat: a file replaced by a FIFO or a
    device between the walk and the read must not block the scan (issue #8).
    Opened with O_NOFOLLOW unless symlinks are followed, and where the OS names
    an open file (``/proc/self/fd``) the file actually opened must lie inside
    ``root``: a file or a folder above it swapped for a symlink after the walk
    is not read (issue #17).

    Raises:
        _EscapedError: the opened file is outside ``root``.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc (macOS, Windows): O_NOFOLLOW only
            opened = None
        if opened is not None and not opened.startswith(_real_root(root)):
            raise _EscapedError(errno.EXDEV, "outside the root")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_NOTE_KEYS = ("truncated", "page_errors", "no_text_layer")


def _facets(meta: dict[str, str]) -> dict[str, str]:
    """Front-matter facets only; extractor notes are reported, not stored as facets."""
    return {k: v for k, v in meta.items() if k not in _NOTE_KEYS}


def _notes(meta: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, meta[k]) for k in _NOTE_KEYS if k in meta)


def _extract(
    kind: str,
    data: bytes,
    name: str,
    cfg: Config,
    budget: float,
    ocr_until: float = 0.0,
) -> Extracted:
    """Run the extractor for ``kind`` within ``budget`` CPU-s; its output passes
    ``clean_extracted`` (#17)."""
    from docindex.ingest.extract import get_extractor
    from docindex.ingest.extract.hygiene import clean_extracted

    extractor = get_extractor(kind)
    limits = _limits(cfg, ocr_until)
    if kind in ("pdf", "image"):
        # PDF bounds itself per page and keeps the pages read (issue #23); so
        # does OCR, with its own budgets (issue #36).
        return clean_extracted(extractor(data, name, limits))
    with deadline(budget):
        extracted = extractor(data, name, limits)
    return clean_extracted(extracted)


def _workers(cfg: Config) -> Workers[Config]:
    """The scan's pool; its forkserver preloads what preparing a file imports."""
    preload = [
        "docindex.ingest.prepare",
        "docindex.ingest.segment",
        "docindex.ingest.extract.markdown",
    ]
    if isinstance(_embedder(cfg), NgramEmbedder):
        preload += ["docindex.embed.ngram", "numpy"]  # numpy only when vectors need it
    # Front matter (libyaml) and the CJK code-point codec, once for all workers.
    preload += ["yaml", "encodings.utf_32_le", "zlib_ng.zlib_ng"]
    return Workers(cfg.workers, preload)


def _job_size(job: Job) -> int:
    return job.size


_LIGHT_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".rst")


def _with_rows(
    prepare_one: Callable[[Job, Config], Prepared], rows: RowMaker, job: Job,
    cfg: Config,
) -> Prepared:  # fmt: skip
    """``prepare_one`` and the store's rows of what it prepared (issue #34)."""
    prep = prepare_one(job, cfg)
    if not prep.fts:
        return prep
    return replace(prep, rows=rows(prep.fts, prep.fields))


def _died(job: Job, why: str) -> Prepared:
    """A file whose worker died under it (a crash in a C library, the OOM killer)."""
    return Prepared(job, skip="error", message=why)


def _prepare_all(
    jobs: Sequence[Job], cfg: Config, workers: Workers[Config] | None = None,
    stop: StopFn | None = None, rows: RowMaker | None = None,
) -> Iterator[Prepared]:  # fmt: skip
    """Prepare ``jobs`` in walk order, in worker processes when it pays;
    ``rows`` (``Index.row_maker``) adds the store's own rows to each."""
    own = workers is None
    workers = workers or _workers(cfg)
    # Workers import numpy when they start (``_workers``): ``prepare_bulk``
    # lets them use it; the pool runs in this process below POOL_THRESHOLD.
    bulk = workers.count > 1 and len(jobs) >= POOL_THRESHOLD
    fn: Callable[[Job, Config], Prepared] = prepare_bulk if bulk else prepare
    if rows is not None:
        fn = functools.partial(_with_rows, fn, rows)
    # A file other than plain text may hold an extractor for minutes; in a
    # worker a signal kills it within a second (issue #33).
    isolate = stop is not None and any(
        not j.path.lower().endswith(_LIGHT_SUFFIXES) for j in jobs
    )
    try:
        yield from workers.map_ordered(
            fn, jobs, cfg, _job_size, stop, _died, isolate=isolate
        )
    finally:
        if own:
            workers.close()
