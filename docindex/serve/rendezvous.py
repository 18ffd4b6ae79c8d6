"""Where a CLI process and a watcher's server meet (issue #24): socket, address,
stamp, and the request's bytes.

Imported by the thin client on every ``docindex`` start, so it needs ``os`` only.
"""

from __future__ import annotations

import os

PROTOCOL = 3  # 3: descriptors with the confirmation; 2: NUL-separated fields
WATCHER_ENV = "DOCINDEX_WATCHER"  # auto (default), off, require
SOCKET_SUFFIX = ".sock"
MAX_REQUEST_BYTES = 1 << 20  # argv + environment; a real one is a few KiB
# The sockaddr_un path limit on Linux (108 bytes with the NUL).
_SUN_PATH_MAX = 107

# The one list of commands a watcher's server runs (issue #33): the client
# forwards exactly these and the server refuses anything else, so a
# hand-crafted request cannot reach `config`, `roots`, `vacuum`, `--version`...
# They gain from a warm process; the others (watch, mcp, reindex, vacuum,
# roots, config, eval, --help) always run in the calling process.
FORWARDED = frozenset(
    {"query", "scan", "show", "outline", "section", "list", "related", "stats",
     "skipped"}
)  # fmt: skip
# Options that would make a served command reach past the index's roots:
# `scan --root DIR` adds a root, so it runs in the caller's own process.
_NOT_SERVED_OPTIONS = {"scan": ("--root",)}


def servable(argv: list[str]) -> bool:
    """Whether a watcher's server may run ``argv`` (the client's ``sys.argv``).

    The same rule on both sides: the client forwards only these, the server
    refuses the rest and the client then runs the command itself.
    """
    if len(argv) < 2 or argv[1] not in FORWARDED:
        return False
    for arg in argv[2:]:
        if arg == "--":
            break
        for option in _NOT_SERVED_OPTIONS.get(argv[1], ()):
            if arg == option or arg.startswith(option + "="):
                return False
    return True


def socket_path(db: str | os.PathLike[str]) -> str:
    """Where the server for the index ``db`` listens: ``index.db.sock`` beside it."""
    return os.fspath(db) + SOCKET_SUFFIX


def address(path: str) -> tuple[str, int | None]:
    """An address ``connect``/``bind`` accept for ``path``, and a descriptor to close.

    A path past the 107-byte limit is reached through its folder's
    descriptor (``/proc/self/fd/N/name``).
    """
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path, None
    folder, name = os.path.split(path)
    fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return f"/proc/self/fd/{fd}/{name}", fd


def stamp() -> str:
    """This installation: its version, folder and when its files were written.

    A server started before an upgrade has another stamp, so a client of the
    new version runs its command itself instead of getting the old code.
    """
    from docindex import __version__

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{__version__} {here} {_newest_source(here)}"


def _newest_source(top: str) -> int:
    """The newest modification time of the package's ``.py`` files.

    Every file, not a sample: in an editable checkout an edit to any module
    must retire a warm server running the old code (issue #49 split the two
    files this used to read into many). ~0.3 ms for the package's ~150 files.
    """
    newest, folders = 0, [top]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    newest = max(newest, entry.stat().st_mtime_ns)
    return newest


def encode_request(
    stamp: str, argv: list[str], prog: str | None, cwd: str,
    env: dict[str, str], umask: int, stdio: list[tuple[str, str]],
) -> bytes:  # fmt: skip
    """One request as the server reads it: a length line, then NUL-separated fields.

    Fields: protocol, stamp, cwd, umask (octal), prog ("" for None), three
    (encoding, errors) pairs, the argv count, argv, then ``KEY=VALUE`` per
    variable. POSIX arguments, paths and environments hold no NUL, so no
    escaping is needed; text goes as UTF-8 with ``surrogatepass``, which
    gives back any ``str`` exactly (an undecodable argument included). Built
    with no import: ``json`` would cost the client ``re`` and ``enum``.
    """
    fields = [
        str(PROTOCOL), stamp, cwd, format(umask, "o"), prog or "",
        *(x for pair in stdio for x in pair), str(len(argv)), *argv,
        *(f"{k}={v}" for k, v in env.items()),
    ]  # fmt: skip
    body = "\0".join(fields).encode("utf-8", "surrogatepass")
    return b"%d\n" % len(body) + body


def watcher_mode() -> str:
    """``DOCINDEX_WATCHER``: auto, off or require (anything else reads as auto).

    Read here, not in ``config``: the client reads it before it imports
    anything else, and ``watch`` reads the same rule (``off`` serves nothing).
    """
    value = os.environ.get(WATCHER_ENV, "").strip().lower()
    return value if value in ("off", "require") else "auto"
