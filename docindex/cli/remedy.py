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

_COMMAND = re.compile(r"`(docindex [^`]*)`")
# Commands that take --db (every command but `eval`, which makes its own).
_TAKES_DB = frozenset(
    "scan query reindex stats vacuum watch mcp outline show section list related "
    "skipped roots config".split()
)


def db_word(db: str) -> str:
    """A ``--db`` value as a remedy prints it: the one place every remedy's
    index passes through (a server URL's password is for this to mask)."""
    return shlex.quote(db)


def again(argv: list[str]) -> str:
    """The user's command line, as a remedy prints it (its ``--db`` by ``db_word``)."""
    words = ["docindex"]
    after_db = False
    for arg in argv:
        if after_db:
            words.append(db_word(arg))
        elif arg.startswith("--db="):
            words.append("--db=" + db_word(arg[len("--db=") :]))
        else:
            words.append(shlex.quote(arg))
        after_db = arg == "--db" and not after_db
    return " ".join(words)


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
        return f"`{command} --db {db_word(db)}`"

    return _COMMAND.sub(add, message)


def elsewhere(argv: list[str], exc: IndexNotWritableError) -> str:
    """The index cannot be made where asked: the same command, writing elsewhere."""
    target = cfgmod.writable_db_for(exc.path)
    command = again(_replace_db(argv, str(target)))
    head = str(exc).split("; pass --db", 1)[0]
    return f"{head}; keep it elsewhere: `{command}` (or set DOCINDEX_DB)"


def busy(message: str, argv: list[str]) -> str:
    """ "index is busy": the user's command again, waiting two minutes (#45)."""
    return f"{message}: `DOCINDEX_BUSY_TIMEOUT_S=120 {again(argv)}`"


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
    folder = path.parent if path.name.startswith("index.db") else None
    if folder is None or folder.name != cfgmod.DEFAULT_DB_DIR:
        return head
    owner = _owner(path)
    by = f" (it is {owner}'s)" if owner else ""
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
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = f"free some space, then run `{again(argv)}` again"
    else:
        fix = "pass --db FILE in a folder you may write, or set DOCINDEX_DB"
        if exc.filename:
            place = cfgmod.writable_db_for(Path(str(exc.filename)))
            fix = (
                "run it with an index you may write: "
                f"`{again(_replace_db(argv, str(place)))}`"
            )
    return f"{what}{where}; {fix}"
