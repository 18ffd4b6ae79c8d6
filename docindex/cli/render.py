"""Output: rich text for people (stdout for results, stderr for the rest), JSON for scripts."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from docindex.models import FoldedHit, Hit, ScanResult

if TYPE_CHECKING:
    from rich.console import Console

    from docindex.api.access import RootGrants
    from docindex.api.evaluate import EvalReport
    from docindex.api.records import SkippedFiles
    from docindex.api.roots import RootChange
    from docindex.models import QueryResult, SkipRecord
    from docindex.models.navigation import (
        DocumentList,
        Outline,
        Related,
        Section,
        Shown,
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
        notes.append(_clean("synonyms: " + "; ".join(
            f"{typed} -> {', '.join(more)}" for typed, more in result.synonyms.items()
        )))  # fmt: skip
    if not result.hits:
        lines = [style("no hits", dim=True)]
        if hint and hint.get("suggestion"):  # issue #6: say why, and what to try
            lines.append(style(f"hint: {_clean(hint['suggestion'])}", fg="yellow"))
        return "\n".join([*lines, *(style(n, fg="yellow") for n in notes)])
    lines = [style(n, fg="yellow") for n in notes]
    if hint and hint.get("suggestion"):  # issue #37: a weak match says so
        lines.append(style(f"hint: {_clean(hint['suggestion'])}", fg="yellow"))
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
                lines.append(gutter + _clean(text))
            continue
        snippet, pos, out = hit.snippet, 0, ["    "]
        for start, end in hit.highlights:  # offsets: a `**` in the text is text
            out += [_clean(snippet[pos:start])]
            out += [style(_clean(snippet[start:end]), fg="yellow", bold=True)]
            pos = end
        lines.append("".join([*out, _clean(snippet[pos:])]))
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
        lines += [head, f"    {_clean(hit.snippet)}"]
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
    return [_clean(n) for n in out]


def _clean(text: str) -> str:
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
        text = _clean(text).replace("\n", " ")
        out.append(f"{term_safe(hit.path)}:{line}:{col}:{text}")
    return out


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
        lines.append(click.style(f"warning: {term_safe(warning)}", fg="yellow"))
    if result.skipped:
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(result.skipped.items()))
        if not result.errors:
            skipped += " (`docindex skipped` lists them)"
        lines.append(click.style(f"skipped: {skipped}", dim=True))
    for err in result.errors[:20]:
        line = f"  {err['reason']}: {err['path']}: {err['message']}"
        lines.append(click.style(term_safe(line), fg="yellow"))
    if len(result.errors) > 20:
        more = f"  … and {len(result.errors) - 20} more (see --json)"
        lines.append(click.style(more, dim=True))
    if result.errors:
        hint = "  `docindex skipped` lists every file left out and why"
        lines.append(click.style(hint, dim=True))
    return "\n".join(lines)


def human_size(n: float) -> str:
    """Bytes for people: ``512 B``, ``27.1 MB`` (powers of 1024, like ``ls -h``)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


def vacuum_text(result_record: object) -> str:
    """The line ``docindex vacuum`` prints."""
    result: dict[str, Any] = to_dict(result_record)
    line = (
        f"{result['db']}: {human_size(result['before_bytes'])} -> "
        f"{human_size(result['after_bytes'])} "
        f"({human_size(result['reclaimed_bytes'])} reclaimed, "
        f"{result['took_ms'] / 1000:.1f} s)"
    )
    if result.get("ocr_cache_removed"):
        line += (
            f"\nOCR cache: {result['ocr_cache_removed']} entries removed "
            f"({human_size(result['ocr_cache_freed_bytes'])})"
        )
    return line


TOP = 10  # types and facets shown by ``docindex stats``


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def interrupted_text(result: ScanResult, again: str) -> str:
    """The one line an interrupted scan prints: what it finished, how to go on.

    ``again`` is the command line to run again, as the user typed it (#38).
    """
    done = result.scanned - result.pending
    return (
        f"interrupted: {done:,} of {result.scanned:,} files indexed; "
        f"run `{again}` again to finish"
    )


