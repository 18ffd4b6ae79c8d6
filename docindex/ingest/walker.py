"""Yield candidate files under the roots, sorted, with a skip reason for the rest.

Which paths are left out is decided by :class:`docindex.ignore.PathRules`
(git's ignore semantics, our defaults, ``--exclude``); the walk keeps one
:class:`~docindex.ignore.DirRules` per directory level, so each file costs a
few lookups. An excluded directory is pruned whole (one ``ignored`` count)
unless an ``--exclude`` negation could re-include something below it.
"""

from __future__ import annotations

import operator
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from docindex.ingest.assets import MAYBE_ASSET, asset_message, asset_reason
from docindex.ingest.ignore import DEFAULT_EXCLUDES, DirRules, PathRules
from docindex.models import OCR_OFF

__all__ = ["DEFAULT_EXCLUDES", "UNSUPPORTED_SUFFIXES", "FileEntry", "PathRules",
           "SkipEntry", "WalkOptions", "walk"]  # fmt: skip

# Suffixes we know carry no extractable text: skipped without reading.
UNSUPPORTED_SUFFIXES = frozenset(
    """.png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .svgz .heic .psd .mp3 .mp4
    .m4a .wav .flac .ogg .avi .mov .mkv .webm .zip .gz .tgz .bz2 .xz .7z .rar .tar
    .jar .war .class .wasm .bin .dat .db .sqlite .sqlite3 .pdb .iso .dmg .woff
    .woff2 .ttf .otf .eot .pkl .npy .npz .parquet""".split()
)


#: Images are documents when OCR can read them (issue #36).
IMAGE_SUFFIXES = frozenset(".png .jpg .jpeg .gif .tif .tiff .webp".split())


class FileEntry(NamedTuple):
    """A file the walk accepted: where it is and its stat fingerprint.

    A NamedTuple, and ``path`` a ``Path`` only when asked: a rescan walks
    every file to compare its fingerprint and needs no more, and a frozen
    dataclass and a ``Path`` per file were a fifth of a no-op rescan (#24).

    Attributes:
        location: the absolute path, as the walk found it.
        root: the root it was found under.
        rel_path: the path below the root, "/"-separated.
        size: bytes, from its stat.
        mtime_ns: modification time, from its stat.
    """

    location: str
    root: Path
    rel_path: str
    size: int
    mtime_ns: int

    @property
    def path(self) -> Path:
        """``location`` as a Path."""
        return Path(self.location)


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
    # Why images are not read (OCR off or missing, issue #36); None: they are.
    images_unread: str | None = OCR_OFF
    # (root, device, inode, owner uid) each root had when it was first scanned
    # (issue #33): a root replaced by another owner's folder is not walked.
    pins: tuple[tuple[str, int, int, int], ...] = ()
    # text_extensions as assets.opt_ins gives them: assets read as text (#45)
    opted_in: frozenset[str] = frozenset()


