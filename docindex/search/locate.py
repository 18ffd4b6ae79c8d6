"""Every file or chunk argument resolved inside the roots (issue #6).

A path relative to a root, or absolute inside one; a glob for ``--path``; a
chunk id or its anchor. Anything that resolves outside the roots (``..``,
absolute paths elsewhere, symlinks pointing out) raises
:class:`OutsideRootsError` before the index is asked. Split from
``navigate`` (#49).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from docindex.errors import (
    BadInputError,
    DocindexError,
    MisuseError,
    OutsideRootsError,
)
from docindex.models.limits import (
    MAX_CHUNK_ID_CHARS,
    MAX_GLOB_CHARS,
    check_length,
    check_path,
)
from docindex.models.navigation import DocumentRef
from docindex.store import DocFilter, Index, SegmentRow, StoredDocument


def join_path(root: str, rel_path: str) -> str:
    """The absolute path of a root's ``rel_path`` (stored with ``/``)."""
    return str(Path(root, *rel_path.split("/")))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _candidates(
    roots: Sequence[str], arg: str, cwd: Path | None
) -> list[tuple[str, str]]:
    """(root, rel_path) pairs ``arg`` may name, each checked to stay in its root.

    Raises:
        OutsideRootsError: no interpretation of ``arg`` stays inside a root,
            lexically and after resolving symlinks.
    """
    check_path("path", arg)
    root_paths = [Path(r) for r in roots]
    given = Path(os.path.expanduser(arg))
    if given.is_absolute():
        bases = [given]
    else:
        bases = [r / given for r in root_paths]
        if cwd is not None:
            bases.append(cwd / given)
    out: list[tuple[str, str]] = []
    for base in bases:
        lexical = Path(os.path.normpath(base))
        try:
            real = lexical.resolve()
        except OSError as exc:  # e.g. ENAMETOOLONG, ELOOP
            raise DocindexError(f"cannot resolve {arg}: {exc.strerror}") from None
        for root in root_paths:
            if _inside(lexical, root) and any(_inside(real, r) for r in root_paths):
                pair = (str(root), lexical.relative_to(root).as_posix())
                if pair not in out:
                    out.append(pair)
                break
    if not out:
        raise OutsideRootsError(
            f"{arg} is outside the index's roots ({', '.join(roots) or 'none'})"
        )
    return out


def resolve_inside(roots: Sequence[str], arg: str, cwd: Path | None = None) -> Path:
    """Absolute path of ``arg`` (relative to a root, or absolute inside one).

    Raises:
        OutsideRootsError: ``arg`` escapes every root.
    """
    root, rel = _candidates(roots, arg, cwd)[0]
    return Path(join_path(root, rel)) if rel != "." else Path(root)


_GLOB_CHARS = frozenset("*?[")


class PathScope(NamedTuple):
    """Where ``--path`` points: one root (or every root) and a root-relative pattern.

    ``pattern`` is a file, a folder prefix or a glob (``store._sql.path_clause``);
    ``""`` is the whole root.
    """

    root: str | None
    pattern: str


def check_glob(pattern: str) -> None:
    """Refuse a glob no engine can match by: a character range that runs
    backwards (``[z-a]``). SQLite's GLOB would match nothing and PostgreSQL's
    regex fail; both engines answer with this one line instead (issue #44).

    Raises:
        BadInputError: naming the range.
    """
    from docindex.text.globs import backwards_range, bracket_sets

    for found in bracket_sets(pattern):
        bad = backwards_range(found.body)
        if bad:
            raise BadInputError(
                f"path: the glob {pattern!r} holds the range {bad}, which runs "
                f"backwards; write [{bad[2]}-{bad[0]}]"
            )


