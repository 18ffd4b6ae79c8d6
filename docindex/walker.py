"""Yield candidate files under the roots, sorted, with a skip reason for the rest.

Which paths are left out is decided by :class:`docindex.ignore.PathRules`
(git's ignore semantics, our defaults, ``--exclude``); the walk keeps one
:class:`~docindex.ignore.DirRules` per directory level, so each file costs a
few lookups. An excluded directory is pruned whole (one ``ignored`` count)
unless an ``--exclude`` negation could re-include something below it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .ignore import DEFAULT_EXCLUDES, DirRules, PathRules

__all__ = ["DEFAULT_EXCLUDES", "UNSUPPORTED_SUFFIXES", "FileEntry", "PathRules",
           "SkipEntry", "WalkOptions", "walk"]  # fmt: skip

# Suffixes we know carry no extractable text: skipped without reading.
UNSUPPORTED_SUFFIXES = frozenset(
    """.png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .svgz .heic .psd .mp3 .mp4
    .m4a .wav .flac .ogg .avi .mov .mkv .webm .zip .gz .tgz .bz2 .xz .7z .rar .tar
    .jar .war .class .wasm .bin .dat .db .sqlite .sqlite3 .pdb .iso .dmg .woff
    .woff2 .ttf .otf .eot .pkl .npy .npz .parquet .lock""".split()
)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file the walk accepted: where it is and its stat fingerprint."""

    path: Path
    root: Path
    rel_path: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class SkipEntry:
    """A file (or pruned directory) the walk left out, and why."""

    path: Path
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class WalkOptions:
    """Walk rules; see Config for the defaults."""

    exclude: tuple[str, ...] = ()
    use_gitignore: bool = True
    hidden: bool = False
    follow_symlinks: bool = False
    max_depth: int = 64
    max_walked_files: int = 200_000
    max_file_bytes: int = 5 * 1024 * 1024


def escape_reason(path: Path, root: Path, *, follow_symlinks: bool) -> str | None:
    """Why ``path`` must not be indexed under ``root``, or None when it may be.

    The one symlink rule for the walk, watch events and scoped scans (``scan
    PATH``, MCP ``doc_scan``), issue #17: ``path`` must lie inside ``root`` and,
    unless ``follow_symlinks``, no component of it below the root may be a
    symlink; with ``follow_symlinks`` it must still resolve inside the root.
    A path that does not exist (a deleted file) passes if its existing
    ancestors do, so that what was indexed under it can be removed.

    Args:
        path: absolute, not resolved (as the walk or an event names it).
        root: the absolute, resolved root that lexically contains ``path``.
        follow_symlinks: the ``--follow-symlinks`` setting.
    """
    lexical = Path(os.path.normpath(path))
    if lexical != root and root not in lexical.parents:
        return "outside the roots"
    if follow_symlinks:
        real = Path(os.path.realpath(lexical))
        if real != root and root not in real.parents:
            return "symlink pointing outside the roots"
        return None
    current = root
    for part in lexical.relative_to(root).parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot check {current}: {exc.strerror}"
        if stat.S_ISLNK(mode):
            if current == lexical:
                return "symlink not followed (see --follow-symlinks)"
            return f"inside symlink {current}"
    return None


def walk(
    roots: Sequence[Path], options: WalkOptions, scope: Path | None = None
) -> Iterator[FileEntry | SkipEntry]:
    """Walk ``roots`` (or only ``scope`` inside one of them), yielding entries in order.

    Args:
        roots: absolute, resolved root directories.
        options: the walk rules.
        scope: an absolute path inside one root; only it is walked.

    Yields:
        FileEntry for each accepted file, SkipEntry for each left out
        (reasons: ignored, hidden, symlink, too-large, unsupported,
        missing-root, walk-limit, error).
    """
    budget = [options.max_walked_files]
    for root in sorted(roots):
        if not root.is_dir():
            yield SkipEntry(root, "missing-root", "root is not a directory")
            continue
        if scope is not None and scope != root and root not in scope.parents:
            continue
        rules = PathRules(root, options.exclude, use_gitignore=options.use_gitignore)
        yield from _walk_root(root, options, rules, budget, scope)


