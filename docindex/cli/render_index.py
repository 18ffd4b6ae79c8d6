"""The index-wide commands' text: scan, vacuum, stats, skipped, eval, roots,
grants and config (issues #20, #23, #48).

Split from ``render`` (hits and what every command shares), #49.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docindex.cli.render import human_size, term_safe
from docindex.models import ScanResult
from docindex.models.serialize import to_dict

if TYPE_CHECKING:
    from rich.console import Console

    from docindex.api.access import RootGrants
    from docindex.api.evaluate import EvalReport
    from docindex.api.records import SkippedFiles
    from docindex.api.roots import RootChange
    from docindex.models import SkipRecord


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
