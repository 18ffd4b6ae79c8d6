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
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.config import Config
from docindex.embed.choice import choose
from docindex.embed.choice import embedder_for as _embedder
from docindex.embed.ngram import NgramEmbedder
from docindex.errors import (
    DocindexError,
    EmbedderMismatchError,
    ExtractionError,
    OutsideRootsError,
)
from docindex.ingest.analyze import analyze_document, document_fields
from docindex.ingest.analyze import fts_row as fts_row
from docindex.ingest.pool import (
    POOL_THRESHOLD,
    ExtractTimeout,
    Stopped,
    Workers,
    deadline,
)
from docindex.models import Progress as Progress  # re-exported: the old home
from docindex.models import ProgressFn, ScanResult, SkipReason, printable
from docindex.store import (
    EncodedSegments,
    Fingerprint,
    Index,
    NewDocument,
    compress_body,
    encode_segments,
)
from docindex.text.fields import embed_input, title_text

if TYPE_CHECKING:  # imported where used: a query needs none of them (issue #7)
    from docindex.ingest.extract import ExtractLimits
    from docindex.ingest.walker import FileEntry, SkipEntry
    from docindex.models import Extracted
    from docindex.store import SkipRow

TOKENIZER_VERSION = 2  # 2: words first, then CJK n-grams (same multiset)


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
    fields: tuple[str, str] = ("", "")  # the document's FTS fields (#21)
    terms: str = ""  # its salient terms (analyze.document_terms)


def _limits(cfg: Config) -> ExtractLimits:
    from docindex.ingest.extract import ExtractLimits

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
        return _index_parts(job, digest, extracted, cfg, bulk)
    except Exception as exc:  # the same barrier after extraction (issue #17)
        return _failed(job, digest, exc)


def _failed(job: Job, digest: str, exc: Exception) -> Prepared:
    """A file that raised: an ``error`` skip with the exception's message."""
    return Prepared(
        job, hash=digest, skip="error", message=f"{type(exc).__name__}: {exc}"
    )


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
    fts, vectors, terms = analyze_document(
        cfg, extracted.title, doc_title, segments, bulk=bulk
    )
    fields = document_fields(cfg, doc_title, (s.heading_path for s in segments))
    return Prepared(
        job, hash=digest, kind=extracted.kind, title=extracted.title,
        meta=_facets(extracted.meta), notes=_notes(extracted.meta),
        body_z=compress_body(body), segments=encode_segments(segments, job.rel_path),
        fts=fts, vectors=vectors, fields=fields,
        terms=terms,
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


_NOTE_KEYS = ("truncated", "page_errors")


def _facets(meta: dict[str, str]) -> dict[str, str]:
    """Front-matter facets only; extractor notes are reported, not stored as facets."""
    return {k: v for k, v in meta.items() if k not in _NOTE_KEYS}


def _notes(meta: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, meta[k]) for k in _NOTE_KEYS if k in meta)


def _extract(kind: str, data: bytes, name: str, cfg: Config) -> Extracted:
    """Run the extractor for ``kind``; its output passes ``clean_extracted`` (#17)."""
    from docindex.ingest.extract import get_extractor
    from docindex.ingest.extract.hygiene import clean_extracted

    extractor = get_extractor(kind)
    limits = _limits(cfg)
    if kind in ("md", "txt", "pdf"):
        # PDF bounds itself per page and keeps the pages read (issue #23).
        return clean_extracted(extractor(data, name, limits))
    with deadline(limits.timeout_s):
        extracted = extractor(data, name, limits)
    return clean_extracted(extracted)


def embedder_params(cfg: Config) -> dict[str, object] | None:
    """The embedder parameters an index built with ``cfg`` records."""
    emb = _embedder(cfg)
    return None if emb is None else dict(emb.params())


