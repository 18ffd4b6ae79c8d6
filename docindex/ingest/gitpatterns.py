"""One list of ignore patterns as git reads it (issue #25): ``Layer``.

Framing follows git's ``add_patterns_from_buffer`` (comments, trailing
spaces, ``!``, a trailing ``/``); each pattern is translated by pathspec
(escapes, ``**``, character classes, git's invalid-range rule). Literal
names, literal paths and ``*.ext`` patterns are looked up in dicts, so a
100,000-line ``.gitignore`` costs a few dict probes per file (issue #17).
Split from ``ignore`` (which layers apply to a path), #49.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable

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


class Layer:
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
