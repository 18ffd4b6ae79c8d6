"""Shared pieces of the click layer: colour, consoles, JSON output, finding the index.

Kept apart from the command modules so they stay lists of commands (issue #20),
with what every command shares: the running command's signals and argv.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

    from docindex.cli.progress import ScanProgress
    from docindex.cli.signals import Signals
    from docindex.models import Progress
    from docindex.store.location import ServerUrl

F = TypeVar("F", bound=Callable[..., object])


def err_console(quiet: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=True, quiet=quiet, highlight=False, **_rich_color())


def _color_choice() -> str:
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get("docindex.color", "auto")) if ctx else "auto"


def color() -> bool | None:
    """click.echo's ``color``: --color, then NO_COLOR / FORCE_COLOR, else auto."""
    choice = _color_choice()
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return True if os.environ.get("FORCE_COLOR") else None


def _rich_color() -> dict[str, Any]:  # Console keyword arguments
    wanted = color()
    if wanted is False:
        return {"color_system": None}  # no colour, no bold: plain text
    if wanted is True:
        return {"force_terminal": True}
    return {}


def out_console() -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1; a reader that stopped early is no failure (#20).
            raise BrokenPipeError

    # Off a terminal, rich would wrap and truncate at 80 columns (issue #20).
    width = None if _tty(sys.stdout) else 100_000
    return _Console(highlight=False, width=width, **_rich_color())


def _tty(stream: TextIO | None) -> bool:
    """A terminal; False for a closed stream (``docindex query x >&-``: None)."""
    return stream is not None and stream.isatty()


def piped() -> bool:
    return not _tty(sys.stdout)


def _set_color(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta["docindex.color"] = value
    return value


COLOR_OPTION = click.Option(
    ["--color"],
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    expose_value=False,
    is_eager=True,
    callback=_set_color,
    help="Colour output (auto: on a terminal unless NO_COLOR is set).",
)


def find_db(
    db: str | None, near: tuple[str, ...] | list[str] = (), *, warn: bool = True
) -> Path | ServerUrl | None:
    """The one rule that finds the index (workspace.resolve_db), for every command.

    ``--db``, ``DOCINDEX_DB``, the nearest ``.docindex/`` upward from the named
    folders, then from the current directory. Warns on stderr when the index's
    folder was copied or moved and its root still points at the old place.
    """
    from docindex.api.workspace import relocation, resolve_db

    path = resolve_db(db, near=[Path(p) for p in near])
    if path is None:
        return None
    moved = relocation(path) if warn else None
    if moved is not None:
        click.echo(
            click.style(
                f"warning: this index was made for {moved.old} but lives in "
                f"{moved.new}; answers come from the old place. If the folder "
                f"was copied or moved, run `{moved.fix()}`",
                fg="yellow",
            ),
            err=True,
            color=color(),
        )
    return path


def db_option(fn: F) -> F:
    """``--db FILE`` with ``DOCINDEX_DB`` as its environment variable."""
    return click.option(
        "--db",
        # not click's readable check: the index's own error says whose file it
        # is and how to share it (issue #45)
        type=click.Path(dir_okay=False, readable=False),
        envvar="DOCINDEX_DB",
        help="Index file or postgresql:// URL (default: DOCINDEX_DB, else the "
        "nearest .docindex/index.db "
        "upward from the named folder or the current directory).",
        callback=_remember_db,
    )(fn)


def root_option(help: str) -> Callable[[F], F]:
    """``--root DIR`` (repeatable, as ``roots``), with each command's own help."""
    return click.option(
        "--root", "roots", multiple=True, type=click.Path(file_okay=False), help=help
    )


def progress_options(fn: F) -> F:
    """``--quiet`` and ``--progress``: what a writing command prints while it runs."""
    fn = click.option(
        "--progress",
        "ndjson",
        is_flag=True,
        help="With --json: stream progress events as JSON lines before the result.",
    )(fn)
    return click.option(
        "--quiet", "-q", is_flag=True, help="No progress or summary on stderr."
    )(fn)


DB_META = "docindex.db"  # the running command's --db value (click ctx.meta)
ARGV_META = "docindex.cli.argv"  # the arguments as the user typed them (remedies, #38)
SIGNALS_META = "docindex.cli.signals"  # the running command's Signals (main._Group)


def _remember_db(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> str | None:
    """Keep --db where the CLI's error handler can name the index (issue #17)."""
    ctx.meta[DB_META] = value
    return value


def json_option(fn: F) -> F:
    """``--json``: one JSON document on stdout."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON (see README: JSON output)."
    )(fn)


def echo_json(value: object) -> None:
    from docindex.cli.render import cli_json

    click.echo(cli_json(value))


def progress_bar(enabled: bool) -> ScanProgress:
    """A rich progress bar on stderr (transient), or a no-op."""
    from docindex.cli.progress import ScanProgress

    return ScanProgress(enabled and _tty(sys.stderr))


class NdjsonProgress:
    """``scan --json --progress``: progress events as JSON lines on stdout."""

    def __enter__(self) -> Callable[[Progress], None]:
        import time

        from docindex.cli.render import cli_json

        last_phase = [""]  # the phase and time of the last event printed
        last_time = [0.0]

        def report(event: Progress) -> None:
            now = time.monotonic()
            final = event.total is not None and event.done >= event.total
            if event.phase == last_phase[0] and not final and now - last_time[0] < 0.1:
                return
            last_phase[0], last_time[0] = event.phase, now
            click.echo(cli_json({"event": "progress", "phase": event.phase,
                                 "done": event.done, "total": event.total,
                                 "path": event.path}))  # fmt: skip
            sys.stdout.flush()

        return report

    def __exit__(self, *exc: object) -> None:
        return None


def running_signals() -> Signals:
    """The running command's ``signals.Signals`` (installed by ``main._Group``)."""
    found: Signals = click.get_current_context().meta[SIGNALS_META]
    return found


def exit_if_signalled(signals: Signals) -> None:
    """Exit 128 + N when signal N stopped a graceful command (issue #17)."""
    if signals.signum:
        sys.exit(signals.exit_code)


def notice(message: str) -> None:
    """A line the user should see now (e.g. a scan waiting for another writer)."""
    from docindex.cli.remedy import scrubbed

    root = click.get_current_context().find_root()
    click.echo(scrubbed(message, root.meta.get(ARGV_META, [])), err=True)


def command_line() -> str:
    """The command as the user typed it, to run again (issue #38), masked (#44)."""
    from docindex.cli import remedy

    root = click.get_current_context().find_root()
    return remedy.command_line(root.meta.get(ARGV_META, []))
