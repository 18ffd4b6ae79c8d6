"""Settings: defaults, a TOML file, ``DOCINDEX_*`` environment overrides.

Precedence, lowest first: defaults, settings remembered in the index, the TOML
file, the environment, command-line flags. Only this module reads the
environment.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docindex.errors import ConfigError

DEFAULT_DB_DIR = ".docindex"
# Embedding providers (issue #47 added multilingual); the CLI offers these.
PROVIDERS = ("ngram", "none", "minilm", "multilingual")
DEFAULT_DB_NAME = "index.db"
CONFIG_NAME = "config.toml"


@dataclass(frozen=True, slots=True)
class Config:
    """Every setting docindex has; the TOML file may set any of them.

    The TOML file uses these names at the top level, or grouped in tables
    (``[walk]``, ``[segment]``, ``[embedding]``, ``[ranking]``) whose keys are
    the field names with the group prefix dropped, e.g. ``[embedding] dim = 512``.
    """

    roots: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    use_gitignore: bool = True
    hidden: bool = False
    follow_symlinks: bool = False
    text_extensions: tuple[str, ...] = ()
    max_docs: int = 20_000
    max_segments: int = 300_000
    max_embedded: int = 300_000
    max_file_bytes: int = 5 * 1024 * 1024
    max_depth: int = 64
    max_walked_files: int = 200_000
    segment_chars: int = 400
    cjk_ngram: int = 2
    stem: bool = True
    embedding_provider: str = "ngram"
    embedding_dim: int = 256
    embedding_model: str = ""
    rrf_k: float = 60.0
    semantic_weight: float = 0.15
    # The minilm list's weight (issue #9): SciFact auto nDCG@10 with weights
    # 1.0 / 1.5 / 2.0 was 0.7236 / 0.7340 / 0.7418 (earlier sweep: 3.0 lower).
    neural_weight: float = 2.0
    # The multilingual list's weight (issue #47): at 2.0 KorQuAD --files fell
    # to 0.914 (the default provider 0.970); at 1.0 it held 0.974, and
    # bench/crosslingual.py kept 0.82-0.84 (dev) against 0.65-0.70 for ngram.
    multilingual_weight: float = 1.0
    title_weight: float = 1.0
    fusion: str = "score"
    workers: int = 0
    extract_timeout_s: float = 30.0
    max_sheet_rows: int = 100_000
    max_pdf_pages: int = 2_000
    busy_timeout_s: float = 10.0
    # How long `watch` and `mcp` keep trying to reach a server index that went
    # away (a restart, a failover) before they give up (issue #44).
    reconnect_timeout_s: float = 300.0
    # A writer makes the index owner-only (issue #33); false leaves its modes
    # as they are, for an index other local users are meant to read (#38).
    private_index: bool = True
    # Optional OCR of scanned PDF pages and images (issue #36): ``ocr = true``
    # or ``[ocr] enabled = true``; languages empty = eng + installed CJK packs.
    ocr: bool = False
    ocr_languages: tuple[str, ...] = ()
    ocr_page_timeout_s: float = 60.0
    ocr_timeout_s: float = 600.0
    # A scan's OCR time in all (#45): past it, files that need OCR wait for the
    # next scan (the cache keeps the pages read).
    ocr_scan_timeout_s: float = 3600.0
    ocr_max_pixels: int = 12_000_000
    # A synonym file in Recoll's format (issue #47): a query term of a group
    # also matches the others, below the terms typed. Empty: no expansion.
    # A relative path in a config file is relative to that file's folder.
    synonyms: str = ""
    # The OCR text cache ($XDG_CACHE_HOME/docindex/ocr) is pruned to this after
    # each scan that ran OCR, least recently used first (#45).
    ocr_cache_max_bytes: int = 256 * 1024 * 1024

    def replace(self, **changes: Any) -> Config:  # each field's own type
        """Return a copy with ``changes`` applied and validated."""
        return validate(dataclasses.replace(self, **changes))

    def index_settings(self) -> dict[str, object]:
        """The settings an index remembers (roots, walk rules, tokenizer, embedder)."""
        return {f: _jsonable(getattr(self, f)) for f in _REMEMBERED}


_REMEMBERED = (
    "roots", "exclude", "use_gitignore", "hidden", "follow_symlinks",
    "text_extensions", "max_docs", "max_segments", "max_embedded",
    "max_file_bytes", "max_depth", "max_walked_files", "segment_chars",
    "cjk_ngram", "stem", "embedding_provider", "embedding_dim", "embedding_model",
    # OCR stays on for an index scanned with --ocr until --no-ocr (#45)
    "ocr", "ocr_languages",
)  # fmt: skip
_GROUPS = {
    "walk": "", "segment": "segment_", "embedding": "embedding_", "ranking": "",
    "ocr": "ocr_",
}  # fmt: skip
_ALIASES = {"ocr_enabled": "ocr"}  # [ocr] enabled = true
FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _grouped(group: str, sub: str) -> str:
    """The field a key ``sub`` of table ``[group]`` names ("" when none)."""
    name = sub if sub in FIELDS else _GROUPS[group] + sub
    name = _ALIASES.get(name, name)
    return name if name in FIELDS else ""


def _jsonable(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def _coerce(name: str, value: Any) -> Any:  # TOML/env/JSON in, the field's type out
    """Coerce a TOML/env/JSON value to the field's type, or raise ConfigError."""
    default = FIELDS[name].default
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, int):
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            if isinstance(value, str):
                sep = os.pathsep if name == "roots" else ","
                return tuple(p for p in value.split(sep) if p)
            return tuple(str(v) for v in value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid value for {name}: {value!r}") from exc


def validate(cfg: Config) -> Config:
    """Check ranges; raise ConfigError with the offending setting's name."""
    checks = [
        (1 <= cfg.cjk_ngram <= 3, "cjk_ngram must be 1, 2 or 3"),
        (16 <= cfg.embedding_dim <= 8192, "embedding_dim must be in 16..8192"),
        (cfg.embedding_provider in PROVIDERS,
         "embedding_provider must be ngram, none, minilm or multilingual"),
        (50 <= cfg.segment_chars <= 100_000, "segment_chars must be in 50..100000"),
        (cfg.rrf_k > 0, "rrf_k must be > 0"),
        (cfg.reconnect_timeout_s > 0, "reconnect_timeout_s must be > 0"),
        (cfg.fusion in ("score", "rrf"), "fusion must be score or rrf"),
        (0.0 <= cfg.semantic_weight <= 10.0, "semantic_weight must be in 0..10"),
        (0.0 <= cfg.neural_weight <= 10.0, "neural_weight must be in 0..10"),
        (0.0 <= cfg.multilingual_weight <= 10.0,
         "multilingual_weight must be in 0..10"),
        (cfg.max_docs > 0 and cfg.max_segments > 0, "caps must be positive"),
        (cfg.max_depth >= 0, "max_depth must be >= 0"),
        (cfg.ocr_page_timeout_s > 0 and cfg.ocr_timeout_s > 0
         and cfg.ocr_scan_timeout_s > 0, "ocr timeouts must be > 0"),
        (cfg.ocr_cache_max_bytes >= 0, "ocr_cache_max_bytes must be >= 0"),
        (cfg.ocr_max_pixels >= 100_000, "ocr_max_pixels must be >= 100000"),
        (all(x.replace("_", "").isalnum() for x in cfg.ocr_languages),
         "ocr_languages are Tesseract codes such as eng, chi_sim"),
    ]  # fmt: skip
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    return cfg


def from_mapping(data: Mapping[str, object], base: Config | None = None) -> Config:
    """Build a Config from a (possibly grouped) mapping, as read from TOML or JSON."""
    changes: dict[str, Any] = {}
    for key, value in data.items():
        key = key.replace("-", "_")
        if key == "db" and isinstance(value, dict):
            continue  # where the index is (file_db_url), not a setting
        if isinstance(value, dict) and key in _GROUPS:
            for sub, subvalue in value.items():
                sub = sub.replace("-", "_")
                name = _grouped(key, sub)
                if not name:
                    raise ConfigError(f"unknown setting [{key}] {sub}")
                changes[name] = _coerce(name, subvalue)
        elif key in FIELDS:
            changes[key] = _coerce(key, value)
        else:
            raise ConfigError(f"unknown setting {key!r}")
    return validate(dataclasses.replace(base or Config(), **changes))


def mapping_fields(data: Mapping[str, object]) -> set[str]:
    """The setting names a (possibly grouped) mapping sets (``docindex config``)."""
    names: set[str] = set()
    for key, value in data.items():
        key = key.replace("-", "_")
        if isinstance(value, dict) and key in _GROUPS:
            for sub in value:
                name = _grouped(key, sub.replace("-", "_"))
                if name:
                    names.add(name)
        elif key in FIELDS:
            names.add(key)
    return names


def file_fields(path: Path) -> set[str]:
    """The setting names a TOML file sets (it was read once already: no errors)."""
    import tomllib

    try:
        with path.open("rb") as fh:
            return mapping_fields(tomllib.load(fh))
    except (OSError, tomllib.TOMLDecodeError):
        return set()


def env_fields(environ: dict[str, str] | None = None) -> set[str]:
    """The setting names ``DOCINDEX_*`` variables set."""
    env = os.environ if environ is None else environ
    return {name for name in FIELDS if f"DOCINDEX_{name.upper()}" in env}


def load_file(path: Path, base: Config | None = None) -> Config:
    """Read a TOML configuration file on top of ``base``."""
    import tomllib  # only when a file exists: a query should not pay for it

    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from exc
    cfg = from_mapping(data, base)
    if "synonyms" in mapping_fields(data) and cfg.synonyms:
        where = Path(cfg.synonyms).expanduser()
        cfg = cfg.replace(
            synonyms=str(where if where.is_absolute() else path.parent / where)
        )
    return cfg


def from_env(base: Config, environ: dict[str, str] | None = None) -> Config:
    """Apply ``DOCINDEX_<FIELD>`` variables (``DOCINDEX_ROOTS`` split on os.pathsep)."""
    env = os.environ if environ is None else environ
    changes = {
        name: _coerce(name, env[f"DOCINDEX_{name.upper()}"])
        for name in FIELDS
        if f"DOCINDEX_{name.upper()}" in env
    }
    return validate(dataclasses.replace(base, **changes)) if changes else base


def env_value(name: str) -> str | None:
    """Read one ``DOCINDEX_*`` variable (``DB``, ``CONFIG``) for the CLI layer."""
    value = os.environ.get(f"DOCINDEX_{name}")
    return value or None


def file_db_url(environ: dict[str, str] | None = None, key: str = "url") -> str | None:
    """The ``[db] url`` of the ``DOCINDEX_CONFIG`` file, if it names one (#34).

    ``[db] url = "postgresql://..."`` points every command at a server index;
    prefer a password file (``~/.pgpass``) or ``PGPASSWORD`` to a password in
    the URL. ``key="read_url"``: the replica that reading commands use
    instead (issue #48).
    """
    env = os.environ if environ is None else environ
    name = env.get("DOCINDEX_CONFIG")
    if not name:
        return None
    import tomllib

    try:
        with Path(name).open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return None  # load_file reports it
    table = data.get("db")
    url = table.get(key) if isinstance(table, dict) else None
    return str(url) if url else None


def host_name(environ: dict[str, str] | None = None) -> str:
    """This machine's name for a shared index's per-host root paths (issue #34).

    ``DOCINDEX_HOST`` overrides the host name (a container, or one machine
    that should act as another).
    """
    import socket

    env = os.environ if environ is None else environ
    return env.get("DOCINDEX_HOST") or socket.gethostname()


def find_index(start: Path) -> Path | None:
    """Walk up from ``start`` looking for ``.docindex/index.db``, as git finds ``.git``."""
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_DB_DIR / DEFAULT_DB_NAME
        if candidate.is_file():
            return candidate
    return None


def default_db_for_root(root: Path) -> Path:
    """Where ``scan`` creates a new index when none is named or found."""
    return root.resolve() / DEFAULT_DB_DIR / DEFAULT_DB_NAME


def writable_db_for(index: Path) -> Path:
    """A place this user may write for an index that cannot live at ``index`` (#38).

    ``$XDG_DATA_HOME/docindex/NAME.db`` (``~/.local/share`` by default), else
    the temporary folder; NAME is the folder the index was meant for.
    """
    import tempfile

    home = index.parent.parent if index.parent.name == DEFAULT_DB_DIR else index.parent
    name = f"{home.name or 'index'}.db"
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    for folder in (Path(data) / "docindex", Path(tempfile.gettempdir()) / "docindex"):
        existing = folder
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
            return folder / name
    return Path(tempfile.gettempdir()) / name


def config_file_for(
    db: Path | object, environ: dict[str, str] | None = None
) -> Path | None:
    """The TOML file that applies: ``DOCINDEX_CONFIG``, else ``config.toml`` beside the index.

    A server index (issue #34) has no folder: only ``DOCINDEX_CONFIG`` applies.
    """
    env = os.environ if environ is None else environ
    if env.get("DOCINDEX_CONFIG"):
        return Path(env["DOCINDEX_CONFIG"])
    if not isinstance(db, Path):
        return None
    candidate = db.parent / CONFIG_NAME
    return candidate if candidate.is_file() else None


def user_config_dir(environ: dict[str, str] | None = None) -> Path:
    """Per-user config folder: what this user accepted on this machine (#44)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "docindex"


def local_config_file(environ: dict[str, str] | None = None) -> Path | None:
    """The config file this user chose (``DOCINDEX_CONFIG``), if any (#44).

    Unlike ``config.toml`` beside an index, which came with the index and may
    have been written by anyone who could write the index's folder.
    """
    env = os.environ if environ is None else environ
    name = env.get("DOCINDEX_CONFIG")
    return Path(name) if name else None


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    """Per-user cache folder (the neural provider's optimised model, issue #9)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docindex"


def git_config_files(
    environ: dict[str, str] | None = None,
) -> tuple[list[Path], Path | None]:
    """Git's system and global config files in git's reading order, and its default ignore file.

    Read from the environment the way git does (``GIT_CONFIG_NOSYSTEM``,
    ``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_GLOBAL``, ``XDG_CONFIG_HOME``, ``HOME``),
    so the walker finds ``core.excludesFile`` without running git (issue #25).
    The default ignore file is ``$XDG_CONFIG_HOME/git/ignore``.
    """
    env = os.environ if environ is None else environ
    files: list[Path] = []
    if not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    home = env.get("HOME")
    xdg = env.get("XDG_CONFIG_HOME") or (str(Path(home, ".config")) if home else "")
    if "GIT_CONFIG_GLOBAL" in env:
        if env["GIT_CONFIG_GLOBAL"]:
            files.append(Path(env["GIT_CONFIG_GLOBAL"]))
    else:
        if xdg:
            files.append(Path(xdg, "git", "config"))
        if home:
            files.append(Path(home, ".gitconfig"))
    return files, (Path(xdg, "git", "ignore") if xdg else None)
