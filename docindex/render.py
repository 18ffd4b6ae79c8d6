"""Output: rich text for people (stdout for results, stderr for the rest), JSON for scripts."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from .models import Hit, ScanResult

_MARK = re.compile(r"\*\*(.+?)\*\*")


def hit_dict(hit: Hit) -> dict[str, Any]:
    """A hit as its documented JSON object (``from`` for ``from_``; absent locations dropped)."""
    data = dataclasses.asdict(hit)
    data["from"] = data.pop("from_")
    for key in ("page", "slide", "sheet", "cell", "explain"):
        if data[key] is None:
            del data[key]
    return data


def to_json(value: Any) -> str:
    """Serialise dataclasses/dicts as one compact JSON document (UTF-8 kept)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = _asdict(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def _asdict(value: Any) -> Any:
    if isinstance(value, Hit):
        return hit_dict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _asdict(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, list):
        return [_asdict(v) for v in value]
    if isinstance(value, dict):
        return {k: _asdict(v) for k, v in value.items()}
    return value


def location(hit: Hit) -> str:
    """Human location suffix: ``p. 3``, ``slide 2``, ``Sheet1!A12``."""
    if hit.page is not None:
        return f"p. {hit.page}"
    if hit.slide is not None:
        return f"slide {hit.slide}"
    if hit.sheet is not None:
        return f"{hit.sheet}!{hit.cell}" if hit.cell else hit.sheet
    return ""


# C0 controls (but tab and newline) and DEL: a document's escape sequences must
# not reach the terminal.
_CONTROLS = {c: None for c in (*range(0, 9), *range(11, 32), 127)}


def hits_text(result: Any, *, explain: bool = False) -> str:
    """A QueryResult for people: score, path:line, location, heading, snippet.

    Styled with ``click.style`` (``click.echo`` drops the styles off a terminal)
    rather than rich, whose import is a quarter of a one-shot query (issue #7).
    """
    import click

    style = click.style
    if not result.hits:
        lines = [style("no hits", dim=True)]
        hint = getattr(result, "hint", None)
        if hint and hint.get("suggestion"):  # issue #6: say why, and what to try
            lines.append(style(f"hint: {_clean(hint['suggestion'])}", fg="yellow"))
        return "\n".join(lines)
    lines = []
    for hit in result.hits:
        head = style(f"{hit.score:.3f} ", fg="green", bold=True)
        head += style(_clean(hit.rel_path), fg="magenta", bold=True)
        head += style(f":{hit.line}", fg="cyan")
        loc = location(hit)
        if loc:
            head += style(f"  {_clean(loc)}", fg="yellow")
        trail = " > ".join(hit.heading_path) if hit.heading_path else hit.title
        if trail:
            head += style(f"  {_clean(trail)}", dim=True)
        lines.append(head)
        snippet, pos, out = _clean(hit.snippet), 0, ["    "]
        for m in _MARK.finditer(snippet):
            out += [snippet[pos : m.start()], style(m.group(1), fg="yellow", bold=True)]
            pos = m.end()
        lines.append("".join([*out, snippet[pos:]]))
        if explain and hit.explain:
            lines.append(style(f"    {json.dumps(hit.explain)}", dim=True))
    footer = f"{len(result.hits)} of {result.total} hits in {result.took_ms:.1f} ms"
    footer += f" ({', '.join(result.used) or 'no lists'}"
    footer += ", degraded)" if result.degraded else ")"
    lines.append(style(footer, dim=True))
    return "\n".join(lines)


def _clean(text: str) -> str:
    return text.translate(_CONTROLS)


def scan_text(result: ScanResult) -> str:
    """Summarise a scan for people (stderr), with click styles (no rich: issue #7).

    Paths and messages are printed as text (a ``[`` in a file name is not
    markup) without control characters.
    """
    import click

    parts = [
        f"scanned {result.scanned}",
        f"indexed {result.indexed}",
        f"updated {result.updated}",
        f"removed {result.removed}",
        f"unchanged {result.unchanged}",
    ]
    lines = [", ".join(parts) + f" in {result.took_ms / 1000:.2f} s"]
    for warning in result.warnings:
        lines.append(click.style(f"warning: {_clean(warning)}", fg="yellow"))
    if result.skipped:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(result.skipped.items()))
        lines.append(click.style(f"skipped: {skipped}", dim=True))
    for err in result.errors[:20]:
        line = f"  {err['reason']}: {err['path']}: {err['message']}"
        lines.append(click.style(_clean(line), fg="yellow"))
    if len(result.errors) > 20:
        more = f"  … and {len(result.errors) - 20} more (see --json)"
        lines.append(click.style(more, dim=True))
    return "\n".join(lines)


