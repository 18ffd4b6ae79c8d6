"""One writer that stays: ``docindex watch`` holds an exclusive lock on its index.

Two watchers on one index would both apply every change, each waiting for the
other's write lock, and only one could serve other commands (issue #38). The
lock is an ``flock`` on ``<index>.watch`` beside the index, which holds the
holder's pid so the second one can say who it is. The kernel drops the lock
when its holder exits, however it exits; the file stays (deleting it would
let a third watcher lock a file the second one no longer sees).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from docindex.errors import DocindexError


class WatcherRunningError(DocindexError):
    """Another ``docindex watch`` keeps this index current (exit 2)."""

    exit_code = 2


def lock_path(db: Path) -> Path:
    """Where the watch lock of ``db`` lives."""
    return Path(f"{db}.watch")


@contextlib.contextmanager
def watch_lock(db: Path) -> Iterator[None]:
    """Hold the watch lock of ``db`` for the block.

    Raises:
        WatcherRunningError: another process holds it; its pid is in the message.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no flock; a second watcher only warns
        yield
        return
    path = lock_path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    # 0600 like every other file of the index (#45: it was 0644); a lock file
    # an older docindex left wider is narrowed when it is ours.
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.fchmod(fd, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f"pid {holder}" if holder.isdigit() else "another process"
            how = f" (kill {holder})" if holder.isdigit() else ""
            raise WatcherRunningError(
                f"index {db} is already watched by {who}; one watcher keeps it "
                f"current and serves every other command: stop that one first{how}"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
