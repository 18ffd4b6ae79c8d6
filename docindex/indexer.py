"""walk -> extract -> segment -> tokenize -> embed -> store; incremental by content hash.

A scan is one write transaction: readers keep answering from the last commit
(WAL), an interrupted scan leaves the index exactly as it was, and a second
writer waits (busy timeout) or is told the index is busy. Files are prepared
(read, hashed, extracted, segmented, tokenised, embedded) in worker processes
when there is enough work; results come back in walk order, so the index is
identical whether one core or two built it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config
from .errors import (
    DocindexError,
    EmbedderMismatchError,
    ExtractionError,
    OutsideRootsError,
)
from .extract import ExtractLimits, get_extractor, kind_for
from .extract.text import looks_binary
from .models import ScanResult, Segment
from .segment import segment_document
from .store import Store
from .tokenize import terms
from .walker import FileEntry, SkipEntry, WalkOptions, walk

TOKENIZER_VERSION = 1
POOL_THRESHOLD = 48  # files to prepare before a process pool pays for itself


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: ``done`` files of ``total`` (None while walking)."""

    phase: str
    done: int
    total: int | None
    path: str = ""


ProgressFn = Callable[[Progress], None]


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
    body: str = ""
    segments: tuple[Segment, ...] = ()
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
    kw = {"cjk_ngram": cfg.cjk_ngram, "use_stem": cfg.stem}
    return " ".join(terms(head, **kw)), " ".join(terms(text, **kw))


def embed_input(title: str | None, heading: Sequence[str], text: str) -> str:
    """Semantic input: ``Doc title > Section > Subsection`` then the text (issue #3)."""
    context = " > ".join(p for p in (title, *heading) if p)
    return f"{context}\n{text}" if context else text


def _limits(cfg: Config) -> ExtractLimits:
    return ExtractLimits(
        timeout_s=cfg.extract_timeout_s,
        max_sheet_rows=cfg.max_sheet_rows,
        max_pages=cfg.max_pdf_pages,
    )


def prepare(job: _Job, cfg: Config) -> Prepared:
    """Read, hash, extract, segment, tokenise and embed one file (worker-safe)."""
    try:
        data = _read_regular(job.path, cfg.max_file_bytes + 1)
    except FileNotFoundError:
        return Prepared(job, skip="error", message="file vanished before it was read")
    except IsADirectoryError:
        return Prepared(job, skip="unsupported", message="is a directory")
    except OSError as exc:
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
        return Prepared(job, hash=digest, skip="empty")
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
        return Prepared(
            job, hash=digest, skip="error", message=f"{type(exc).__name__}: {exc}"
        )
    body, segments = segment_document(extracted, job.rel_path, cfg.segment_chars)
    if not segments:
        return Prepared(job, hash=digest, skip="empty", kind=extracted.kind)
    doc_title = title_text(extracted.title, job.rel_path)
    fts = tuple(fts_row(cfg, doc_title, s.heading_path, s.text) for s in segments)
    vectors = None
    embedder = _embedder(cfg)
    if embedder is not None:
        from .embed import quantize

        inputs = [
            embed_input(extracted.title or doc_title, s.heading_path, s.text)
            for s in segments
        ]
        vectors = tuple(quantize(embedder.embed(inputs)))
    return Prepared(
        job, hash=digest, kind=extracted.kind, title=extracted.title,
        meta=_facets(extracted.meta), notes=_notes(extracted.meta), body=body,
        segments=tuple(segments), fts=fts,
        vectors=vectors,
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
    extractor = get_extractor(kind)
    limits = _limits(cfg)
    if kind in ("md", "txt"):
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


_EMBEDDERS: dict[tuple[Any, ...], Any] = {}


def _embedder(cfg: Config) -> Any:
    key = (cfg.embedding_provider, cfg.embedding_dim, cfg.cjk_ngram, cfg.stem)
    if key not in _EMBEDDERS:
        from .embed import make_embedder

        _EMBEDDERS[key] = make_embedder(*key)
    return _EMBEDDERS[key]


def embedder_params(cfg: Config) -> dict[str, Any] | None:
    """The embedder parameters an index built with ``cfg`` records."""
    emb = _embedder(cfg)
    return None if emb is None else dict(emb.params())


def _prepare_star(args: tuple[_Job, Config]) -> Prepared:
    return prepare(*args)


def _prepare_all(jobs: Sequence[_Job], cfg: Config) -> Iterator[Prepared]:
    workers = cfg.workers or min(2, os.cpu_count() or 1)
    if workers <= 1 or len(jobs) < POOL_THRESHOLD:
        for job in jobs:
            yield prepare(job, cfg)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = (
        "forkserver"
        if "forkserver" in multiprocessing.get_all_start_methods()
        else "spawn"
    )
    ctx = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        yield from pool.map(_prepare_star, ((j, cfg) for j in jobs), chunksize=4)


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
    store: Store,
    cfg: Config,
    *,
    scopes: Sequence[Path] = (),
    force: bool = False,
    on_progress: ProgressFn | None = None,
) -> ScanResult:
    """Bring the index up to date with the roots (or only with ``scopes`` inside them).

    Args:
        store: an open index.
        cfg: settings; ``cfg.roots`` are the roots (absolute).
        scopes: absolute paths inside the roots to limit the scan to; a scope
            that no longer exists removes what was indexed under it.
        force: re-index every file even if unchanged.
        on_progress: called with Progress events.

    Returns:
        The scan's counts.
    """
    started = time.perf_counter()
    result = ScanResult()
    roots = [Path(r) for r in cfg.roots]
    if not roots:
        raise DocindexError("no roots to scan; pass a directory or --root")
    with store.atomic():
        check_settings(store, cfg)
        store.set_meta("tokenizer", {"version": TOKENIZER_VERSION,
                                     "cjk_ngram": cfg.cjk_ngram, "stem": cfg.stem})  # fmt: skip
        store.set_meta("embedder", embedder_params(cfg))
        store.set_meta("settings", cfg.index_settings())
        _scan(store, cfg, roots, scopes, force, on_progress, result)
    result.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