def path_scope(roots: Sequence[str], arg: str, cwd: Path | None = None) -> PathScope:
    """The one rule for a path a user or an agent types (issue #38).

    Used by ``query --path``, ``list --path`` and the MCP tools. An absolute
    path (a hit's ``path``) must lie in a root. A relative one is taken from
    ``cwd`` when ``cwd`` is inside a root, when it starts with ``.``/``..``,
    or when it names something that exists there under a root; otherwise it
    is relative to every root (the form hits print as ``rel_path``). Globs (``*``, ``?``, ``[``) follow the
    same rule for the part before their first wildcard.

    Raises:
        OutsideRootsError: the path lies outside every root.
    """
    check_length("path", arg, MAX_GLOB_CHARS)
    if "\x00" in arg:  # no file name holds one; the OS refuses to look it up
        raise BadInputError("path: contains a NUL character")
    check_glob(arg)
    text = os.path.expanduser(arg)
    root_paths = [Path(r) for r in roots]
    cut = min((text.index(c) for c in _GLOB_CHARS if c in text), default=len(text))
    head, tail = text[:cut], text[cut:]

    def place(base: Path) -> PathScope | None:
        """``text`` taken from ``base``: its root and pattern, or None if outside."""
        lexical = Path(os.path.normpath(base / head)) if head else base
        sep = "/" if tail and (not head or head.endswith("/")) else ""
        for candidate in (lexical, _resolved(lexical)):
            for root in root_paths:
                if _inside(candidate, root):
                    rel = candidate.relative_to(root).as_posix()
                    rel = "" if rel == "." else rel
                    return PathScope(str(root), f"{rel}{sep if rel else ''}{tail}")
        return None

    outside = OutsideRootsError(
        f"{arg} is outside the index's roots ({', '.join(roots) or 'none'}); "
        "give a path inside one: absolute, relative to a root, or to the "
        "current folder"
    )
    if Path(head).is_absolute():
        found = place(Path("/"))
        if found is None:
            raise outside
        return found
    if cwd is not None:
        here = _resolved(cwd)
        in_root = any(_inside(here, r) for r in root_paths)
        # `.`, `./x`, `../x` mean the current folder, as in a shell.
        dotted = bool(head) and Path(head).parts[:1] in ((".",), ("..",))
        dotted = dotted or text in (".", "..")
        if in_root or dotted or (head and _lexists(os.path.normpath(cwd / head))):
            found = place(cwd)
            if found is not None:
                return found
            if in_root or dotted:
                raise outside
    # Relative to every root, as hits print ``rel_path``.
    placed = [place(r) for r in root_paths]
    if ".." in Path(head).parts and (not placed or None in placed):
        raise outside
    pattern = placed[0].pattern if placed and placed[0] is not None else text
    return PathScope(None, pattern)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, ValueError):  # ENAMETOOLONG, ELOOP, a lone surrogate: as given
        return path


def _lexists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except ValueError:  # a lone surrogate cannot be a file name here
        return False


def root_ids(store: Index, roots: Sequence[str]) -> dict[str, int]:
    """The index's root ids of ``roots`` (those it holds), by path."""
    known = {path: rid for rid, path in store.roots().items()}
    return {r: known[r] for r in roots if r in known}


def doc_of(store: Index, doc_id: int) -> DocumentRef:
    """The document ``doc_id`` as navigation results name it."""
    row = store.document(doc_id)
    if row is None:  # deleted between two statements
        raise DocindexError("the document is no longer in the index")
    title = row.title or row.rel_path.rsplit("/", 1)[-1]
    return DocumentRef(doc_id, row.root, row.rel_path, title, row.kind)


def resolve_file(
    store: Index, roots: Sequence[str], arg: str, *, cwd: Path | None = None
) -> DocumentRef:
    """The indexed document ``arg`` names (relative to a root, or absolute in one).

    Args:
        store: the index.
        roots: the configured roots (absolute, resolved).
        arg: the path as given.
        cwd: also try ``arg`` relative to this directory (the CLI passes its cwd).

    Raises:
        OutsideRootsError: ``arg`` escapes every root.
        DocindexError: the file is not in the index.
    """
    if not arg.strip():
        # "" is the root folder itself, which exists: the remedy would say
        # to scan '' (a shell's empty variable, `outline "$f"`)
        raise MisuseError(
            "no file given: name a file of the index (see `docindex list`)"
        )
    ids = root_ids(store, roots)
    for root, rel in _candidates(roots, arg, cwd):
        if root in ids:
            doc_id = store.find_document(ids[root], rel)
            if doc_id is not None:
                return doc_of(store, doc_id)
    places = [Path(join_path(root, rel)) for root, rel in _candidates(roots, arg, cwd)]
    if not any(os.path.exists(p) for p in places):  # False for ENAMETOOLONG too
        near, total = _ending_with(store, list(ids.values()), arg)
        hint = "see what is indexed with `docindex list`"
        if near:
            shown = [shlex.quote(d.rel_path) for d in near[:3]]
            hint = "did you mean " + " or ".join(shown)
            if total > len(shown):
                more = shlex.quote("*" + arg.strip().strip("/"))
                hint += f"? ({total - len(shown)} more: `docindex list --path {more}`)"
        raise MisuseError(
            f"{arg} does not exist under the roots ({', '.join(roots)}); {hint}"
        )
    raise MisuseError(
        f"{arg} is not in the index; index it with `docindex scan {shlex.quote(arg)}`"
    )


