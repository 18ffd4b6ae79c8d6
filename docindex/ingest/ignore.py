"""Which paths the walk leaves out: git's ignore rules, our defaults, ``--exclude``.

One rule engine (issue #25) shared by the walker, ``watch`` and scoped scans,
in the manner of ripgrep's ``ignore`` crate (``Gitignore::matched``). It follows
git (``gitignore(5)``, ``dir.c``) rather than pathspec's whole-path matching:

- Each pattern is tested against one path only, never against its
  descendants: ``!api/`` re-includes the directory ``api``, not the files in it
  that another pattern excludes.
- An excluded directory is not descended into, so nothing under it can be
  re-included by a ``.gitignore`` (git's rule).
- Pattern lists, lowest priority first: our default excludes, git's
  ``core.excludesFile``, the repository's ``.git/info/exclude``, the
  ``.gitignore`` files from the repository top (or the root, outside a
  repository) down to the path's directory; the last matching pattern wins.
- ``--exclude`` patterns come last and may do one thing git cannot: a negation
  there re-includes a file inside an excluded directory (``!build/notes.md``).

Each pattern line is translated by pathspec (escapes, ``**``, character
classes, git's invalid-range rule); framing (comments, trailing spaces,
``!``, a trailing ``/``) follows git's ``add_patterns_from_buffer``. Literal
names, literal paths and ``*.ext`` patterns are looked up in dicts, so a
100,000-line ``.gitignore`` costs a few dict probes per file, not 100,000
regex matches (issue #17). One pattern list is ``gitpatterns.Layer``; where
git keeps the lists besides ``.gitignore`` files is ``gitrepo`` (#49).
"""

from __future__ import annotations

import os
from collections.abc import Container, Sequence
from dataclasses import dataclass
from pathlib import Path

from docindex.ingest.gitpatterns import Layer
from docindex.ingest.gitrepo import find_repo, git_dir, read_rules, repo_layers

DEFAULT_EXCLUDES: tuple[str, ...] = (
    "node_modules/", ".git/", ".svn/", ".hg/", ".cache/", ".next/", ".nuxt/",
    ".output/", "dist/", "build/", "coverage/", ".DS_Store", "*.pyc", "*.pyo",
    "*.exe", "*.dll", "*.so", "*.dylib", "*.o", "*.obj", "Thumbs.db", ".docindex/",
)  # fmt: skip


RULES_FILE = ".gitignore"


@dataclass(frozen=True, slots=True)
class DirRules:
    """The rules in force inside one directory (the walker's state per level).

    ``rel`` is the directory relative to the rules' origin (the repository top,
    or the root outside a repository); ``excluded`` marks a directory the walk
    only enters because a ``--exclude`` negation might re-include something in it.
    """

    rel: str
    layers: tuple[Layer, ...]
    excluded: bool = False
    quick: _Quick | None = None  # see PathRules._quick; None: the full check


@dataclass(frozen=True, slots=True)
class _Quick:
    """Names and suffixes any pattern in force in a directory could match (#24):
    another name matches none, and is kept without asking each layer."""

    # Each layer's own tables, not their union: building a union per folder
    # cost O(patterns) per folder (32 ms a folder for 100k lines, issue #33).
    names: tuple[Container[str], ...]
    suffixes: tuple[Container[str], ...]
    lengths: tuple[int, ...]
    shared: bool  # no anchored pattern: subfolders with the same layers reuse it

    def may_match(self, name: str) -> bool:
        if any(name in table for table in self.names):
            return True
        for n in self.lengths:
            tail = name[-n:]
            if any(tail in table for table in self.suffixes):
                return True
        return False


