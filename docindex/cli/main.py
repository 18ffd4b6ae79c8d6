"""The ``docindex`` command: parse, call one core function, render. No SQL, no maths.

This module is the group and its one exit for failures; the commands live by
family (issue #49): ``scanning`` (scan, reindex, watch), ``querying`` (query),
``upkeep`` (stats, vacuum, export, import), ``tools`` (mcp, eval), ``nav``
(outline, show, section, list, skipped, related), ``roots`` (roots, config).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from docindex import __version__
from docindex.cli.output import ARGV_META, COLOR_OPTION, SIGNALS_META
from docindex.errors import DocindexError, IndexBusyError, IndexNotWritableError

if TYPE_CHECKING:
    pass

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


_ARGV = ARGV_META


class _Group(click.Group):
    """Turns every expected failure into a one-line message (no traceback).

    Exit 1 for a runtime failure, 2 for misuse (``DocindexError.exit_code``),
    0 when the reader of a pipe stopped early, 128 + N after signal N (Ctrl-C,
    SIGTERM, SIGHUP; issue #17, see ``signals.Signals``).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _safe_usage(exc, args) from None

    def invoke(self, ctx: click.Context) -> object:
        from docindex.cli.signals import Interrupted, Signals

        _warn_password_in_argv(ctx.meta.get(_ARGV, []))
        with Signals() as signals:
            ctx.meta[SIGNALS_META] = signals
            try:
                return self._invoke(ctx)
            except Interrupted as exc:
                click.echo(
                    "interrupted; the index keeps its last committed state", err=True
                )
                sys.exit(exc.exit_code)

    def _invoke(self, ctx: click.Context) -> object:
        argv = ctx.meta.get(_ARGV, [])
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command's own options and arguments
            raise _safe_usage(exc, argv) from None
        except IndexNotWritableError as exc:
            from docindex.cli import remedy  # error paths only: `re`, `shlex`

            raise _failure(remedy.elsewhere(argv, exc), exc.exit_code) from None
        except IndexBusyError as exc:
            from docindex.cli import remedy

            raise _failure(remedy.busy(str(exc), argv), exc.exit_code) from None
        except DocindexError as exc:
            from docindex.cli import remedy

            raise _failure(remedy.with_db(str(exc), argv), exc.exit_code) from None
        except sqlite3.Error as exc:
            from docindex.api.workspace import resolve_db
            from docindex.cli.output import DB_META
            from docindex.store import translate

            # The index the command used, so the message names it and its fix.
            try:
                where = resolve_db(ctx.meta.get(DB_META))
                path: Path | str = where if isinstance(where, Path) else ""
            except Exception:  # a message without the path is still a message
                path = ""
            err = translate(exc, path)
            from docindex.cli import remedy

            if isinstance(err, IndexBusyError):
                raise _failure(remedy.busy(str(err), argv), err.exit_code) from None
            raise _failure(remedy.with_db(str(err), argv), err.exit_code) from None
        except KeyboardInterrupt:
            click.echo(
                "interrupted; the index keeps its last committed state", err=True
            )
            sys.exit(130)
        except PermissionError as exc:
            # Another user's index is private to its owner (issue #33).
            from docindex.cli import remedy

            raise _failure(remedy.permission(exc), 1) from None
        except BrokenPipeError:
            # `docindex list | head`: the reader has all it wanted (issue #20).
            # Point stdout at /dev/null so the interpreter's final flush is quiet.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(0)
        except OSError as exc:
            from docindex.cli import remedy

            message = remedy.os_error(exc, argv)
            if message is None:
                raise
            raise _failure(message, 1) from None
        except Exception as exc:
            if not type(exc).__module__.startswith("psycopg"):
                raise
            from docindex.store.postgres import translate as pg_translate

            err = pg_translate(exc, "")
            raise _failure(str(err), err.exit_code) from None


def _warn_password_in_argv(argv: list[str]) -> None:
    """A password in ``--db`` is in ``ps`` for every local user: say so (#44)."""
    from docindex.cli.remedy import given_db

    db = given_db(argv)
    if db is None or "://" not in db:
        return
    from docindex.store.location import ServerUrl, is_server_url

    if is_server_url(db) and ServerUrl(db).has_password:
        click.echo(
            "warning: the password in --db is visible to every user of this "
            "machine (ps); keep it in ~/.pgpass, PGPASSFILE or a service file, "
            "or pass the URL in DOCINDEX_DB (README: Share an index with a team)",
            err=True,
        )


class _Failure(click.ClickException):
    """A core runtime failure as ``Error: message`` (exit 1)."""


class _Misuse(click.ClickException):
    """Something the user named does not exist or is malformed (exit 2, no usage)."""

    exit_code = 2


def _failure(message: str, exit_code: int) -> click.ClickException:
    """The one exit for expected failures: no password in any error (#44), and
    what the user typed is echoed with terminal controls escaped (#45)."""
    from docindex.cli.remedy import scrubbed
    from docindex.cli.render import term_safe

    ctx = click.get_current_context(silent=True)
    argv = ctx.find_root().meta.get(_ARGV, []) if ctx else []
    message = term_safe(scrubbed(message, argv))
    return _Misuse(message) if exit_code == 2 else _Failure(message)


def _safe_usage(exc: click.UsageError, argv: list[str]) -> click.UsageError:
    """A usage error as click words it, escaped, with how to search for "-word".

    ``docindex query -yield`` is "No such option '-y'": a query that starts
    with "-" goes after "--" (#45).
    """
    from docindex.cli.render import term_safe

    message = exc.format_message()  # "Invalid value for '--top': ..." kept
    if isinstance(exc, click.NoSuchOption) and exc.ctx is not None:
        if exc.ctx.command.name == "query":
            import shlex

            typed = next((a for a in argv if a.startswith(exc.option_name)), "")
            if typed and not typed.startswith("--"):
                message += (
                    f" Is {typed!r} the query? A query that starts with '-' goes "
                    f"after '--': `docindex query -- {shlex.quote(typed)}` (in a "
                    "query, -word leaves out the chunks holding the word)"
                )
    return click.UsageError(term_safe(message), ctx=exc.ctx)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="docindex")
def cli() -> None:
    """docindex: turn folders of documents into a searchable local knowledge base.

    Scan a folder once, then ask in plain words (English, 中文, 日本語, 한국어):

        docindex scan ~/notes && docindex query "how do I rotate the keys"

    The index is found by one rule for every command: --db, else DOCINDEX_DB,
    else the nearest .docindex/index.db upward from the folder a command names
    (scan PATH, --root), else upward from the current directory.
    """


# -- roots, config, and what every command shares (issue #20) -------------------


def _register() -> None:
    """Every command on the group: they live by family (issue #49)."""
    from docindex.cli.help import add_examples
    from docindex.cli.nav import list_, outline, related, section, show, skipped
    from docindex.cli.querying import query
    from docindex.cli.roots import config, roots
    from docindex.cli.scanning import reindex, scan, watch
    from docindex.cli.tools import eval_, mcp
    from docindex.cli.upkeep import export_, import_, stats, vacuum

    for command in (scan, query, reindex, stats, vacuum, watch, mcp, eval_,
                    export_, import_, outline, show, section, list_, skipped,
                    related, roots, config):  # fmt: skip
        cli.add_command(command)
    add_examples(cli, COLOR_OPTION)


_register()
