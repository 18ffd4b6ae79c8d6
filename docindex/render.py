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


def print_hits(console: Any, result: Any, *, explain: bool = False) -> None:
    """Print a QueryResult for people: score, path:line, location, heading, snippet."""
    from rich.text import Text

    if not result.hits:
        console.print(Text("no hits", style="dim"))
        return
    for hit in result.hits:
        head = Text()
        head.append(f"{hit.score:.3f} ", style="bold green")
        head.append(hit.rel_path, style="bold magenta")
        head.append(f":{hit.line}", style="cyan")
        loc = location(hit)
        if loc:
            head.append(f"  {loc}", style="yellow")
        trail = " > ".join(hit.heading_path) if hit.heading_path else hit.title
        if trail:
            head.append(f"  {trail}", style="dim")
        console.print(head, soft_wrap=True)
        console.print(highlight_text(hit.snippet), soft_wrap=False)
        if explain and hit.explain:
            console.print(Text(f"    {json.dumps(hit.explain)}", style="dim"))
    footer = f"{len(result.hits)} of {result.total} hits in {result.took_ms:.1f} ms"
    footer += f" ({', '.join(result.used) or 'no lists'}"
    footer += ", degraded)" if result.degraded else ")"
    console.print(Text(footer, style="dim"))


def highlight_text(snippet: str) -> Any:
    """Turn ``**match**`` markers into styled rich Text, indented."""
    from rich.text import Text

    text = Text("    ")
    pos = 0
    for m in _MARK.finditer(snippet):
        text.append(snippet[pos : m.start()])
        text.append(m.group(1), style="bold yellow")
        pos = m.end()
    text.append(snippet[pos:])
    return text


def print_scan(console: Any, result: ScanResult) -> None:
    """Summarise a scan for people (on stderr)."""
    parts = [
        f"scanned {result.scanned}",
        f"indexed {result.indexed}",
        f"updated {result.updated}",
        f"removed {result.removed}",
        f"unchanged {result.unchanged}",
    ]
    console.print(", ".join(parts) + f" in {result.took_ms / 1000:.2f} s")
    if result.skipped:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(result.skipped.items()))
        console.print(f"skipped: {skipped}", style="dim")
    for err in result.errors[:20]:
        console.print(
            f"  {err['reason']}: {err['path']}: {err['message']}", style="yellow"
        )
    if len(result.errors) > 20:
        console.print(
            f"  … and {len(result.errors) - 20} more (see --json)", style="dim"
        )


def print_stats(console: Any, stats: dict[str, Any]) -> None:
    """Index statistics as a small table."""
    from rich.table import Table

    table = Table(show_header=False, box=None)
    for key, value in stats.items():
        if isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False)
        table.add_row(key, str(value))
    console.print(table)