def _workers(cfg: Config) -> Workers[Config]:
    """The scan's pool; its forkserver preloads what preparing a file imports."""
    preload = [
        "docindex.ingest.indexer",
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


def _died(job: Job, why: str) -> Prepared:
    """A file whose worker died under it (a crash in a C library, the OOM killer)."""
    return Prepared(job, skip="error", message=why)


def _prepare_all(
    jobs: Sequence[Job], cfg: Config, workers: Workers[Config] | None = None,
    stop: StopFn | None = None,
) -> Iterator[Prepared]:  # fmt: skip
    """Prepare ``jobs`` in walk order, in worker processes when it pays."""
    own = workers is None
    workers = workers or _workers(cfg)
    # Workers import numpy when they start (``_workers``): ``prepare_bulk``
    # lets them use it; the pool runs in this process below POOL_THRESHOLD.
    bulk = workers.count > 1 and len(jobs) >= POOL_THRESHOLD
    fn = prepare_bulk if bulk else prepare
    try:
        yield from workers.map_ordered(fn, jobs, cfg, _job_size, stop, _died)
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
            from docindex.embed.minilm import INSTALL_HINT

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
    from docindex.models.limits import check_path

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
    store: Index,
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
    choice = choose(cfg)
    embedder = choice.embedder
    if choice.warning:
        result.degraded = True
        result.warnings.append(choice.warning)
    tightened = getattr(store, "tightened", None)  # the SQLite store's (#33)
    if isinstance(tightened, str):
        result.warnings.append(tightened)
        store.tightened = None  # type: ignore[attr-defined]
    journal = store.bulk_journal() if bulk else contextlib.nullcontext()
    with journal, store.atomic():
        check_settings(store, cfg)
        _remember(store, "tokenizer", {"version": TOKENIZER_VERSION,
                                       "cjk_ngram": cfg.cjk_ngram, "stem": cfg.stem})  # fmt: skip
        _remember(store, "embedder", embedder_params(cfg))
        _remember(store, "settings", cfg.index_settings())
        _scan(store, cfg, roots, scopes, force, on_progress, result, stop)
    if result.interrupted:
        result.took_ms = round((time.perf_counter() - started) * 1000, 1)
        return result  # reclaiming pages can wait for the next scan
    if embedder is not None and embedder.deferred:
        embed_pending(store, cfg, on_progress=on_progress, result=result, stop=stop)
    store.tidy_fts()  # deleted rows past a share of the index: merge them away
    store.reclaim()
    result.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


def _remember(store: Index, key: str, value: object) -> None:
    """Record a meta value unless it is already there: a no-op rescan writes nothing."""
    if store.get_meta(key) != value:
        store.set_meta(key, value)


EMBED_COMMIT = 512  # segments embedded per committed transaction


def embed_pending(
    store: Index, cfg: Config, *, on_progress: ProgressFn | None = None,
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
    from docindex.embed.ngram import quantize

    embedder = _embedder(cfg)
    if embedder is None:
        return 0
    counts = store.counts()
    room = max(0, cfg.max_embedded - counts.embedded)
    total = min(room, counts.segments - counts.embedded)
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
    on_progress: ProgressFn | None, result: ScanResult, stop: StopFn | None,
) -> None:  # fmt: skip
    from docindex.ingest.walker import SkipEntry, WalkOptions, walk

    options = WalkOptions(
        exclude=cfg.exclude, use_gitignore=cfg.use_gitignore, hidden=cfg.hidden,
        follow_symlinks=cfg.follow_symlinks, max_depth=cfg.max_depth,
        max_walked_files=cfg.max_walked_files, max_file_bytes=cfg.max_file_bytes,
    )  # fmt: skip
    root_ids = {str(r): store.root_id(str(r)) for r in roots}
    # A scoped scan (``scan PATH``, a git hook's or an editor's) reads the
    # rows under its scope only; outside it nothing is walked or pruned.
    under = {rid: _scope_prefixes(Path(r), scopes) or [] for r, rid in root_ids.items()}
    known = {rid: store.fingerprints(rid, under[rid]) for rid in root_ids.values()}
    skips = {rid: store.skip_fingerprints(rid, under[rid]) for rid in root_ids.values()}
    seen: dict[int, set[str]] = {rid: set() for rid in root_ids.values()}
    # Skipped by the walk this time: their skip records stay, but a document
    # indexed there before (a file since turned into a symlink, #17) goes.
    skipped: dict[int, set[str]] = {rid: set() for rid in root_ids.values()}
    complete = {rid: True for rid in root_ids.values()}
    jobs: list[Job] = []
    walk_scopes: list[Path | None] = list(scopes) or [None]
    remove, cleared = _remover(store, cfg, known, force and not scopes)
    workers = _workers(cfg)
    # The loop runs once per file of the tree, changed or not (21,660 at 10x
    # the corpus): per-root state is looked up when the root changes, and the
    # counts are kept in locals (issue #24).
    walked_root: Path | None = None
    known_r: dict[str, Fingerprint] = {}
    skips_r: dict[str, SkipRow] = {}
    seen_add: Callable[[str], None] = set[str]().add
    scanned = unchanged = 0
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
            scanned += 1
            if entry.root is not walked_root:
                walked_root = entry.root
                rid = root_ids[str(walked_root)]
                known_r, skips_r, seen_add = known[rid], skips[rid], seen[rid].add
            rel = entry.rel_path
            seen_add(rel)
            old = known_r.get(rel)
            if old is not None:
                if (
                    old.size == entry.size
                    and old.mtime_ns == entry.mtime_ns
                    and not force
                ):
                    unchanged += 1
                    continue
            elif (was := skips_r.get(rel)) is not None and (
                was.size == entry.size and was.mtime_ns == entry.mtime_ns and not force
            ):
                # Skipped before and unchanged: not read again, not warned
                # about again; `docindex skipped` still lists it (issue #23).
                unchanged += 1
                continue
            jobs.append(_job(entry, old.hash if old and not force else None))
            if len(jobs) == POOL_THRESHOLD:
                workers.boot()  # imports while the walk goes on
            if on_progress:
                on_progress(Progress("walk", result.scanned + scanned, None, rel))
        result.scanned += scanned
        result.unchanged += unchanged
        if result.interrupted:
            result.pending = len(jobs)
        else:
            _apply(store, cfg, jobs, root_ids, known, result, on_progress, workers,
                   skips, stop, remove)  # fmt: skip
    except BaseException:
        workers.close(kill=True)  # an error or a second Ctrl-C: no waiting
        raise
    workers.close(kill=result.interrupted)
    # Prune only after a complete walk: a root that vanished, a walk that hit
    # a limit or one cut short must not delete what it did not see.
    for rid in root_ids.values():
        prefixes = under[rid]
        if not complete[rid] or not prefixes:  # cut short, or out of scope
            continue
        for rel_path, row in known[rid].items():
            if rel_path in seen[rid] or not _under(rel_path, prefixes):
                continue
            remove(row.id)
            result.removed += 1
        for rel_path in skips[rid]:
            gone = rel_path not in seen[rid] and rel_path not in skipped[rid]
            if gone and _under(rel_path, prefixes):
                store.clear_skip(rid, rel_path)  # the file is gone
    # Kept (interrupted, unpruned): rows back, re-tokenised from the stored
    # text, seconds for thousands of files; the progress says so, and a second
    # Ctrl-C rolls the whole scan back at once instead.
    kept = sorted(cleared)
    hint = "Ctrl-C again: undo this scan" if result.interrupted else ""
    for done, doc_id in enumerate(kept, start=1):
        fts = document_fts(store, cfg, doc_id)
        if fts is not None:
            store.restore_fts(doc_id, *fts)
        if on_progress:
            on_progress(Progress("restore", done, len(kept), hint))


def _remover(
    store: Index, cfg: Config, known: dict[int, dict[str, Fingerprint]],
    rewrite: bool,
) -> tuple[Callable[[int], None], set[int]]:  # fmt: skip
    """How this scan removes a document, and the documents whose FTS rows it cleared.

    A scan that rewrites every document (``--force`` over all the roots, when
    they hold the whole index) empties the FTS table first (issue #22):
    deleting row by row cost as much as inserting again (``reindex`` took
    10.0 s where ``reindex --full`` took 6.0) and left every old posting
    behind a delete marker until a merge (the index grew 59 -> 87 MB). The
    returned set holds the old documents not yet removed or replaced; the
    scan gives those that stay their rows back at its end.
    """
    cleared: set[int] = set()
    if rewrite:
        ids = {fp.id for rows in known.values() for fp in rows.values()}
        if ids and len(ids) == store.fill_counts()[0]:
            store.clear_fts()
            cleared = ids

    def remove(doc_id: int) -> None:
        if doc_id in cleared:
            cleared.discard(doc_id)
            store.delete_document(doc_id)  # its FTS rows went with the clear
        else:
            remove_document(store, cfg, doc_id)

    return remove, cleared


def _walk_skip(
    entry: SkipEntry, result: ScanResult, root_ids: dict[str, int],
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
    store: Index, entry: SkipEntry, roots: list[Path], root_ids: dict[str, int],
    skips: dict[int, dict[str, SkipRow]], seen: dict[int, set[str]],
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
    return Job(entry.location, entry.rel_path, str(entry.root), entry.size,
                entry.mtime_ns, known_hash)  # fmt: skip


def _apply(
    store: Index, cfg: Config, jobs: list[Job], root_ids: dict[str, int],
    known: dict[int, dict[str, Fingerprint]], result: ScanResult,
    on_progress: ProgressFn | None, workers: Workers[Config] | None = None,
    skips: dict[int, dict[str, SkipRow]] | None = None, stop: StopFn | None = None,
    remove: Callable[[int], None] | None = None,
) -> None:  # fmt: skip
    if not jobs:  # a no-op rescan must not count the segments (a table scan)
        return
    if remove is None:
        remove = functools.partial(remove_document, store, cfg)
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
        if on_progress:
            on_progress(Progress("index", done, total, job.rel_path))
        rid = root_ids[job.root]
        _apply_one(store, cfg, prep, rid, known, result, fill, remember, skips,
                   remove)  # fmt: skip


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
    remember: Remember, skips: dict[int, dict[str, SkipRow]],
    remove: Callable[[int], None],
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
            remove(old.id)
            known[rid].pop(job.rel_path, None)
            fill.docs -= 1
            result.removed += 1
        return
    if old is not None:
        fill.segments -= store.segment_count(old.id)
        remove(old.id)
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
            meta=prep.meta or {}, indexed_at=time.time(), fields=prep.fields,
            terms=prep.terms,
        )
    )  # fmt: skip


def document_fts(
    store: Index, cfg: Config, doc_id: int
) -> tuple[list[tuple[int, str, str]], tuple[str, str]] | None:
    """A stored document's FTS rows and ``doc_fts`` fields, from its stored text
    (None when there is no such document)."""
    doc = store.document(doc_id)
    if doc is None:
        return None
    body = store.body(doc_id)
    doc_title = title_text(doc.title, doc.rel_path)
    segments = store.segments_of(doc_id)
    rows = [
        (
            seg.id,
            *fts_row(cfg, doc_title, seg.heading, body[seg.char_start : seg.char_end]),
        )
        for seg in segments
    ]
    return rows, document_fields(cfg, doc_title, (seg.heading for seg in segments))


def remove_document(store: Index, cfg: Config, doc_id: int) -> None:
    """Delete a document with its FTS rows (tokens recomputed from the stored text)."""
    fts = document_fts(store, cfg, doc_id)
    if fts is not None:
        store.delete_document(doc_id, *fts)
