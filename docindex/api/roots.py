"""Manage an index's roots: list, add, remove, and move one to a new folder (issue #20).

Documents are stored relative to their root, so moving a root is a rename of
one row: every document, chunk id and vector stays and nothing is re-read.
The roots live twice in an index, as rows that documents point at and in the
remembered settings; these functions keep both in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.api.workspace import add_root, canonical
from docindex.errors import MisuseError
from docindex.store.location import ServerUrl

if TYPE_CHECKING:
    from docindex.config import Config
    from docindex.store import Index


@dataclass(frozen=True, slots=True)
class RootInfo:
    """One root: its path, whether the folder exists, how many documents it
    has, whether a scan on this machine reads it (issue #44), and whether it is
    this host's at all (a shared index lists the roots of every host)."""

    path: str
    exists: bool
    documents: int
    accepted: bool = True
    here: bool = True  # this host has a path for it (PostgreSQL: another's, else)
    # the roles that alone read it besides the index's owner; () for every
    # reader (issue #48: PostgreSQL only, SQLite has no roles)
    grants: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RootChange:
    """What ``roots add/remove/move/accept`` did; ``documents`` kept, or
    removed; ``notice``: what the user should know (their acceptance could
    not be recorded)."""

    action: str
    root: str
    documents: int
    old: str | None = None
    notice: str | None = None


def list_roots(
    store: Index, roots: tuple[str, ...], read_here: frozenset[str] | None = None
) -> list[RootInfo]:
    """The configured roots with document counts, then any stray root rows.

    ``read_here``: the roots a scan on this machine reads (None: all).
    """
    counts = store.root_documents()
    grants = store.root_grants()
    shown = list(roots) + [r for r in counts if r not in roots and counts[r]]
    return [
        RootInfo(r, Path(r).is_dir(), counts.get(r, 0),
                 read_here is None or r in read_here, r in roots,
                 grants.get(r, ()))
        for r in shown
    ]  # fmt: skip


def accept(cfg: Config, path: str | Path) -> RootChange:
    """Let this machine's scans read root ``path`` (recorded by the caller).

    Raises:
        MisuseError: ``path`` is not a root of the index.
    """
    root = find(cfg.roots, path)
    return RootChange("accept", root, 0)


def find(roots: tuple[str, ...], path: str | Path) -> str:
    """The configured root that ``path`` names (any spelling, even once gone).

    Raises:
        MisuseError: ``path`` is none of the roots.
    """
    spellings = {canonical(path), str(Path(path).expanduser().absolute())}
    for root in roots:
        if root in spellings:
            return root
    listed = ", ".join(roots) or "none"
    raise MisuseError(
        f"{path} is not a root of this index (roots: {listed}); "
        "see them with `docindex roots`"
    )


def add(store: Index, cfg: Config, path: str | Path) -> tuple[Config, RootChange]:
    """Remember a new root (scanned by the next ``docindex scan``).

    Raises:
        MisuseError: ``path`` is not a directory, or lies inside or holds a root.
    """
    if not Path(path).expanduser().is_dir():
        raise MisuseError(f"{path} is not a directory")
    roots = add_root(cfg.roots, path)
    new = cfg.replace(roots=tuple(roots))
    with store.atomic():
        _remember(store, new)
        # its row: on PostgreSQL the roots a host scans are its rows (#44)
        store.root_id(canonical(path))
    return new, RootChange("add", canonical(path), 0)


def remove(store: Index, cfg: Config, path: str | Path) -> tuple[Config, RootChange]:
    """Forget a root and remove its documents from the index (never its files)."""
    from docindex.ingest.indexer import remove_document, restore_pending_fts

    root = find(cfg.roots, path)
    rid = {p: i for i, p in store.roots().items()}.get(root)
    removed = 0
    with store.atomic():
        restore_pending_fts(store, cfg)  # FTS rows must be there to delete them
        if rid is not None:
            for row in store.fingerprints(rid).values():
                remove_document(store, cfg, row.id)
                removed += 1
            store.delete_root(root)
        new = cfg.replace(roots=tuple(r for r in cfg.roots if r != root))
        _remember(store, new)
    store.tidy_fts()  # as a scan does: merge deleted rows away,
    store.reclaim()  # and give the freed pages back
    return new, RootChange("remove", root, removed)


def move(
    store: Index, cfg: Config, old: str | Path, new: str | Path, *, db: Path | ServerUrl
) -> tuple[Config, RootChange]:
    """Point root ``old`` at folder ``new``, keeping every document and vector.

    The next scan compares the files in ``new`` with what was indexed from
    ``old`` by size, modification time and content hash: an unchanged file is
    not read again, an edited one is re-indexed.

    Raises:
        MisuseError: ``old`` is not a root, ``new`` is not a directory or
            overlaps another root.
    """
    root = find(cfg.roots, old)
    if not Path(new).expanduser().is_dir():
        raise MisuseError(f"{new} is not a directory; give the folder's new place")
    target = canonical(new)
    others = [r for r in cfg.roots if r != root]
    add_root(others, target)  # raises when it overlaps another root
    roots = tuple(target if r == root else r for r in cfg.roots)
    moved = cfg.replace(roots=roots)
    with store.atomic():
        if target != root:  # `roots move X X` accepts X's new identity (#33)
            store.move_root(root, target)
        _remember(store, moved)
        store.set_meta("location", str(db))
        # The next scan pins the folder now at that place (issue #33).
        pins = dict(store.get_meta("root_pins") or {})
        if root in pins or target in pins:
            pins.pop(root, None)
            pins.pop(target, None)
            store.set_meta("root_pins", pins)
    kept = store.root_documents().get(target, 0)
    return moved, RootChange("move", target, kept, old=root)


def _remember(store: Index, cfg: Config) -> None:
    """Write the roots into the index's remembered settings (other keys untouched)."""
    settings = dict(store.get_meta("settings") or cfg.index_settings())
    settings["roots"] = list(cfg.roots)
    store.set_meta("settings", settings)
