"""Markdown: text as written, YAML front matter parsed into a title and facets."""

from __future__ import annotations

import re

from ..models import Extracted, Unit
from . import ExtractLimits
from .text import decode, looks_binary

_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)


def parse_front_matter(text: str) -> tuple[dict[str, str], int]:
    """Return (scalar facets, number of lines the front matter spans).

    Uses PyYAML's safe loader; a block that does not parse as a mapping is
    treated as no front matter (the text stays searchable as written).
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
    return facets, match.group(0).count("\n") + (
        0 if match.group(0).endswith("\n") else 1
    )


def extract(data: bytes, name: str, limits: ExtractLimits) -> Extracted:
    """Extract a Markdown file as one unit whose headings drive segmentation.

    Front-matter lines are blanked (not removed) so line numbers still match
    the file.
    """
    from ..errors import ExtractionError

    if looks_binary(data[:8192]):
        raise ExtractionError("binary", "content looks binary")
    text = decode(data)[: limits.max_text_chars]
    facets, span = parse_front_matter(text)
    if span:
        lines = text.split("\n")
        text = "\n" * span + "\n".join(lines[span:])
    title = facets.pop("title", None) or _first_h1(text)
    return Extracted(units=(Unit(text=text, markdown=True),), title=title,
                     kind="md", meta=facets)  # fmt: skip


def _first_h1(text: str) -> str | None:
    in_fence = False
    for line in text.split("\n", 400)[:400]:
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if not in_fence:
            match = _H1.match(line)
            if match:
                return match.group(1).strip()
    return None
