"""Opaque, tamper-evident pagination cursors (issue #6).

A cursor carries the next offset and a fingerprint of the query and its
filters, signed with keyed BLAKE2b; a cursor that was edited, or reused with a
different query, is refused instead of silently returning the wrong page.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

from docindex.errors import MisuseError

if TYPE_CHECKING:
    from docindex.models import QueryOptions

_FIX = "pass the next_cursor of the same query unchanged, or drop --cursor"
_INVALID = "invalid cursor; " + _FIX

_KEY = b"docindex-cursor-v2"


def _blake2b(data: bytes, size: int, key: bytes = b"") -> str:
    """Keyed BLAKE2b hex digest. The builtin module imports in well under a
    millisecond where ``hashlib``/``hmac`` load OpenSSL (~3 ms of every
    one-shot query, issue #7); BLAKE2b's key mode is a MAC by design."""
    try:
        from _blake2 import blake2b
    except ImportError:  # a Python built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=size, key=key).hexdigest()


def _fingerprint(query: str | None, options: QueryOptions) -> str:
    """The query text and the options that choose its hits (``top`` and the
    snippet's form may change from one page to the next)."""
    data: dict[str, object] = {
        "query": query, "mode": options.mode, "types": options.types,
        "path_glob": options.path_glob, "where": options.where,
        "files": options.files, "min_score": options.min_score,
        "per_doc": options.per_doc, "roots": options.roots,
    }  # fmt: skip
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, default=list)
    return _blake2b(blob.encode(), 8)


def encode_cursor(offset: int, *, query: str | None, options: QueryOptions) -> str:
    """Sign ``offset`` for ``query`` run with ``options``."""
    payload = json.dumps(
        {"o": offset, "f": _fingerprint(query, options)}, separators=(",", ":")
    )
    mac = _blake2b(payload.encode(), 8, _KEY)
    return base64.urlsafe_b64encode(f"{payload}|{mac}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *, query: str | None, options: QueryOptions) -> int:
    """Return the offset in ``cursor``, signed for ``query`` run with ``options``.

    Raises:
        DocindexError: the cursor is malformed, was tampered with, or belongs to
            another query.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        payload, mac = raw.rsplit("|", 1)
        good = _blake2b(payload.encode(), 8, _KEY)
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MisuseError(_INVALID) from exc
    if mac != good:  # the key is public: this detects edits, it is no secret
        raise MisuseError("invalid cursor (it was modified); " + _FIX)
    if data.get("f") != _fingerprint(query, options):
        raise MisuseError(
            "this cursor belongs to a different query or filters; " + _FIX
        )
    offset = data.get("o")
    if not isinstance(offset, int) or offset < 0:
        raise MisuseError(_INVALID)
    return offset
