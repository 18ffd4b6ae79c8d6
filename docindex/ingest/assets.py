"""Files that are code or assets rather than prose, left out by name (issue #45).

In the FastAPI docs, 61 SVG, JavaScript and CSS files made 71% of the segments:
a sponsor logo came up as ``related`` and a Mermaid diagram was the top hit for a
Kubernetes question. Such files are skipped by the walk without being read,
each class under its own skip reason; ``text_extensions`` opts a suffix (or a
lock file's name) back in.
"""

from __future__ import annotations

from docindex.models import SkipReason

# Only the last suffix is looked up (".js"), then the compound ones below.
# Graphviz's ".dot" is also Word's template suffix: the legacy extractor tells
# them apart by content.
_BY_SUFFIX: dict[str, SkipReason] = {
    ".svg": SkipReason.VECTOR_IMAGE,
    ".css": SkipReason.STYLESHEET,
    ".scss": SkipReason.STYLESHEET,
    ".sass": SkipReason.STYLESHEET,
    ".less": SkipReason.STYLESHEET,
    ".js": SkipReason.SCRIPT,
    ".mjs": SkipReason.SCRIPT,
    ".cjs": SkipReason.SCRIPT,
    ".jsx": SkipReason.SCRIPT,
    ".ts": SkipReason.SCRIPT,
    ".mts": SkipReason.SCRIPT,
    ".cts": SkipReason.SCRIPT,
    ".tsx": SkipReason.SCRIPT,
    ".map": SkipReason.SOURCE_MAP,
    ".lock": SkipReason.LOCK_FILE,
    ".mmd": SkipReason.DIAGRAM_SOURCE,
    ".mermaid": SkipReason.DIAGRAM_SOURCE,
    ".puml": SkipReason.DIAGRAM_SOURCE,
    ".plantuml": SkipReason.DIAGRAM_SOURCE,
    ".pu": SkipReason.DIAGRAM_SOURCE,
    ".iuml": SkipReason.DIAGRAM_SOURCE,
    ".gv": SkipReason.DIAGRAM_SOURCE,
    ".d2": SkipReason.DIAGRAM_SOURCE,
    ".drawio": SkipReason.DIAGRAM_SOURCE,
    ".excalidraw": SkipReason.DIAGRAM_SOURCE,
}
# Lock files whose suffix says nothing (".json", ".yaml", ".sum").
_BY_NAME: dict[str, SkipReason] = dict.fromkeys(
    ("package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "go.sum"),
    SkipReason.LOCK_FILE,
)
# A bundler's minified output: "app.min.js", "theme.min.css".
_MINIFIED = (".min.js", ".min.mjs", ".min.css")

#: Every suffix and name this module leaves out, for the docs and the tests.
ASSET_SUFFIXES = frozenset(_BY_SUFFIX) | frozenset(_MINIFIED)
ASSET_NAMES = frozenset(_BY_NAME)
#: The last suffixes ``asset_reason`` can answer for: the walk asks only then,
#: so a rescan's per-file cost stays one set lookup (#24).
MAYBE_ASSET = frozenset(_BY_SUFFIX) | {n[n.rfind(".") :] for n in _BY_NAME}


def asset_reason(
    name: str, opted_in: frozenset[str] = frozenset()
) -> tuple[SkipReason, str] | None:
    """Why a file named ``name`` is an asset, not a document; None when it is neither.

    Args:
        name: the file's name (no folder).
        opted_in: ``text_extensions`` as ``opt_ins`` gives them: those are read
            as text. A minified file is opted in by its compound suffix
            (``.min.js``), a named lock file by its name.

    Returns:
        (the skip reason, the suffix or name that opts such files in), or None.
    """
    lower = name.lower()
    by_name = _BY_NAME.get(lower)
    if by_name is not None:
        return None if lower in opted_in else (by_name, lower)
    dot = lower.rfind(".")
    if dot <= 0:
        return None
    suffix = lower[dot:]
    reason = _BY_SUFFIX.get(suffix)
    if reason is None:
        return None
    if lower.endswith(_MINIFIED):
        minified = lower[lower.rfind(".", 0, dot) :]
        if minified not in opted_in:
            return SkipReason.MINIFIED, minified
        return None
    return None if suffix in opted_in else (reason, suffix)


def asset_message(reason: SkipReason, key: str) -> str:
    """The skip message: what the file is and the setting that indexes it."""
    return f'{reason.message}; text_extensions = ["{key}"] indexes such files'


def opt_ins(text_extensions: tuple[str, ...]) -> frozenset[str]:
    """``text_extensions`` as ``asset_reason`` takes them: lower case, suffixes dotted."""
    out = set()
    for item in text_extensions:
        lower = item.lower()
        out.add(lower if lower.startswith(".") or lower in _BY_NAME else f".{lower}")
    return frozenset(out)
