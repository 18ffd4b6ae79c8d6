"""What a document's indexed fields are made of: shared by ingest and search.

The scan indexes these strings and the search rebuilds them to embed or
re-rank a stored segment, so both must build them the same way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from docindex.config import Config
from docindex.text.tokenize import terms


def title_text(title: str | None, rel_path: str) -> str:
    """What the FTS ``title`` column indexes: the title plus the file name's words."""
    stem = os.path.splitext(rel_path.rsplit("/", 1)[-1])[0]
    stem = stem.replace("_", " ").replace("-", " ")
    return f"{title} {stem}" if title else stem


def embed_input(title: str | None, heading: Sequence[str], text: str) -> str:
    """Semantic input: ``Doc title > Section > Subsection`` then the text (issue #3)."""
    context = " > ".join(p for p in (title, *heading) if p)
    return f"{context}\n{text}" if context else text


# A document's passage for a per-document embedder (issue #47): its start is
# all the model reads (``MultilingualEmbedder.max_tokens``), so only so much
# of the text is prepared.
DOCUMENT_INPUT_CHARS = 4000
_LINK_TARGET = re.compile(r"\]\([^)\n]*\)")
_SPACES = re.compile(r"\s+")


def document_input(title: str | None, headings: Sequence[str], body: str) -> str:
    """A whole document as one passage: title, headings, then its prose.

    Headings come once each, in order, joined by ``;`` (the title aside);
    the prose is the text outside fenced code with link targets dropped and
    whitespace collapsed, so the model's few hundred word pieces go to words
    a reader sees (bench/crosslingual.py chose this, docs/ranking.md).
    """
    from docindex.text.prose import prose_lines

    names = [h for h in dict.fromkeys(headings) if h and h != title]
    prose = " ".join(prose_lines(body[: DOCUMENT_INPUT_CHARS * 2]))
    prose = _SPACES.sub(" ", _LINK_TARGET.sub("]", prose)).strip()
    parts = [title or "", "; ".join(names), prose[:DOCUMENT_INPUT_CHARS]]
    return "\n".join(p for p in parts if p)


def fts_row(
    cfg: Config, doc_title: str, heading: Sequence[str], text: str
) -> tuple[str, str]:
    """Pre-tokenised (title, body) columns for one segment; used to insert and
    delete, and by the store's migrations to rebuild its rows (issue #46)."""
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
