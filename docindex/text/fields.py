"""What a document's indexed fields are made of: shared by ingest and search.

The scan indexes these strings and the search rebuilds them to embed or
re-rank a stored segment, so both must build them the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def title_text(title: str | None, rel_path: str) -> str:
    """What the FTS ``title`` column indexes: the title plus the file name's words."""
    stem = os.path.splitext(rel_path.rsplit("/", 1)[-1])[0]
    stem = stem.replace("_", " ").replace("-", " ")
    return f"{title} {stem}" if title else stem


def embed_input(title: str | None, heading: Sequence[str], text: str) -> str:
    """Semantic input: ``Doc title > Section > Subsection`` then the text (issue #3)."""
    context = " > ".join(p for p in (title, *heading) if p)
    return f"{context}\n{text}" if context else text
