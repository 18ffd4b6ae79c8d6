"""Exceptions raised by the core.

The CLI turns every DocindexError into its ``exit_code``: 1 for a runtime
failure, 2 for misuse (something the user named does not exist or is malformed).
"""

from __future__ import annotations

import re
from pathlib import Path

# The name on PyPI (issue #45): "docindex" there is an unrelated project, so the
# distribution is docindex-cli while the command and the package stay docindex.
DISTRIBUTION = "docindex-cli"


def install_hint(extra: str = "", *, upgrade: bool = False) -> str:
    """The pip line that installs this project (with ``extra``), from PyPI or a checkout."""
    flag = "-U " if upgrade else ""
    if not extra:
        return f"pip install {flag}{DISTRIBUTION} (in a checkout: pip install {flag}.)"
    return (
        f"pip install {flag}'{DISTRIBUTION}[{extra}]' "
        f"(in a checkout: pip install {flag}'.[{extra}]')"
    )


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


class IndexUnreachableError(DocindexError):
    """The index's server cannot be reached: down, restarting, or the network
    (issue #44). A long-lived command reconnects; a one-off command fails."""


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


# A Python object's repr with its memory address: "<_io.BytesIO object at 0x7f…>"
_ADDRESS = re.compile(r"\s*<[^<>\n]{0,200}? at 0x[0-9a-fA-F]+>")


def without_addresses(message: str) -> str:
    """``message`` without object reprs that name a memory address (#45).

    Pillow says "cannot identify image file <_io.BytesIO object at 0x7f…>":
    the address means nothing to a reader and changes on every run.
    """
    return _ADDRESS.sub("", message) if " at 0x" in message else message


class ExtractionError(DocindexError):
    """One file could not be extracted; ``reason`` is its skip reason.

    Reasons used by extractors: ``corrupt``, ``encrypted``, ``no-text-layer``,
    ``no-text-found``, ``zip-bomb``, ``too-large``, ``timeout``, ``unsupported``,
    ``error``, ``diagram-source``. The message never holds a memory address.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(without_addresses(message))
        self.reason = reason


class BadInputError(MisuseError):
    """A caller's argument breaks a documented input limit (issue #17; exit 2)."""


class ReadOnlyIndexError(DocindexError):
    """A writing command on an index this user may only read (issue #38)."""


class IndexNotWritableError(DocindexError):
    """The index cannot be created or written where it was asked for (issue #38).

    ``path`` is the index; the CLI adds the command that writes it elsewhere.
    """

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path
