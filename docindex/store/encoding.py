"""How segments are stored: a section list per document, a few columns per segment.

Pure functions (no connection): the indexer calls ``encode_segments`` in its
worker processes, and ``Store`` decodes with ``decode_section``. Moved here
from ``indexer.segment_columns`` and ``store._section`` (issue #18) so the
storage package alone knows its row format.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .records import EncodedSegments, SegmentColumns

if TYPE_CHECKING:
    from ..models import Segment

# A stored section: a bare heading path (its anchor is the path's slug), or
# [heading path, anchor].
Section = list[str] | list[list[str] | str]


def encode_segments(segments: Sequence[Segment], rel_path: str) -> EncodedSegments:
    """A document's section list (zlib JSON) and its segments' stored columns.

    Heading paths and anchors are stored once per section; a segment keeps
    the section's index and its piece number, and ``frag`` only when its
    chunk id is not ``chunk_id(rel_path, anchor, part)`` (issue #7).
    """
    from ..anchors import chunk_id, slug_path

    index: dict[tuple[tuple[str, ...], str], int] = {}
    rows: list[SegmentColumns] = []
    for seg in segments:
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
            json.dumps(list(seg.line_cells)) if seg.line_cells else None,
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


def decode_sections(blob: bytes | None) -> list[Section]:
    """A document's stored section list (``encode_segments``)."""
    return json.loads(zlib.decompress(blob)) if blob else []


def decode_section(
    sections: Sequence[Section], index: int | None
) -> tuple[list[str], str]:
    """(heading path, anchor) of a stored section."""
    if index is None:
        return [], ""
    entry = sections[index]
    if not entry or isinstance(entry[0], str):  # a bare heading path
        from ..anchors import slug_path

        path: list[str] = entry  # type: ignore[assignment]
        return path, slug_path(path)
    return entry[0], entry[1]  # type: ignore[return-value]
