"""The navigation commands' text: outline, show, section, list (issue #6).

Split from ``render`` (hits and what every command shares), #49.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docindex.cli.render import clean, heading_trail, human_size, term_safe

if TYPE_CHECKING:
    from rich.console import Console

    from docindex.models.navigation import (
        DocumentList,
        Outline,
        Section,
        Shown,
    )


def _where(start: int, end: int, page: int | None = None, slide: int | None = None,
           sheet: str | None = None) -> str:  # fmt: skip
    lines = f"{start}-{end}" if end != start else f"{start}"
    if page is not None:
        return f"p. {page}, lines {lines}"
    if slide is not None:
        return f"slide {slide}, lines {lines}"
    if sheet is not None:
        return f"{sheet}, lines {lines}"
    return f"lines {lines}"


def reading_text(text: str) -> str:
    """``search.snippet.reading_text``, imported when a command prints text."""
    from docindex.search.snippet import reading_text as _clean

    return _clean(text)


def print_outline(console: Console, outline: Outline) -> None:
    """A document's headings, indented by level, with their lines."""
    from rich.text import Text

    head = f"{term_safe(outline.title)}  ({term_safe(outline.rel_path)})"
    console.print(Text(head, style="bold"))
    if not outline.outline:
        console.print(Text("no headings", style="dim"))
    for entry in outline.outline:
        line = Text("  " * (entry.level - 1))
        line.append(term_safe(entry.text))
        where = f"{entry.unit}:{entry.line}" if entry.unit else f":{entry.line}"
        where = term_safe(where)
        line.append(f"  {where}", style="cyan")
        # The heading's own id, without the path the title line already
        # names: `docindex show FILE#anchor` takes it (issue #37).
        anchor = entry.anchor or entry.chunk_id
        if anchor.startswith(f"{outline.rel_path}#"):
            anchor = anchor[len(outline.rel_path) :]
        line.append(f"  {term_safe(anchor)}", style="dim")
        console.print(line, soft_wrap=True)


def print_shown(console: Console, shown: Shown) -> None:
    """A chunk with its neighbours; the requested chunk is marked."""
    from rich.text import Text

    for chunk in [*shown.before, shown.chunk, *shown.after]:
        head = Text()
        marked = chunk is shown.chunk
        head.append("> " if marked else "  ", style="bold green")
        head.append(term_safe(chunk.chunk_id),
                    style="bold magenta" if marked else "magenta")  # fmt: skip
        head.append(f"  chunk {chunk.position} of {shown.total}", style="dim")
        loc = _where(chunk.start_line, chunk.end_line, chunk.page, chunk.slide,
                     chunk.sheet)  # fmt: skip
        head.append(f"  {term_safe(loc)}", style="cyan")
        trail = heading_trail(chunk.heading_path)
        if trail:  # issue #37: where the chunk sits, as query shows it
            head.append(f"  {trail}", style="dim")
        console.print(head, soft_wrap=True)
        console.print(Text(clean(reading_text(chunk.text))), soft_wrap=True)


def print_section(console: Console, section: Section) -> None:
    """A section's heading, line range and text."""
    from rich.text import Text

    unit = f"  {section.unit}" if section.unit else ""
    where = f"{section.rel_path}:{section.start_line}-{section.end_line}{unit}"
    head = Text(term_safe(where), style="bold magenta")
    trail = heading_trail(section.heading_path, section.heading)
    head.append(f"  {trail}", style="dim")
    console.print(head, soft_wrap=True)
    console.print(Text(clean(reading_text(section.text))), soft_wrap=True)


def document_rows(listing: DocumentList) -> list[str]:
    """Piped ``list``: absolute path, type, bytes, segments, title; tab-separated."""
    return [
        "\t".join(
            term_safe(v)
            for v in (doc.path, doc.type, doc.size, doc.segments, doc.title)
        )
        for doc in listing.documents
    ]


def print_documents(
    console: Console, listing: DocumentList, offset: int = 0, footer_only: bool = False
) -> None:
    """Indexed documents as a table, with a paging footer."""
    from rich.table import Table
    from rich.text import Text

    if footer_only:
        console.print(Text(_list_footer(listing, offset), style="dim"))
        return
    table = Table(box=None)
    # Paths are what people copy: the title gives way first (issue #20).
    longest = max((len(term_safe(d.rel_path)) for d in listing.documents), default=4)
    for name in ("path", "type", "size", "segments", "title"):
        wide = min(longest, max(20, console.width - 40)) if name == "path" else None
        table.add_column(
            name,
            justify="right" if name in ("size", "segments") else "left",
            min_width=wide,
            overflow="ellipsis" if name == "title" else "fold",
        )
    for doc in listing.documents:
        table.add_row(  # Text: a "[" in a name is not markup
            Text(term_safe(doc.rel_path)), Text(term_safe(doc.type)),
            human_size(doc.size), str(doc.segments), Text(term_safe(doc.title)),
        )  # fmt: skip
    console.print(table)
    console.print(Text(_list_footer(listing, offset), style="dim"))


def _list_footer(listing: DocumentList, offset: int) -> str:
    shown = (
        f"{offset + 1}-{offset + len(listing.documents)}" if listing.documents else "0"
    )
    more = (
        f"; next: --offset {offset + len(listing.documents)}"
        if listing.has_more
        else ""
    )
    return f"{shown} of {listing.total} documents{more}"