def _ending_with(
    store: Index, root_ids: list[int], arg: str
) -> tuple[list[StoredDocument], int]:
    """(some, how many) indexed documents have a path ending with ``arg``
    (``useState.md`` given from outside its folder): what the user meant."""
    tail = arg.strip().strip("/")
    if not tail or ".." in tail.split("/") or not root_ids:
        return [], 0
    glob = "".join(f"[{c}]" if c in "*?[" else c for c in tail)
    found: list[StoredDocument] = []
    total = 0
    for pattern in (glob, f"*/{glob}"):
        only = DocFilter(root_ids=tuple(root_ids), path_glob=pattern)
        docs, count = store.documents(only, limit=3)
        found += docs
        total += count
    return found, total


def chunk_rows(
    store: Index, roots: Sequence[str], arg: str, cwd: Path | None
) -> list[SegmentRow]:
    """Segments whose chunk id is ``arg``; its path part is checked against the roots.

    The path part may be root-relative (the stored form) or absolute inside a
    root, in which case it is rewritten to the stored form.
    """
    check_length("chunk id", arg, MAX_CHUNK_ID_CHARS)
    file_part = arg.split("#", 1)[0]
    plain = without_part(file_part)
    if not plain:
        return []
    rest = arg[len(plain) :]  # "~2", "#anchor", "#anchor~2" or ""
    for root, rel in _candidates(roots, plain, cwd):
        rows = [r for r in store.segments_by_chunk_id(rel + rest) if r.root == root]
        if rows:
            return rows
    return []


def without_part(file_part: str) -> str:
    """``file_part`` without a trailing ``~N`` (a long section's later part).

    By hand, not with ``re.sub(r"~\\d+$")``: that regex is quadratic on a long
    run of ``~1~1~1`` (issue #17).
    """
    head, tilde, digits = file_part.rpartition("~")
    return head if tilde and digits.isascii() and digits.isdigit() else file_part


def opening_of(segments: list[SegmentRow], rel_path: str, target: str) -> int | None:
    """Index of the first chunk inside the section whose anchor ``target`` names.

    A heading followed directly by a subheading has no chunk of its own (its
    id is its first child's, ``guide.md#reference/useeffect``), yet ``outline``
    and Markdown links name it ``guide.md#reference`` (issue #37). A page's
    own link names a heading by its id alone, ``cors.md#use-corsmiddleware``
    for ``## Use CORSMiddleware { #use-corsmiddleware }`` under ``# CORS``
    (MkDocs, issue #45): the section whose path ends in that id, when one does.
    """
    anchor = target.rpartition("#")[2]
    if not anchor or without_part(anchor) != anchor:
        return None
    found = anchor_section(segments, anchor)
    return None if found is None else found[0]


def anchor_section(segments: list[SegmentRow], anchor: str) -> tuple[int, int] | None:
    """(first chunk, heading depth) of the section ``anchor`` names, or None.

    ``anchor`` is a chunk id's anchor or its start (``cors/use-cors``), else
    the end of exactly one section's anchor path (``use-cors``).
    """
    owns = [without_part(s.chunk_id.partition("#")[2]) for s in segments]
    depth = anchor.count("/") + 1
    for i, own in enumerate(owns):
        if own == anchor or own.startswith(anchor + "/"):
            return i, depth
    key = f"/{anchor}/"
    first: dict[str, int] = {}  # the sections so named: their path, first chunk
    for i, own in enumerate(owns):
        path = f"/{own}/"
        at = path.find(key)
        if at >= 0:
            first.setdefault(path[: at + len(key)], i)
    if len(first) != 1:
        return None
    path, i = next(iter(first.items()))
    return i, path.strip("/").count("/") + 1


def chunk_file(chunk_id: str) -> str:
    """The file part of a chunk id (``guide.md#install~2`` -> ``guide.md``)."""
    return without_part(chunk_id.split("#", 1)[0])


def roots_filter(
    store: Index, roots: Sequence[str], path_glob: str | None, types: Sequence[str]
) -> DocFilter:
    """The documents of ``roots`` (of ``types``, under ``path_glob``)."""
    return DocFilter(
        root_ids=tuple(root_ids(store, roots).values()),
        kinds=tuple(types),
        path_glob=path_glob,
    )