def root_problem(root: Path, pin: tuple[int, int, int] | None = None) -> str | None:
    """Why root ``root`` must not be walked or watched now, or None when it may.

    A root is pinned to the real path it had when it was added (issue #33): if
    the path, or a folder above it, has become a symbolic link, another user
    could point it at files the index's owner may read and they may not. With
    ``pin`` (device, inode, owner uid), a root replaced by a folder of another
    owner is refused too; one recreated by its own owner is the same root.
    """
    try:
        real = os.path.realpath(root)
        st = os.stat(root)
    except OSError:
        return None  # missing: the caller's "not a directory" says so
    fix = f"if that is right, run `docindex roots move {root} NEW_PLACE`"
    if real != str(root):
        return (
            f"root {root} now leads to {real} through a symbolic link; "
            f"not scanned or watched ({fix})"
        )
    if pin is not None and (st.st_dev, st.st_ino) != pin[:2] and st.st_uid != pin[2]:
        return (
            f"root {root} was replaced by a folder of another owner (uid "
            f"{st.st_uid}, was {pin[2]}); not scanned or watched "
            f"(to accept it, run `docindex roots move {root} {root}`)"
        )
    return None


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
        no-text-layer (an image while OCR cannot run), the asset reasons of
        ``assets``, missing-root, walk-limit, error).
    """
    budget = [options.max_walked_files]
    pins = {p[0]: (p[1], p[2], p[3]) for p in options.pins}
    for root in sorted(roots):
        if scope is not None and scope != root and root not in scope.parents:
            continue  # not even looked at: it may be a root not read here (#44)
        problem = root_problem(root, pins.get(str(root)))
        if problem is not None:
            yield SkipEntry(root, "missing-root", problem)
            continue
        if not root.is_dir():
            yield SkipEntry(root, "missing-root", "root is not a directory")
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
            yield from _entry_for(scope, root, rel, rules, frame, options)
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
    """Depth-first in name order, so output is sorted by root-relative path.

    One loop over an explicit stack (issue #24): a no-op rescan of 21,660
    files walks every one of them, so each costs one stat (the only system
    call it needs: relative to its open folder, where the OS allows it), a
    few dict probes against the folder's rules and no ``Path`` object unless
    it is skipped; nested generators would pass every entry up through each
    level of the tree.
    """
    fd, listing = _listing(str(folder), None, True)
    if isinstance(listing, str):
        yield SkipEntry(folder, "error", listing)
        return
    # One frame per open directory: the rest of its sorted entries, its rules,
    # its path with a trailing separator, its root-relative path ("" for the
    # start) likewise, its depth and its open descriptor (or None).
    stack: list[_Frame] = [
        _Frame(
            iter(listing),
            frame,
            os.path.join(str(folder), ""),
            f"{rel_dir}/" if rel_dir else "",
            depth,
            fd,
        )  # fmt: skip
    ]
    try:
        while stack:
            entries, frame, base, prefix, depth, fd = stack[-1]
            for entry in entries:
                name = entry.name
                if name in (".gitignore", ".docindex"):  # .docindex: ours (#20)
                    continue
                found = _entry(entry, name, stack[-1], root, options, rules, budget)
                if found is None:  # a folder to walk into
                    pushed = _enter(entry, name, stack[-1], rules, options, visited)
                    if isinstance(pushed, _Frame):
                        stack.append(pushed)
                        break  # into the subfolder; this one's loop resumes after it
                    found = pushed
                yield found
            else:
                stack.pop()
                if fd is not None:
                    os.close(fd)
    finally:  # a walk left early (an interrupted scan) closes its folders
        for left in stack:
            if left.fd is not None:
                os.close(left.fd)


def _entry(
    entry: os.DirEntry[str], name: str, at: _Frame, root: Path,
    options: WalkOptions, rules: PathRules, budget: list[int],
) -> FileEntry | SkipEntry | None:  # fmt: skip
    """One listed name: a file's entry, a skip, or None for a folder to enter."""
    base = at.base
    if name[0] == "." and not options.hidden:
        return SkipEntry(Path(base + name), "hidden")
    if not (name.isascii() or _utf8_name(name)):
        # The index stores paths as UTF-8 text (issue #8).
        return SkipEntry(Path(base + name), "bad-name", "file name is not valid UTF-8")
    follow = options.follow_symlinks
    try:
        is_link = entry.is_symlink()
        is_dir = entry.is_dir(follow_symlinks=follow)
    except OSError as exc:
        return SkipEntry(Path(base + name), "error", str(exc.strerror))
    if is_link:
        if not follow:
            return SkipEntry(Path(base + name), "symlink")
        path = Path(base + name)
        if why := escape_reason(path, root, follow_symlinks=True):
            return SkipEntry(path, "symlink", why)
    if is_dir:
        return None
    return _file(entry, name, at, root, options, rules, budget)


def _file(
    entry: os.DirEntry[str], name: str, at: _Frame, root: Path,
    options: WalkOptions, rules: PathRules, budget: list[int],
) -> FileEntry | SkipEntry:  # fmt: skip
    """A file's entry, or why it is left out (rules, budget, size, type)."""
    base = at.base
    if rules.excluded(at.rules, name, False):
        return SkipEntry(Path(base + name), "ignored")
    if budget[0] <= 0:
        return SkipEntry(Path(base + name), "walk-limit", "max walked files reached")
    budget[0] -= 1
    try:
        st = entry.stat()  # follows a symlink: the walk kept it
    except FileNotFoundError:
        return SkipEntry(Path(base + name), "error", "file vanished during the walk")
    except OSError as exc:
        return SkipEntry(Path(base + name), "error", str(exc.strerror))
    skip = _file_skip(name, st, options)
    if skip is not None:
        return SkipEntry(Path(base + name), *skip)
    return FileEntry(base + name, root, at.prefix + name, st.st_size, st.st_mtime_ns)


def _enter(
    entry: os.DirEntry[str], name: str, at: _Frame, rules: PathRules,
    options: WalkOptions, visited: set[tuple[int, int]],
) -> _Frame | SkipEntry:  # fmt: skip
    """The frame of a subfolder to walk into, or why it is left out."""
    base = at.base
    excluded = rules.excluded(at.rules, name, True)
    if excluded and not rules.may_reinclude:
        return SkipEntry(Path(base + name), "ignored")
    if at.depth + 1 > options.max_depth:
        return SkipEntry(Path(base + name), "walk-limit", "max depth reached")
    try:
        st = entry.stat()
    except OSError as exc:
        return SkipEntry(Path(base + name), "error", str(exc.strerror))
    key = (st.st_dev, st.st_ino)
    if key in visited:
        return SkipEntry(
            Path(base + name), "symlink", "directory already walked (cycle)"
        )
    visited.add(key)
    sub_fd, listing = _listing(base + name, (at.fd, name), options.follow_symlinks)
    if isinstance(listing, str):
        return SkipEntry(Path(base + name), "error", listing)
    # The listing says whether the folder has a .gitignore or is a
    # repository's top: no probe for either in most folders.
    dots = {e.name for e in listing if e.name[0] == "."}
    try:
        sub = rules.enter(at.rules, name, excluded, names=dots)
    except BaseException:
        if sub_fd is not None:
            os.close(sub_fd)
        raise
    return _Frame(iter(listing), sub, f"{base}{name}{os.sep}", f"{at.prefix}{name}/",
                  at.depth + 1, sub_fd)  # fmt: skip


class _Frame(NamedTuple):
    entries: Iterator[os.DirEntry[str]]
    rules: DirRules
    base: str
    prefix: str
    depth: int
    fd: int | None


# Listing an open folder by its descriptor makes each entry's stat relative to
# it (fstatat): a shorter path walk in the kernel, about 15% of a walk's system
# time; and a folder swapped for a symlink after it was listed is not entered.
_BY_FD = os.scandir in os.supports_fd and os.open in os.supports_dir_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def _listing(
    path: str, parent: tuple[int | None, str] | None, follow: bool
) -> tuple[int | None, list[os.DirEntry[str]] | str]:
    """(open descriptor or None, the entries sorted by name) or why it cannot be listed.

    Args:
        path: the folder.
        parent: (descriptor of the folder holding it, its name), or None.
        follow: follow the folder if it is a symlink (``--follow-symlinks``).
    """
    fd: int | None = None
    try:
        if _BY_FD:
            flags = _DIR_FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
            if parent is not None and parent[0] is not None:
                fd = os.open(parent[1], flags, dir_fd=parent[0])
            else:
                fd = os.open(path, _DIR_FLAGS)
            entries = list(os.scandir(fd))
        else:
            with os.scandir(path) as it:
                entries = list(it)
    except OSError as exc:
        if fd is not None:
            os.close(fd)
        return None, f"cannot list directory: {exc.strerror}"
    entries.sort(key=_BY_NAME)
    return fd, entries


_BY_NAME = operator.attrgetter("name")


def _file_skip(
    name: str, st: os.stat_result, options: WalkOptions
) -> tuple[str, str] | None:
    """(reason, message) for a stat-ed file the walk leaves out, else None."""
    if not stat.S_ISREG(st.st_mode):
        return "unsupported", "not a regular file"
    # os.path.splitext's suffix, without its cost on every file: leading
    # dots start no suffix (".bashrc", "..png" have none).
    stem = name.lstrip(".")
    dot = stem.rfind(".")
    if dot > 0:
        suffix = stem[dot:].lower()
        if suffix in UNSUPPORTED_SUFFIXES:
            if suffix not in IMAGE_SUFFIXES:
                return "unsupported", f"{suffix} files are not indexed"
            if options.images_unread is not None:  # not read: OCR could not use it
                return "no-text-layer", f"an image; {options.images_unread}"
        elif suffix in MAYBE_ASSET:
            asset = asset_reason(stem, options.opted_in)
            if asset is not None:
                return asset[0], asset_message(*asset)
    if st.st_size > options.max_file_bytes:
        return "too-large", f"{st.st_size} bytes"
    return None


def _entry_for(
    path: Path, root: Path, rel: str, rules: PathRules, frame: DirRules,
    options: WalkOptions,
) -> Iterator[FileEntry | SkipEntry]:  # fmt: skip
    """The walk's verdict on one file named by a scope (``scan FILE``)."""
    if rules.excluded(frame, path.name, False):
        yield SkipEntry(path, "ignored")
        return
    try:
        st = os.stat(path)
    except FileNotFoundError:
        yield SkipEntry(path, "error", "file vanished during the walk")
        return
    except OSError as exc:
        yield SkipEntry(path, "error", str(exc.strerror))
        return
    skip = _file_skip(path.name, st, options)
    if skip is not None:
        yield SkipEntry(path, *skip)
        return
    yield FileEntry(str(path), root, rel, st.st_size, st.st_mtime_ns)


def _utf8_name(name: str) -> bool:
    """False for a name with undecodable bytes (surrogate escapes from os.fsdecode)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
