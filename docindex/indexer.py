"""walk -> extract -> segment -> tokenize -> embed -> store; incremental by content hash.

A scan is one write transaction: readers keep answering from the last commit
(WAL), an interrupted scan leaves the index exactly as it was, and a second
writer waits (busy timeout) or is told the index is busy. Files are prepared
(read, hashed, extracted, segmented, tokenised, embedded) in worker processes
when there is enough work; results come back in walk order, so the index is
identical whether one core or two built it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config
from .embed import embedder_for as _embedder
from .errors import (
    DocindexError,
    EmbedderMismatchError,
    ExtractionError,
    OutsideRootsError,
)
from .models import ScanResult, Segment, printable
from .pool import POOL_THRESHOLD, ExtractTimeout, Stopped, Workers, deadline
from .store import Store, compress_body
from .tokenize import cjk_ngrams, term_parts, terms

if TYPE_CHECKING:  # imported where used: a query needs none of them (issue #7)
    from .extract import ExtractLimits
    from .walker import FileEntry

TOKENIZER_VERSION = 2  # 2: words first, then CJK n-grams (same multiset)
EMBED_BATCH = 512  # segments embedded at once: bounds a big file's memory (#8)
CJK_NUMPY_MIN = 512  # CJK characters in a file from which its n-gram text uses numpy


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: ``done`` files of ``total`` (None while walking)."""

    phase: str
    done: int
    total: int | None
    path: str = ""


ProgressFn = Callable[[Progress], None]
StopFn = Callable[[], bool]  # true once the caller wants the scan to stop


@dataclass(frozen=True, slots=True)
class _Job:
    path: str
    rel_path: str
    root: str
    size: int
    mtime_ns: int
    known_hash: str | None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A file read and processed, ready to store (or a reason it was not)."""

    job: _Job
    hash: str = ""
    same: bool = False
    skip: str = ""
    message: str = ""
    kind: str = ""
    title: str | None = None
    meta: dict[str, str] | None = None
    body_z: bytes = b""  # the text, compressed in the worker (store.compress_body)
    rows: tuple[tuple[Any, ...], ...] = ()  # segment columns between doc_id and vec
    sections: bytes | None = None  # documents.sections (segment_columns)
    fts: tuple[tuple[str, str], ...] = ()
    vectors: tuple[bytes, ...] | None = None
    notes: tuple[tuple[str, str], ...] = ()


def title_text(title: str | None, rel_path: str) -> str:
    """What the FTS ``title`` column indexes: the title plus the file name's words."""
    stem = os.path.splitext(rel_path.rsplit("/", 1)[-1])[0]
    stem = stem.replace("_", " ").replace("-", " ")
    return f"{title} {stem}" if title else stem


def fts_row(
    cfg: Config, doc_title: str, heading: Sequence[str], text: str
) -> tuple[str, str]:
    """Pre-tokenised (title, body) columns for one segment; used to insert and delete."""
    head = " ".join((doc_title, *heading))
    n, use_stem = cfg.cjk_ngram, cfg.stem
    return (
        " ".join(terms(head, cjk_ngram=n, use_stem=use_stem)),
        " ".join(terms(text, cjk_ngram=n, use_stem=use_stem)),
    )


def embed_input(title: str | None, heading: Sequence[str], text: str) -> str:
    """Semantic input: ``Doc title > Section > Subsection`` then the text (issue #3)."""
    context = " > ".join(p for p in (title, *heading) if p)
    return f"{context}\n{text}" if context else text


def _limits(cfg: Config) -> ExtractLimits:
    from .extract import ExtractLimits

    return ExtractLimits(
        timeout_s=cfg.extract_timeout_s,
        max_sheet_rows=cfg.max_sheet_rows,
        max_pages=cfg.max_pdf_pages,
    )


