"""What a scan on this machine may read (issue #44).

An index names the roots to scan and how to walk them. A shared PostgreSQL
index is written by every writer of a team, and a SQLite file may come from
someone else; either could point this user's next scan at a private folder (a
root planted in this machine's name, a crafted import) or widen the walk
(hidden files, extra extensions, no ``.gitignore``). So what is read here is
decided here:

- a root is read when this user named it on this machine (``scan DIR``,
  ``--root``, ``roots add``/``move``/``accept``, ``DOCINDEX_ROOTS`` or the
  ``DOCINDEX_CONFIG`` file), or when it is the folder the index file lives in
  (``ROOT/.docindex/index.db``); the names are kept in one small file per
  user, ``$XDG_CONFIG_HOME/docindex/trust.json`` (0600, in a 0700 folder);
- a setting that widens the walk takes effect from this machine's flags (kept
  in the same file), environment or ``DOCINDEX_CONFIG`` file. The index's
  settings, and a ``config.toml`` that came with the index, may narrow the
  walk but never widen it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docindex import config as cfgmod
from docindex.config import Config
from docindex.store.location import ServerUrl

STATE_NAME = "trust.json"
_VERSION = 1


def _both(a: Any, b: Any) -> Any:
    return bool(a) and bool(b)


def _either(a: Any, b: Any) -> Any:
    return bool(a) or bool(b)


def _smaller(a: Any, b: Any) -> Any:
    return min(a, b)


def _common(a: Any, b: Any) -> Any:
    wanted = set(b)
    return tuple(x for x in a if x in wanted)


def _excludes(a: Any, b: Any) -> Any:
    """More patterns exclude more; a ``!pattern`` re-includes, so it is dropped."""
    return (*a, *(p for p in b if not p.startswith("!") and p not in a))


#: Settings that widen what a scan reads, each with the narrower of two values
#: (the values of one Config field: bools, ints or tuples of strings).
WIDENING: dict[str, Callable[[Any, Any], Any]] = {
    "hidden": _both,
    "follow_symlinks": _both,
    "use_gitignore": _either,
    "ocr": _both,
    "text_extensions": _common,
    "exclude": _excludes,
    "max_file_bytes": _smaller,
    "max_depth": _smaller,
    "max_walked_files": _smaller,
    "max_docs": _smaller,
    "max_segments": _smaller,
    "max_embedded": _smaller,
}


def narrowed(
    base: Config, wanted: Config, names: Iterable[str]
) -> tuple[Config, dict[str, object]]:
    """``wanted``'s values of ``names`` on top of ``base``, where a widening
    setting takes only the narrower of the two.

    Returns:
        The settings, and each widening setting whose wanted value was not
        taken (name -> that value).
    """
    changes: dict[str, object] = {}
    held_back: dict[str, object] = {}
    for name in names:
        if name == "roots" or name not in cfgmod.FIELDS:
            continue
        want = getattr(wanted, name)
        narrower = WIDENING.get(name)
        value = want if narrower is None else narrower(getattr(base, name), want)
        changes[name] = value
        if value != want:
            held_back[name] = want
    return base.replace(**changes), held_back


def still_held_back(cfg: Config, held_back: Mapping[str, object]) -> dict[str, object]:
    """The held-back values that ``cfg`` (the final settings) still does not admit."""
    out: dict[str, object] = {}
    for name, want in held_back.items():
        have = getattr(cfg, name)
        if WIDENING[name](have, want) != want:
            out[name] = want
    return out


def describe(held_back: Mapping[str, object], cfg: Config) -> str:
    """The held-back settings in words, for a scan's one-line notice."""
    parts = []
    for name, want in sorted(held_back.items()):
        if isinstance(want, bool):
            parts.append(f"{name} = {str(want).lower()}")
        elif isinstance(want, tuple):
            have = set(getattr(cfg, name))
            extra = [x for x in want if x not in have]
            parts.append(f"{name} {', '.join(extra)}")
        else:
            parts.append(f"{name} = {want}")
    return "; ".join(parts)


# -- the state file ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Accepted:
    """What this user accepted on this machine for one index."""

    roots: frozenset[str] = frozenset()
    settings: Mapping[str, object] = field(default_factory=dict)


def state_file() -> Path:
    """``$XDG_CONFIG_HOME/docindex/trust.json`` (``~/.config`` by default)."""
    return cfgmod.user_config_dir() / STATE_NAME


