"""The write side: a document in stored form, built in the scan's workers.

How segments are stored: a section list per document, a few columns per
segment. ``encode_segments`` is a pure function (no connection) that the
indexer calls in its worker processes; ``Store`` decodes the sections when it
reads segments. Moved here from ``indexer.segment_columns`` (issue #18) so the
storage package alone knows its row format.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docindex.store.doccounts import DocTerms
from docindex.store.records import SEGMENT_COLUMNS, EngineRows, SegmentColumns

if TYPE_CHECKING:
    from docindex.models import Segment


@dataclass(frozen=True, slots=True)
class EncodedSegments:
    """A document's segments in stored form (``encode_segments``)."""

    sections: bytes | None = None
    rows: tuple[SegmentColumns, ...] = ()

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, index: int, name: str) -> object:
        """Segment ``index``'s stored value of column ``name`` (SEGMENT_COLUMNS)."""
        return self.rows[index][SEGMENT_COLUMNS.index(name)]


@dataclass(frozen=True, slots=True)
class NewDocument:
    """A document to insert, with its segments and their FTS rows and vectors.

    ``body`` is the text compressed with ``compress_body`` (the indexer
    compresses in its worker processes). ``fts`` holds one pre-tokenised
    (title, body) pair per segment; ``vectors`` at most one blob per segment,
    in order (fewer when ``max_embedded`` cut them). ``fields`` are the
    document's pre-tokenised (title and file name, headings) for its
    document-level FTS row, whose body is its segments' bodies; ``terms``
    its salient terms as ``analyze.document_terms`` writes them (issue #21).
    ``doc_terms`` are its stored term counts (``doccounts.doc_terms``) when
    the caller made them already: the indexer's workers do (issues #35,
    #46), the writer need not.
    """

    root_id: int
    rel_path: str
    kind: str
    title: str | None
    size: int
    mtime_ns: int
    hash: str
    body: bytes
    segments: EncodedSegments
    fts: tuple[tuple[str, str], ...] = ()
    vectors: tuple[bytes, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)
    indexed_at: float = 0.0
    fields: tuple[str, str] = ("", "")
    terms: str = ""
    doc_terms: DocTerms | None = None
    rows: EngineRows | None = None  # made by the workers (``Index.row_maker``)


def encode_segments(
    segments: Sequence[Segment], rel_path: str, body: str
) -> EncodedSegments:
    """A document's section list (zlib JSON) and its segments' stored columns.

    Heading paths and anchors are stored once per section; a segment keeps
    the section's index and its piece number, and ``frag`` only when its
    chunk id is not ``chunk_id(rel_path, anchor, part)`` (issue #7). Its
    ``prose`` is its words of prose in ``body`` (the document's text),
    capped (``text.prose.segment_prose``): a query reads it instead of the
    text to tell a fragment (issue #37).
    """
    from docindex.text.anchors import chunk_id, slug_path
    from docindex.text.prose import segment_prose

    prose = segment_prose(body, ((s.char_start, s.char_end) for s in segments))

    index: dict[tuple[tuple[str, ...], str], int] = {}
    rows: list[SegmentColumns] = []
    for seg, words in zip(segments, prose, strict=True):
        key = (seg.heading_path, seg.anchor)
        section = None
        if key != ((), ""):
            section = index.get(key)
            if section is None:
                section = index[key] = len(index)
        derived = chunk_id(rel_path, seg.anchor, seg.part)
        frag = None if seg.chunk_id == derived else seg.chunk_id[len(rel_path) :]
        rows.append((
            section, seg.part if seg.part != 1 else None, frag,
            seg.start_line, seg.end_line - seg.start_line,
            seg.char_start, seg.char_end - seg.char_start,
            seg.page, seg.slide, seg.sheet,
            json.dumps(list(seg.line_cells)) if seg.line_cells else None, words,
        ))  # fmt: skip
    if not index:
        return EncodedSegments(None, tuple(rows))
    # Most anchors are the slugs of their headings: then the path alone is kept.
    # Sections share parents, so each path's slug extends its parent's (memo).
    slugs: dict[tuple[str, ...], str] = {(): ""}

    def slug_of(path: tuple[str, ...]) -> str:
        got = slugs.get(path)
        if got is None:
            parent = slug_of(path[:-1])
            own = slug_path(path[-1:])
            got = slugs[path] = f"{parent}/{own}" if parent else own
        return got

    listed = json.dumps(
        [list(h) if h and a == slug_of(h) else [list(h), a] for h, a in index],
        ensure_ascii=False,
    )
    return EncodedSegments(zlib.compress(listed.encode("utf-8"), 9), tuple(rows))
