"""Where git keeps a repository's ignore rules besides its ``.gitignore``
files (issue #25): the repository's top and ``.git`` folder (worktrees and
submodules included), ``.git/info/exclude`` and ``core.excludesFile`` from
git's configuration files. Split from ``ignore``, #49.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from docindex.config import git_config_files
from docindex.ingest.gitpatterns import Layer

# A rules file is read up to this size; git's own cap is 100 MiB. A cut file
# loses its last, partial line rather than keeping half a pattern (issue #8).
MAX_RULES_FILE_BYTES = 8 * 1024 * 1024


def repo_layers(top: Path, common: Path, base: str) -> list[Layer]:
    """core.excludesFile (lowest) and info/exclude of the repository at ``top``."""
    out = []
    excludes = _excludes_file(top, common)
    lines = read_rules(str(excludes)) if excludes is not None else None
    if lines:
        out.append(Layer(base, lines))
    lines = read_rules(str(common / "info" / "exclude"))
    if lines:
        out.append(Layer(base, lines))
    return out


def find_repo(start: Path) -> tuple[Path, Path] | None:
    """(work tree top, common git directory) of the repository holding ``start``."""
    for folder in (start, *start.parents):
        common = git_dir(folder)
        if common is not None:
            return folder, common
    return None


def git_dir(folder: Path) -> Path | None:
    """The common git directory when ``folder`` is a work tree top, else None."""
    dotgit = folder / ".git"
    try:
        mode = os.stat(dotgit).st_mode
    except OSError:
        return None
    gitdir = dotgit
    if stat.S_ISREG(mode):  # a linked worktree or a submodule: "gitdir: <path>"
        first = (read_rules(str(dotgit)) or [""])[0]
        if not first.startswith("gitdir:"):
            return None
        gitdir = folder / first[len("gitdir:") :].strip()
    if not (gitdir / "HEAD").exists():
        return None
    commondir = read_rules(str(gitdir / "commondir"))
    if commondir and commondir[0].strip():
        return gitdir / commondir[0].strip()
    return gitdir


def _excludes_file(top: Path, common: Path) -> Path | None:
    """core.excludesFile from git's config files, without running git.

    Read in git's order (system, global, the repository's own; the last one
    wins): only the ``[core]`` section's ``excludesFile`` key is looked at, and
    ``include.path`` is not followed. Unset, git's default file is used.
    """
    files, default = git_config_files()
    value: str | None = None
    for path in (*files, common / "config"):
        value = _config_value(path, "core", "excludesfile") or value
    if value is None:
        return default
    expanded = Path(os.path.expanduser(value))
    return expanded if expanded.is_absolute() else top / expanded


def _config_value(path: Path, section: str, key: str) -> str | None:
    lines = read_rules(str(path))
    found = None
    current = ""
    for raw in lines or ():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            current = line[1:end].strip().lower() if end > 0 else ""
            line = line[end + 1 :].strip() if end > 0 else ""
        if current != section or not line or line[0] in "#;":
            continue
        name, sep, value = line.partition("=")
        if sep and name.strip().lower() == key:
            found = _config_string(value.strip())
    return found


def _config_string(value: str) -> str:
    """A git config value: quotes removed, escapes undone, a trailing comment cut."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == '"':
            quoted = not quoted
        elif ch == "\\" and i + 1 < len(value):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(value[i], value[i]))
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def read_rules(path: str, *, in_tree: bool = False) -> list[str] | None:
    """The lines of a rules file, or None when it is missing or not a regular file.

    O_NONBLOCK and the regular-file check: a FIFO named .gitignore must not
    block the walk forever, nor a huge one cost its size in memory (issue #8).
    Like git, a ``.gitignore`` inside the tree is not read through a symlink.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if in_tree:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read(MAX_RULES_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_RULES_FILE_BYTES:
        data = data[: data.rfind(b"\n", 0, MAX_RULES_FILE_BYTES) + 1]
    # git splits on "\n" only (a "\r" before it is dropped per line) and skips a BOM.
    return data.decode("utf-8", "replace").removeprefix("\ufeff").split("\n")
