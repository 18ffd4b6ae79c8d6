"""Zero-result hints (issue #6, after docs-mcp): say why a query found nothing.

A hint names the query words that occur nowhere in the index, whether the
filters removed every hit (and which ``--type``/``--path``/``--where`` values
would have matched), and one suggestion. Filters and ``--min-score`` are
checked by re-running the query once without them, so such a suggestion is
only made when it finds something; other modes are not re-run (issue #33: a
query with no hits costs what one with hits does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from docindex.text.tokenize import query_terms, word_spans

if TYPE_CHECKING:
    from docindex.config import Config
    from docindex.models import Hint, Hit, QueryOptions, QueryResult, WouldMatch
    from docindex.search.query import ParsedQuery
    from docindex.store import Index

_SAMPLE = 50  # unfiltered hits inspected for would-match values
_SHOWN = 10  # values reported per filter


def zero_result_hint(
    store: Index, query: ParsedQuery, cfg: Config, opts: QueryOptions,
    run: Callable[[QueryOptions], QueryResult],
) -> Hint:  # fmt: skip
    """Explain an empty result and suggest what to try next.

    Args:
        store: the index the query ran against.
        query: the parsed query.
        cfg: the settings the query ran with.
        opts: the query's options (filters, mode, min_score).
        run: runs the same query with other options and no hint (the search
            passes itself in: hints never imports it, issue #18).

    Returns:
        ``{"unmatched_words": [...], "filtered_out": bool, "would_match": {...},
        "suggestion": str}``; ``would_match`` maps ``type``/``path``/``where``
        to values that unfiltered hits have (only for filters that were set).
    """
    words = _words(query.positive_text)
    unmatched = _unmatched(store, words, cfg)
    hint: Hint = {
        "unmatched_words": unmatched,
        "filtered_out": False,
        "would_match": {},
        "suggestion": "",
    }
    if store.count_segments() == 0:
        hint["suggestion"] = "the index is empty: run `docindex scan DIR` first"
        return hint
    if not words:
        hint["suggestion"] = "the query has no searchable words"
        return hint
    if opts.types or opts.path_glob or opts.where:
        unfiltered = _rerun(run, opts, types=(), path_glob=None, where=())
        if unfiltered.hits:
            hint["filtered_out"] = True
            hint["would_match"] = _would_match(store, unfiltered.hits, opts)
            hint["suggestion"] = _filter_suggestion(hint["would_match"])
            return hint
    if opts.min_score > 0:
        relaxed = _rerun(run, opts, min_score=0.0, top=1)
        if relaxed.hits:
            best = relaxed.hits[0].score
            hint["suggestion"] = f"lower --min-score (the best hit scores {best:.3f})"
            return hint
    if unmatched and len(unmatched) < len(words):
        drop = ", ".join(repr(w) for w in unmatched)
        hint["suggestion"] = f"try fewer words: {drop} occur nowhere in the index"
        return hint
    # No other mode is re-run (issue #33): ``auto`` and ``lexical`` rank the
    # same candidates, so one cannot find what the other missed, and a
    # ``semantic`` probe reads every vector of the index (0.3 s and 50 MB on
    # 3,000 documents, bench/zero_hits.py) to say what can be said for free.
    if opts.mode == "semantic" and _rerun(run, opts, mode="auto", top=1).hits:
        hint["suggestion"] = "try --mode auto"
        return hint
    if unmatched:
        similar = (
            ""
            if opts.mode == "semantic" or query.constrained
            else "; --mode semantic also finds similar spellings"
        )
        hint["suggestion"] = (
            "no query word occurs in the index: check the spelling, try other "
            f"words, or scan the folder that holds the documents{similar}"
        )
    else:
        hint["suggestion"] = "try fewer or other words"
    return hint


def weak_hint(
    store: Index, query: ParsedQuery, result: QueryResult,
    weights: dict[str, float], cfg: Config,
) -> Hint | None:  # fmt: skip
    """Say so when the best hit holds under half of the query (issue #37).

    Returns None when the first hit's ``coverage`` reaches WEAK_COVERAGE;
    else the zero-result hint's keys with ``weak_match`` True, the words no
    document holds in ``unmatched_words`` and a ``suggestion`` such as
    "weak match: the best hit holds 31% of the query; no document contains 'tidb'".
    """
    from docindex.search.quality import WEAK_COVERAGE

    best = result.hits[0].coverage
    if best >= WEAK_COVERAGE or not weights:
        return None
    unmatched = _unmatched(store, _words(query.positive_text), cfg)
    text = f"weak match: the best hit holds {best:.0%} of the query"
    if unmatched:
        text += "; no document contains " + ", ".join(repr(w) for w in unmatched)
    if cfg.embedding_provider == "multilingual" and "semantic" in result.hits[0].from_:
        # A question in another language shares no word with its answer (#47).
        text += "; the multilingual model ranked it by meaning"
    return {
        "weak_match": True, "unmatched_words": unmatched, "filtered_out": False,
        "would_match": {}, "suggestion": text,
    }  # fmt: skip


def _words(text: str) -> list[str]:
    """Distinct query words (latin words and CJK runs), normalised, in order."""
    return list(dict.fromkeys(word for _, _, word in word_spans(text)))


def _unmatched(store: Index, words: list[str], cfg: Config) -> list[str]:
    """Words none of whose index terms occur in any segment (fts5vocab)."""
    per_word = {
        w: query_terms(w, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem) for w in words
    }
    freqs = store.doc_freqs(sorted({t for ts in per_word.values() for t in ts}))
    return [w for w, ts in per_word.items() if not any(freqs.get(t) for t in ts)]


def _rerun(
    run: Callable[[QueryOptions], QueryResult],
    opts: QueryOptions,
    **changes: Any,  # QueryOptions fields, each of its own type
) -> QueryResult:
    changes.setdefault("top", _SAMPLE)
    return run(dataclasses.replace(opts, offset=0, explain=False, **changes))


def _would_match(store: Index, hits: list[Hit], opts: QueryOptions) -> WouldMatch:
    pairs = list(dict.fromkeys((h.root, h.rel_path) for h in hits))
    docs = store.documents_at(pairs)
    out: WouldMatch = {}
    if opts.types:
        out["type"] = sorted({d.kind for d in docs})[:_SHOWN]
    if opts.path_glob:
        out["path"] = [d.rel_path for d in docs][:_SHOWN]
    if opts.where:
        out["where"] = {
            key: sorted({d.meta[key] for d in docs if key in d.meta})[:_SHOWN]
            for key, _ in opts.where
        }
    return out


def _filter_suggestion(would: WouldMatch) -> str:
    parts: list[str] = []
    if would.get("type"):
        parts.append("--type " + "/".join(would["type"]))
    if would.get("path"):
        parts.append(f"--path matching e.g. {would['path'][0]}")
    for key, values in (would.get("where") or {}).items():
        if values:
            parts.append(f"--where {key}=" + "/".join(values))
    if not parts:
        return "the filters removed every hit: drop or change them"
    return "the filters removed every hit; these would match: " + ", ".join(parts)
