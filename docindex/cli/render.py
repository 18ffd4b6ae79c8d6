"""Output: rich text for people (stdout for results, stderr for the rest), JSON for scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from docindex.models import FoldedHit, Hit

if TYPE_CHECKING:
    from docindex.models import QueryResult
    from docindex.models.navigation import (
        Related,
    )
from docindex.models.serialize import hit_dict as hit_dict  # re-exported: the old home
from docindex.models.serialize import to_dict as to_dict
from docindex.models.serialize import to_json as to_json

SCHEMA_VERSION = 2  # 2: plain snippets with highlight offsets (#38); of every command's --json output (README: JSON output)


def cli_json(value: object) -> str:
    """One command's ``--json`` document: ``schema_version`` first, then the result."""
    data = to_dict(value)
    if isinstance(data, dict):
        data = {"schema_version": SCHEMA_VERSION, **data}
    return json.dumps(data, ensure_ascii=False)


def location(hit: Hit) -> str:
    """Human location suffix: ``p. 3``, ``slide 2``, ``Sheet1!A12``."""
    if hit.page is not None:
        return f"p. {hit.page}"
    if hit.slide is not None:
        return f"slide {hit.slide}"
    if hit.sheet is not None:
        return f"{hit.sheet}!{hit.cell}" if hit.cell else hit.sheet
    return ""


# C0 and C1 controls, DEL, and the marks that reorder or hide text (bidi
# overrides and isolates): a file name's or a document's escape sequences
# (OSC 52 clipboard writes, screen clears, CSI as the one byte U+009B) must
# not reach the terminal (issue #33).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def term_safe(text: object, *, lines: bool = False) -> str:
    """``text`` as it may be printed to a terminal: every unsafe character escaped.

    The one function every command's human output goes through (JSON output
    stays exact). Each control character becomes its visible Python escape
    (``\\x1b``, ``\\u202e``), so a hostile name is shown, not obeyed, and
    two names differing only there stay distinct. ``lines`` keeps newlines and
    tabs (a document's text); names get them escaped too.
    """

    def escape(m: re.Match[str]) -> str:
        char = m.group()
        if lines and char in "\n\t":
            return char
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(escape, str(text))


def hits_text(
    result: QueryResult, *, explain: bool = False, full_paths: bool = False,
    context: list[list[tuple[int, str]]] | None = None,
) -> str:  # fmt: skip
    """A QueryResult for people: score, path:line, location, heading, snippet.

    Styled with ``click.style`` (``click.echo`` drops the styles off a terminal)
    rather than rich, whose import is a quarter of a one-shot query (issue #7).
    """
    import click

    style = click.style
    hint = getattr(result, "hint", None)
    notes = _notes(result)
    if explain and result.synonyms:  # issue #47: what the synonym file added
        notes.append(clean("synonyms: " + "; ".join(
            f"{typed} -> {', '.join(more)}" for typed, more in result.synonyms.items()
        )))  # fmt: skip
    if not result.hits:
        lines = [style("no hits", dim=True)]
        if hint and hint.get("suggestion"):  # issue #6: say why, and what to try
            lines.append(style(f"hint: {clean(hint['suggestion'])}", fg="yellow"))
        return "\n".join([*lines, *(style(n, fg="yellow") for n in notes)])
    lines = [style(n, fg="yellow") for n in notes]
    if hint and hint.get("suggestion"):  # issue #37: a weak match says so
        lines.append(style(f"hint: {clean(hint['suggestion'])}", fg="yellow"))
    for number, hit in enumerate(result.hits):
        head = style(f"{hit.score:.3f} ", fg="green", bold=True)
        # issue #37: the share of the query the hit holds, absolute (0-100%)
        head += style(f"{hit.coverage:>4.0%} ", fg="green", dim=hit.coverage < 0.5)
        shown = hit.path if full_paths else hit.rel_path
        head += style(term_safe(shown), fg="magenta", bold=True)
        head += style(f":{hit.line}", fg="cyan")
        loc = location(hit)
        if loc:
            head += style(f"  {term_safe(loc)}", fg="yellow")
        trail = heading_trail(hit.heading_path, hit.title)
        if trail:
            head += style(f"  {trail}", dim=True)
        lines.append(head)
        if context is not None and context[number]:
            for n, text in context[number]:
                mark = ">" if n == hit.line else " "
                gutter = style(f"  {mark}{n:>5} ", fg="cyan", dim=n != hit.line)
                lines.append(gutter + clean(text))
            continue
        snippet, pos, out = hit.snippet, 0, ["    "]
        for start, end in hit.highlights:  # offsets: a `**` in the text is text
            out += [clean(snippet[pos:start])]
            out += [style(clean(snippet[start:end]), fg="yellow", bold=True)]
            pos = end
        lines.append("".join([*out, clean(snippet[pos:])]))
        if hit.folded_count:  # issue #19: more of this document, folded behind it
            lines.append(style(folded_note(hit.folded_count, hit.folded), dim=True))
        if explain and hit.explain:
            lines.append(style(f"    {json.dumps(hit.explain)}", dim=True))
    total = f"{result.total}" + ("" if result.total_exact else "+")
    footer = f"{len(result.hits)} of {total} hits in {result.took_ms:.1f} ms"
    footer += f" ({', '.join(result.used) or 'no lists'}"
    footer += ", degraded)" if result.degraded else ")"
    lines.append(style(footer, dim=True))
    return "\n".join(lines)


