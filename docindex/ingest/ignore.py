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
regex matches (issue #17).
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from docindex.config import git_config_files

DEFAULT_EXCLUDES: tuple[str, ...] = (
    "node_modules/", ".git/", ".svn/", ".hg/", ".cache/", ".next/", ".nuxt/",
    ".output/", "dist/", "build/", "coverage/", ".DS_Store", "*.pyc", "*.pyo",
    "*.exe", "*.dll", "*.so", "*.dylib", "*.o", "*.obj", "Thumbs.db", ".docindex/",
)  # fmt: skip

RULES_FILE = ".gitignore"
# A rules file is read up to this size; git's own cap is 100 MiB. A cut file
# loses its last, partial line rather than keeping half a pattern (issue #8).
MAX_RULES_FILE_BYTES = 8 * 1024 * 1024
_GLOB = re.compile(r"[*?\[\\]")
# A layer with this many globs of one kind finds them by a literal piece.
_KEYED_FROM = 64
_KEY_MIN, _KEY_MAX = 3, 8  # characters of the piece
_SET = re.compile(r"\[!?\]?[^\]]*\]")
_LITERAL_RUN = re.compile(r"[^*?\[\]\\/]+")


class _Rule:
    """One pattern line; a glob's regex is compiled the first time it is needed."""

    __slots__ = ("index", "negate", "dir_only", "glob", "regex", "open_end")

    def __init__(
        self, index: int, negate: bool, dir_only: bool, glob: str | None = None
    ) -> None:
        self.index = index  # line order inside its file: the last match wins
        self.negate = negate
        self.dir_only = dir_only  # the pattern ended in "/"
        self.glob = glob  # None for a literal, which is looked up by key
        self.regex: re.Pattern[str] | None = None
        # The regex ends open (trailing "/**", "*", "**"): a prefix match counts.
        self.open_end = False


class _Globs:
    """A layer's glob rules of one kind, found by a literal piece of each.

    Whatever a glob matches contains each of its literal runs (the text between
    wildcards, sets, escapes and slashes). A rule keyed by a piece of one run
    (its first or last ``_KEY_MAX`` characters, the piece fewest rules share)
    is tried only on subjects holding that piece: a ``.gitignore`` of 100k
    globs then costs a few dict lookups per path instead of 100k regex calls
    (issue #33: 31 ms per file). Rules with no run of ``_KEY_MIN`` characters
    are tried on every path, as all rules are below ``_KEYED_FROM``.
    """

    __slots__ = ("rules", "keyed", "lengths", "always")

    def __init__(self) -> None:
        self.rules: list[_Rule] = []
        self.keyed: dict[str, list[_Rule]] | None = None
        self.lengths: tuple[int, ...] = ()
        self.always: list[_Rule] = []

    def __bool__(self) -> bool:
        return bool(self.rules)

    def candidates(self, subject: str) -> list[_Rule]:
        """The rules that may match ``subject``, in line order."""
        if len(self.rules) < _KEYED_FROM:
            return self.rules
        if self.keyed is None:
            self.keyed = self._build()
        found: dict[int, _Rule] = {}
        for n in self.lengths:
            for i in range(len(subject) - n + 1):
                hit = self.keyed.get(subject[i : i + n])
                if hit:
                    found.update((id(rule), rule) for rule in hit)
        if not found:
            return self.always
        return sorted((*self.always, *found.values()), key=lambda r: r.index)

    def _build(self) -> dict[str, list[_Rule]]:
        pieces: list[set[str]] = []
        counts: dict[str, int] = {}
        for rule in self.rules:
            runs = _LITERAL_RUN.findall(_SET.sub("/", rule.glob or ""))
            own = {p for r in runs if len(r) >= _KEY_MIN
                   for p in (r[:_KEY_MAX], r[-_KEY_MAX:])}  # fmt: skip
            pieces.append(own)
            for piece in own:
                counts[piece] = counts.get(piece, 0) + 1
        keyed: dict[str, list[_Rule]] = {}
        self.always = []
        for rule, own in zip(self.rules, pieces, strict=True):
            if own:
                best = min(own, key=lambda p: (counts[p], -len(p), p))
                keyed.setdefault(best, []).append(rule)
            else:
                self.always.append(rule)
        self.lengths = tuple(sorted({len(k) for k in keyed}))
        return keyed


class _Layer:
    """One pattern list (a file, our defaults, --exclude), patterns relative to ``base``."""

    __slots__ = ("base", "cut", "names", "paths", "suffixes", "lengths",
                 "heads", "basename_globs", "path_globs", "negates",
                 "_below")  # fmt: skip

    def __init__(self, base: str, lines: Iterable[str]) -> None:
        self.base = base
        self.cut = len(base) + 1 if base else 0
        self.names: dict[str, list[_Rule]] = {}
        self.paths: dict[str, list[_Rule]] = {}
        self.suffixes: dict[str, list[_Rule]] = {}
        # Anchored globs by their literal first segment ("docs" for docs/**/x.md).
        self.heads: dict[str, _Globs] = {}
        self.basename_globs = _Globs()
        self.path_globs = _Globs()
        self.negates = False
        for index, line in enumerate(lines):
            self._add(index, line)
        self.lengths = sorted({len(s) for s in self.suffixes}, reverse=True)
        self._below: dict[str, set[str]] | None = None

    def paths_below(self) -> dict[str, set[str]]:
        """Folder -> last names of the anchored literal paths ending in it."""
        if self._below is None:
            self._below = {}
            for path in self.paths:
                folder, _, last = path.rpartition("/")
                self._below.setdefault(folder, set()).add(last)
        return self._below

    def _add(self, index: int, line: str) -> None:
        text = _trim(line.removesuffix("\r"))
        if not text or text.startswith("#"):
            return
        negate = text.startswith("!")
        if negate:
            text = text[1:]
        dir_only = text.endswith("/")
        if dir_only:
            text = text[:-1]
        anchored = "/" in text  # git's NODIR: no slash matches the base name
        if anchored and text.startswith("/"):
            text = text[1:]
        if not text:
            return
        self.negates = self.negates or negate
        if not _GLOB.search(text):
            rule = _Rule(index, negate, dir_only)
            table = self.paths if anchored else self.names
            table.setdefault(text, []).append(rule)
            return
        tail = text[1:]
        if not anchored and text[0] == "*" and tail and not _GLOB.search(tail):
            self.suffixes.setdefault(tail, []).append(_Rule(index, negate, dir_only))
            return
        rule = _Rule(index, negate, dir_only, ("/" if anchored else "") + text)
        head = text.split("/", 1)[0]
        if not anchored:
            self.basename_globs.rules.append(rule)
        elif _GLOB.search(head):
            self.path_globs.rules.append(rule)
        else:
            self.heads.setdefault(head, _Globs()).rules.append(rule)

    def check(self, rel: str, name: str, is_dir: bool) -> bool | None:
        """The last matching pattern's verdict: True excluded, False re-included, None."""
        best = _pick(self.names.get(name), None, is_dir)
        if self.paths:
            best = _pick(self.paths.get(rel[self.cut :]), best, is_dir)
        if self.heads:
            sub = rel[self.cut :]
            heads = self.heads.get(sub.split("/", 1)[0])
            if heads:
                best = _pick_glob(heads.candidates(sub), sub, best, is_dir)
        for n in self.lengths:
            if len(name) >= n:
                best = _pick(self.suffixes.get(name[-n:]), best, is_dir)
        if self.basename_globs:
            globs = self.basename_globs.candidates(name)
            best = _pick_glob(globs, name, best, is_dir)
        if self.path_globs:
            sub = rel[self.cut :]
            best = _pick_glob(self.path_globs.candidates(sub), sub, best, is_dir)
        return None if best is None else not best.negate


def _pick(rules: list[_Rule] | None, best: _Rule | None, is_dir: bool) -> _Rule | None:
    """The later of ``best`` and the last rule of ``rules`` that applies."""
    if rules:
        for rule in reversed(rules):
            if best is not None and rule.index < best.index:
                break
            if is_dir or not rule.dir_only:
                return rule
    return best


def _pick_glob(
    rules: list[_Rule], subject: str, best: _Rule | None, is_dir: bool
) -> _Rule | None:
    for rule in reversed(rules):
        if best is not None and rule.index < best.index:
            break
        if (is_dir or not rule.dir_only) and _hit(rule, subject):
            return rule
    return best


def _hit(rule: _Rule, subject: str) -> bool:
    regex = rule.regex
    if regex is None:
        if rule.glob is None:  # a pattern git drops (an invalid range)
            return False
        compiled = _compile(rule.glob)
        if compiled is None:
            rule.glob = None
            return False
        # open_end first: a reader that sees the regex sees its open_end.
        regex, rule.open_end = compiled
        rule.regex = regex
    if regex.fullmatch(subject):
        return True
    return rule.open_end and regex.match(subject) is not None


def _compile(text: str) -> tuple[re.Pattern[str], bool] | None:
    """pathspec's translation of one pattern, or None for one git would drop.

    Compiled lazily: ``re.compile`` is most of a glob's cost, and a glob in a
    lookup table (``docs/*.md`` under ``docs``) may never be tried.
    """
    from pathspec.patterns.gitignore.base import GitIgnorePatternError
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    # The "!" and the trailing "/" are already taken off; a leading "#" or "!"
    # left in the text is literal now, so escape it from pathspec's framing.
    if text[0] in "#!":
        text = "\\" + text
    if "[" in text:
        sets = _git_sets(text)
        if sets is None:
            return None
        text = sets
    try:
        source, _ = GitIgnoreSpecPattern.pattern_to_regex(text)
    except (GitIgnorePatternError, ValueError):
        return None
    if source is None:
        return None
    # pathspec leaves some classes to ``re`` ("[z-a]", "[[:alpha:]]"): a range
    # re rejects matches nothing in git either, so the pattern is dropped; and
    # re's FutureWarning about nested sets must not reach the user.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            regex = re.compile(source)
        except re.error:
            return None
    # A regex without the directory-marker group is one that ends open: it
    # matches everything below a prefix (``a/**``) or every path (``*``).
    return regex, "ps_d" not in source


# git's wildmatch (C locale) knows these; pathspec would pass them on to re as
# sets of letters. Each is spelled with plain characters and ranges (pathspec
# copies a set's body verbatim, doubling backslashes): no "]", no backslash,
# no "!" or "^" first, and no "/" (a set never matches one in git).
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \t", "cntrl": "\x00-\x1f\x7f",
    "digit": "0-9", "graph": '"-.0-~!', "lower": "a-z", "print": " -.0-~",
    "punct": ':-@[-`{-~"-.!', "space": " \t\n\r\x0b\x0c", "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}  # fmt: skip


def _git_sets(text: str) -> str | None:
    """Bracket sets as git's wildmatch reads them, in a form pathspec and re agree on.

    ``[[:alpha:]]`` becomes ``[a-zA-Z]``; a reversed range ``[z-a]`` matches
    only its first character in git, so it becomes ``[z]``. None for an
    unknown class, which makes git's match abort.
    """
    out: list[str] = []
    i, n, in_set = 0, len(text), False
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            out.append(text[i : i + 2])
            i += 2
            continue
        if not in_set and ch == "[":
            in_set = True
            out.append(ch)
            i += 1
            if i < n and text[i] in "!^":
                out.append(text[i])
                i += 1
            if i < n and text[i] == "]":  # a "]" first in a set is literal
                out.append("]")
                i += 1
            continue
        if in_set and text.startswith("[:", i):
            end = text.find(":]", i + 2)
            if end < 0:
                return None
            ranges = _POSIX_CLASSES.get(text[i + 2 : end])
            if ranges is None:
                return None
            out.append(ranges)
            i = end + 2
            continue
        if in_set and ch == "]":
            in_set = False
        elif (
            in_set and text.startswith("-", i + 1) and i + 2 < n and text[i + 2] != "]"
        ):
            if text[i + 2] < ch:  # git compares the start char first, then the range
                out.append(ch)
                i += 3
                continue
            out.append(text[i : i + 3])
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _trim(line: str) -> str:
    """Drop trailing spaces unless backslash-escaped (git's trim_trailing_spaces)."""
    if not line.endswith(" "):
        return line
    end = len(line)
    while end and line[end - 1] == " ":
        backslashes = 0
        i = end - 2
        while i >= 0 and line[i] == "\\":
            backslashes += 1
            i -= 1
        if backslashes % 2:
            break
        end -= 1
    return line[:end]


@dataclass(frozen=True, slots=True)
class DirRules:
    """The rules in force inside one directory (the walker's state per level).

    ``rel`` is the directory relative to the rules' origin (the repository top,
    or the root outside a repository); ``excluded`` marks a directory the walk
    only enters because a ``--exclude`` negation might re-include something in it.
    """

    rel: str
    layers: tuple[_Layer, ...]
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
        repo = _find_repo(root) if use_gitignore else None
        origin = repo[0] if repo is not None else root
        self._origin = str(origin)
        prefix = "" if origin == root else root.relative_to(origin).as_posix()
        self._prefix = prefix
        self._user = _Layer(prefix, exclude)
        layers: list[_Layer] = [_Layer(prefix, DEFAULT_EXCLUDES)]
        if repo is not None:
            top, common = repo
            layers += _repo_layers(top, common, "")
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
                nested = _git_dir(path)
                if nested is not None:
                    layers = (*layers, *_repo_layers(path, nested, rel))
            if names is None or RULES_FILE in names:
                layers = (*layers, *self._gitignore(rel))
        if layers is parent.layers and parent.quick is not None and parent.quick.shared:
            return DirRules(rel, layers, quick=parent.quick)
        return DirRules(rel, layers, quick=self._quick(rel, layers))

    def _quick(self, rel: str, layers: tuple[_Layer, ...]) -> _Quick | None:
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

    def _gitignore(self, rel: str) -> tuple[_Layer, ...]:
        if not self.use_gitignore:
            return ()
        folder = os.path.join(self._origin, rel) if rel else self._origin
        lines = read_rules(os.path.join(folder, RULES_FILE), in_tree=True)
        return (_Layer(rel, lines),) if lines else ()


def _repo_layers(top: Path, common: Path, base: str) -> list[_Layer]:
    """core.excludesFile (lowest) and info/exclude of the repository at ``top``."""
    out = []
    excludes = _excludes_file(top, common)
    lines = read_rules(str(excludes)) if excludes is not None else None
    if lines:
        out.append(_Layer(base, lines))
    lines = read_rules(str(common / "info" / "exclude"))
    if lines:
        out.append(_Layer(base, lines))
    return out


def _find_repo(start: Path) -> tuple[Path, Path] | None:
    """(work tree top, common git directory) of the repository holding ``start``."""
    for folder in (start, *start.parents):
        common = _git_dir(folder)
        if common is not None:
            return folder, common
    return None


def _git_dir(folder: Path) -> Path | None:
    """The common git directory when ``folder`` is a work tree top, else None."""
    dotgit = folder / ".git"
    try:
        mode = os.stat(dotgit).st_mode
    except OSError:
        return None
    gitdir = dotgit
    if stat.S_ISREG(mode):  # a linked worktree or a submodule: "gitdir: <path>"
        first = (read_rules(str(dotgit)) or [""])[0]
        if not first.startswith("gitdir:"):
            return None
        gitdir = folder / first[len("gitdir:") :].strip()
    if not (gitdir / "HEAD").exists():
        return None
    commondir = read_rules(str(gitdir / "commondir"))
    if commondir and commondir[0].strip():
        return gitdir / commondir[0].strip()
    return gitdir


def _excludes_file(top: Path, common: Path) -> Path | None:
    """core.excludesFile from git's config files, without running git.

    Read in git's order (system, global, the repository's own; the last one
    wins): only the ``[core]`` section's ``excludesFile`` key is looked at, and
    ``include.path`` is not followed. Unset, git's default file is used.
    """
    files, default = git_config_files()
    value: str | None = None
    for path in (*files, common / "config"):
        value = _config_value(path, "core", "excludesfile") or value
    if value is None:
        return default
    expanded = Path(os.path.expanduser(value))
    return expanded if expanded.is_absolute() else top / expanded


def _config_value(path: Path, section: str, key: str) -> str | None:
    lines = read_rules(str(path))
    found = None
    current = ""
    for raw in lines or ():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            current = line[1:end].strip().lower() if end > 0 else ""
            line = line[end + 1 :].strip() if end > 0 else ""
        if current != section or not line or line[0] in "#;":
            continue
        name, sep, value = line.partition("=")
        if sep and name.strip().lower() == key:
            found = _config_string(value.strip())
    return found


def _config_string(value: str) -> str:
    """A git config value: quotes removed, escapes undone, a trailing comment cut."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(value):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i], value[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def read_rules(path: str, *, in_tree: bool = False) -> list[str] | None:
    """The lines of a rules file, or None when it is missing or not a regular file.

    O_NONBLOCK and the regular-file check: a FIFO named .gitignore must not
    block the walk forever, nor a huge one cost its size in memory (issue #8).
    Like git, a ``.gitignore`` inside the tree is not read through a symlink.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if in_tree:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(MAX_RULES_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_RULES_FILE_BYTES:
        data = data[: data.rfind(b"\n", 0, MAX_RULES_FILE_BYTES) + 1]
    # git splits on "\n" only (a "\r" before it is dropped per line) and skips a BOM.
    return data.decode("utf-8", "replace").removeprefix("\ufeff").split("\n")
