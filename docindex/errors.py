"""Exceptions raised by the core.

The CLI turns every DocindexError into its ``exit_code``: 1 for a runtime
failure, 2 for misuse (something the user named does not exist or is malformed).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class DocindexError(Exception):
    """Base class: an expected failure with a one-line, user-facing message."""

    exit_code = 1


class MisuseError(DocindexError):
    """The user named something that does not exist or is malformed (exit 2).

    A missing path, an unknown chunk or line, a bad cursor (issue #20).
    """

    exit_code = 2


class RelocatedIndexError(DocindexError):
    """The index was made for a folder that has been copied or moved (issue #20)."""


class IndexNotFoundError(DocindexError):
    """No index where one was expected."""


class IndexBusyError(DocindexError):
    """Another process holds the write lock longer than our timeout."""


class IndexCorruptError(DocindexError):
    """The database file is damaged or not an SQLite database."""


class ForeignDatabaseError(DocindexError):
    """The file is an SQLite database that belongs to another application."""


class SchemaTooNewError(DocindexError):
    """The index was written by a newer docindex."""


class EmbedderMismatchError(DocindexError):
    """The index was built with other embedding settings."""


class OutsideRootsError(MisuseError):
    """A path resolves outside every configured root."""


class ConfigError(DocindexError):
    """A configuration file or environment variable is invalid."""


class ExtractionError(DocindexError):
    """One file could not be extracted; ``reason`` is its skip reason.

    Reasons used by extractors: ``corrupt``, ``encrypted``, ``no-text-layer``,
    ``zip-bomb``, ``too-large``, ``timeout``, ``unsupported``, ``error``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def translate_sqlite_error(exc: sqlite3.Error, path: Path | str) -> DocindexError:
    """Turn an sqlite3 error into a one-line DocindexError that says what to do.

    Here, at the bottom of the layers, so the storage and the entry points
    (CLI, MCP) share one translation without importing each other (#18).
    """
    msg = str(exc)
    # Python 3.11+ names the primary/extended result code (SQLITE_CORRUPT_VTAB...).
    code = getattr(exc, "sqlite_errorname", "") or ""
    # The CLI passes "" when it does not know which file failed.
    index = f"index {path}" if str(path) else "the index"
    if "locked" in msg or "busy" in msg:
        where = f": {path}" if str(path) else ""
        return IndexBusyError(f"index is busy (another docindex is writing){where}")
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or (
        isinstance(exc, sqlite3.DatabaseError)
        and ("malformed" in msg or "not a database" in msg or "corrupt" in msg)
    ):
        return IndexCorruptError(
            f"{index} is damaged ({msg}); run `docindex reindex --full` "
            "or point --db elsewhere"
        )
    if "readonly" in msg or "read-only" in msg:
        return DocindexError(
            f"{index} is read-only ({msg}); the file and its folder must be writable"
        )
    if "disk is full" in msg or "database or disk is full" in msg:
        return DocindexError(f"disk full while writing {index}; the index is unchanged")
    if "unable to open" in msg:
        return DocindexError(
            f"cannot open {index}: {msg} (a WAL index needs a writable folder "
            "for its -wal and -shm files)"
        )
    return DocindexError(f"error in {index}: {msg}")
