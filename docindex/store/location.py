"""Where an index lives: a SQLite file path, or a PostgreSQL server URL (issue #34).

``--db``, ``DOCINDEX_DB`` and the config file's ``[db] url`` may name either.
A URL whose scheme is ``postgresql://`` or ``postgres://`` (in any case) opens
a server index; anything else stays a file path. ``ServerUrl`` keeps the URL
libpq connects with and is the one holder of its password: ``str()``,
``repr()`` and every message print it masked, and ``redact`` takes the
password out of any text, as libpq wrote it or decoded (issue #44).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from docindex.errors import install_hint

SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = install_hint("postgres")
MASK = "***"
# The scheme in any case; libpq itself reads only lower case (normalised below).
_SCHEME = re.compile(r"(?i)\bpostgres(?:ql)?://")
# user:password@ in the authority: the user has no ':', '@' or '/'; the password
# runs to the *last* '@' (a raw '?', '#' or '@' in it must not end it early:
# masking a little too much is harmless, too little is a leak).
_USERINFO = re.compile(r"(?i)^(postgres(?:ql)?://[^:@/\s]*:)(.*)(@)", re.DOTALL)
_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)([^&\s`'\"]*)")
# A URL inside free text ends at white space, a quote or a backtick.
_URL_IN_TEXT = re.compile(r"(?i)\bpostgres(?:ql)?://[^\s`'\"]*")
# Shorter secrets are not searched for in free text: "ab" would mangle words.
_MIN_SECRET = 3


def is_server_url(value: object) -> bool:
    """True when ``value`` names a PostgreSQL index rather than a file."""
    if isinstance(value, ServerUrl):
        return True
    return isinstance(value, str) and value.lower().startswith(SCHEMES)


def mask(url: str) -> str:
    """``url`` with its password (in the authority or ``?password=``) as ``***``."""
    url = _USERINFO.sub(rf"\1{MASK}\3", url)
    return _QUERY_PASSWORD.sub(rf"\1{MASK}", url)


def _normalised(url: str) -> str:
    """The scheme in lower case, as libpq requires (``POSTGRESQL://`` works too)."""
    match = _SCHEME.match(url)
    return match.group(0).lower() + url[match.end() :] if match else url


def _secrets(url: str) -> tuple[str, ...]:
    """The password as written in ``url`` and percent-decoded, longest first."""
    found: list[str] = []
    userinfo = _USERINFO.match(url)
    if userinfo:
        found.append(userinfo.group(2))
    found.extend(m.group(2) for m in _QUERY_PASSWORD.finditer(url))
    out = {s for raw in found for s in (raw, unquote(raw)) if len(s) >= _MIN_SECRET}
    out.discard(MASK)
    return tuple(sorted(out, key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class ServerUrl:
    """A PostgreSQL index: the URL libpq connects with, printed masked.

    ``str()`` and ``repr()`` are masked; only ``url`` holds the password and it
    is passed to the driver alone. Never turn one into a string to pass it on:
    the masked form cannot connect.
    """

    url: str = field(repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", _normalised(self.url))

    def __str__(self) -> str:
        return mask(self.url)

    def __repr__(self) -> str:
        return f"ServerUrl({mask(self.url)!r})"

    @property
    def has_password(self) -> bool:
        """True when the URL itself carries a password (visible in ``ps``)."""
        return bool(_secrets(self.url)) or mask(self.url) != self.url

    def redact(self, text: str) -> str:
        """``text`` with this URL's password gone, wherever and however it appears."""
        return redact(text, self)


def redact(text: str, *locations: object) -> str:
    """``text`` with every PostgreSQL URL in it masked, and the password of
    each ``ServerUrl`` in ``locations`` (raw or percent-decoded) replaced.

    The one redaction every message passes through on its way out (issue #44):
    errors, hints, remedies, warnings, JSON and log lines.
    """
    text = _URL_IN_TEXT.sub(lambda m: mask(m.group(0)), text)
    for where in locations:
        url = where.url if isinstance(where, ServerUrl) else where
        if isinstance(url, str) and is_server_url(url):
            for secret in _secrets(_normalised(url)):
                text = text.replace(secret, MASK)
    return text


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose sessions use ``schema`` (libpq ``options=-csearch_path=``)."""
    from urllib.parse import quote

    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"
