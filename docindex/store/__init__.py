"""Storage: the index's schema, row format and every SQL statement (issue #18).

``Index`` (``interface.py``) is the typed interface the core uses; ``Store``
(``sqlite.py``) implements it on one SQLite file; ``records.py`` holds the
dataclasses that cross it; ``encoding.py`` the segment row format;
``migrations.py`` the schema.
May import: docindex.text, docindex.models, docindex.config, docindex.errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docindex.store._sql import compress_body
from docindex.store.interface import Index
from docindex.store.records import (
    DocFilter,
    DocHit,
    DocRow,
    Fingerprint,
    IndexCounts,
    SegmentColumns,
    SegmentRow,
    SkipRow,
    Space,
    StoredDocument,
    Vacuumed,
)
from docindex.store.sqlite import Store, repair_hint, translate

if TYPE_CHECKING:
    from docindex.store.encoding import EncodedSegments, NewDocument, encode_segments

_WRITE_SIDE = {"EncodedSegments", "NewDocument", "encode_segments"}


def __getattr__(name: str) -> Any:
    """The write side (``encoding.py``) on first use: a query never needs it."""
    if name in _WRITE_SIDE:
        from docindex.store import encoding

        return getattr(encoding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DocFilter",
    "DocHit",
    "DocRow",
    "EncodedSegments",
    "Fingerprint",
    "Index",
    "IndexCounts",
    "NewDocument",
    "SegmentColumns",
    "SegmentRow",
    "SkipRow",
    "Space",
    "Store",
    "StoredDocument",
    "Vacuumed",
    "compress_body",
    "encode_segments",
    "repair_hint",
    "translate",
]


def _implements_index(store: Store) -> Index:
    """Never called: mypy checks here that ``Store`` implements ``Index``."""
    return store
