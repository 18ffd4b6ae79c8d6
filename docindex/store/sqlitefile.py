"""The SQLite index as a file (issues #17, #33, #38): its place checked before it is
opened, its permissions (private to its owner), read-only mounts and folders,
an interrupted writer's journal, and SQLite's errors as one-line messages
with a remedy (a damaged index's roots salvaged for the rebuild command).
Split from ``sqlite`` (the open connection), #49.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import sqlite3
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from docindex.config import DEFAULT_DB_DIR
from docindex.errors import (
    DocindexError,
    IndexBusyError,
    IndexCorruptError,
    IndexNotFoundError,
    IndexNotWritableError,
    ReadOnlyIndexError,
)

if TYPE_CHECKING:
    pass


SQLITE_HEADER = b"SQLite format 3\x00"


def busy_message(where: str) -> str:
    """ "index is busy", with what to do about it (#45)."""
    return (
        f"index is busy (another docindex is writing){where}; run the command "
        "again when that scan, reindex, vacuum or watch catch-up ends, or let it "
        "wait longer than busy_timeout_s (10 s by default)"
    )


def translate(exc: sqlite3.Error, path: Path | str) -> DocindexError:
    """Turn an sqlite3 error into a one-line DocindexError that says what to do."""
    msg = str(exc)
    # Python 3.11+ names the primary/extended result code (SQLITE_CORRUPT_VTAB...).
    code = getattr(exc, "sqlite_errorname", "") or ""
    # The CLI passes "" when it does not know which file failed.
    index = f"index {path}" if str(path) else "the index"
    if "locked" in msg or "busy" in msg:
        where = f": {path}" if str(path) else ""
        return IndexBusyError(busy_message(where))
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or (
        isinstance(exc, sqlite3.DatabaseError)
        and ("malformed" in msg or "not a database" in msg or "corrupt" in msg)
    ):
        return IndexCorruptError(f"{index} is damaged ({msg}); {repair_hint(path)}")
    if "readonly" in msg or "read-only" in msg:
        return DocindexError(
            f"{index} is read-only ({msg}); the file and its folder must be writable"
        )
    if "disk is full" in msg or (
        "disk I/O error" in msg and str(path) and _nearly_full(Path(path))
    ):
        # A full disk met while growing -shm or -wal is an I/O error to SQLite.
        return DocindexError(
            f"disk full while writing {index}; the index is unchanged: free "
            "some space and run the command again"
        )
    if "unable to open" in msg:
        return DocindexError(
            f"cannot open {index}: {msg} (a WAL index needs a writable folder "
            "for its -wal and -shm files)"
        )
    return DocindexError(f"error in {index}: {msg}")


def _nearly_full(path: Path) -> bool:
    """True when the file system holding ``path`` has under 1 MB free."""
    folder = path if path.is_dir() else path.parent
    try:
        stat = os.statvfs(folder)
    except (OSError, AttributeError):
        return False
    return stat.f_bavail * stat.f_frsize < (1 << 20)


def repair_hint(path: Path | str) -> str:
    """The one command that fixes a damaged index at ``path`` (issue #17).

    ``reindex --full`` rebuilds from the roots the index remembers, or from
    the folder that holds ``.docindex/index.db``; when neither is known it
    needs ``--root``, so the hint names that command, not one that would only
    answer with another hint.
    """
    if not str(path):
        return "run `docindex reindex --full` or point --db elsewhere"
    path = Path(path)
    if path.parent.name == DEFAULT_DB_DIR or _remembers_roots(path):
        return "run `docindex reindex --full` to rebuild it"
    quoted = shlex.quote(str(path))
    roots = salvaged_roots(path)
    if roots:  # the real folders, never a placeholder to type over (#45)
        named = " ".join(f"--root {shlex.quote(r)}" for r in roots)
        return f"rebuild it with `docindex reindex --full {named} --db {quoted}`"
    return (
        "its roots cannot be read from it: rebuild it with docindex reindex --full "
        f"--db {quoted} and a --root for each folder it indexed, or point --db "
        "elsewhere"
    )


def _remembers_roots(path: Path) -> bool:
    """True when the settings, with roots, read back from ``path`` (read-only)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return False
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'settings'").fetchone()
        return bool(row and json.loads(row[0]).get("roots"))
    except (sqlite3.Error, ValueError, AttributeError):
        return False
    finally:
        conn.close()


_ROOTS_KEY = b'"roots": ['


SALVAGE_BYTES = 64 << 20  # a damaged index is searched this far for its settings


def salvaged_roots(path: Path) -> list[str]:
    """The roots a damaged index remembered, read from its bytes (#45).

    When SQLite can no longer read the file, the ``settings`` meta value (JSON
    with ``"roots": [...]``) is usually still there as written. Only folders
    that exist are returned; the last copy wins (a page rewritten later).
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(SALVAGE_BYTES)
    except OSError:
        return []
    found: list[str] = []
    decoder = json.JSONDecoder()
    at = data.rfind(_ROOTS_KEY)
    while at >= 0 and not found:
        start = at + len(_ROOTS_KEY) - 1
        try:
            value, _ = decoder.raw_decode(
                data[start : start + 65536].decode("utf-8", "replace")
            )
        except (ValueError, UnicodeDecodeError):
            value = None
        if isinstance(value, list):
            found = [r for r in value if isinstance(r, str) and Path(r).is_dir()]
        at = data.rfind(_ROOTS_KEY, 0, at)
    return found


def read_only_filesystem(path: Path) -> bool:
    """True when ``path``'s file system is mounted read-only."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows), or gone
        return False


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK) and not read_only_filesystem(path)


def read_only_query(path: Path) -> str:
    """The URI query that opens ``path`` for reading only (issue #38).

    ``mode=ro`` reads a WAL index through its ``-shm`` file, which SQLite must
    be able to open or create: an index in a folder this user may not write,
    or on a read-only mount, with no ``-wal``/``-shm`` beside it (its writer
    closed it cleanly) cannot be read that way ("attempt to write a readonly
    database"). Then ``immutable=1`` reads the file without locks or a
    ``-shm``. That is safe only while nobody writes it: a writer writes the
    ``-wal`` first and only a checkpoint changes the file itself, so we take
    it only when there is no ``-wal`` and we cannot make one ourselves (a
    writer of ours cannot run); on a read-only mount nobody can write at all.
    """
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if read_only_filesystem(path):
        return "?mode=ro&immutable=1"
    if wal.exists() and wal.stat().st_size > 0:
        return "?mode=ro"
    if shm.exists() or os.access(path.parent, os.W_OK):
        return "?mode=ro"
    return "?mode=ro&immutable=1"


def check_place(path: Path, *, create: bool, readonly: bool) -> bool:
    """Whether an index file is at ``path``; refuse what cannot be opened as
    asked (no file, not SQLite, not writable), with ``create`` make its folder.

    Raises:
        IndexNotFoundError, IndexCorruptError, IndexNotWritableError: as
            ``Store.open`` says.
    """
    exists = path.is_file() and path.stat().st_size > 0
    if not exists and not create:
        raise IndexNotFoundError(
            f"no index at {path}; run `docindex scan DIR` first or pass --db"
        )
    if exists:
        with path.open("rb") as fh:
            if fh.read(16) != SQLITE_HEADER:
                raise IndexCorruptError(
                    f"{path} is not an SQLite database; delete it or use another --db"
                )
    if not readonly:
        _check_writable(path, exists)
    if create:
        try:
            _make_private_folder(path.parent)
        except OSError as exc:
            raise _not_writable(path, exc) from None
        if not exists and not _writable(path.parent):
            denied = errno.EROFS if read_only_filesystem(path.parent) else errno.EACCES
            raise _not_writable(path, OSError(denied, os.strerror(denied)))
    return exists


def _check_writable(path: Path, exists: bool) -> None:
    """Refuse, in one line, to write an index this user may only read (issue #38)."""
    if exists:
        if read_only_filesystem(path):
            why = "it is on a read-only file system"
        elif not os.access(path, os.W_OK):
            why = "you may not write the file"
        elif not os.access(path.parent, os.W_OK):
            why = (
                f"you may not write its folder {path.parent} (SQLite keeps -wal there)"
            )
        else:
            return
        raise ReadOnlyIndexError(
            f"index {path} is read-only here ({why}): reading commands (query, "
            "list, show, stats...) work, but this command writes the index"
        )


def _not_writable(path: Path, exc: OSError) -> IndexNotWritableError:
    reason = exc.strerror or str(exc)
    return IndexNotWritableError(
        f"cannot create the index at {path} ({reason}); pass --db FILE in a "
        "folder you may write, or set DOCINDEX_DB",
        path,
    )


def roll_back_hot_journal(path: Path, busy_timeout: float) -> None:
    """Roll back a journal left by a killed writer, so a read-only open works.

    A first scan writes with a rollback journal (``bulk_journal``); killed, it
    leaves a hot journal that only a writable connection may roll back. Every
    command starts with a read-only look at the index, which then failed with
    "attempt to write a readonly database" until something opened it writable
    (issue #17). A read on a writable connection rolls the journal back; with
    no hot journal it is a plain read. Without write access the read-only open
    reports the problem.
    """
    journal = Path(f"{path}-journal")
    if not journal.is_file() or journal.stat().st_size == 0:
        return
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return
    with contextlib.suppress(sqlite3.Error):
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=busy_timeout
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()


def _make_private_folder(folder: Path) -> None:
    """Create the index's folder readable by its owner alone (issue #33)."""
    if folder.exists():
        return
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    # mkdir's mode passes through the umask; 0700 is what we mean whatever it is.
    os.chmod(folder, 0o700)


def make_private(path: Path, create: bool) -> list[str]:
    """Index files 0600, its ``.docindex`` folder 0700; the paths that were wider.

    The index holds the text of every file it read, whatever their modes, so
    it is as private as the most private of them (issue #33). SQLite gives the
    ``-wal`` and ``-shm`` files the mode of the database file itself, so the
    database is created (or tightened) before SQLite opens it.
    """
    tightened: list[str] = []
    if create and not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    candidates = [(path, 0o600)]
    candidates += [(Path(f"{path}{suffix}"), 0o600) for suffix in ("-wal", "-shm")]
    if path.parent.name == ".docindex":
        candidates.append((path.parent, 0o700))
    for candidate, mode in candidates:
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if st.st_uid != os.geteuid() or not stat.S_IMODE(st.st_mode) & 0o077:
            continue
        with contextlib.suppress(OSError):
            os.chmod(candidate, mode)
            tightened.append(str(candidate))
    return tightened
