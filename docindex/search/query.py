"""The query language (issue #19): parsed once at the edge, passed downstream.

Syntax, the same in ``docindex query``, ``--queries`` and MCP:

- ``rate limiting``: words, ranked as always (any of them may match);
- ``"rate limiting"``: an exact phrase (its words, in this order, adjacent);
- ``+redis``: a required word; ``-anonymous`` / ``-"basic auth"``: excluded.

A sign counts only at the start of a word that starts with a letter (``C++``,
``x-y``, ``--path``, ``-2``, ``+1`` are text). An unclosed quote is text. Everything else, FTS5 syntax included
(``AND``, ``NEAR(a b)``, ``col:x``, ``a*``), is plain text: only words ever
reach FTS5, each quoted (``search.quote_fts``). Like Lucene's ``QueryParser``,
``parse_query`` turns the text into a typed value once; search, snippets,
hints and the embedder read its fields and never parse the text again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docindex.text.synonyms import Expansion
from docindex.text.tokenize import STOPWORDS, query_terms, word_spans

_PART = re.compile(r'(?<!\S)([+-]?)"([^"]*)"(?!\S)|(\S+)')
_SIGNED = re.compile(r"([+-])([^\W\d_]|[^\x00-\x7f])")  # a letter: -2, +1 are text

NO_WORDS = "no searchable words in the query"
# Question and function words of CJK questions (issue #37): their n-grams
# ("如何开启" -> 如何, 何开, 开启) are common across a docs tree and carried
# changelogs above the page that answers. A run is split at them before it
# becomes n-grams; a query made of nothing else keeps them.
QUESTION_WORDS = (
    "为什么", "怎么样", "怎么办", "是什么", "有哪些", "如何", "怎么", "怎样", "什么",
    "哪些", "哪个", "是否", "能否", "可以", "开启", "启用", "请问",
    "為什麼", "怎麼", "甚麼", "哪個",
    "どうやって", "どのように", "どうすれば", "ですか", "ますか", "とは", "なに", "何ですか",
    "어떻게", "무엇", "어디", "언제", "누구", "왜",
)  # fmt: skip
_QUESTION = re.compile(
    "|".join(sorted(map(re.escape, QUESTION_WORDS), key=len, reverse=True))
)
# English questions open with one of these (or end with "?").
QUESTION_OPENERS = frozenset(
    "how what why when where which who whom whose can could does do did is are "
    "was were should would will has have".split()
)


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query as typed and as the index sees it.

    Attributes:
        text: the query as typed.
        words: the plain words and their text, ranked.
        phrases: ``"exact phrases"`` (ranked and required).
        required: ``+words`` (ranked and required).
        excluded: ``-words`` and ``-"phrases"``.
        tokens: the index terms ranked: those of words, phrases and required
            words, stopwords dropped when other words remain.
        required_tokens: per phrase or required word, the index terms a hit
            must all hold.
        excluded_tokens: per excluded word or phrase, the index terms whose
            joint presence excludes a hit.
        searchable: False when nothing but stopwords (or nothing) is left to
            rank: the query then answers ``NO_WORDS``.
        expansions: what the synonym file added (issue #47), each with its
            index terms, ranked below ``tokens``.
    """

    text: str
    words: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    required_tokens: tuple[tuple[str, ...], ...] = ()
    excluded_tokens: tuple[tuple[str, ...], ...] = ()
    searchable: bool = False
    question: bool = False
    expansions: tuple[Expansion, ...] = ()

    @property
    def synonym_terms(self) -> tuple[tuple[str, ...], ...]:
        """Each synonym's index terms that the file added (none without it)."""
        return tuple(m for e in self.expansions for m in e.member_terms)

    @property
    def positive_text(self) -> str:
        """What the embedder and snippets rank by: everything but exclusions."""
        return " ".join((*self.words, *self.phrases, *self.required))

    @property
    def constrained(self) -> bool:
        """True when hits must hold or lack something (phrases, +, -)."""
        return bool(self.phrases or self.required or self.excluded)


def parse_query(text: str, *, cjk_ngram: int = 2, use_stem: bool = True) -> ParsedQuery:
    """Parse the query language (see the module doc); never raises.

    Args:
        text: the query as typed.
        cjk_ngram: the index's CJK n-gram length.
        use_stem: whether the index stems latin words.

    Returns:
        The ParsedQuery.
    """
    words: list[str] = []
    phrases: list[str] = []
    required: list[str] = []
    excluded: list[str] = []
    for match in _PART.finditer(text):
        sign, quoted, bare = match[1], match[2], match[3]
        if bare is None:
            if not _has_word(quoted):
                continue
            if sign == "-":
                excluded.append(quoted)
            else:
                phrases.append(quoted)  # "+" before a phrase adds nothing
            continue
        signed = _SIGNED.match(bare)
        if signed is None:
            words.append(bare)
        elif signed[1] == "-":
            excluded.append(bare[1:])
        else:
            required.append(bare[1:])

    def toks(part: str) -> tuple[str, ...]:
        return tuple(query_terms(part, cjk_ngram=cjk_ngram, use_stem=use_stem))

    positive = " ".join((*words, *phrases, *required))
    tokens = toks(positive) if positive.strip() else ()
    if words and _QUESTION.search(positive):
        content = " ".join(
            (*(_QUESTION.sub(" ", w) for w in words), *phrases, *required)
        )
        tokens = toks(content) or tokens
    must = tuple(t for t in (toks(p) for p in (*phrases, *required)) if t)
    never = tuple(t for t in (toks(p) for p in excluded) if t)
    return ParsedQuery(
        text=text, words=tuple(words), phrases=tuple(phrases),
        required=tuple(required), excluded=tuple(excluded), tokens=tokens,
        required_tokens=must, excluded_tokens=never,
        searchable=_has_content_word(positive), question=is_question(text),
    )  # fmt: skip


def is_question(text: str) -> bool:
    """True for a question in words: an English one (``how do I ...``, ``...?``)
    or one holding a CJK question word (如何, 什么, どうやって, 어떻게)."""
    text = text.strip()
    first = text.split(maxsplit=1)[0].lower() if text else ""
    return (
        first in QUESTION_OPENERS
        or text.endswith(("?", "？"))
        or _QUESTION.search(text) is not None
    )


def _has_word(text: str) -> bool:
    return any(True for _ in word_spans(text))


def _has_content_word(text: str) -> bool:
    """True when ``text`` holds a CJK run or a latin word that is no stopword."""
    for _, _, word in word_spans(text):
        if not word.isascii() or word not in STOPWORDS:
            return True
    return False


def phrase_pattern(phrase: str) -> re.Pattern[str] | None:
    """A regex finding ``phrase`` in ``normalized_words(text)`` (None: no words).

    Latin words match whole; a CJK run may sit inside a longer run.
    """
    words = [w for _, _, w in word_spans(phrase)]
    if not words:
        return None
    head = r"(?<![^ ])" if words[0][0].isascii() else ""
    tail = r"(?![^ ])" if words[-1][-1].isascii() else ""
    return re.compile(head + " ".join(map(re.escape, words)) + tail)


def normalized_words(text: str) -> str:
    """``text`` as its normalised words and CJK runs, one space apart."""
    return " ".join(w for _, _, w in word_spans(text))
