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
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analyze import analyze_segments
from .analyze import embed_input as embed_input  # re-exported: the old home
from .analyze import fts_row as fts_row
from .analyze import title_text as title_text
from .config import Config
from .embed import NgramEmbedder
from .embedder import choose
from .embedder import embedder_for as _embedder
from .errors import (
    DocindexError,
    EmbedderMismatchError,
    ExtractionError,
    OutsideRootsError,
)
from .models import Progress as Progress  # re-exported: the old home
from .models import ProgressFn, ScanResult, SkipReason, printable
from .store import (
    EncodedSegments,
    Fingerprint,
    Index,
    NewDocument,
    compress_body,
    encode_segments,
)

if TYPE_CHECKING:  # imported where used: a query needs none of them (issue #7)
    from .extract import ExtractLimits
    from .walker import FileEntry

TOKENIZER_VERSION = 2  # 2: words first, then CJK n-grams (same multiset)
POOL_THRESHOLD = 48  # files to prepare before a process pool pays for itself
CHUNK_BYTES = 256 * 1024  # a worker's unit of work: ~this many bytes of files
CHUNK_FILES = 32
IN_FLIGHT = 3  # chunks submitted ahead, per worker (bounds memory, issue #7)


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


_Job = Job  # the name before issue #18


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


def _limits(cfg: Config) -> ExtractLimits:
    from .extract import ExtractLimits

    return ExtractLimits(
        timeout_s=cfg.extract_timeout_s,
        max_sheet_rows=cfg.max_sheet_rows,
        max_pages=cfg.max_pdf_pages,
    )


def prepare(job: Job, cfg: Config, *, bulk: bool = False) -> Prepared:
    """Read, hash, extract, segment, tokenise and embed one file (worker-safe).

    ``bulk`` is True in the scan's worker processes, which import numpy when
    they start: its vector and n-gram paths are then free to use.
    """
    from .extract import kind_for
    from .extract.text import looks_binary
    from .segment import segment_document

    try:
        data = _read_regular(job.path, cfg.max_file_bytes + 1)
    except FileNotFoundError:
        return Prepared(
            job, skip=SkipReason.ERROR, message="file vanished before it was read"
        )
    except IsADirectoryError:
        return Prepared(job, skip=SkipReason.UNSUPPORTED, message="is a directory")
    except OSError as exc:
        return Prepared(
            job, skip=SkipReason.ERROR, message=f"cannot read: {exc.strerror}"
        )
    if data is None:
        return Prepared(job, skip=SkipReason.UNSUPPORTED, message="not a regular file")
    if len(data) > cfg.max_file_bytes:
        return Prepared(
            job, skip=SkipReason.TOO_LARGE, message=f"over {cfg.max_file_bytes} bytes"
        )
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if job.known_hash == digest:
        return Prepared(job, hash=digest, same=True)
    if not data.strip():
        return Prepared(
            job, hash=digest, skip=SkipReason.EMPTY, message="the file is blank"
        )
    extra = frozenset(s if s.startswith(".") else f".{s}" for s in cfg.text_extensions)
    kind = kind_for(job.rel_path) or (
        "txt" if os.path.splitext(job.rel_path)[1].lower() in extra else None
    )
    if kind is None:
        if looks_binary(data[:8192]):
            return Prepared(job, hash=digest, skip=SkipReason.BINARY)
        kind = "txt"  # unknown suffix, content sniffed as text
    try:
        extracted = _extract(kind, data, job.rel_path, cfg)
    except ExtractTimeout as exc:
        return Prepared(job, hash=digest, skip=SkipReason.TIMEOUT, message=str(exc))
    except ExtractionError as exc:
        return Prepared(job, hash=digest, skip=exc.reason, message=str(exc))
    except Exception as exc:  # one bad file is a skip reason, never an aborted scan
        return Prepared(
            job,
            hash=digest,
            skip=SkipReason.ERROR,
            message=f"{type(exc).__name__}: {exc}",
        )
    body, segments = segment_document(extracted, job.rel_path, cfg.segment_chars)
    if not segments:
        return Prepared(job, hash=digest, skip=SkipReason.EMPTY, kind=extracted.kind,
                        message=f"no text found in this {extracted.kind} file")  # fmt: skip
    doc_title = title_text(extracted.title, job.rel_path)
    fts, vectors = analyze_segments(
        cfg, extracted.title, doc_title, segments, bulk=bulk
    )
    return Prepared(
        job, hash=digest, kind=extracted.kind, title=extracted.title,
        meta=_facets(extracted.meta), notes=_notes(extracted.meta),
        body_z=compress_body(body), segments=encode_segments(segments, job.rel_path),
        fts=fts, vectors=vectors,
    )  # fmt: skip