def prepare(job: _Job, cfg: Config) -> Prepared:
    """Read, hash, extract, segment, tokenise and embed one file (worker-safe)."""
    from .extract import kind_for
    from .extract.text import looks_binary

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
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if job.known_hash == digest:
        return Prepared(job, hash=digest, same=True)
    if not data.strip():
        return Prepared(job, hash=digest, skip="empty", message="the file is blank")
    extra = frozenset(s if s.startswith(".") else f".{s}" for s in cfg.text_extensions)
    kind = kind_for(job.rel_path) or (
        "txt" if os.path.splitext(job.rel_path)[1].lower() in extra else None
    )
    if kind is None:
        if looks_binary(data[:8192]):
            return Prepared(job, hash=digest, skip="binary")
        kind = "txt"  # unknown suffix, content sniffed as text
    try:
        extracted = _extract(kind, data, job.rel_path, cfg)
    except ExtractTimeout as exc:
        return Prepared(job, hash=digest, skip="timeout", message=str(exc))
    except ExtractionError as exc:
        return Prepared(job, hash=digest, skip=exc.reason, message=str(exc))
    except Exception as exc:  # one bad file is a skip reason, never an aborted scan
        return _failed(job, digest, exc)
    try:
        return _index_parts(job, digest, extracted, cfg)
    except Exception as exc:  # the same barrier after extraction (issue #17)
        return _failed(job, digest, exc)


def _failed(job: _Job, digest: str, exc: Exception) -> Prepared:
    """A file that raised: an ``error`` skip with the exception's message."""
    return Prepared(
        job, hash=digest, skip="error", message=f"{type(exc).__name__}: {exc}"
    )


def _index_parts(job: _Job, digest: str, extracted: Any, cfg: Config) -> Prepared:
    """Segment, tokenise, embed and compress one extracted file."""
    from .segment import segment_document

    body, segments = segment_document(extracted, job.rel_path, cfg.segment_chars)
    if not segments:
        return Prepared(job, hash=digest, skip="empty", kind=extracted.kind,
                        message=f"no text found in this {extracted.kind} file")  # fmt: skip
    doc_title = title_text(extracted.title, job.rel_path)
    fts, vectors = _tokens_and_vectors(cfg, extracted.title, doc_title, segments)
    sections, rows = segment_columns(segments, job.rel_path)
    return Prepared(
        job, hash=digest, kind=extracted.kind, title=extracted.title,
        meta=_facets(extracted.meta), notes=_notes(extracted.meta),
        body_z=compress_body(body), rows=rows, sections=sections, fts=fts,
        vectors=vectors,
    )  # fmt: skip


def _tokens_and_vectors(
    cfg: Config, title: str | None, doc_title: str, segments: Sequence[Segment]
) -> tuple[tuple[tuple[str, str], ...], tuple[bytes, ...] | None]:
    """FTS rows and quantised vectors of a file's segments.

    Each segment's text is tokenised once (issue #7): the latin terms and CJK
    runs of ``context + "\\n" + text`` are those of the context followed by
    those of the text (a newline never joins two terms), so ``embed_parts``
    gets what ``embed(embed_input(...))`` would tokenise. Heading terms repeat
    along a section and are cached.
    """

    def tok(text: str) -> list[str]:
        return terms(text, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)

    n_gram, use_stem = cfg.cjk_ngram, cfg.stem
    embedder = _embedder(cfg)
    by_parts = embedder is not None and hasattr(embedder, "quantized_rows")
    heads: dict[tuple[str, ...], str] = {}
    contexts: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
    titles: list[str] = []
    latin: list[str | None] = []  # each body's latin terms, None when it has none
    body_runs: list[list[str]] = []
    word_lists: list[list[str]] = []
    run_lists: list[list[str]] = []
    for seg in segments:
        words, runs = term_parts(seg.text, use_stem=use_stem)
        head = heads.get(seg.heading_path)
        if head is None:
            head = heads[seg.heading_path] = " ".join(
                tok(" ".join((doc_title, *seg.heading_path)))
            )
        titles.append(head)
        latin.append(" ".join(words) if words else None)
        if by_parts:
            ctx = contexts.get(seg.heading_path)
            if ctx is None:
                parts = (title or doc_title, *seg.heading_path)
                context = " > ".join(p for p in parts if p)
                ctx = contexts[seg.heading_path] = term_parts(
                    context, use_stem=use_stem
                )
            word_lists.append(ctx[0] + words if ctx[0] else words)
            run_lists.append(ctx[1] + runs if ctx[1] else runs)
        body_runs.append(runs)
    # " ".join(words + cjk_ngrams(runs)), with the n-grams made per file
    fts = tuple(
        (head, cjk if lat is None else f"{lat} {cjk}" if cjk else lat)
        for head, lat, cjk in zip(
            titles, latin, _cjk_texts(body_runs, n_gram), strict=True
        )
    )
    if embedder is None or getattr(embedder, "deferred", False):
        return fts, None  # neural vectors come in embed_pending (issue #9)
    from .embed import quantize

    # In batches: one batch for a 5 MB file's 10k segments peaked at ~400 MiB
    # (issue #8). Rows are independent, so the vectors are bit-identical.
    vectors: list[bytes] = []
    for i in range(0, len(segments), EMBED_BATCH):
        if by_parts:
            vectors.extend(embedder.quantized_rows(
                word_lists[i : i + EMBED_BATCH], run_lists[i : i + EMBED_BATCH]
            ))  # fmt: skip
            continue
        matrix = embedder.embed(
            [embed_input(title or doc_title, s.heading_path, s.text)
             for s in segments[i : i + EMBED_BATCH]]
        )  # fmt: skip
        vectors.extend(quantize(matrix, getattr(embedder, "bits", 8)))
    return fts, tuple(vectors)


