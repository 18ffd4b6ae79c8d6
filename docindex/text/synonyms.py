"""An opt-in synonym file: groups of words a query may also mean (issue #47).

The file is Recoll's format: one group per line, members separated by white
space, a member of several words in double quotes; a line starting with
``#`` is a comment and a backslash at the end of a line continues it::

    # authentication
    认证 身份验证 鉴权 authentication auth
    限流 "rate limiting" 速率限制

A query that holds every index term of one member (``认证``; ``rate
limiting``: ``rate`` and ``limit``) also searches the other members' terms,
weighted below the terms typed: ``search.engine`` ranks each member apart
and adds its bm25 at SYNONYM_WEIGHT divided by its number of terms, so a
member of three CJK bigrams (身份验证: 身份 份验 验证) counts as much as
one word. Nothing is expanded without the file: no table of
synonyms lives in the code (the decision on #37).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from docindex.errors import ConfigError
from docindex.text.tokenize import query_terms

# The share of its bm25 a synonym adds (divided among its terms), against 1.0
# for a term typed.
SYNONYM_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class Expansion:
    """What one group added to a query: the member it matched, the other
    members, and each one's index terms that the query did not hold."""

    matched: str
    added: tuple[str, ...]
    member_terms: tuple[tuple[str, ...], ...]

    @property
    def terms(self) -> tuple[str, ...]:
        """Every index term the group added, once."""
        return tuple(dict.fromkeys(t for m in self.member_terms for t in m))


def parse_groups(text: str) -> list[tuple[str, ...]]:
    """The groups of a synonym file's text (Recoll's format); a group of one
    member is dropped (it means nothing).

    Raises:
        ValueError: a line with an unclosed double quote (its number says which).
    """
    groups: list[tuple[str, ...]] = []
    pending, first = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            first = number
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole, pending = pending + stripped, ""
        lexer = shlex.shlex(whole, posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        lexer.escape = ""
        try:
            members = tuple(dict.fromkeys(m.strip() for m in lexer if m.strip()))
        except ValueError:
            raise ValueError(f"line {first}: unclosed double quote") from None
        if len(members) > 1:
            groups.append(members)
    return groups


_CACHE: dict[tuple[str, int, int], list[tuple[str, ...]]] = {}


def read_groups(path: str) -> list[tuple[str, ...]]:
    """The groups of the synonym file at ``path`` (read again when it changes).

    Raises:
        ConfigError: the file cannot be read or parsed (one line, naming it).
    """
    try:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
        if key not in _CACHE:
            _CACHE.clear()
            _CACHE[key] = parse_groups(Path(path).read_text("utf-8"))
        return _CACHE[key]
    except OSError as exc:
        raise ConfigError(f"cannot read synonyms file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise ConfigError(f"synonyms file {path} is not UTF-8 text") from None
    except ValueError as exc:
        raise ConfigError(f"synonyms file {path}, {exc}") from None


def expand(
    tokens: tuple[str, ...], groups: list[tuple[str, ...]], *, cjk_ngram: int = 2,
    use_stem: bool = True,
) -> list[Expansion]:  # fmt: skip
    """The expansions of a query whose index terms are ``tokens``.

    A member matches when the query holds all of its terms; the group's
    other members then add their terms that the query does not hold.
    """
    held = set(tokens)
    out: list[Expansion] = []
    for group in groups:
        members = [
            (m, query_terms(m, cjk_ngram=cjk_ngram, use_stem=use_stem)) for m in group
        ]
        hit = next((m for m, t in members if t and set(t) <= held), None)
        if hit is None:
            continue
        added = [
            (m, tuple(x for x in t if x not in held))
            for m, t in members
            if m != hit and not set(t) <= held
        ]
        added = [(m, t) for m, t in added if t]
        if added:
            out.append(Expansion(hit, tuple(m for m, _ in added),
                                 tuple(t for _, t in added)))  # fmt: skip
            held.update(x for _, t in added for x in t)
    return out
