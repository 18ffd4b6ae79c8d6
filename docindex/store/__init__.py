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
from docindex.store.doccounts import DocTerms, body_counts, doc_terms
from docindex.store.interface import Index
from docindex.store.location import ServerUrl, is_server_url
from docindex.store.records import (
    DocFilter,
    DocHit,
    DocName,
    DocRow,
    EngineRows,
    Fingerprint,
    IndexCounts,
    SegmentColumns,
    SegmentRow,
    SkipRow,
    Space,
    StoredDocument,
    Vacuumed,
)
from docindex.store.sqlite import Store
from docindex.store.sqlitefile import repair_hint, translate

if TYPE_CHECKING:
    from pathlib import Path

    from docindex.store.encoding import EncodedSegments, NewDocument, encode_segments
    from docindex.store.postgres import PgStore

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
    "DocName",
    "EngineRows",
    "DocRow",
    "EncodedSegments",
    "Fingerprint",
    "Index",
    "IndexCounts",
    "NewDocument",
    "SegmentColumns",
    "SegmentRow",
    "ServerUrl",
    "SkipRow",
    "Space",
    "Store",
    "StoredDocument",
    "Vacuumed",
    "compress_body",
    "DocTerms",
    "body_counts",
    "doc_terms",
    "encode_segments",
    "is_server_url",
    "open_index",
    "repair_hint",
    "translate",
]


def open_index(
    location: Path | ServerUrl, *, create: bool = False, readonly: bool = False,
    mapped: bool = False, busy_timeout: float = 10.0, private: bool = True,
) -> Store | PgStore:  # fmt: skip
    """Open the index at a file path (SQLite) or a server URL (PostgreSQL, #34)."""
    if isinstance(location, ServerUrl):
        from docindex.store.postgres import PgStore

        return PgStore.open(location, create=create, readonly=readonly,
                            busy_timeout=busy_timeout)  # fmt: skip
    return Store.open(location, create=create, readonly=readonly, mapped=mapped,
                      busy_timeout=busy_timeout, private=private)  # fmt: skip


def _implements_index(store: Store) -> Index:
    """Never called: mypy checks here that ``Store`` implements ``Index``."""
    return store