def heading_trail(heading_path: Sequence[str], title: str = "") -> str:
    """``Guide > Props > Passing props`` (or the title), safe for a terminal.

    The one way every command shows where a chunk sits (issue #37).
    """
    return term_safe(" > ".join(heading_path) if heading_path else title)


def folded_note(count: int, folded: Sequence[FoldedHit]) -> str:
    """``    + 3 more here (:12, :40, :77)``: a document's other hits, folded."""
    more = ", ".join(f":{f.line}" for f in folded)
    more += ", …" if count > len(folded) else ""
    return f"    + {count} more here ({more})"


def related_text(related: Related, *, full_paths: bool = False) -> str:
    """Related documents as ``query`` prints its hits (issue #37): score,
    path:line, heading path, the cleaned snippet, and the document's other
    near chunks folded behind it."""
    import click

    style = click.style
    if not related.hits:
        return style("nothing related", dim=True)
    lines = []
    for hit in related.hits:
        head = style(f"{hit.score:.3f} ", fg="green", bold=True)
        head += style(term_safe(hit.path if full_paths else hit.rel_path),
                      fg="magenta", bold=True)  # fmt: skip
        head += style(f":{hit.line}", fg="cyan")
        loc = _where_short(hit.page, hit.slide, hit.sheet)
        if loc:
            head += style(f"  {term_safe(loc)}", fg="yellow")
        trail = heading_trail(hit.heading_path, hit.title)
        if trail:
            head += style(f"  {trail}", dim=True)
        lines += [head, f"    {clean(hit.snippet)}"]
        if hit.folded_count:
            lines.append(style(folded_note(hit.folded_count, hit.folded), dim=True))
    return "\n".join(lines)


def _where_short(page: int | None, slide: int | None, sheet: str | None) -> str:
    if page is not None:
        return f"p. {page}"
    if slide is not None:
        return f"slide {slide}"
    return sheet or ""


def _notes(result: QueryResult) -> list[str]:
    """ "did you mean" and "showing results for" lines (issue #37)."""
    out: list[str] = []
    fixes = result.did_you_mean or {}
    corrected = result.corrected
    if corrected:
        out.append(f"no hits for {result.query!r}; showing hits for {corrected!r}")
    elif fixes:
        out.append(
            "did you mean: "
            + ", ".join(f"{b!r} for {a!r}" for a, b in fixes.items())
            + "?"
        )
    return [clean(n) for n in out]


def clean(text: str) -> str:
    """A document's text (snippets, sections) for the terminal."""
    return term_safe(text, lines=True)


def vimgrep_lines(hits: list[Hit], lines: list[list[tuple[int, str]]]) -> list[str]:
    """``path:line:col:text`` per hit, as ``rg --vimgrep`` prints (vim's ``-q``).

    ``lines`` holds each hit's segment, numbered. The line is the hit's own
    line when a highlighted word is on it, else the segment's first line that
    has one (an editor should land on a match); ``col`` is the 1-based column
    of that word (1 when there is none) and ``text`` the line as indexed.
    """
    out = []
    for hit, segment in zip(hits, lines or [[]] * len(hits), strict=False):
        words = [hit.snippet[s:e].lower() for s, e in hit.highlights]
        ordered = sorted(segment, key=lambda nt: nt[0] != hit.line)
        line, col, text = hit.line, 1, ""
        for number, candidate in ordered:
            found = [i for w in words if (i := candidate.lower().find(w)) >= 0]
            if found:
                line, col, text = number, min(found) + 1, candidate
                break
        else:
            text = next((t for n, t in segment if n == hit.line), "")
        if not text:
            text = hit.snippet
        text = clean(text).replace("\n", " ")
        out.append(f"{term_safe(hit.path)}:{line}:{col}:{text}")
    return out


def human_size(n: float) -> str:
    """Bytes for people: ``512 B``, ``27.1 MB`` (powers of 1024, like ``ls -h``)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover
