"""Segments -> FTS rows and vectors: the tokenize/embed stage of a scan (issue #18).

Pure functions of the configuration and a document's segments, run in the
scan's worker processes; the search rebuilds what a segment was indexed with
from the same ``text.fields``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

from docindex.config import Config
from docindex.embed.choice import embedder_for
from docindex.embed.ngram import NgramEmbedder
from docindex.models import Segment
from docindex.text.fields import document_fields as document_fields
from docindex.text.fields import embed_input
from docindex.text.fields import fts_row as fts_row
from docindex.text.tokenize import (
    cjk_ngrams,
    extra_terms,
    stopword_terms,
    term_parts,
    terms,
)

if TYPE_CHECKING:
    from docindex.embed.choice import Embedder

EMBED_BATCH = 512  # segments embedded at once: bounds a big file's memory (#8)
CJK_NUMPY_MIN = 512  # CJK characters in a file from which its n-gram text uses numpy


class Analysis(NamedTuple):
    """A document's FTS rows (title, body) and vector blobs, one per segment.

    ``vectors`` is None when they come later (a deferred neural embedder) or
    never (provider ``none``).
    """

    fts: tuple[tuple[str, str], ...]
    vectors: tuple[bytes, ...] | None


TERMS_KEPT = 128  # salient terms stored per document (query feedback, #21)


def document_terms(fts: Sequence[tuple[str, str]], skip: frozenset[str]) -> str:
    """A document's length in body terms and its TERMS_KEPT most frequent terms.

    JSON ``[length, {term: count}]``, one- character terms and ``skip``
    (stopwords as index terms) left out. Query feedback reads these instead of
    tokenising document bodies at query time; on SciFact 128 terms ranked as
    well as every term (64 lost 0.6 points nDCG@10 of ``--files``). A scan
    gets the same string from ``analyze_document``, which counts the terms
    before they are joined into FTS text.
    """
    return salient_terms(Counter(" ".join([b for _, b in fts]).split()), skip)


def salient_terms(counts: Counter[str], skip: frozenset[str]) -> str:
    """``document_terms`` from the counts of a document's body terms."""
    # Ranked in C (issue #22: with the counting, a fifth of a worker's time
    # went to a Python loop per token and per distinct term): most_common()
    # orders by count, so only the terms down to the TERMS_KEPT-th eligible
    # count (ties included) are looked at, then ordered by (-count, term).
    kept: list[tuple[str, int]] = []
    floor = 0
    for term, n in counts.most_common():
        if n < floor:
            break
        if len(term) > 1 and term not in skip:
            kept.append((term, n))
            if len(kept) == TERMS_KEPT:
                floor = n
    kept.sort(key=_by_count_then_term)
    top = dict(kept[:TERMS_KEPT])
    length = counts.total()
    return json.dumps([length, top], ensure_ascii=False, separators=(",", ":"))


