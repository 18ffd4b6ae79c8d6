"""Segments -> FTS rows and vectors: the tokenize/embed stage of a scan (issue #18).

Pure functions of the configuration and a document's segments, run in the
scan's worker processes; the search uses the same ``title_text`` and
``embed_input`` to rebuild what a segment was indexed with.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from .config import Config
from .embed import NgramEmbedder
from .embedder import embedder_for
from .models import Segment
from .tokenize import cjk_ngrams, term_parts, terms

EMBED_BATCH = 512  # segments embedded at once: bounds a big file's memory (#8)
CJK_NUMPY_MIN = 512  # CJK characters in a file from which its n-gram text uses numpy


class Analysis(NamedTuple):
    """A document's FTS rows (title, body) and vector blobs, one per segment.

    ``vectors`` is None when they come later (a deferred neural embedder) or
    never (provider ``none``).
    """

    fts: tuple[tuple[str, str], ...]
    vectors: tuple[bytes, ...] | None


def title_text(title: str | None, rel_path: str) -> str:
    """What the FTS ``title`` column indexes: the title plus the file name's words."""
    stem = os.path.splitext(rel_path.rsplit("/", 1)[-1])[0]
    stem = stem.replace("_", " ").replace("-", " ")
    return f"{title} {stem}" if title else stem


def fts_row(
    cfg: Config, doc_title: str, heading: Sequence[str], text: str
) -> tuple[str, str]:
    """Pre-tokenised (title, body) columns for one segment; used to insert and delete."""
    head = " ".join((doc_title, *heading))
    n, use_stem = cfg.cjk_ngram, cfg.stem
    return (
        " ".join(terms(head, cjk_ngram=n, use_stem=use_stem)),
        " ".join(terms(text, cjk_ngram=n, use_stem=use_stem)),
    )


def document_fields(
    cfg: Config, doc_title: str, headings: Iterable[Sequence[str]]
) -> tuple[str, str]:
    """Pre-tokenised (title and file name, headings) of a document's FTS row.

    Each heading counts once however many segments sit under it (issue #21);
    the same function rebuilds them to delete the row.
    """
    seen: dict[str, None] = {}
    for path in headings:
        for head in path:
            seen.setdefault(head)
    n, use_stem = cfg.cjk_ngram, cfg.stem
    return (
        " ".join(terms(doc_title, cjk_ngram=n, use_stem=use_stem)),
        " ".join(terms("\n".join(seen), cjk_ngram=n, use_stem=use_stem)),
    )


TERMS_KEPT = 128  # salient terms stored per document (query feedback, #21)


def document_terms(fts: Sequence[tuple[str, str]], skip: frozenset[str]) -> str:
    """A document's length in body terms and its TERMS_KEPT most frequent terms.

    JSON ``[length, {term: count}]``, one- character terms and ``skip``
    (stopwords as index terms) left out. Query feedback reads these instead of
    tokenising document bodies at query time; on SciFact 128 terms ranked as
    well as every term (64 lost 0.6 points nDCG@10 of ``--files``).
    """
    counts = Counter(t for _, body in fts for t in body.split())
    length = sum(counts.values())
    kept = sorted(
        ((t, n) for t, n in counts.items() if len(t) > 1 and t not in skip),
        key=lambda tn: (-tn[1], tn[0]),
    )[:TERMS_KEPT]
    return json.dumps([length, dict(kept)], ensure_ascii=False, separators=(",", ":"))


def embed_input(title: str | None, heading: Sequence[str], text: str) -> str:
    """Semantic input: ``Doc title > Section > Subsection`` then the text (issue #3)."""
    context = " > ".join(p for p in (title, *heading) if p)
    return f"{context}\n{text}" if context else text


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
    for seg in segments:
        words, runs = term_parts(seg.text, use_stem=use_stem)
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
                    context, use_stem=use_stem
                )
            word_lists.append(ctx[0] + words if ctx[0] else words)
            run_lists.append(ctx[1] + runs if ctx[1] else runs)
        body_runs.append(runs)
    # " ".join(words + cjk_ngrams(runs)), with the n-grams made per file
    fts = tuple(
        (head, cjk if lat is None else f"{lat} {cjk}" if cjk else lat)
        for head, lat, cjk in zip(
            titles, latin, _cjk_texts(body_runs, n_gram, numpy_ready), strict=True
        )
    )
    if embedder is None or embedder.deferred:
        return Analysis(fts, None)  # neural vectors come in embed_pending (#9)
    from .embed import quantize

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
            [embed_input(title or doc_title, s.heading_path, s.text)
             for s in segments[i : i + EMBED_BATCH]]
        )  # fmt: skip
        vectors.extend(quantize(matrix, embedder.bits))
    return Analysis(fts, tuple(vectors))


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
    from .tokenize import cjk_ngram_texts

    for i in range(0, len(run_lists), EMBED_BATCH):
        yield from cjk_ngram_texts(run_lists[i : i + EMBED_BATCH], n_gram)