def print_stats(console: Any, stats: dict[str, Any]) -> None:
    """Index statistics as a small table."""
    from rich.table import Table

    table = Table(show_header=False, box=None)
    for key, value in stats.items():
        if isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False)
        table.add_row(key, str(value))
    console.print(table)


# -- navigation (issue #6) ------------------------------------------------------


def _where(start: int, end: int, page: Any = None, slide: Any = None,
           sheet: Any = None) -> str:  # fmt: skip
    lines = f"{start}-{end}" if end != start else f"{start}"
    if page is not None:
        return f"p. {page}, lines {lines}"
    if slide is not None:
        return f"slide {slide}, lines {lines}"
    if sheet is not None:
        return f"{sheet}, lines {lines}"
    return f"lines {lines}"


def print_outline(console: Any, outline: Any) -> None:
    """A document's headings, indented by level, with their lines."""
    from rich.text import Text

    console.print(Text(f"{outline.title}  ({outline.rel_path})", style="bold"))
    if not outline.outline:
        console.print(Text("no headings", style="dim"))
    for entry in outline.outline:
        line = Text("  " * (entry.level - 1))
        line.append(entry.text)
        line.append(f"  :{entry.line}", style="cyan")
        line.append(f"  {entry.chunk_id}", style="dim")
        console.print(line, soft_wrap=True)


def print_shown(console: Any, shown: Any) -> None:
    """A chunk with its neighbours; the requested chunk is marked."""
    from rich.text import Text

    for chunk in [*shown.before, shown.chunk, *shown.after]:
        head = Text()
        marked = chunk is shown.chunk
        head.append("> " if marked else "  ", style="bold green")
        head.append(chunk.chunk_id, style="bold magenta" if marked else "magenta")
        head.append(f"  chunk {chunk.position} of {shown.total}", style="dim")
        loc = _where(chunk.start_line, chunk.end_line, chunk.page, chunk.slide,
                     chunk.sheet)  # fmt: skip
        head.append(f"  {loc}", style="cyan")
        console.print(head, soft_wrap=True)
        console.print(Text(chunk.text), soft_wrap=True)


def print_section(console: Any, section: Any) -> None:
    """A section's heading, line range and text."""
    from rich.text import Text

    head = Text(f"{section.rel_path}:{section.start_line}-{section.end_line}",
                style="bold magenta")  # fmt: skip
    head.append(f"  {section.heading}", style="dim")
    console.print(head, soft_wrap=True)
    console.print(Text(section.text), soft_wrap=True)


def print_documents(console: Any, listing: Any, offset: int = 0) -> None:
    """Indexed documents as a table, with a paging footer."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None)
    for name in ("path", "type", "size", "segments", "title"):
        table.add_column(
            name, justify="right" if name in ("size", "segments") else "left"
        )
    for doc in listing.documents:
        table.add_row(
            doc.rel_path, doc.type, str(doc.size), str(doc.segments), doc.title
        )
    console.print(table)
    shown = (
        f"{offset + 1}-{offset + len(listing.documents)}" if listing.documents else "0"
    )
    more = (
        f"; next: --offset {offset + len(listing.documents)}"
        if listing.has_more
        else ""
    )
    console.print(Text(f"{shown} of {listing.total} documents{more}", style="dim"))


def print_related(console: Any, related: Any) -> None:
    """Related chunks: score, path:line, chunk id and a snippet."""
    from rich.text import Text

    if not related.hits:
        console.print(Text("nothing related", style="dim"))
    for hit in related.hits:
        head = Text()
        head.append(f"{hit.score:.3f} ", style="bold green")
        head.append(hit.rel_path, style="bold magenta")
        head.append(f":{hit.line}", style="cyan")
        head.append(f"  {hit.chunk_id}", style="dim")
        console.print(head, soft_wrap=True)
        console.print(Text(f"    {hit.snippet}"), soft_wrap=False)


def print_eval(console: Any, report: Any) -> None:
    """``docindex eval``: one row per mode and view: nDCG@10, Recall@100, MRR@10."""
    from rich.table import Table

    sampled = (
        f", {report.queries} of {report.judged_queries} judged queries (seed {report.seed})"
        if report.queries < report.judged_queries
        else f", {report.queries} judged queries"
    )
    table = Table(
        title=f"{report.dataset}: {report.documents} documents{sampled}",
        title_justify="left",
    )
    for name in ("mode", "view", "nDCG@10", "Recall@100", "MRR@10", "ms/query"):
        table.add_column(name, justify="left" if name in ("mode", "view") else "right")
    for m in report.modes:
        mode = f"{m.mode} (degraded)" if m.degraded else m.mode
        table.add_row(
            mode, m.view, f"{m.ndcg_at_10:.4f}", f"{m.recall_at_100:.4f}", f"{m.mrr_at_10:.4f}",
            f"{m.median_query_ms:.1f}",
        )  # fmt: skip
    console.print(table)