def print_stats(console: Console, stats_record: object) -> None:
    """Index statistics on one screen; ``--json`` has every facet value."""
    stats: dict[str, Any] = to_dict(stats_record)
    from rich.table import Table

    table = Table(show_header=False, box=None)
    table.add_row("index", stats["db"])
    table.add_row("size", human_size(stats["db_bytes"]))
    reclaimable = stats.get("reclaimable_bytes", 0)
    table.add_row(
        "reclaimable",
        f"{human_size(reclaimable)} (`docindex vacuum`)" if reclaimable else "0 B",
    )
    table.add_row("documents", f"{stats['documents']:,}")
    table.add_row("segments", f"{stats['segments']:,}")
    table.add_row("vectors", f"{stats['embedded']:,}")
    for number, root in enumerate(stats["roots"] or ["(none)"]):
        table.add_row("roots" if number == 0 else "", root)
    types = sorted(stats["types"].items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} {v:,}" for k, v in types[:TOP])
    if len(types) > TOP:
        shown += f", … {len(types) - TOP} more"
    table.add_row("types", shown or "(none)")
    emb = stats.get("embedder") or {}
    if emb:
        table.add_row("embedder", f"{emb.get('provider')} (dim {emb.get('dim')})")
    facets = stats.get("facet_counts") or []
    for number, facet in enumerate(facets[:TOP]):
        label = f"facets (top {min(TOP, len(facets))} of {len(facets)})"
        table.add_row(
            label if number == 0 else "",
            f"{facet['key']}: {_count(facet['documents'], 'document')}, "
            f"{_count(facet['values'], 'value')}",
        )
    skipped = stats.get("skipped") or {}
    if skipped:
        counts = ", ".join(f"{k} {v:,}" for k, v in sorted(skipped.items()))
        table.add_row("skipped", f"{counts} (see `docindex skipped`)")
    console.print(table)
    for notice in stats.get("notices") or []:
        console.print(f"warning: {notice}", markup=False, highlight=False)
    if len(facets) > TOP:
        from rich.text import Text

        console.print(Text("every facet and value: docindex stats --json", style="dim"))


def print_skipped(
    console: Console, result: SkippedFiles, reason: str | None = None
) -> None:
    """Skipped files grouped by reason: path and message, then the counts."""
    from rich.text import Text

    from docindex.models import UNRECORDED_REASONS

    files = result.files
    by_reason: dict[str, list[SkipRecord]] = {}
    for record in files:
        by_reason.setdefault(record.reason, []).append(record)
    for reason, records in sorted(by_reason.items()):
        console.print(Text(f"{term_safe(reason)} ({len(records)})", style="bold"))
        for record in records:
            line = Text("  ")
            line.append(term_safe(record.path), style="magenta")
            if record.message and record.message != reason:
                line.append(f"  {term_safe(record.message)}", style="dim")
            console.print(line, soft_wrap=True)
    counts = result.counts
    if not counts:
        console.print(Text("no file was left out", style="dim"))
    elif not files and reason in UNRECORDED_REASONS:
        console.print(Text(f"{reason} skips are not kept in the index: each scan "
                           "reports them again", style="dim"))  # fmt: skip
    elif not files:
        console.print(Text("no file skipped for that reason", style="dim"))
    total = sum(counts.values())
    if total:
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        files_word = "file" if total == 1 else "files"
        console.print(Text(f"{total} {files_word}: {summary}", style="dim"))


# -- navigation (issue #6) ------------------------------------------------------


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
    from docindex.search.snippet import reading_text as clean

    return clean(text)


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
        console.print(Text(_clean(reading_text(chunk.text))), soft_wrap=True)


def print_section(console: Console, section: Section) -> None:
    """A section's heading, line range and text."""
    from rich.text import Text

    unit = f"  {section.unit}" if section.unit else ""
    where = f"{section.rel_path}:{section.start_line}-{section.end_line}{unit}"
    head = Text(term_safe(where), style="bold magenta")
    trail = heading_trail(section.heading_path, section.heading)
    head.append(f"  {trail}", style="dim")
    console.print(head, soft_wrap=True)
    console.print(Text(_clean(reading_text(section.text))), soft_wrap=True)


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


def print_eval(console: Console, report: EvalReport) -> None:
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


# -- roots and settings (issue #20) ---------------------------------------------