def _cjk_texts(run_lists: list[list[str]], n_gram: int) -> Iterator[str]:
    """Each body's CJK n-grams as FTS text; numpy pays past ``CJK_NUMPY_MIN`` characters.

    Lazily, in batches as the vectors are: the caller joins each text to its
    latin terms as it goes, so a big CJK file never holds both forms whole
    (issue #8: peak memory).
    """
    import sys

    chars = sum(len(run) for runs in run_lists for run in runs)
    if chars < CJK_NUMPY_MIN or "numpy" not in sys.modules:
        for runs in run_lists:
            yield " ".join(cjk_ngrams(runs, n_gram)) if runs else ""
        return
    from .tokenize import cjk_ngram_texts

    for i in range(0, len(run_lists), EMBED_BATCH):
        yield from cjk_ngram_texts(run_lists[i : i + EMBED_BATCH], n_gram)


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


_NOTE_KEYS = ("truncated", "page_errors")


def _facets(meta: dict[str, str]) -> dict[str, str]:
    """Front-matter facets only; extractor notes are reported, not stored as facets."""
    return {k: v for k, v in meta.items() if k not in _NOTE_KEYS}


def _notes(meta: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, meta[k]) for k in _NOTE_KEYS if k in meta)


def _extract(kind: str, data: bytes, name: str, cfg: Config) -> Any:
    """Run the extractor for ``kind``; its output passes ``clean_extracted`` (#17)."""
    from .extract import get_extractor
    from .extract.hygiene import clean_extracted

    extractor = get_extractor(kind)
    limits = _limits(cfg)
    if kind in ("md", "txt", "pdf"):
        # PDF bounds itself per page and keeps the pages read (issue #23).
        return clean_extracted(extractor(data, name, limits))
    with deadline(limits.timeout_s):
        extracted = extractor(data, name, limits)
    return clean_extracted(extracted)


def embedder_params(cfg: Config) -> dict[str, Any] | None:
    """The embedder parameters an index built with ``cfg`` records."""
    emb = _embedder(cfg)
    return None if emb is None else dict(emb.params())


def _workers(cfg: Config) -> Workers[Config]:
    """The scan's pool; its forkserver preloads what preparing a file imports."""
    preload = ["docindex.indexer", "docindex.segment", "docindex.extract.markdown"]
    if hasattr(_embedder(cfg), "quantized_rows"):
        preload += ["docindex.embed", "numpy"]  # numpy only when vectors need it
    # Front matter (libyaml) and the CJK code-point codec, once for all workers.
    preload += ["yaml", "encodings.utf_32_le", "zlib_ng.zlib_ng"]
    return Workers(cfg.workers, preload)


def _job_size(job: _Job) -> int:
    return job.size


def _died(job: _Job, why: str) -> Prepared:
    """A file whose worker died under it (a crash in a C library, the OOM killer)."""
    return Prepared(job, skip="error", message=why)


def _prepare_all(
    jobs: Sequence[_Job], cfg: Config, workers: Workers[Config] | None = None,
    stop: StopFn | None = None,
) -> Iterator[Prepared]:  # fmt: skip
    """Prepare ``jobs`` in walk order, in worker processes when it pays."""
    own = workers is None
    workers = workers or _workers(cfg)
    try:
        yield from workers.map_ordered(prepare, jobs, cfg, _job_size, stop, _died)
    finally:
        if own:
            workers.close()


