"""Exceptions raised by the core. The CLI turns every DocindexError into exit 1."""

from __future__ import annotations


class DocindexError(Exception):
    """Base class: an expected failure with a one-line, user-facing message."""


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


class OutsideRootsError(DocindexError):
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


class BadInputError(DocindexError):
    """A caller's argument breaks a documented limit (the CLI exits 2: misuse)."""
