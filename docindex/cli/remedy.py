"""Remedies that work as printed (issue #38).

An error names the command that fixes it. The core does not know how the user
called docindex, so the CLI completes each remedy here: the ``--db`` the user
gave is repeated in every `docindex ...` command the message suggests, and an
index that cannot be created where it was asked for gets the user's own
command line again with a ``--db`` somewhere writable.
"""

from __future__ import annotations

import errno
import re
import shlex
from pathlib import Path

from docindex import config as cfgmod
from docindex.errors import IndexNotWritableError
from docindex.store.location import mask, redact

_COMMAND = re.compile(r"`(docindex [^`]*)`")
# Commands that take --db (every command but `eval`, which makes its own).
_TAKES_DB = frozenset(
    "scan query reindex stats vacuum watch mcp outline show section list related "
    "skipped roots config".split()
)


def given_db(argv: list[str]) -> str | None:
    """The ``--db`` value on the command line (the last one wins, as in click)."""
    found: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--db" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--db="):
            found = arg[len("--db=") :]
    return found


def masked(argv: list[str]) -> list[str]:
    """``argv`` with the password of any ``postgresql://`` URL in it masked:
    a command echoed back (a remedy, "run … again") never shows it (#44)."""
    return [mask(arg) if "://" in arg else arg for arg in argv]


def command_line(argv: list[str]) -> str:
    """The command as the user typed it, to run again, its password masked."""
    return shlex.join(["docindex", *masked(argv)])


def secret_places(argv: list[str]) -> list[str]:
    """Every index URL this command may hold a password of: ``--db``,
    ``DOCINDEX_DB`` and the ``DOCINDEX_CONFIG`` file's ``[db] url``."""
    places = [given_db(argv), cfgmod.env_value("DB"), cfgmod.file_db_url()]
    places.extend(a for a in argv if "://" in a)  # `eval --engine URL`
    return [p for p in places if p]


def scrubbed(message: str, argv: list[str]) -> str:
    """``message`` with every password this command knows of redacted: the
    last net under every line the CLI prints on the way out (#44)."""
    return redact(message, *secret_places(argv))


def _replace_db(argv: list[str], db: str) -> list[str]:
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--db" and i + 1 < len(argv):
            skip = True
            continue
        if arg.startswith("--db="):
            continue
        out.append(arg)
    return [*out, "--db", db]


def with_db(message: str, argv: list[str]) -> str:
    """``message`` with the user's ``--db`` added to each suggested command.

    A remedy without it would look for the index from the current folder
    and answer "no index found" (issue #38).
    """
    db = given_db(argv)
    if db is None:
        return message

    def add(match: re.Match[str]) -> str:
        command = match.group(1)
        words = command.split()
        if "--db" in words or len(words) < 2 or words[1] not in _TAKES_DB:
            return match.group(0)
        return f"`{command} --db {shlex.quote(mask(db))}`"

    return _COMMAND.sub(add, message)


def elsewhere(argv: list[str], exc: IndexNotWritableError) -> str:
    """The index cannot be made where asked: the same command, writing elsewhere."""
    target = cfgmod.writable_db_for(exc.path)
    again = shlex.join(["docindex", *masked(_replace_db(argv, str(target)))])
    head = str(exc).split("; pass --db", 1)[0]
    return f"{head}; keep it elsewhere: `{again}` (or set DOCINDEX_DB)"


def busy(message: str, argv: list[str]) -> str:
    """ "index is busy": the user's command again, waiting two minutes (#45)."""
    return f"{message}: `DOCINDEX_BUSY_TIMEOUT_S=120 {command_line(argv)}`"


def permission(exc: PermissionError) -> str:
    """ "permission denied", and how the owner shares an index (#45).

    Every index is private to its owner (0600, issue #33). Reading another
    user's index takes the owner's consent: ``private_index = false`` in the
    index's config file keeps the modes the owner gives, and a group lets
    the colleague read it.
    """
    name = exc.filename
    if not name:
        return "permission denied: a file the command needs"
    path = Path(str(name))
    head = f"permission denied: {path}"
    owner = _owner(path)
    by = f" (it is {owner}'s)" if owner else ""
    folder = path.parent if path.name.startswith("index.db") else None
    if folder is None or folder.name != cfgmod.DEFAULT_DB_DIR:
        return head + by
    return (
        f"{head}{by}; an index is private to its owner: to share it, the owner "
        f"adds `private_index = false` to {folder / cfgmod.CONFIG_NAME} and lets "
        f"a group read it (`chgrp -R GROUP {folder} && chmod -R g+rX {folder}`); "
        'see "Another user on this machine" in the README'
    )


def _owner(path: Path) -> str:
    """The user name owning ``path`` (or its folder), "" when it cannot be told."""
    for candidate in (path, path.parent):
        try:
            uid = candidate.stat().st_uid
        except OSError:
            continue
        try:
            import pwd

            return pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            return f"uid {uid}"
    return ""


_FS_ERRORS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota exceeded",
}


def os_error(exc: OSError, argv: list[str]) -> str | None:
    """One line for a file-system failure the core did not expect, or None.

    Permission, ownership, full-disk and read-only-mount failures are the
    user's to fix, never a traceback (issue #38).
    """
    what = _FS_ERRORS.get(exc.errno or 0)
    if what is None:
        return None
    where = f" at {exc.filename}" if exc.filename else ""
    again = command_line(argv)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = f"free some space, then run `{again}` again"
    else:
        fix = "pass --db FILE in a folder you may write, or set DOCINDEX_DB"
        if exc.filename:
            place = cfgmod.writable_db_for(Path(str(exc.filename)))
            fix = (
                "run it with an index you may write: "
                f"`{shlex.join(['docindex', *masked(_replace_db(argv, str(place)))])}`"
            )
    return f"{what}{where}; {fix}"