# -- the scan -----------------------------------------------------------------


def check_settings(store: Store, cfg: Config) -> None:
    """Refuse an index whose tokenizer or embedder differs from ``cfg``."""
    recorded = store.get_meta("tokenizer")
    wanted = {
        "version": TOKENIZER_VERSION,
        "cjk_ngram": cfg.cjk_ngram,
        "stem": cfg.stem,
    }
    if recorded is not None and recorded != wanted:
        raise EmbedderMismatchError(
            f"the index was built with tokenizer settings {recorded}; "
            "run `docindex reindex --full` to rebuild it"
        )
    emb = store.get_meta("embedder")
    if emb is not None and emb != embedder_params(cfg):
        why = getattr(_embedder(cfg), "degraded_reason", None)
        if why and emb.get("provider") == "minilm":
            from .embed_minilm import INSTALL_HINT

            raise EmbedderMismatchError(
                f"this index holds minilm vectors but {why}: {INSTALL_HINT}, "
                "or run `docindex reindex --full --provider ngram`"
            )
        raise EmbedderMismatchError(
            f"the index was built with embedder {emb.get('provider')} "
            f"(dim {emb.get('dim')}); run `docindex reindex --full` to rebuild it"
        )


def resolve_scope(roots: Sequence[Path], path: Path) -> Path:
    """Absolute ``path`` if it lies inside a root, else OutsideRootsError.

    It must resolve inside a root. It is kept as named (not resolved) when it
    is inside a root as named, so the walk's symlink rule
    (``walker.escape_reason``) sees its symlinks; a path that reaches a root
    through a symlink above it (a symlinked home folder) is used resolved.
    """
    from .limits import check_path

    check_path("PATH", str(path))
    lexical = Path(os.path.normpath(Path(path).absolute()))
    real = Path(path).resolve()
    if any(real == root or root in real.parents for root in roots):
        for target in (lexical, real):
            if any(target == root or root in target.parents for root in roots):
                return target
    raise OutsideRootsError(
        f"{path} is outside the index's roots ({', '.join(map(str, roots))})"
    )


def scan(
    store: Store,
    cfg: Config,
    *,
    scopes: Sequence[Path] = (),
    force: bool = False,
    on_progress: ProgressFn | None = None,
    bulk: bool = False,
    stop: StopFn | None = None,
) -> ScanResult:
    """Bring the index up to date with the roots (or only with ``scopes`` inside them).

    Args:
        store: an open index.
        cfg: settings; ``cfg.roots`` are the roots (absolute).
        scopes: absolute paths inside the roots to limit the scan to; a scope
            that no longer exists removes what was indexed under it.
        force: re-index every file even if unchanged.
        on_progress: called with Progress events.
        bulk: write the first scan of an empty index with a rollback journal
            (``Store.bulk_journal``); for one-off scans, not for a watcher
            whose readers come and go.
        stop: checked between files (and while waiting for a worker); once it
            returns true the scan hands out no more work, stops its workers,
            commits the files it has finished and returns with
            ``interrupted`` set (issue #17). Nothing is pruned after a walk
            that was cut short.

    Returns:
        The scan's counts.
    """
    started = time.perf_counter()
    result = ScanResult()
    roots = [Path(r) for r in cfg.roots]
    if not roots:
        raise DocindexError("no roots to scan; pass a directory or --root")
    embedder = _embedder(cfg)
    if getattr(embedder, "degraded", None):
        result.degraded = True
        result.warnings.append(embedder.degraded)
    journal = store.bulk_journal() if bulk else contextlib.nullcontext()
    with journal, store.atomic():
        check_settings(store, cfg)
        store.set_meta("tokenizer", {"version": TOKENIZER_VERSION,
                                     "cjk_ngram": cfg.cjk_ngram, "stem": cfg.stem})  # fmt: skip
        store.set_meta("embedder", embedder_params(cfg))
        store.set_meta("settings", cfg.index_settings())
        _scan(store, cfg, roots, scopes, force, on_progress, result, stop)
    if result.interrupted:
        result.took_ms = round((time.perf_counter() - started) * 1000, 1)
        return result  # reclaiming pages can wait for the next scan
    if getattr(embedder, "deferred", False):
        embed_pending(store, cfg, on_progress=on_progress, result=result, stop=stop)
    store.reclaim()
    result.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


