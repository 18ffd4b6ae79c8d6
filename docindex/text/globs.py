"""Path globs as SQLite's GLOB reads them, for every engine (issues #38, #44).

``*`` matches anything (``/`` too), ``?`` one character, and ``[...]`` one
character of a set: ``[`` opens it, an optional ``^`` negates it, the
character after that is part of the set even when it is ``]``, and the
first ``]`` after it closes it; ``a-z`` inside is a range. A pattern with an
unclosed ``[`` matches nothing. PostgreSQL has no GLOB, so its store
translates the same reading into a regular expression
(``store.postgres.filters``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple


class BracketSet(NamedTuple):
    """One ``[...]`` of a glob: where it is, whether negated, its members."""

    start: int  # index of "["
    end: int  # index of the closing "]"
    negated: bool
    body: str  # between "[" (and "^") and "]"


def bracket_sets(pattern: str) -> Iterator[BracketSet]:
    """The character sets of ``pattern``, in order."""
    i = pattern.find("[")
    while i >= 0:
        negated = pattern.startswith("^", i + 1)
        first = i + 2 if negated else i + 1  # this one may be "]"
        end = pattern.find("]", first + 1)
        if end < 0:
            return
        yield BracketSet(i, end, negated, pattern[first:end])
        i = pattern.find("[", end + 1)


def backwards_range(body: str) -> str | None:
    """The first range of a set that runs backwards (``z-a``), or None."""
    for j in range(1, len(body) - 1):
        if body[j] == "-" and body[j - 1] > body[j + 1]:
            return body[j - 1 : j + 2]
    return None
