"""FTS5's query subset, read into a tree (issues #34, #46).

The search side builds FTS5 MATCH strings (``candidates.fts_match``,
``docstage``): quoted one-token phrases joined by ``OR``, ``AND`` and ``NOT``
with parentheses. ``parse_match`` reads that language (FTS5 precedence: NOT,
then AND, then OR) into a tree and lists its phrases in order: the
PostgreSQL store turns it into SQL (``postgres.ranking``), the SQLite store's
document stage evaluates it over the documents holding each term
(``postings``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r'"((?:[^"]|"")*)"|(\()|(\))|(OR|AND|NOT)\b|(\S)')


@dataclass(frozen=True, slots=True)
class Node:
    """A MATCH expression: ``op`` is "term", "or", "and" or "not"."""

    op: str
    term: str = ""
    kids: tuple[Node, ...] = ()


def parse_match(match: str) -> tuple[Node, list[str]]:
    """The expression tree of an FTS5 MATCH string, and its phrases in order.

    Raises:
        ValueError: ``match`` is outside the subset the search side writes.
    """
    tokens: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(match):
        if m[1] is not None:
            tokens.append(("term", m[1].replace('""', '"')))
        elif m[2]:
            tokens.append(("(", ""))
        elif m[3]:
            tokens.append((")", ""))
        elif m[4]:
            tokens.append((m[4], ""))
        else:
            raise ValueError(f"unsupported MATCH syntax: {match!r}")
    phrases = [value for kind, value in tokens if kind == "term"]
    pos = 0

    def peek() -> str:
        return tokens[pos][0] if pos < len(tokens) else ""

    def take() -> tuple[str, str]:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary() -> Node:
        kind, value = take()
        if kind == "term":
            return Node("term", value)
        if kind == "(":
            node = or_expr()
            if take()[0] != ")":
                raise ValueError(f"unbalanced MATCH: {match!r}")
            return node
        raise ValueError(f"unsupported MATCH syntax: {match!r}")

    def not_expr() -> Node:
        node = primary()
        while peek() == "NOT":
            take()
            node = Node("not", kids=(node, primary()))
        return node

    def and_expr() -> Node:
        kids = [not_expr()]
        while peek() in ("AND", "term", "("):  # FTS5: adjacency is AND
            if peek() == "AND":
                take()
            kids.append(not_expr())
        return kids[0] if len(kids) == 1 else Node("and", kids=tuple(kids))

    def or_expr() -> Node:
        kids = [and_expr()]
        while peek() == "OR":
            take()
            kids.append(and_expr())
        return kids[0] if len(kids) == 1 else Node("or", kids=tuple(kids))

    if not tokens:
        raise ValueError("empty MATCH")
    tree = or_expr()
    if pos != len(tokens):
        raise ValueError(f"unsupported MATCH syntax: {match!r}")
    return tree, phrases
