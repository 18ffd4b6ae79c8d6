"""Markdown: text as written, YAML front matter parsed into a title and facets."""

from __future__ import annotations

import re

from docindex.ingest.extract.limits import ExtractLimits
from docindex.ingest.extract.text import decode, looks_binary
from docindex.models import NAME_LISTS, Extracted, Unit
from docindex.text.mdsyntax import heading_text, hide_unrendered

_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
# A line that may be an H1 (group 2) or opens/closes a fence (group 1), after "\\n".
_H1_OR_FENCE = re.compile(r"\n(?:[^\S\n]*(```|~~~)|(#)[ \t])")


def parse_front_matter(text: str) -> tuple[dict[str, str], int]:
    """Return (scalar facets, number of lines the front matter spans).

    Uses PyYAML's safe loader; a block that does not parse as a mapping is
    treated as no front matter (the text stays searchable as written). A
    ``keywords`` or ``tags`` list becomes one facet, its items comma-separated.
    """
    match = _FRONT.match(text)
    if not match:
        return {}, 0
    import yaml

    # libyaml's parser when PyYAML has it (~10x faster, same safe constructor).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(match.group(1), Loader=loader)
    except yaml.YAMLError:
        return {}, 0
    if not isinstance(data, dict):
        return {}, 0
    facets: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            facets[str(key)] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            facets[str(key)] = str(value)
        elif key in NAME_LISTS and isinstance(value, list):
            items = [str(v).strip() for v in value if isinstance(v, str | int | float)]
            if any(items):
                facets[key] = ", ".join(i for i in items if i)
    return facets, match.group(0).count("\n") + (
        0 if match.group(0).endswith("\n") else 1
    )


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a Markdown file as one unit whose headings drive segmentation.

    Front-matter lines and what a renderer hides (``mdsyntax.hide_unrendered``)
    are blanked, not removed, so line numbers still match the file.
    """
    from docindex.errors import ExtractionError

    if looks_binary(data[:8192]):
        raise ExtractionError("binary", "content looks binary")
    text = decode(data)[: limits.max_text_chars]
    facets, span = parse_front_matter(text)
    if span:
        lines = text.split("\n")
        text = "\n" * span + "\n".join(lines[span:])
    # Comments, MDX import/export and JSX tag lines, admonition markers are
    # blanked: a renderer never shows them as text (issue #19).
    text = hide_unrendered(text)
    title = facets.pop("title", None) or _first_h1(text)
    return Extracted(units=(Unit(text=text, markdown=True),), title=title,
                     kind="md", meta=facets)  # fmt: skip


def _first_h1(text: str) -> str | None:
    """The first ``# heading`` of the first 400 lines that is not in a code fence.

    Only lines that start a heading or a fence are visited: one regex finds
    them after a newline (a literal prefix, so it skips ahead in C; issue #7).
    """
    in_fence = False
    for match in _H1_OR_FENCE.finditer("\n" + text):
        if match.group(1) is not None:  # a fence line toggles
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        start = match.start() + 1  # the heading line, in ``"\n" + text``
        if text.count("\n", 0, start - 1) >= 400:
            return None
        line_end = text.find("\n", start - 1)
        found = _H1.match(text[start - 1 : None if line_end < 0 else line_end])
        if found:
            title = heading_text(found.group(1))[0]
            if title:
                return title
    return None
