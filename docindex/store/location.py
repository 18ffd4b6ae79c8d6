"""Where an index lives: a SQLite file path, or a PostgreSQL server URL (issue #34).

``--db``, ``DOCINDEX_DB`` and the config file's ``[db] url`` may name either.
A URL that starts with ``postgresql://`` or ``postgres://`` opens a server
index; anything else stays a file path. ``ServerUrl`` keeps the URL as given
(libpq reads ``sslmode`` and every other parameter itself) and prints it with
the password masked, so a password never reaches output, errors or logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from docindex.errors import install_hint

SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = install_hint("postgres")
# user:password@ in the authority part; the password never contains "@" unescaped
_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@?#]*:)([^@/?#]*)(@)")
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)", re.IGNORECASE)


def is_server_url(value: object) -> bool:
    """True when ``value`` names a PostgreSQL index rather than a file."""
    return isinstance(value, str | ServerUrl) and str(
        value.url if isinstance(value, ServerUrl) else value
    ).lower().startswith(SCHEMES)


def mask(url: str) -> str:
    """``url`` with its password (in the authority or ``?password=``) as ``***``."""
    url = _PASSWORD.sub(r"\1***\3", url)
    return _QUERY_PASSWORD.sub(r"\1***", url)


@dataclass(frozen=True, slots=True)
class ServerUrl:
    """A PostgreSQL index: the URL libpq connects with, printed masked.

    ``str()`` and ``repr()`` are masked; only ``url`` holds the password and it
    is passed to the driver alone.
    """

    url: str = field(repr=False)

    def __str__(self) -> str:
        return mask(self.url)

    def __repr__(self) -> str:
        return f"ServerUrl({mask(self.url)!r})"


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose sessions use ``schema`` (libpq ``options=-csearch_path=``)."""
    from urllib.parse import quote

    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"
