"""``docindex roots`` and ``docindex config`` (issue #20)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from docindex.cli.output import db_option, echo_json, find_db, json_option, out_console

if TYPE_CHECKING:
    from docindex.api.roots import RootChange


@click.group(invoke_without_command=True)
@db_option
@json_option
@click.pass_context
def roots(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """List the index's roots; add, remove, move, grant or revoke one.

    Documents are stored relative to their root, so `roots move` after copying
    or moving a folder keeps every document, chunk id and vector: the next scan
    reads only the files that changed.
    """
    ctx.ensure_object(dict)
    ctx.obj.update(db=db, as_json=as_json)
    if ctx.invoked_subcommand is None:
        _roots_list(db, as_json)


def _roots_list(db: str | None, as_json: bool) -> None:
    from docindex.api.index import Index
    from docindex.cli.render_index import print_roots

    data = Index(find_db(db, warn=False)).list_roots()
    if as_json:
        echo_json(data)
    else:
        print_roots(out_console(), data)


def _roots_options(fn: Callable[..., object]) -> Callable[..., object]:
    return db_option(json_option(click.pass_context(fn)))


def _roots_db(ctx: click.Context, db: str | None) -> str | None:
    return db or (ctx.obj or {}).get("db")


@roots.command(name="list")
@_roots_options
def roots_list(ctx: click.Context, db: str | None, as_json: bool) -> None:
    """List the roots with their document counts."""
    _roots_list(_roots_db(ctx, db), as_json or (ctx.obj or {}).get("as_json", False))


def _roots_change(
    ctx: click.Context, db: str | None, as_json: bool, action: str, *paths: str
) -> None:
    from docindex.api.index import Index

    index = Index(find_db(_roots_db(ctx, db), warn=False))
    if action == "add":
        change = index.add_root(paths[0])
    elif action == "accept":
        for path in paths[:-1]:
            _print_change(index.accept_root(path), ctx, as_json)
        change = index.accept_root(paths[-1])
    elif action == "remove":
        change = index.remove_root(paths[0])
    else:
        change = index.move_root(paths[0], paths[1])
    _print_change(change, ctx, as_json)


def _print_change(change: RootChange, ctx: click.Context, as_json: bool) -> None:
    from docindex.cli.render_index import root_change_text

    if as_json or (ctx.obj or {}).get("as_json"):
        echo_json(change)
    else:
        from docindex.cli import remedy
        from docindex.cli.output import ARGV_META

        argv = ctx.find_root().meta.get(ARGV_META, [])
        click.echo(remedy.with_db(root_change_text(change), argv), err=True)


@roots.command(name="add")
@click.argument("path", type=click.Path(path_type=Path))
@_roots_options
def roots_add(ctx: click.Context, path: Path, db: str | None, as_json: bool) -> None:
    """Add PATH as a root (indexed by the next `docindex scan`)."""
    _roots_change(ctx, db, as_json, "add", str(path))


@roots.command(name="remove")
@click.argument("path", type=click.Path(path_type=Path))
@_roots_options
def roots_remove(ctx: click.Context, path: Path, db: str | None, as_json: bool) -> None:
    """Forget root PATH and drop its documents from the index (never the files)."""
    _roots_change(ctx, db, as_json, "remove", str(path))


@roots.command(name="accept")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_roots_options
def roots_accept(
    ctx: click.Context, paths: tuple[Path, ...], db: str | None, as_json: bool
) -> None:
    """Let scans on this machine read the roots PATHS, added elsewhere.

    A root that another machine or user added to a shared index (or that came
    with a copied index or an import) is not read here until you accept it:
    what your scan reads is decided on your machine. Accepting is remembered
    for you alone, in ~/.config/docindex/trust.json.
    """
    _roots_change(ctx, db, as_json, "accept", *map(str, paths))


@roots.command(name="grant")
@click.argument("root")
@click.argument("roles", nargs=-1, required=True)
@_roots_options
def roots_grant(ctx: click.Context, root: str, roles: tuple[str, ...],
                db: str | None, as_json: bool) -> None:  # fmt: skip
    """Let only ROLES (and the index's owner) read ROOT: a PostgreSQL index.

    ROOT is a root's folder on this machine or its name (`docindex roots`).
    The server enforces it on every table that holds the root's documents,
    chunks, vectors and term counts, for docindex and for a reader's own SQL;
    a root without grants is read by every reader. Run it as the index's
    owner, after `roots add` and before the root's first scan.
    """
    _grants(ctx, db, as_json, root, roles, grant=True)


@roots.command(name="revoke")
@click.argument("root")
@click.argument("roles", nargs=-1, required=True)
@_roots_options
def roots_revoke(ctx: click.Context, root: str, roles: tuple[str, ...],
                 db: str | None, as_json: bool) -> None:  # fmt: skip
    """Take ROOT from ROLES; with no grant left, every reader reads it again."""
    _grants(ctx, db, as_json, root, roles, grant=False)


def _grants(
    ctx: click.Context, db: str | None, as_json: bool, root: str,
    roles: tuple[str, ...], *, grant: bool,
) -> None:  # fmt: skip
    from docindex.api.index import Index
    from docindex.cli.render_index import grants_text

    index = Index(find_db(_roots_db(ctx, db), warn=False))
    done = (index.grant_root if grant else index.revoke_root)(root, roles)
    if as_json or (ctx.obj or {}).get("as_json"):
        echo_json(done)
    else:
        click.echo(grants_text(done), err=True)


@roots.command(name="move")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@_roots_options
def roots_move(ctx: click.Context, old: Path, new: Path, db: str | None,
               as_json: bool) -> None:  # fmt: skip
    """Point root OLD at folder NEW (after a copy or move); nothing is re-indexed."""
    _roots_change(ctx, db, as_json, "move", str(old), str(new))


@click.command()
@db_option
@json_option
def config(db: str | None, as_json: bool) -> None:
    """Print the effective settings and where each comes from.

    Sources, lowest first: default, index (remembered when it was built),
    config file (config.toml beside the index, or DOCINDEX_CONFIG), environment
    (DOCINDEX_<NAME>), flag.
    """
    from docindex.api.index import Index
    from docindex.cli.render_index import print_settings

    data = Index(db).settings()
    if as_json:
        echo_json(data)
    else:
        print_settings(out_console(), data)