def print_roots(console: Console, data_record: object) -> None:
    """Roots with their document counts; a missing folder and a moved index are said."""
    data: dict[str, Any] = to_dict(data_record)
    from rich.table import Table
    from rich.text import Text

    if not data["roots"]:
        hint = "no roots: add one with `docindex roots add DIR`"
        console.print(Text(hint, style="dim"))
        return
    table = Table(box=None)
    # who reads each root, once any root is granted to roles (issue #48)
    granted = any(root.get("grants") for root in data["roots"])
    # a replica is never scanned: which roots a scan here reads is moot (#48)
    scanned = not data.get("replica")
    columns = ["root", "documents", "folder"] + ["read here"] * scanned
    for name in columns + ["readers"] * granted:
        table.add_column(name, justify="right" if name == "documents" else "left")
    for root in data["roots"]:
        folder = Text("ok") if root["exists"] else Text("missing", style="bold red")
        here = (
            Text("yes") if root["accepted"]
            else Text("no", style="yellow") if root["here"]
            else Text("another host's", style="dim")
        )  # fmt: skip
        cells: list[Text | str] = [
            Text(term_safe(root["path"])),
            f"{root['documents']:,}",
            folder,
        ]
        if scanned:
            cells.append(here)
        if granted:
            roles = root.get("grants") or ()
            cells.append(
                Text(term_safe(", ".join(roles))) if roles
                else Text("every reader", style="dim")
            )  # fmt: skip
        table.add_row(*cells)
    console.print(table)
    waiting = [r["path"] for r in data["roots"] if r["here"] and not r["accepted"]]
    if waiting and scanned:
        import shlex

        fix = " ".join(shlex.quote(p) for p in waiting)
        console.print(
            Text(
                "a scan here reads a root only once you accept it: "
                f"`docindex roots accept {term_safe(fix)}`",
                style="yellow",
            )
        )
    moved = data.get("relocated")
    if moved:
        console.print(
            Text(
                f"this index lives in {moved['new']} but its root is {moved['old']}: "
                f"if the folder was copied or moved, run `{moved['fix']}`",
                style="yellow",
            )
        )


def root_change_text(change: RootChange) -> str:
    """One line saying what ``roots add/remove/move`` did and what comes next."""
    line = _root_change_line(change)
    return f"{line}\nwarning: {change.notice}" if change.notice else line


def _root_change_line(change: RootChange) -> str:
    if change.action == "add":
        return f"added root {change.root}; index it with `docindex scan`"
    if change.action == "accept":
        return (
            f"accepted root {change.root}: a scan on this machine reads it; "
            "index it with `docindex scan`"
        )
    if change.action == "remove":
        return (
            f"removed root {change.root} and its {_count(change.documents, 'document')}"
        )
    return (
        f"moved root {change.old} -> {change.root}; kept "
        f"{_count(change.documents, 'document')} (run `docindex scan` to pick up "
        "changed files)"
    )


def grants_text(done: RootGrants) -> str:
    """One line: what ``roots grant``/``revoke`` changed and who reads the root now."""
    root = f"root {term_safe(done.name)} ({term_safe(done.root)})"
    roles = ", ".join(done.changed)
    if done.action == "grant":
        line = (
            f"granted {root} to {roles}" if done.changed
            else f"{root} was granted to {', '.join(done.readers)} already"
        )  # fmt: skip
    else:
        line = (
            f"revoked {root} from {roles}" if done.changed
            else f"{root} was not granted to any of those roles"
        )  # fmt: skip
    if not done.readers:
        return f"{line}; no grants left: every reader reads it"
    return (
        f"{line}; it is read only by {', '.join(done.readers)} and the index's "
        f"owner ({done.owner})"
    )


def print_settings(console: Console, data: dict[str, Any]) -> None:
    """``docindex config``: each setting, its value and where it comes from."""
    from rich.table import Table
    from rich.text import Text

    db = data["db"]
    table = Table(box=None)
    for name in ("setting", "value", "source"):
        table.add_column(name)
    where = db["path"] or "(none yet)"
    if db["path"] and not db["exists"]:
        where += " (not created yet)"
    # Text cells: a path or source such as "config file [db] url" is not markup
    table.add_row("db", Text(where), Text(db["source"]))
    if db.get("read_path"):  # issue #48
        table.add_row(
            "read_db", Text(db["read_path"]), Text("config file [db] read_url")
        )
    for name, item in data["settings"].items():
        value = item["value"]
        shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        table.add_row(name, Text(shown or "-"), Text(item["source"]))
    ocr = data.get("ocr")
    if ocr is not None:  # issue #36: can OCR run here, and with what
        engine = ocr["engine"] or "tesseract not found"
        langs = "+".join(ocr["languages"]) or "-"
        state = "on" if ocr["active"] else ("available" if ocr["engine"] else "missing")
        table.add_row("ocr engine", f"{engine} ({state}), languages {langs}",
                      ocr["why_not"] or "")  # fmt: skip
    console.print(table)