def _scan(
    store: Store, cfg: Config, roots: list[Path], scopes: Sequence[Path], force: bool,
    on_progress: ProgressFn | None, result: ScanResult,
) -> None:  # fmt: skip
    options = WalkOptions(
        exclude=cfg.exclude, use_gitignore=cfg.use_gitignore, hidden=cfg.hidden,
        follow_symlinks=cfg.follow_symlinks, max_depth=cfg.max_depth,
        max_walked_files=cfg.max_walked_files, max_file_bytes=cfg.max_file_bytes,
    )  # fmt: skip
    root_ids = {str(r): store.root_id(str(r)) for r in roots}
    known = {rid: store.fingerprints(rid) for rid in root_ids.values()}
    seen: dict[int, set[str]] = {rid: set() for rid in root_ids.values()}
    complete = {rid: True for rid in root_ids.values()}
    jobs: list[_Job] = []
    walk_scopes: list[Path | None] = list(scopes) or [None]
    for scope in walk_scopes:
        for entry in walk(roots, options, scope):
            if isinstance(entry, SkipEntry):
                result.skip(entry.reason, str(entry.path), entry.message)
                if entry.reason == "missing-root":
                    rid = root_ids.get(str(entry.path))
                    if rid is not None:
                        complete[rid] = False
                if entry.reason == "walk-limit" or (
                    entry.reason == "error" and "directory" in entry.message
                ):
                    for rid in root_ids.values():
                        complete[rid] = False
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
            jobs.append(_job(entry, old.hash if old and not force else None))
            if on_progress:
                on_progress(Progress("walk", result.scanned, None, entry.rel_path))
    _apply(store, cfg, jobs, root_ids, known, result, on_progress)
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
    on_progress: ProgressFn | None,
) -> None:  # fmt: skip
    counts = store.counts()
    n_docs, n_segments, n_embedded = (
        counts["documents"],
        counts["segments"],
        counts["embedded"],
    )
    total = len(jobs)
    for done, prep in enumerate(_prepare_all(jobs, cfg), start=1):
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
            continue
        if n_segments + len(prep.segments) > cfg.max_segments:
            result.skip("max-segments", job.path,
                        f"index holds max_segments={cfg.max_segments}")  # fmt: skip
            if old is not None:
                known[rid].pop(job.rel_path, None)
                result.removed += 1
            continue
        vectors = prep.vectors
        if vectors is not None and n_embedded + len(vectors) > cfg.max_embedded:
            room = max(0, cfg.max_embedded - n_embedded)
            vectors = vectors[:room]
            result.skip("max-embedded", job.path,
                        f"max_embedded={cfg.max_embedded} reached")  # fmt: skip
        _store_prepared(store, rid, prep, vectors)
        for key, value in prep.notes:
            # Indexed, but not whole: a capped sheet or PDF is never silent (#4).
            reason = "truncated" if key == "truncated" else "partial"
            result.skip(reason, job.path, f"{key}: {value}")
        n_docs += 1
        n_segments += len(prep.segments)
        n_embedded += len(vectors or ())
        result.segments += len(prep.segments)
        result.embedded += len(vectors or ())
        if old is not None:
            result.updated += 1
        else:
            result.indexed += 1


def _segments_count(store: Store, doc_id: int) -> int:
    row = store.conn.execute("SELECT n_segments FROM documents WHERE id = ?", (doc_id,))
    found = row.fetchone()
    return int(found[0]) if found else 0


def _store_prepared(
    store: Store, root_id: int, prep: Prepared, vectors: tuple[bytes, ...] | None
) -> None:
    import json

    job = prep.job
    with store.atomic():
        doc_id = store.insert_document(
            root_id, job.rel_path, prep.kind, prep.title, job.size, job.mtime_ns,
            prep.hash, prep.body, prep.meta or {}, len(prep.segments), time.time(),
        )  # fmt: skip
        rows = []
        for i, seg in enumerate(prep.segments):
            vec = vectors[i] if vectors is not None and i < len(vectors) else None
            seg_hash = hashlib.blake2b(
                f"{seg.chunk_id}\0{seg.start_line}\0{seg.text}".encode(), digest_size=8
            ).hexdigest()
            rows.append((
                doc_id, seg.ordinal, seg.chunk_id, seg.start_line, seg.end_line,
                seg.char_start, seg.char_end,
                json.dumps(list(seg.heading_path), ensure_ascii=False)
                if seg.heading_path else None,
                seg.page, seg.slide, seg.sheet,
                json.dumps(list(seg.line_cells)) if seg.line_cells else None,
                seg_hash, vec,
            ))  # fmt: skip
        first = store.insert_segments(rows)
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
    with store.atomic():
        store.delete_fts(rows)
        store.delete_document(doc_id)


def iter_documents_text(store: Store) -> Iterable[tuple[str, str]]:
    """(rel_path, text) of every document, for tests and tools."""
    for (doc_id,) in store.conn.execute(
        "SELECT id FROM documents ORDER BY id"
    ).fetchall():
        doc = store.document(doc_id)
        if doc is not None:
            yield doc["rel_path"], store.body(doc_id)