def _walk_root(
    root: Path,
    options: WalkOptions,
    rules: PathRules,
    budget: list[int],
    scope: Path | None,
) -> Iterator[FileEntry | SkipEntry]:
    root_stat = os.stat(root)
    visited = {(root_stat.st_dev, root_stat.st_ino)}
    frame = rules.top()
    # Scope inside the root: walk the chain of directories down to it so that
    # the rules on the way apply (an excluded one prunes the scope), but list
    # only the scope.
    start, start_rel, depth = root, "", 0
    if scope is not None and scope != root:
        reason = escape_reason(scope, root, follow_symlinks=options.follow_symlinks)
        if reason is not None:
            yield SkipEntry(scope, "symlink", reason)
            return
        rel_parts = scope.relative_to(root).parts
        for i, part in enumerate(rel_parts[:-1]):
            start = start / part
            start_rel = f"{start_rel}/{part}" if start_rel else part
            depth = i + 1
            frame = rules.enter(frame, part, rules.excluded(frame, part, True))
            if frame.excluded and not rules.may_reinclude:
                yield SkipEntry(scope, "ignored", f"excluded by rule on {start_rel}/")
                return
        rel = "/".join(rel_parts)
        if not os.path.lexists(scope):
            yield SkipEntry(scope, "error", "does not exist")
            return
        if scope.is_file():
            yield from _entry_for(scope, root, rel, depth, options, rules, frame)
            return
        frame = rules.enter(frame, scope.name, rules.excluded(frame, scope.name, True))
        if frame.excluded and not rules.may_reinclude:
            yield SkipEntry(scope, "ignored", "excluded directory")
            return
        start, start_rel, depth = scope, rel, depth + 1
    yield from _walk_dir(start, start_rel, depth, frame, root, options, rules,
                         budget, visited)  # fmt: skip


def _walk_dir(
    folder: Path, rel_dir: str, depth: int, frame: DirRules, root: Path,
    options: WalkOptions, rules: PathRules, budget: list[int],
    visited: set[tuple[int, int]],
) -> Iterator[FileEntry | SkipEntry]:  # fmt: skip
    """Depth-first in name order, so output is sorted by root-relative path."""
    try:
        with os.scandir(folder) as it:
            names = sorted((e.name, e) for e in it)
    except OSError as exc:
        yield SkipEntry(folder, "error", f"cannot list directory: {exc.strerror}")
        return
    for name, entry in names:
        rel = f"{rel_dir}/{name}" if rel_dir else name
        path = Path(entry.path)
        if name in (".gitignore", ".docindex"):  # .docindex: our own index (#20)
            continue
        if name.startswith(".") and not options.hidden:
            yield SkipEntry(path, "hidden")
            continue
        if not _utf8_name(name):
            # The index stores paths as UTF-8 text (issue #8).
            yield SkipEntry(path, "bad-name", "file name is not valid UTF-8")
            continue
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=options.follow_symlinks)
        except OSError as exc:
            yield SkipEntry(path, "error", str(exc.strerror))
            continue
        if is_link and not options.follow_symlinks:
            yield SkipEntry(path, "symlink")
            continue
        if is_link and (why := escape_reason(path, root, follow_symlinks=True)):
            yield SkipEntry(path, "symlink", why)
            continue
        if not is_dir:
            yield from _entry_for(
                path, root, rel, depth, options, rules, frame, budget
            )  # fmt: skip
            continue
        excluded = rules.excluded(frame, name, True)
        if excluded and not rules.may_reinclude:
            yield SkipEntry(path, "ignored")
            continue
        if depth + 1 > options.max_depth:
            yield SkipEntry(path, "walk-limit", "max depth reached")
            continue
        try:
            st = os.stat(path)
        except OSError as exc:
            yield SkipEntry(path, "error", str(exc.strerror))
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:
            yield SkipEntry(path, "symlink", "directory already walked (cycle)")
            continue
        visited.add(key)
        sub = rules.enter(frame, name, excluded)
        yield from _walk_dir(path, rel, depth + 1, sub, root, options, rules,
                             budget, visited)  # fmt: skip


def _entry_for(
    path: Path,
    root: Path,
    rel: str,
    depth: int,
    options: WalkOptions,
    rules: PathRules,
    frame: DirRules,
    budget: list[int] | None = None,
) -> Iterator[FileEntry | SkipEntry]:
    if rules.excluded(frame, path.name, False):
        yield SkipEntry(path, "ignored")
        return
    if budget is not None:
        if budget[0] <= 0:
            yield SkipEntry(path, "walk-limit", "max walked files reached")
            return
        budget[0] -= 1
    try:
        st = os.stat(path)
    except FileNotFoundError:
        yield SkipEntry(path, "error", "file vanished during the walk")
        return
    except OSError as exc:
        yield SkipEntry(path, "error", str(exc.strerror))
        return
    if not stat.S_ISREG(st.st_mode):
        yield SkipEntry(path, "unsupported", "not a regular file")
        return
    suffix = os.path.splitext(path.name)[1].lower()
    if suffix in UNSUPPORTED_SUFFIXES:
        yield SkipEntry(path, "unsupported", f"{suffix} files are not indexed")
        return
    if st.st_size > options.max_file_bytes:
        yield SkipEntry(path, "too-large", f"{st.st_size} bytes")
        return
    yield FileEntry(path, root, rel, st.st_size, st.st_mtime_ns)


def _utf8_name(name: str) -> bool:
    """False for a name with undecodable bytes (surrogate escapes from os.fsdecode)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