EMBED_COMMIT = 512  # segments embedded per committed transaction


def embed_pending(
    store: Store, cfg: Config, *, on_progress: ProgressFn | None = None,
    result: ScanResult | None = None, stop: StopFn | None = None,
) -> int:  # fmt: skip
    """Embed the segments that have no vector yet, committing every EMBED_COMMIT.

    Neural embedding is slow (issue #9), so it runs after the lexical scan has
    committed: an interrupted run keeps what it embedded and the next scan
    embeds only the segments whose ``vec`` is still NULL. ``max_embedded``
    caps the total as it does inline. ``stop`` is checked between batches.

    Returns:
        The number of segments embedded.
    """
    from .embed import quantize

    embedder = _embedder(cfg)
    if embedder is None:
        return 0
    counts = store.counts()
    room = max(0, cfg.max_embedded - counts["embedded"])
    total = min(room, counts["segments"] - counts["embedded"])
    done, after = 0, 0
    while done < total:
        if stop is not None and stop():
            if result is not None:
                result.interrupted = True
            break
        rows = store.pending_vectors(after, min(EMBED_COMMIT, total - done))
        if not rows:
            break
        inputs = [
            embed_input(
                row.title or title_text(None, row.rel_path), row.heading,
                store.body(row.doc_id)[row.char_start : row.char_end],
            )
            for row in rows
        ]  # fmt: skip
        blobs = quantize(embedder.embed(inputs), getattr(embedder, "bits", 8))
        with store.atomic():
            store.set_vectors(zip(blobs, (r.id for r in rows), strict=True))
        after = rows[-1].id
        done += len(rows)
        if result is not None:
            result.embedded += len(rows)
        if on_progress:
            on_progress(Progress("embed", done, total))
    return done


def _scan(
    store: Store, cfg: Config, roots: list[Path], scopes: Sequence[Path], force: bool,
    on_progress: ProgressFn | None, result: ScanResult, stop: StopFn | None,
) -> None:  # fmt: skip
    from .walker import SkipEntry, WalkOptions, walk

    options = WalkOptions(
        exclude=cfg.exclude, use_gitignore=cfg.use_gitignore, hidden=cfg.hidden,
        follow_symlinks=cfg.follow_symlinks, max_depth=cfg.max_depth,
        max_walked_files=cfg.max_walked_files, max_file_bytes=cfg.max_file_bytes,
    )  # fmt: skip
    root_ids = {str(r): store.root_id(str(r)) for r in roots}
    known = {rid: store.fingerprints(rid) for rid in root_ids.values()}
    skips = {rid: store.skip_fingerprints(rid) for rid in root_ids.values()}
    seen: dict[int, set[str]] = {rid: set() for rid in root_ids.values()}
    # Skipped by the walk this time: their skip records stay, but a document
    # indexed there before (a file since turned into a symlink, #17) goes.
    skipped: dict[int, set[str]] = {rid: set() for rid in root_ids.values()}
    complete = {rid: True for rid in root_ids.values()}
    jobs: list[_Job] = []
    walk_scopes: list[Path | None] = list(scopes) or [None]
    workers = _workers(cfg)
    try:
        for entry in chain.from_iterable(walk(roots, options, s) for s in walk_scopes):
            if stop is not None and stop():
                result.interrupted = True
                complete = dict.fromkeys(complete, False)
                break
            if isinstance(entry, SkipEntry):
                again = _remember_walk_skip(
                    store, entry, roots, root_ids, skips, skipped
                )
                _walk_skip(entry, result, root_ids, complete, report=not again)
                continue
            result.scanned += 1
            rid = root_ids[str(entry.root)]
            seen[rid].add(entry.rel_path)
            old = known[rid].get(entry.rel_path)
            if (
                old
                and not force
                and old.size == entry.size
                and old.mtime_ns == entry.mtime_ns
            ):
                result.unchanged += 1
                continue
            was = skips[rid].get(entry.rel_path) if old is None else None
            if (
                was is not None
                and not force
                and was.size == entry.size
                and was.mtime_ns == entry.mtime_ns
            ):
                # Skipped before and unchanged: not read again, not warned
                # about again; `docindex skipped` still lists it (issue #23).
                result.unchanged += 1
                continue
            jobs.append(_job(entry, old.hash if old and not force else None))
            if len(jobs) == POOL_THRESHOLD:
                workers.boot()  # imports while the walk goes on
            if on_progress:
                on_progress(Progress("walk", result.scanned, None, entry.rel_path))
        if result.interrupted:
            result.pending = len(jobs)
        else:
            _apply(store, cfg, jobs, root_ids, known, result, on_progress, workers,
                   skips, stop)  # fmt: skip
    except BaseException:
        workers.close(kill=True)  # an error or a second Ctrl-C: no waiting
        raise
    workers.close(kill=result.interrupted)
    # Prune only after a complete walk: a root that vanished, a walk that hit
    # a limit or one cut short must not delete what it did not see.
    for root_str, rid in root_ids.items():
        if not complete[rid]:
            continue
        prefixes = _scope_prefixes(Path(root_str), scopes)
        if prefixes is None:
            continue
        for rel_path, row in known[rid].items():
            if rel_path in seen[rid] or not _under(rel_path, prefixes):
                continue
            remove_document(store, cfg, row.id)
            result.removed += 1
        for rel_path in skips[rid]:
            gone = rel_path not in seen[rid] and rel_path not in skipped[rid]
            if gone and _under(rel_path, prefixes):
                store.clear_skip(rid, rel_path)  # the file is gone


