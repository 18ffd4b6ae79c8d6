"""Which event paths a watch acts on (issue #5): the walk's rules for one path
(``PathFilter``), the index's own files, and the paths the index holds a
document at (``indexed_paths``). Split from ``watch`` (#49).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from docindex.config import Config
from docindex.ingest._debounce import is_under
from docindex.ingest.assets import asset_reason, opt_ins
from docindex.ingest.walker import IMAGE_SUFFIXES, UNSUPPORTED_SUFFIXES, PathRules
from docindex.store import Store


class PathFilter:
    """The walk's rules for one event path: hidden, default/user excludes, .gitignore.

    Also drops the index's own files (the database and its -wal/-shm/-journal,
    ``.docindex/``), so writing the index never triggers a rescan of it.
    """

    def __init__(
        self, roots: Sequence[str], cfg: Config, own: Iterable[str] = ()
    ) -> None:
        self.roots = sorted(roots, key=len, reverse=True)
        self.cfg = cfg
        self.own = frozenset(own)
        self._rules: dict[str, PathRules] = {}
        self._opted_in = opt_ins(cfg.text_extensions)
        # images are documents when OCR is on (#36): their events count then
        self._unread = UNSUPPORTED_SUFFIXES - (IMAGE_SUFFIXES if cfg.ocr else set())

    def root_of(self, path: str) -> str | None:
        """The (innermost) root containing ``path``."""
        for root in self.roots:
            if path == root or is_under(path, root):
                return root
        return None

    def invalidate(self) -> None:
        """Forget cached .gitignore rules (one changed)."""
        self._rules.clear()

    def accept(self, path: str, is_dir: bool) -> bool:
        """True when the walk could index ``path`` (or something under it)."""
        root = self.root_of(path)
        if root is None or path == root or path in self.own:
            return False
        if any(is_under(path, own) for own in self.own):
            return False
        rel = Path(path).relative_to(root).as_posix()
        parts = rel.split("/")
        if not self.cfg.hidden and any(p.startswith(".") for p in parts):
            return False
        if not is_dir and (
            os.path.splitext(parts[-1])[1].lower() in self._unread
            or asset_reason(parts[-1], self._opted_in) is not None
        ):
            return False
        rules = self._rules.get(root)
        if rules is None:
            rules = PathRules(
                Path(root), self.cfg.exclude, use_gitignore=self.cfg.use_gitignore
            )
            self._rules[root] = rules
        if rules.matched(rel, is_dir):
            # An excluded folder may still hold a file an --exclude negation
            # re-includes; the walk of its scope decides.
            return is_dir and rules.may_reinclude
        return True


def own_files(db: Path) -> list[str]:
    """The index's own paths: the database, its side files, a ``.docindex`` folder."""
    base = str(db)
    out = [base + s for s in ("", "-wal", "-shm", "-journal")]
    out += [base + ".rebuild" + s for s in ("", "-wal", "-shm", "-journal")]
    out.append(base + ".sock")  # the watcher's server (docindex.server)
    out.append(base + ".watch")  # the watch lock (store.lock)
    if db.parent.name == ".docindex":
        out.append(str(db.parent))
    return out


def indexed_paths(
    store: Store, filt: PathFilter, paths: Sequence[str]
) -> tuple[str, ...]:
    """The paths the index holds a document at (or under, for a folder)."""
    with store.atomic(immediate=False):  # its errors come translated (#44)
        return _known_in(store, filt, paths)


def _known_in(store: Store, filt: PathFilter, paths: Sequence[str]) -> tuple[str, ...]:
    by_root: dict[str, list[str]] = {}
    for path in paths:
        root = filt.root_of(path)
        if root is not None:
            by_root.setdefault(root, []).append(path)
    ids = {path: rid for rid, path in store.roots().items()}
    out: list[str] = []
    for root, group in by_root.items():
        if root not in ids:
            continue
        known = set(store.fingerprints(ids[root]))
        folders = {
            rel.rsplit("/", i)[0] for rel in known for i in range(1, rel.count("/") + 1)
        }
        for path in group:
            rel = Path(path).relative_to(root).as_posix()
            if rel in known or rel in folders:
                out.append(path)
    return tuple(out)
