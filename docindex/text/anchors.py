"""How chunk ids and their anchors are spelled (shared by segmenter and store).

A chunk id is ``rel_path``, ``rel_path#anchor`` or either with ``~N`` for the
N-th piece of a long section; an anchor is the slug path of the section's
headings (``guide/install``), made unique by the segmenter. The store rebuilds
ids from these rules instead of storing them (issue #7), so they live in one
small module that a query can import cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_SLUG_DROP = re.compile(r"[^\w\s-]")
_SPACE = re.compile(r"\s")


@lru_cache(maxsize=16384)
def slugify(text: str) -> str:
    """GitHub's heading slug: lowercase, punctuation dropped, each space a hyphen.

    Letters (CJK too), digits, ``_`` and ``-`` stay, as github-slugger does
    (``"Rate limiting: 2.0"`` -> ``rate-limiting-20``). An explicit anchor
    (``{#id}``, ``{/*id*/}``) is passed through here unchanged. Memoised: the
    segmenter and ``segment_columns`` slug every heading of a scan, and
    headings repeat (issue #7).
    """
    slug = _SPACE.sub("-", _SLUG_DROP.sub("", text.strip().lower()))
    return slug or "section"


def slug_path(heading_path: Sequence[str]) -> str:
    """The anchor a heading path has when no sibling shares its slug."""
    return "/".join(slugify(text) for text in heading_path)


def chunk_id(rel_path: str, base: str, part: int) -> str:
    """The chunk id of piece ``part`` of the section ``base`` (before dedup)."""
    cid = f"{rel_path}#{base}" if base else rel_path
    return cid if part == 1 else f"{cid}~{part}"