def _walk_skip(
    entry: Any, result: ScanResult, root_ids: dict[str, int],
    complete: dict[int, bool], report: bool = True,
) -> None:  # fmt: skip
    """Count a file the walk left out; a root it could not see whole is not pruned."""
    if report:
        result.skip(entry.reason, str(entry.path), entry.message)
    if entry.reason == "missing-root":
        rid = root_ids.get(str(entry.path))
        if rid is not None:
            complete[rid] = False
    if entry.reason == "walk-limit" or (
        entry.reason == "error" and entry.message.startswith("cannot list directory")
    ):
        for rid in root_ids.values():
            complete[rid] = False


#: Walk skips worth a record: not the user's own exclusions (ignored, hidden),
#: the walk's limits, nor I/O errors, which are transient (a file that vanished
#: mid-walk) and are reported on every scan.
_RECORDED_WALK_SKIPS = frozenset({"too-large", "unsupported", "symlink", "bad-name"})


def _remember_walk_skip(
    store: Store, entry: Any, roots: list[Path], root_ids: dict[str, int],
    skips: dict[int, dict[str, Any]], seen: dict[int, set[str]],
) -> bool:  # fmt: skip
    """Record a walk skip under its root, so ``docindex skipped`` lists it.

    Returns:
        True when the same skip was already recorded (no new warning).
    """
    if entry.reason not in _RECORDED_WALK_SKIPS:
        return False
    for root in roots:
        if root in entry.path.parents:
            rid = root_ids[str(root)]
            # printable: a bad-name file's name is not valid UTF-8 (#8)
            rel = printable(entry.path.relative_to(root).as_posix())
            seen[rid].add(rel)
            was = skips[rid].get(rel)
            if was is not None and (was.reason, was.message) == (
                entry.reason, entry.message
            ):  # fmt: skip
                return True
            store.record_skip(rid, rel, entry.reason, entry.message,
                              None, None, None, time.time())  # fmt: skip
            return False
    return False


def _scope_prefixes(root: Path, scopes: Sequence[Path]) -> list[str] | None:
    """Root-relative prefixes the scan covered ([""] = everything, None = nothing)."""
    if not scopes:
        return [""]
    out = []
    for scope in scopes:
        if scope == root:
            return [""]
        if root in scope.parents:
            out.append(scope.relative_to(root).as_posix())
    return out or None


def _under(rel_path: str, prefixes: list[str]) -> bool:
    return any(
        p == "" or rel_path == p or rel_path.startswith(p + "/") for p in prefixes
    )


def _job(entry: FileEntry, known_hash: str | None) -> _Job:
    return _Job(str(entry.path), entry.rel_path, str(entry.root), entry.size,
                entry.mtime_ns, known_hash)  # fmt: skip