class PathRules:
    """Every exclude rule for one root, with git's semantics (see the module doc).

    Args:
        root: the absolute, resolved root directory.
        exclude: ``--exclude`` patterns (highest priority).
        use_gitignore: read ``.gitignore`` files, ``.git/info/exclude`` and
            ``core.excludesFile``; False keeps only our defaults and ``exclude``.
    """

    def __init__(
        self, root: Path, exclude: Sequence[str] = (), *, use_gitignore: bool = True
    ) -> None:
        self.root = root
        self.use_gitignore = use_gitignore
        repo = find_repo(root) if use_gitignore else None
        origin = repo[0] if repo is not None else root
        self._origin = str(origin)
        prefix = "" if origin == root else root.relative_to(origin).as_posix()
        self._prefix = prefix
        self._user = Layer(prefix, exclude)
        layers: list[Layer] = [Layer(prefix, DEFAULT_EXCLUDES)]
        if repo is not None:
            top, common = repo
            layers += repo_layers(top, common, "")
            # .gitignore files between the repository top and the root apply
            # to what is below the root, as they do for git.
            parts = prefix.split("/") if prefix else []
            for depth in range(len(parts)):
                base = "/".join(parts[:depth])
                layers += self._gitignore(base)
        here = (*layers, *self._gitignore(prefix))
        self._top = DirRules(prefix, here, quick=self._quick(prefix, here))
        self._cache: dict[str, DirRules] = {}

    @property
    def may_reinclude(self) -> bool:
        """True when an ``--exclude`` negation could re-include a path in an excluded directory."""
        return self._user.negates

    def top(self) -> DirRules:
        """The rules inside the root itself."""
        return self._top

    def excluded(self, parent: DirRules, name: str, is_dir: bool) -> bool:
        """True when the entry ``name`` of the directory ``parent`` is left out."""
        quick = parent.quick
        if quick is not None and not quick.may_match(name):
            return False
        rel = f"{parent.rel}/{name}" if parent.rel else name
        user = self._user.check(rel, name, is_dir)
        if user is not None or parent.excluded:
            return user is not False
        for layer in reversed(parent.layers):
            verdict = layer.check(rel, name, is_dir)
            if verdict is not None:
                return verdict
        return False

    def enter(
        self, parent: DirRules, name: str, excluded: bool,
        names: Container[str] | None = None,
    ) -> DirRules:  # fmt: skip
        """The rules inside the subdirectory ``name`` (its ``.gitignore`` added).

        ``excluded`` is ``excluded(parent, name, True)``; ``names``, the folder's
        entry names (those starting with "." suffice) when the caller has listed
        it, spares a folder without ``.gitignore`` or ``.git`` a probe for each.
        """
        rel = f"{parent.rel}/{name}" if parent.rel else name
        if excluded or parent.excluded:
            return DirRules(rel, parent.layers, True)
        layers = parent.layers
        if self.use_gitignore:
            # A repository inside the tree brings its own info/exclude; in it
            # git reads no rules from above, so they rank above the outer ones.
            if names is None or ".git" in names:
                path = Path(self._origin, rel)
                nested = git_dir(path)
                if nested is not None:
                    layers = (*layers, *repo_layers(path, nested, rel))
            if names is None or RULES_FILE in names:
                layers = (*layers, *self._gitignore(rel))
        if layers is parent.layers and parent.quick is not None and parent.quick.shared:
            return DirRules(rel, layers, quick=parent.quick)
        return DirRules(rel, layers, quick=self._quick(rel, layers))

    def _quick(self, rel: str, layers: tuple[Layer, ...]) -> _Quick | None:
        """The name-only filter for the directory ``rel`` (once per level): literal
        names, ``*.ext`` suffixes and anchored literal paths ending here. None
        when a glob needs its regex (``a*b``, ``*/x``, ``docs/**/x.md`` in ``docs``).
        """
        names: list[Container[str]] = []
        suffixes: list[Container[str]] = []
        lengths: set[int] = set()
        shared = True
        for layer in (*layers, self._user):
            if layer.basename_globs or layer.path_globs:
                return None
            names.append(layer.names)
            if layer.suffixes:
                suffixes.append(layer.suffixes)
                lengths.update(layer.lengths)
            sub = rel[layer.cut :] if len(rel) >= layer.cut else ""
            shared = shared and not (layer.heads or layer.paths)
            if layer.heads:
                if sub and sub.split("/", 1)[0] in layer.heads:
                    return None
                if not sub:
                    names.append(layer.heads)  # the head is the entry's name
            if layer.paths:
                here = layer.paths_below().get(sub)
                if here:
                    names.append(here)
        order = tuple(sorted(lengths, reverse=True))
        return _Quick(tuple(names), tuple(suffixes), order, shared)

    def matched(self, path: str, is_dir: bool) -> bool:
        """True when ``path`` is left out, by a rule on it or on a directory above it.

        Args:
            path: relative to the root, "/"-separated (the walker's ``rel_path``).
            is_dir: whether ``path`` is a directory (patterns ending in "/").

        Returns:
            True for a path the walk would skip as ``ignored``.
        """
        parts = path.split("/")
        frame = self._top
        for i, part in enumerate(parts[:-1]):
            key = "/".join(parts[: i + 1])
            cached = self._cache.get(key)
            if cached is None:
                cached = self.enter(frame, part, self.excluded(frame, part, True))
                self._cache[key] = cached
            frame = cached
            if frame.excluded and not self.may_reinclude:
                return True
        return self.excluded(frame, parts[-1], is_dir)

    def _gitignore(self, rel: str) -> tuple[Layer, ...]:
        if not self.use_gitignore:
            return ()
        folder = os.path.join(self._origin, rel) if rel else self._origin
        lines = read_rules(os.path.join(folder, RULES_FILE), in_tree=True)
        return (Layer(rel, lines),) if lines else ()