def _read_regular(path: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path``, or None when it is not a regular file.

    Opened non-blocking and checked with fstat: a file replaced by a FIFO or a
    device between the walk and the read must not block the scan (issue #8).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
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
    from .extract import get_extractor

    extractor = get_extractor(kind)
    limits = _limits(cfg)
    if kind in ("md", "txt", "pdf"):
        # PDF bounds itself per page and keeps the pages read (issue #23).
        return extractor(data, name, limits)
    with _deadline(limits.timeout_s):
        return extractor(data, name, limits)


class ExtractTimeout(BaseException):
    """Raised by the alarm; a BaseException so no library's ``except Exception`` eats it."""


class _deadline:
    """Bound an office extraction in time with SIGALRM (POSIX main thread only)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.armed = False

    def __enter__(self) -> None:
        import signal
        import threading

        if not hasattr(signal, "setitimer"):
            return
        if threading.current_thread() is not threading.main_thread():
            return

        def _fire(signum: int, frame: object) -> None:
            raise ExtractTimeout(f"extraction took over {self.seconds:g} s")

        self.previous = signal.signal(signal.SIGALRM, _fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self.armed = True

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


def embedder_params(cfg: Config) -> dict[str, Any] | None:
    """The embedder parameters an index built with ``cfg`` records."""
    emb = _embedder(cfg)
    return None if emb is None else dict(emb.params())


def _prepare_chunk(jobs: list[_Job], cfg: Config) -> list[Prepared]:
    return [prepare(job, cfg, bulk=True) for job in jobs]


def _chunked(jobs: Sequence[_Job]) -> Iterator[list[_Job]]:
    """Consecutive runs of about CHUNK_BYTES (at most CHUNK_FILES files)."""
    chunk: list[_Job] = []
    size = 0
    for job in jobs:
        chunk.append(job)
        size += job.size
        if size >= CHUNK_BYTES or len(chunk) >= CHUNK_FILES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


class _Workers:
    """The scan's process pool, booted as soon as the walk shows it will pay.

    Booting mid-walk (issue #7) lets the forkserver start and import the
    worker modules (numpy included) while the main process is still walking,
    instead of after the walk, on the critical path.
    """

    def __init__(self, cfg: Config) -> None:
        self.count = cfg.workers or min(2, os.cpu_count() or 1)
        self.cfg = cfg
        self.pool: Any = None
        self._ctx: Any = None

    def boot(self) -> None:
        """Start the forkserver (without waiting for its imports); idempotent."""
        if self._ctx is not None or self.count <= 1:
            return
        import multiprocessing

        method = (
            "forkserver"
            if "forkserver" in multiprocessing.get_all_start_methods()
            else "spawn"
        )
        self._ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            from multiprocessing import forkserver

            # Workers fork from a server that imported these once, instead of
            # each importing them itself; numpy only when vectors need it.
            preload = [
                "docindex.indexer", "docindex.segment", "docindex.extract.markdown"
            ]  # fmt: skip
            if isinstance(_embedder(self.cfg), NgramEmbedder):
                preload += ["docindex.embed", "numpy"]
            # Front matter (libyaml) and the CJK code-point codec, once for all
            # workers; the server skips what will not import.
            preload += ["yaml", "encodings.utf_32_le", "zlib_ng.zlib_ng"]
            self._ctx.set_forkserver_preload(preload)
            forkserver.ensure_running()  # spawns the server; does not wait

    def executor(self) -> Any:
        """The pool (created on first use)."""
        if self.pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self.boot()
            self.pool = ProcessPoolExecutor(
                max_workers=self.count, mp_context=self._ctx
            )
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _prepare_all(
    jobs: Sequence[_Job], cfg: Config, workers: _Workers | None = None
) -> Iterator[Prepared]:
    """Prepare ``jobs`` in walk order, in worker processes when it pays.

    At most ``IN_FLIGHT`` chunks per worker are submitted ahead of the one being
    stored (issue #7): ``Executor.map`` would submit everything at once and
    let prepared files pile up in memory whenever storing is the slower side.
    Results come back in submission order, so one core or two build the same
    index.
    """
    own = workers is None
    workers = workers or _Workers(cfg)
    if workers.count <= 1 or len(jobs) < POOL_THRESHOLD:
        for job in jobs:
            yield prepare(job, cfg)
        return
    from collections import deque
    from concurrent.futures import Future

    pool = workers.executor()
    try:
        chunks = _chunked(jobs)
        pending: deque[Future[list[Prepared]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_prepare_chunk, chunk, cfg))
            if len(pending) >= IN_FLIGHT * workers.count:
                break
        while pending:
            done = pending.popleft().result()
            for chunk in chunks:  # refill one slot
                pending.append(pool.submit(_prepare_chunk, chunk, cfg))
                break
            yield from done
    finally:
        if own:
            workers.close()


# -- the scan -----------------------------------------------------------------


def check_settings(store: Index, cfg: Config) -> None:
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
        why = choose(cfg).reason
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
    """Absolute ``path`` if it lies inside a root, else OutsideRootsError."""
    target = Path(path).resolve()
    for root in roots:
        if target == root or root in target.parents:
            return target
    raise OutsideRootsError(
        f"{path} is outside the index's roots ({', '.join(map(str, roots))})"
    )


def scan(
    store: Index,
    cfg: Config,
    *,
    scopes: Sequence[Path] = (),
    force: bool = False,
    on_progress: ProgressFn | None = None,
    bulk: bool = False,
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

    Returns:
        The scan's counts.
    """
    started = time.perf_counter()
    result = ScanResult()
    roots = [Path(r) for r in cfg.roots]
    if not roots:
        raise DocindexError("no roots to scan; pass a directory or --root")
    choice = choose(cfg)
    embedder = choice.embedder
    if choice.warning:
        result.degraded = True
        result.warnings.append(choice.warning)
    journal = store.bulk_journal() if bulk else contextlib.nullcontext()
    with journal, store.atomic():
        check_settings(store, cfg)
        store.set_meta("tokenizer", {"version": TOKENIZER_VERSION,
                                     "cjk_ngram": cfg.cjk_ngram, "stem": cfg.stem})  # fmt: skip
        store.set_meta("embedder", embedder_params(cfg))
        store.set_meta("settings", cfg.index_settings())
        _scan(store, cfg, roots, scopes, force, on_progress, result)
    if embedder is not None and embedder.deferred:
        embed_pending(store, cfg, on_progress=on_progress, result=result)
    store.reclaim()
    result.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


EMBED_COMMIT = 512  # segments embedded per committed transaction


def embed_pending(
    store: Index, cfg: Config, *, on_progress: ProgressFn | None = None,
    result: ScanResult | None = None,
) -> int:  # fmt: skip
    """Embed the segments that have no vector yet, committing every EMBED_COMMIT.

    Neural embedding is slow (issue #9), so it runs after the lexical scan has
    committed: an interrupted run keeps what it embedded and the next scan
    embeds only the segments whose ``vec`` is still NULL. ``max_embedded``
    caps the total as it does inline.

    Returns:
        The number of segments embedded.
    """
    from .embed import quantize

    embedder = _embedder(cfg)
    if embedder is None:
        return 0
    counts = store.counts()
    room = max(0, cfg.max_embedded - counts.embedded)
    total = min(room, counts.segments - counts.embedded)
    done, after = 0, 0
    while done < total:
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
        blobs = quantize(embedder.embed(inputs), embedder.bits)
        with store.atomic():
            store.set_vectors([r.id for r in rows], blobs)
        after = rows[-1].id
        done += len(rows)
        if result is not None:
            result.embedded += len(rows)
        if on_progress:
            on_progress(Progress("embed", done, total))
    return done


def _scan(
    store: Index, cfg: Config, roots: list[Path], scopes: Sequence[Path], force: bool,
    on_progress: ProgressFn | None, result: ScanResult,
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
    complete = {rid: True for rid in root_ids.values()}
    jobs: list[Job] = []
    walk_scopes: list[Path | None] = list(scopes) or [None]
    workers = _Workers(cfg)
    try:
        for entry in chain.from_iterable(walk(roots, options, s) for s in walk_scopes):
            if isinstance(entry, SkipEntry):
                again = _remember_walk_skip(store, entry, roots, root_ids, skips, seen)
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
        _apply(store, cfg, jobs, root_ids, known, result, on_progress, workers, skips)
    finally:
        workers.close()
    # Prune only after a complete walk: a root that vanished or a walk that
    # hit a limit must not delete what it did not see.
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
            if rel_path not in seen[rid] and _under(rel_path, prefixes):
                store.clear_skip(rid, rel_path)  # the file is gone


def _walk_skip(
    entry: Any, result: ScanResult, root_ids: dict[str, int],
    complete: dict[int, bool], report: bool = True,
) -> None:  # fmt: skip
    """Count a file the walk left out; a root it could not see whole is not pruned."""
    if report:
        result.skip(entry.reason, str(entry.path), entry.message)
    if entry.reason == SkipReason.MISSING_ROOT:
        rid = root_ids.get(str(entry.path))
        if rid is not None:
            complete[rid] = False
    if entry.reason == SkipReason.WALK_LIMIT or (
        entry.reason == SkipReason.ERROR
        and entry.message.startswith("cannot list directory")
    ):
        for rid in root_ids.values():
            complete[rid] = False


#: Walk skips worth a record: not the user's own exclusions (ignored, hidden),
#: the walk's limits, nor I/O errors, which are transient (a file that vanished
#: mid-walk) and are reported on every scan.
_RECORDED_WALK_SKIPS = frozenset({"too-large", "unsupported", "symlink", "bad-name"})


def _remember_walk_skip(
    store: Index, entry: Any, roots: list[Path], root_ids: dict[str, int],
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


def _job(entry: FileEntry, known_hash: str | None) -> Job:
    return Job(str(entry.path), entry.rel_path, str(entry.root), entry.size,
                entry.mtime_ns, known_hash)  # fmt: skip


def _apply(
    store: Index, cfg: Config, jobs: list[Job], root_ids: dict[str, int],
    known: dict[int, dict[str, Fingerprint]], result: ScanResult,
    on_progress: ProgressFn | None, workers: _Workers | None = None,
    skips: dict[int, dict[str, Any]] | None = None,
) -> None:  # fmt: skip
    if not jobs:  # a no-op rescan must not count the segments (a table scan)
        return
    skips = skips if skips is not None else {}
    now = time.time()

    def remember(job: Job, reason: str, message: str, digest: str | None) -> None:
        """Keep the skip until the file changes (issue #23).

        Without a content hash (the file could not be read, or the index was
        full) no fingerprint is kept, so the next scan tries the file again.
        """
        size, mtime = (job.size, job.mtime_ns) if digest else (None, None)
        store.record_skip(root_ids[job.root], job.rel_path, reason, message or reason,
                          size, mtime, digest or None, now)  # fmt: skip

    if len(jobs) >= POOL_THRESHOLD:
        store.tune_fts_for_bulk()
    fill = _Fill.of(store)
    total = len(jobs)
    for done, prep in enumerate(_prepare_all(jobs, cfg, workers), start=1):
        job = prep.job
        if on_progress:
            on_progress(Progress("index", done, total, job.rel_path))
        rid = root_ids[job.root]
        _apply_one(store, cfg, prep, rid, known, result, fill, remember, skips)


@dataclass(slots=True)
class _Fill:
    """How full the index is, against max_docs, max_segments and max_embedded.

    Counting segments or vectors reads the whole segments table (~50 MB per
    corpus copy, issue #7); documents.n_segments sums the same number, and
    n_segments bounds the vector count until the max_embedded check needs the
    exact figure (``embedded_exact``).
    """

    docs: int
    segments: int
    embedded: int
    embedded_exact: bool = False

    @classmethod
    def of(cls, store: Index) -> _Fill:
        n_docs, n_segments = store.fill_counts()
        return cls(n_docs, n_segments, n_segments)


Remember = Callable[[Job, str, str, str | None], None]


def _apply_one(
    store: Index, cfg: Config, prep: Prepared, rid: int,
    known: dict[int, dict[str, Fingerprint]], result: ScanResult, fill: _Fill,
    remember: Remember, skips: dict[int, dict[str, Any]],
) -> None:  # fmt: skip
    """Store one prepared file (or its skip), within the index's caps."""
    job = prep.job
    old = known[rid].get(job.rel_path)
    if prep.same and old is not None:
        store.touch_document(old.id, job.size, job.mtime_ns)
        result.unchanged += 1
        return
    if prep.skip:
        result.skip(prep.skip, job.path, prep.message)
        remember(job, prep.skip, prep.message, prep.hash)
        if old is not None:  # a file that turned bad loses its stale rows
            fill.segments -= store.segment_count(old.id)
            remove_document(store, cfg, old.id)
            known[rid].pop(job.rel_path, None)
            fill.docs -= 1
            result.removed += 1
        return
    if old is not None:
        fill.segments -= store.segment_count(old.id)
        remove_document(store, cfg, old.id)
        fill.docs -= 1
    elif fill.docs >= cfg.max_docs:
        message = f"index holds max_docs={cfg.max_docs}"
        result.skip(SkipReason.MAX_DOCS, job.path, message)
        remember(job, SkipReason.MAX_DOCS, message, None)
        return
    if fill.segments + len(prep.segments) > cfg.max_segments:
        message = f"index holds max_segments={cfg.max_segments}"
        result.skip(SkipReason.MAX_SEGMENTS, job.path, message)
        remember(job, SkipReason.MAX_SEGMENTS, message, None)
        if old is not None:
            known[rid].pop(job.rel_path, None)
            result.removed += 1
        return
    vectors = _within_max_embedded(store, cfg, prep, result, fill)
    _store_prepared(store, rid, prep, vectors)
    if job.rel_path in skips.get(rid, ()):
        store.clear_skip(rid, job.rel_path)
    for key, value in prep.notes:
        # Indexed, but not whole: a capped sheet or PDF is never silent (#4).
        reason = SkipReason.TRUNCATED if key == "truncated" else SkipReason.PARTIAL
        result.skip(reason, job.path, f"{key}: {value}")
    if prep.notes:
        keys = [k for k, _ in prep.notes]
        reason = SkipReason.TRUNCATED if "truncated" in keys else SkipReason.PARTIAL
        message = "; ".join(f"{k}: {v}" for k, v in prep.notes)
        remember(job, reason, message, prep.hash)
    if len(vectors or ()) < len(prep.vectors or ()):
        message = f"max_embedded={cfg.max_embedded} reached"
        remember(job, SkipReason.MAX_EMBEDDED, message, None)
    fill.docs += 1
    fill.segments += len(prep.segments)
    fill.embedded += len(vectors or ())
    result.segments += len(prep.segments)
    result.embedded += len(vectors or ())
    if old is not None:
        result.updated += 1
    else:
        result.indexed += 1


def _within_max_embedded(
    store: Index, cfg: Config, prep: Prepared, result: ScanResult, fill: _Fill
) -> tuple[bytes, ...] | None:
    """The file's vectors, cut to what ``max_embedded`` leaves room for."""
    vectors = prep.vectors
    if vectors is None or fill.embedded + len(vectors) <= cfg.max_embedded:
        return vectors
    if not fill.embedded_exact:
        fill.embedded, fill.embedded_exact = store.count_embedded(), True
    if fill.embedded + len(vectors) > cfg.max_embedded:
        room = max(0, cfg.max_embedded - fill.embedded)
        vectors = vectors[:room]
        result.skip(SkipReason.MAX_EMBEDDED, prep.job.path,
                    f"max_embedded={cfg.max_embedded} reached")  # fmt: skip
    return vectors


def _store_prepared(
    store: Index, root_id: int, prep: Prepared, vectors: tuple[bytes, ...] | None
) -> None:
    job = prep.job
    store.add_document(
        NewDocument(
            root_id=root_id, rel_path=job.rel_path, kind=prep.kind, title=prep.title,
            size=job.size, mtime_ns=job.mtime_ns, hash=prep.hash, body=prep.body_z,
            segments=prep.segments, fts=prep.fts, vectors=vectors or (),
            meta=prep.meta or {}, indexed_at=time.time(),
        )
    )  # fmt: skip


def remove_document(store: Index, cfg: Config, doc_id: int) -> None:
    """Delete a document with its FTS rows (tokens recomputed from the stored text)."""
    doc = store.document(doc_id)
    if doc is None:
        return
    body = store.body(doc_id)
    doc_title = title_text(doc.title, doc.rel_path)
    rows = [
        (
            seg.id,
            *fts_row(cfg, doc_title, seg.heading, body[seg.char_start : seg.char_end]),
        )
        for seg in store.segments_of(doc_id)
    ]
    store.delete_document(doc_id, rows)