def index_key(db: Path | ServerUrl) -> str:
    """The name this machine knows an index by: its file, or its server,
    database and schema (never the user or password of the URL)."""
    if isinstance(db, Path):
        return str(db.resolve())
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(db.url)
    except Exception:  # the driver is missing or the URL malformed: open() says so
        return str(db)
    keep = ("service", "host", "hostaddr", "port", "dbname", "options")
    return "postgresql:" + "&".join(
        f"{k}={parts[k]}" for k in keep if parts.get(k) not in (None, "")
    )


def _read() -> dict[str, object]:
    try:
        data = json.loads(state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": _VERSION, "indexes": {}}
    if not isinstance(data, dict) or not isinstance(data.get("indexes"), dict):
        return {"version": _VERSION, "indexes": {}}
    return data


def accepted(db: Path | ServerUrl) -> Accepted:
    """What this user accepted for ``db`` on this machine (nothing when unknown)."""
    indexes = _read()["indexes"]
    entry = indexes.get(index_key(db)) if isinstance(indexes, dict) else None
    if not isinstance(entry, dict):
        return Accepted()
    roots = entry.get("roots")
    settings = entry.get("settings")
    return Accepted(
        frozenset(str(r) for r in roots) if isinstance(roots, list) else frozenset(),
        {k: v for k, v in settings.items() if k in WIDENING}
        if isinstance(settings, dict)
        else {},
    )


def record(
    db: Path | ServerUrl, *, roots: Iterable[str] = (),
    settings: Mapping[str, object] | None = None, forget: Iterable[str] = (),
) -> str | None:  # fmt: skip
    """Remember roots this user named and widening flags this user passed.

    Returns:
        None, or a warning when the state file cannot be written (the named
        roots are still read by this command; a later plain scan asks again).
    """
    roots, forget = list(roots), set(forget)
    wanted = {k: v for k, v in (settings or {}).items() if k in WIDENING}
    before = accepted(db)
    if (
        before.roots.issuperset(roots)
        and not forget & before.roots
        and all(before.settings.get(k) == _jsonable(v) for k, v in wanted.items())
    ):
        return None  # nothing new: a rescan writes nothing
    path = state_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with _locked(path):
            data = _read()
            indexes = data.setdefault("indexes", {})
            assert isinstance(indexes, dict)
            entry = indexes.setdefault(index_key(db), {})
            have = [r for r in entry.get("roots", []) if r not in forget]
            entry["roots"] = sorted({*have, *roots})
            kept = dict(entry.get("settings", {}))
            kept.update({k: _jsonable(v) for k, v in wanted.items()})
            entry["settings"] = kept
            _write(path, data)
    except OSError as exc:
        return (
            f"cannot record what you accepted in {path} ({exc.strerror}); the "
            "roots you named are scanned now, a plain scan will leave them out"
        )
    return None


def _jsonable(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on the state's folder while two commands record at once."""
    try:
        import fcntl
    except ImportError:  # Windows: the last writer wins
        yield
        return
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, data: Mapping[str, object]) -> None:
    """Replace the state file atomically, 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


# -- roots ---------------------------------------------------------------------


def home_root(db: Path | ServerUrl) -> str | None:
    """The folder that holds a SQLite index at ``ROOT/.docindex/index.db``."""
    if isinstance(db, Path) and db.parent.name == cfgmod.DEFAULT_DB_DIR:
        return str(db.parent.parent.resolve())
    return None


@dataclass(frozen=True, slots=True)
class RootGate:
    """The index's roots split into those this machine reads and the rest."""

    read: tuple[str, ...]
    left_out: tuple[str, ...]

    def notice(self) -> str | None:
        """One line: what was left out and how to accept it."""
        if not self.left_out:
            return None
        import shlex

        n = len(self.left_out)
        listed = ", ".join(self.left_out)
        fix = " ".join(shlex.quote(r) for r in self.left_out)
        return (
            f"left out {n} root{'s' if n > 1 else ''} this machine has not "
            f"accepted: {listed} (added on another machine, by another user or "
            f"by an import); to read {'them' if n > 1 else 'it'} here, run "
            f"`docindex roots accept {fix}`"
        )


def gate_roots(
    db: Path | ServerUrl, roots: Iterable[str], named: Iterable[str]
) -> RootGate:
    """Which of ``roots`` this machine reads: the ``named`` ones (this command,
    the environment, the user's own config file), the index's home folder,
    and those accepted here before."""
    ok = set(named) | accepted(db).roots
    home = home_root(db)
    if home is not None:
        ok.add(home)
    roots = list(roots)
    return RootGate(
        tuple(r for r in roots if r in ok), tuple(r for r in roots if r not in ok)
    )