def _apply(
    store: Store, cfg: Config, jobs: list[_Job], root_ids: dict[str, int],
    known: dict[int, dict[str, Any]], result: ScanResult,
    on_progress: ProgressFn | None, workers: Workers[Config] | None = None,
    skips: dict[int, dict[str, Any]] | None = None, stop: StopFn | None = None,
) -> None:  # fmt: skip
    if not jobs:  # a no-op rescan must not count the segments (a table scan)
        return
    skips = skips if skips is not None else {}
    now = time.time()

    def remember(job: _Job, reason: str, message: str, digest: str | None) -> None:
        """Keep the skip until the file changes (issue #23).

        Without a content hash (the file could not be read, or the index was
        full) no fingerprint is kept, so the next scan tries the file again.
        """
        size, mtime = (job.size, job.mtime_ns) if digest else (None, None)
        store.record_skip(root_ids[job.root], job.rel_path, reason, message or reason,
                          size, mtime, digest or None, now)  # fmt: skip

    if len(jobs) >= POOL_THRESHOLD:
        store.tune_fts_for_bulk()
    # Counting segments or vectors reads the whole segments table (~50 MB per
    # corpus copy, issue #7); documents.n_segments sums the same number, and
    # n_segments bounds the vector count until the max_embedded check needs
    # the exact figure.
    n_docs, n_segments = store.fill_counts()
    n_embedded, embedded_exact = n_segments, False
    total = len(jobs)
    prepared = _prepare_all(jobs, cfg, workers, stop)
    done = 0
    while True:
        if stop is not None and stop():
            result.interrupted = True
        else:
            try:
                prep = next(prepared, None)
            except Stopped:
                result.interrupted = True
        if result.interrupted:
            result.pending = total - done
            return
        if prep is None:
            return
        done += 1
        job = prep.job
        rid = root_ids[job.root]
        old = known[rid].get(job.rel_path)
        if on_progress:
            on_progress(Progress("index", done, total, job.rel_path))
        if prep.same and old is not None:
            store.touch_document(old.id, job.size, job.mtime_ns)
            result.unchanged += 1
            continue
        if prep.skip:
            result.skip(prep.skip, job.path, prep.message)
            remember(job, prep.skip, prep.message, prep.hash)
            if old is not None:  # a file that turned bad loses its stale rows
                n_segments -= _segments_count(store, old.id)
                remove_document(store, cfg, old.id)
                known[rid].pop(job.rel_path, None)
                n_docs -= 1
                result.removed += 1
            continue
        if old is not None:
            n_segments -= _segments_count(store, old.id)
            remove_document(store, cfg, old.id)
            n_docs -= 1
        elif n_docs >= cfg.max_docs:
            result.skip("max-docs", job.path, f"index holds max_docs={cfg.max_docs}")
            remember(job, "max-docs", f"index holds max_docs={cfg.max_docs}", None)
            continue
        if n_segments + len(prep.rows) > cfg.max_segments:
            result.skip("max-segments", job.path,
                        f"index holds max_segments={cfg.max_segments}")  # fmt: skip
            remember(job, "max-segments",
                     f"index holds max_segments={cfg.max_segments}", None)  # fmt: skip
            if old is not None:
                known[rid].pop(job.rel_path, None)
                result.removed += 1
            continue
        vectors = prep.vectors
        if (
            vectors is not None
            and n_embedded + len(vectors) > cfg.max_embedded
            and not embedded_exact
        ):
            n_embedded, embedded_exact = store.count_embedded(), True
        if vectors is not None and n_embedded + len(vectors) > cfg.max_embedded:
            room = max(0, cfg.max_embedded - n_embedded)
            vectors = vectors[:room]
            result.skip("max-embedded", job.path,
                        f"max_embedded={cfg.max_embedded} reached")  # fmt: skip
        _store_prepared(store, rid, prep, vectors)
        if job.rel_path in skips.get(rid, ()):
            store.clear_skip(rid, job.rel_path)
        for key, value in prep.notes:
            # Indexed, but not whole: a capped sheet or PDF is never silent (#4).
            reason = "truncated" if key == "truncated" else "partial"
            result.skip(reason, job.path, f"{key}: {value}")
        if prep.notes:
            keys = [k for k, _ in prep.notes]
            reason = "truncated" if "truncated" in keys else "partial"
            message = "; ".join(f"{k}: {v}" for k, v in prep.notes)
            remember(job, reason, message, prep.hash)
        if len(vectors or ()) < len(prep.vectors or ()):
            remember(
                job, "max-embedded", f"max_embedded={cfg.max_embedded} reached", None
            )
        n_docs += 1
        n_segments += len(prep.rows)
        n_embedded += len(vectors or ())
        result.segments += len(prep.rows)
        result.embedded += len(vectors or ())
        if old is not None:
            result.updated += 1
        else:
            result.indexed += 1


