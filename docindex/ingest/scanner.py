"""The scan driver: walk the roots, hand changed files to the writer, prune.

A scan is one write transaction: readers keep answering from the last commit
(WAL), an interrupted scan leaves the index exactly as it was, and a second
writer waits (busy timeout) or is told the index is busy.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.config import Config
from docindex.embed.choice import choose
from docindex.errors import DocindexError
from docindex.ingest.pool import POOL_THRESHOLD, Workers
from docindex.ingest.prepare import Job, StopFn, _workers
from docindex.ingest.removal import (
    PENDING_FTS,
    _remover,
    document_fts,
    restore_pending_fts,
)
from docindex.ingest.settings import (
    _remember,
    check_settings,
    embedder_params,
    root_pins,
    tokenizer_settings,
)
from docindex.ingest.writer import _apply, embed_pending
from docindex.models import (
    ASSET_REASONS,
    OCR_OFF,
    Progress,
    ProgressFn,
    ScanResult,
    printable,
)
from docindex.store import Fingerprint, Index, SkipRow

if TYPE_CHECKING:
    from docindex.ingest.walker import FileEntry, SkipEntry


def scan(
    store: Index,
    cfg: Config,
    *,
    scopes: Sequence[Path] = (),
    force: bool = False,
    on_progress: ProgressFn | None = None,
    bulk: bool = False,
    stop: StopFn | None = None,
    yield_to: StopFn | None = None,
    keep_present: bool = False,
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
        yield_to: checked between batches of deferred vectors: once true,
            the scan returns with its lexical rows committed and the rest
            counted in ``vectors_pending`` (``watch``: file changes first,
            issue #47).
        keep_present: remove only documents whose file is gone, not those
            this walk's narrower rules leave out (issue #44: another
            machine's wider settings indexed them).

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
        _remember(store, "tokenizer", tokenizer_settings(cfg))
        _remember(store, "embedder", embedder_params(cfg))
        _remember(store, "settings", _settings_row(store, cfg))
        if restore_pending_fts(store, cfg, stop, on_progress):
            _scan(store, cfg, roots, scopes, force, on_progress, result, stop,
                  keep_present)  # fmt: skip
        else:
            result.interrupted = True
    if result.interrupted:
        result.took_ms = round((time.perf_counter() - started) * 1000, 1)
        return result  # reclaiming pages can wait for the next scan
    if embedder is not None and embedder.deferred:
        embed_pending(store, cfg, on_progress=on_progress, result=result, stop=stop,
                      yield_to=yield_to)  # fmt: skip
    store.tidy_fts()  # deleted rows past a share of the index: merge them away
    store.reclaim()
    if cfg.ocr and (result.indexed or result.updated or result.skipped):
        _prune_ocr_cache(cfg)
    result.took_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


def _settings_row(store: Index, cfg: Config) -> dict[str, object]:
    """The settings the index remembers after this scan.

    Its roots keep those this scan does not read (a root this machine has not
    accepted, issue #44): only ``roots remove`` and ``roots move`` drop one.
    """
    row = cfg.index_settings()
    before = store.get_meta("settings")
    kept = before.get("roots") if isinstance(before, dict) else None
    if isinstance(kept, list):
        row["roots"] = list(dict.fromkeys([*cfg.roots, *map(str, kept)]))
    return row


def _prune_ocr_cache(cfg: Config) -> None:
    """Keep the OCR text cache under ``ocr_cache_max_bytes`` (#45)."""
    from docindex.config import cache_dir
    from docindex.ingest.extract.ocr import prune_cache

    prune_cache(cache_dir(), cfg.ocr_cache_max_bytes)


@dataclass(slots=True)
class _Seen:
    """What a scan knows of each root (by root id) before and during its walk.

    ``known`` and ``skips``: the documents' fingerprints and skip records
    under the scope (``under``: root-relative prefixes, [] = out of scope);
    ``seen``: paths the walk met; ``skipped``: paths the walk left out this
    time (their skip records stay, but a document indexed there before, a
    file since turned into a symlink (#17), goes); ``complete``: the walk saw
    the whole root, so what it did not meet may be pruned.
    """

    root_ids: dict[str, int]
    under: dict[int, list[str]]
    known: dict[int, dict[str, Fingerprint]]
    skips: dict[int, dict[str, SkipRow]]
    seen: dict[int, set[str]] = field(default_factory=dict)
    skipped: dict[int, set[str]] = field(default_factory=dict)
    complete: dict[int, bool] = field(default_factory=dict)

    @classmethod
    def read(cls, store: Index, roots: list[Path], scopes: Sequence[Path]) -> _Seen:
        """Read the rows under the scan's scope only (a git hook's ``scan PATH``)."""
        root_ids = {str(r): store.root_id(str(r)) for r in roots}
        under = {
            rid: _scope_prefixes(Path(r), scopes) or [] for r, rid in root_ids.items()
        }
        ids = list(root_ids.values())
        return cls(
            root_ids, under,
            known={rid: store.fingerprints(rid, under[rid]) for rid in ids},
            skips={rid: store.skip_fingerprints(rid, under[rid]) for rid in ids},
            seen={rid: set() for rid in ids}, skipped={rid: set() for rid in ids},
            complete=dict.fromkeys(ids, True),
        )  # fmt: skip


def _scan(
    store: Index, cfg: Config, roots: list[Path], scopes: Sequence[Path], force: bool,
    on_progress: ProgressFn | None, result: ScanResult, stop: StopFn | None,
    keep_present: bool = False,
) -> None:  # fmt: skip
    state = _Seen.read(store, roots, scopes)
    remove, cleared = _remover(store, cfg, state.known, force and not scopes)
    workers = _workers(cfg)
    try:
        jobs = _walk_jobs(store, cfg, roots, scopes, force, on_progress, result,
                          stop, state, workers)  # fmt: skip
        if result.interrupted:
            result.pending = len(jobs)
        else:
            _apply(store, cfg, jobs, state.root_ids, state.known, result,
                   on_progress, workers, state.skips, stop, remove)  # fmt: skip
    except BaseException:
        workers.close(kill=True)  # an error or a second Ctrl-C: no waiting
        raise
    workers.close(kill=result.interrupted)
    _prune(store, state, result, remove, keep_present)
    _restore_kept(store, cfg, cleared, result, on_progress)


def _walk_jobs(
    store: Index, cfg: Config, roots: list[Path], scopes: Sequence[Path],
    force: bool, on_progress: ProgressFn | None, result: ScanResult,
    stop: StopFn | None, state: _Seen, workers: Workers[Config],
) -> list[Job]:  # fmt: skip
    """Walk the roots (or scopes); the files that are new or changed, as jobs.

    The loop runs once per file of the tree, changed or not (21,660 at 10x
    the corpus): per-root state is looked up when the root changes, and the
    counts are kept in locals (issue #24).
    """
    from docindex.ingest.assets import opt_ins
    from docindex.ingest.walker import SkipEntry, WalkOptions, walk

    options = WalkOptions(
        exclude=cfg.exclude, use_gitignore=cfg.use_gitignore, hidden=cfg.hidden,
        follow_symlinks=cfg.follow_symlinks, max_depth=cfg.max_depth,
        max_walked_files=cfg.max_walked_files, max_file_bytes=cfg.max_file_bytes,
        images_unread=_images_unread(cfg), pins=root_pins(store),
        opted_in=opt_ins(cfg.text_extensions),
    )  # fmt: skip
    # A file skipped for want of OCR is read again once OCR can run (#36);
    # whether it can is asked only when such a file is met.
    ocr_now = options.images_unread is None
    # The scan's OCR time ends here, in every worker (#45); 0: OCR is off.
    ocr_until = time.time() + cfg.ocr_scan_timeout_s if cfg.ocr else 0.0
    jobs: list[Job] = []
    walk_scopes: list[Path | None] = list(scopes) or [None]
    walked_root: Path | None = None
    known_r: dict[str, Fingerprint] = {}
    skips_r: dict[str, SkipRow] = {}
    seen_add: Callable[[str], None] = set[str]().add
    scanned = unchanged = 0
    for entry in chain.from_iterable(walk(roots, options, s) for s in walk_scopes):
        if stop is not None and stop():
            result.interrupted = True
            state.complete = dict.fromkeys(state.complete, False)
            break
        if isinstance(entry, SkipEntry):
            again = _remember_walk_skip(store, entry, roots, state.root_ids,
                                        state.skips, state.skipped)  # fmt: skip
            _walk_skip(entry, result, state.root_ids, state.complete,
                       report=not again)  # fmt: skip
            continue
        scanned += 1
        if entry.root is not walked_root:
            walked_root = entry.root
            rid = state.root_ids[str(walked_root)]
            known_r, skips_r = state.known[rid], state.skips[rid]
            seen_add = state.seen[rid].add
        rel = entry.rel_path
        seen_add(rel)
        old = known_r.get(rel)
        if old is not None:
            if old.size == entry.size and old.mtime_ns == entry.mtime_ns and not force:
                if not (ocr_now and _needs_ocr(skips_r.get(rel))):
                    unchanged += 1
                    continue
                old = None  # a mixed PDF's scanned pages: read it again (#36)
        elif (was := skips_r.get(rel)) is not None and (
            was.size == entry.size
            and was.mtime_ns == entry.mtime_ns
            and not force
            and not (was.reason == "no-text-layer" and ocr_now)
        ):
            # Skipped before and unchanged: not read again, not warned
            # about again; `docindex skipped` still lists it (issue #23).
            unchanged += 1
            continue
        jobs.append(_job(entry, old.hash if old and not force else None, ocr_until))
        if len(jobs) == POOL_THRESHOLD:
            workers.boot()  # imports while the walk goes on
        if on_progress:
            on_progress(Progress("walk", result.scanned + scanned, None, rel))
    result.scanned += scanned
    result.unchanged += unchanged
    return jobs


def _prune(
    store: Index, state: _Seen, result: ScanResult, remove: Callable[[int], None],
    keep_present: bool = False,
) -> None:  # fmt: skip
    """Remove what a complete walk did not meet (and forget gone files' skips).

    Only after a complete walk: a root that vanished, a walk that hit a limit
    or one cut short must not delete what it did not see; nor a root whose
    folder is empty here while the index holds its documents (a share that
    is not mounted is not an empty share, issue #44). ``keep_present``: see
    ``scan``.
    """
    for root, rid in state.root_ids.items():
        prefixes = state.under[rid]
        if not state.complete[rid] or not prefixes:  # cut short, or out of scope
            continue
        seen = state.seen[rid]
        if prefixes == [""] and not seen and state.known[rid] and _empty(root):
            n = len(state.known[rid])
            result.warnings.append(
                f"root {root} is empty on this host (a share that is not "
                f"mounted?); its {n:,} documents are kept. If you emptied it on "
                f"purpose, run `docindex roots remove {shlex.quote(root)}`"
            )
            continue
        for rel_path, row in state.known[rid].items():
            if rel_path in seen or not _under(rel_path, prefixes):
                continue
            if keep_present and os.path.lexists(os.path.join(root, rel_path)):
                continue
            remove(row.id)
            result.removed += 1
        for rel_path in state.skips[rid]:
            gone = rel_path not in seen and rel_path not in state.skipped[rid]
            if gone and _under(rel_path, prefixes):
                store.clear_skip(rid, rel_path)  # the file is gone


def _empty(root: str) -> bool:
    """True when the folder holds no entry at all (an empty mount point)."""
    try:
        with os.scandir(root) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _restore_kept(
    store: Index, cfg: Config, cleared: set[int], result: ScanResult,
    on_progress: ProgressFn | None,
) -> None:  # fmt: skip
    """Give the documents whose FTS rows a rewrite cleared, and that stay, rows back.

    Kept (interrupted, unpruned): rows back, re-tokenised from the stored
    text. That takes seconds for thousands of files (8-10 s for the corpus on
    a loaded machine), and Ctrl-C must end a scan in under one (#38): an
    interrupted scan commits what it finished and leaves the rest to the next
    writer (``restore_pending_fts``), which gives their rows back first.
    """
    kept = sorted(cleared)
    if result.interrupted and kept:
        pending = store.get_meta(PENDING_FTS) or []
        store.set_meta(PENDING_FTS, sorted({*pending, *kept}))
        return
    hint = ""
    for done, doc_id in enumerate(kept, start=1):
        fts = document_fts(store, cfg, doc_id)
        if fts is not None:
            store.restore_fts(doc_id, *fts)
        if on_progress:
            on_progress(Progress("restore", done, len(kept), hint))


def _walk_skip(
    entry: SkipEntry, result: ScanResult, root_ids: dict[str, int],
    complete: dict[int, bool], report: bool = True,
) -> None:  # fmt: skip
    """Count a file the walk left out; a root it could not see whole is not pruned."""
    if report:
        # Assets are expected, like hidden files: counted, not warned about
        # one by one; `docindex skipped` lists them with their message (#45).
        quiet = entry.reason in ASSET_REASONS
        result.skip(entry.reason, str(entry.path), "" if quiet else entry.message)
    if entry.reason == "missing-root":
        rid = root_ids.get(str(entry.path))
        if rid is not None:
            complete[rid] = False
    if entry.reason == "walk-limit" or (
        entry.reason == "error" and entry.message.startswith("cannot list directory")
    ):
        for rid in root_ids.values():
            complete[rid] = False


#: Walk skips worth a record: the user's own exclusions too (ignored, hidden:
#: the scan counts them, so `skipped --reason hidden` must list them, #45), but
#: not the walk's limits nor I/O errors, which are transient (a file that
#: vanished mid-walk) and are reported on every scan (models.UNRECORDED_REASONS).
_RECORDED_WALK_SKIPS = frozenset(
    {"too-large", "unsupported", "symlink", "bad-name", "no-text-layer", "hidden",
     "ignored"}
) | ASSET_REASONS  # fmt: skip


def _images_unread(cfg: Config) -> str | None:
    """Why OCR cannot read images in this scan (None: it can), issue #36."""
    if not cfg.ocr:
        return OCR_OFF  # without importing the OCR module: a rescan's fixed cost
    from docindex.ingest.extract.ocr import unavailable_message
    from docindex.ingest.prepare import ocr_settings

    return unavailable_message(ocr_settings(cfg))


def _needs_ocr(record: SkipRow | None) -> bool:
    """True for a skip record kept because the file has pages only OCR can read."""
    return record is not None and record.reason == "no-text-layer"


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


def _job(entry: FileEntry, known_hash: str | None, ocr_until: float) -> Job:
    return Job(entry.location, entry.rel_path, str(entry.root), entry.size,
                entry.mtime_ns, known_hash, ocr_until)  # fmt: skip