def _by_count_then_term(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def analyze_segments(
    cfg: Config, title: str | None, doc_title: str, segments: Sequence[Segment],
    *, bulk: bool = False,
) -> Analysis:  # fmt: skip
    """FTS rows and quantised vectors of a file's segments (``Analysis``).

    Each segment's text is tokenised once (issue #7): the latin terms and CJK
    runs of ``context + "\\n" + text`` are those of the context followed by
    those of the text (a newline never joins two terms), so ``embed_parts``
    gets what ``embed(embed_input(...))`` would tokenise. Heading terms repeat
    along a section and are cached.
    """
    fts, vectors, _ = _analyze(cfg, title, doc_title, segments, bulk)
    return Analysis(fts, vectors)


class DocumentAnalysis(NamedTuple):
    """``Analysis``, the document's salient terms (``document_terms``) and the
    counts of its body terms (for its stored counts, ``store.doc_terms``: #46)."""

    fts: tuple[tuple[str, str], ...]
    vectors: tuple[bytes, ...] | None
    terms: str
    counts: Counter[str]


def analyze_document(
    cfg: Config, title: str | None, doc_title: str, segments: Sequence[Segment],
    *, bulk: bool = False,
) -> DocumentAnalysis:  # fmt: skip
    """``analyze_segments`` and ``document_terms`` of its FTS rows, in one pass.

    The terms are counted from the token lists the FTS text is joined from
    (issue #22: splitting that text again to count it cost ~15% of a scan's
    worker time); the string is the one ``document_terms`` makes.
    """
    fts, vectors, counts = _analyze(cfg, title, doc_title, segments, bulk)
    return DocumentAnalysis(
        fts, vectors, salient_terms(counts, stopword_terms(cfg.stem)), counts
    )


def _analyze(
    cfg: Config, title: str | None, doc_title: str, segments: Sequence[Segment],
    bulk: bool,
) -> tuple[tuple[tuple[str, str], ...], tuple[bytes, ...] | None, Counter[str]]:  # fmt: skip
    """FTS rows, vectors and the counts of the body terms (``analyze_document``)."""

    def tok(text: str) -> list[str]:
        return terms(text, cjk_ngram=cfg.cjk_ngram, use_stem=cfg.stem)

    n_gram, use_stem = cfg.cjk_ngram, cfg.stem
    embedder = embedder_for(cfg)
    # The n-gram embedder shares the tokenizer: it takes the terms made here.
    ngram = embedder if isinstance(embedder, NgramEmbedder) else None
    by_parts = ngram is not None
    numpy_ready = ngram is not None and (bulk or ngram.numpy_used)
    heads: dict[tuple[str, ...], str] = {}
    contexts: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
    titles: list[str] = []
    latin: list[str | None] = []  # each body's latin terms, None when it has none
    body_runs: list[list[str]] = []
    word_lists: list[list[str]] = []
    run_lists: list[list[str]] = []
    body_words: list[list[str]] = []
    for seg in segments:
        # The n-gram vectors take the plain words; the FTS rows and counts
        # add the identifiers' words too (issue #47).
        plain, runs = term_parts(seg.text, use_stem=use_stem, identifiers=False)
        extra = extra_terms(seg.text, use_stem=use_stem)
        words = plain + extra if extra else plain
        head = heads.get(seg.heading_path)
        if head is None:
            head = heads[seg.heading_path] = " ".join(
                tok(" ".join((doc_title, *seg.heading_path)))
            )
        titles.append(head)
        latin.append(" ".join(words) if words else None)
        if by_parts:
            ctx = contexts.get(seg.heading_path)
            if ctx is None:
                parts = (title or doc_title, *seg.heading_path)
                context = " > ".join(p for p in parts if p)
                ctx = contexts[seg.heading_path] = term_parts(
                    context, use_stem=use_stem, identifiers=False
                )
            word_lists.append(ctx[0] + plain if ctx[0] else plain)
            run_lists.append(ctx[1] + runs if ctx[1] else runs)
        body_runs.append(runs)
        body_words.append(words)
    # Each body's terms counted as lists (their strings are the stem memo's,
    # hashed once); the CJK n-grams exist only as text, split per batch.
    counts = Counter(chain.from_iterable(body_words))
    cjk_batch: list[str] = []
    # " ".join(words + cjk_ngrams(runs)), with the n-grams made per file
    rows: list[tuple[str, str]] = []
    for head, lat, cjk in zip(
        titles, latin, _cjk_texts(body_runs, n_gram, numpy_ready), strict=True
    ):
        if cjk:
            cjk_batch.append(cjk)
            if len(cjk_batch) == EMBED_BATCH:
                counts.update(" ".join(cjk_batch).split())
                cjk_batch.clear()
        rows.append((head, cjk if lat is None else f"{lat} {cjk}" if cjk else lat))
    if cjk_batch:
        counts.update(" ".join(cjk_batch).split())
    counts.pop("", None)  # an empty term would not survive the join and split
    fts = tuple(rows)
    if embedder is None or embedder.deferred:
        return fts, None, counts  # neural vectors come in embed_pending (#9)
    vectors = _vectors(embedder, ngram, segments, word_lists, run_lists,
                       title or doc_title, bulk)  # fmt: skip
    return fts, vectors, counts


def _vectors(
    embedder: Embedder, ngram: NgramEmbedder | None, segments: Sequence[Segment],
    word_lists: list[list[str]], run_lists: list[list[str]], title: str, bulk: bool,
) -> tuple[bytes, ...]:  # fmt: skip
    """The segments' vectors: the n-gram embedder takes the terms ``_analyze``
    made (``word_lists``, ``run_lists``); another embedder the text."""
    from docindex.embed.quantized import quantize

    # In batches: one batch for a 5 MB file's 10k segments peaked at ~400 MiB
    # (issue #8). Rows are independent, so the vectors are bit-identical.
    vectors: list[bytes] = []
    for i in range(0, len(segments), EMBED_BATCH):
        if ngram is not None:
            vectors.extend(ngram.quantized_rows(
                word_lists[i : i + EMBED_BATCH], run_lists[i : i + EMBED_BATCH],
                bulk=bulk,
            ))  # fmt: skip
            continue
        matrix = embedder.embed(
            [embed_input(title, s.heading_path, s.text)
             for s in segments[i : i + EMBED_BATCH]]
        )  # fmt: skip
        vectors.extend(quantize(matrix, embedder.bits))
    return tuple(vectors)


def _cjk_texts(
    run_lists: list[list[str]], n_gram: int, numpy_ready: bool = False
) -> Iterator[str]:
    """Each body's CJK n-grams as FTS text; numpy pays past ``CJK_NUMPY_MIN`` characters.

    Lazily, in batches as the vectors are: the caller joins each text to its
    latin terms as it goes, so a big CJK file never holds both forms whole
    (issue #8: peak memory). numpy only when the process has it already
    (``numpy_ready``): importing it would cost more than it saves.
    """
    chars = sum(len(run) for runs in run_lists for run in runs)
    if chars < CJK_NUMPY_MIN or not numpy_ready:
        for runs in run_lists:
            yield " ".join(cjk_ngrams(runs, n_gram)) if runs else ""
        return
    from docindex.text.tokenize import cjk_ngram_texts

    for i in range(0, len(run_lists), EMBED_BATCH):
        yield from cjk_ngram_texts(run_lists[i : i + EMBED_BATCH], n_gram)