def _segments_count(store: Store, doc_id: int) -> int:
    row = store.conn.execute("SELECT n_segments FROM documents WHERE id = ?", (doc_id,))
    found = row.fetchone()
    return int(found[0]) if found else 0


def segment_columns(
    segments: Sequence[Segment], rel_path: str
) -> tuple[bytes | None, tuple[tuple[Any, ...], ...]]:
    """A document's ``sections`` (zlib JSON) and its segments' stored columns.

    Columns run from ``section`` to ``cells`` (between ``doc_id`` and ``vec``);
    a segment's ordinal is its id minus the document's ``first_segment``.
    Heading paths and anchors are stored once per section; a segment keeps
    the section's index and its piece number, and ``frag`` only when its
    chunk id is not ``chunk_id(rel_path, anchor, part)`` (issue #7).
    """
    import json

    from .anchors import chunk_id, slug_path

    index: dict[tuple[tuple[str, ...], str], int] = {}
    rows = []
    for seg in segments:
        key = (seg.heading_path, seg.anchor)
        section = None
        if key != ((), ""):
            section = index.get(key)
            if section is None:
                section = index[key] = len(index)
        derived = chunk_id(rel_path, seg.anchor, seg.part)
        frag = None if seg.chunk_id == derived else seg.chunk_id[len(rel_path) :]
        rows.append((
            section, seg.part if seg.part != 1 else None, frag,
            seg.start_line, seg.end_line - seg.start_line,
            seg.char_start, seg.char_end - seg.char_start,
            seg.page, seg.slide, seg.sheet,
            json.dumps(list(seg.line_cells)) if seg.line_cells else None,
        ))  # fmt: skip
    if not index:
        return None, tuple(rows)
    # Most anchors are the slugs of their headings: then the path alone is kept.
    # Sections share parents, so each path's slug extends its parent's (memo).
    slugs: dict[tuple[str, ...], str] = {(): ""}

    def slug_of(path: tuple[str, ...]) -> str:
        got = slugs.get(path)
        if got is None:
            parent = slug_of(path[:-1])
            own = slug_path(path[-1:])
            got = slugs[path] = f"{parent}/{own}" if parent else own
        return got

    listed = json.dumps(
        [list(h) if h and a == slug_of(h) else [list(h), a] for h, a in index],
        ensure_ascii=False,
    )
    return zlib.compress(listed.encode("utf-8"), 9), tuple(rows)


def _store_prepared(
    store: Store, root_id: int, prep: Prepared, vectors: tuple[bytes, ...] | None
) -> None:
    job = prep.job
    n_vec = len(vectors) if vectors is not None else 0
    with store.atomic(savepoint=False):
        first = store.next_segment_id()
        doc_id = store.insert_document(
            root_id, job.rel_path, prep.kind, prep.title, job.size, job.mtime_ns,
            prep.hash, prep.body_z, prep.meta or {}, len(prep.rows), time.time(),
            prep.sections, first,
        )  # fmt: skip
        rows = [
            (doc_id, *row, vectors[i] if i < n_vec else None)  # type: ignore[index]
            for i, row in enumerate(prep.rows)
        ]
        store.insert_segments(rows, first)
        store.insert_fts(
            (first + i, title, body) for i, (title, body) in enumerate(prep.fts)
        )


def remove_document(store: Store, cfg: Config, doc_id: int) -> None:
    """Delete a document with its FTS rows (tokens recomputed from the stored text)."""
    doc = store.document(doc_id)
    if doc is None:
        return
    body = store.body(doc_id)
    doc_title = title_text(doc["title"], doc["rel_path"])
    rows = [
        (
            seg.id,
            *fts_row(cfg, doc_title, seg.heading, body[seg.char_start : seg.char_end]),
        )
        for seg in store.segments_of(doc_id)
    ]
    with store.atomic(savepoint=False):
        store.delete_fts(rows)
        store.delete_document(doc_id)
