"""What an index records of the settings it was built with, and the scope of a scan."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from docindex.config import Config
from docindex.embed.choice import choose, provider_hint
from docindex.embed.choice import embedder_for as _embedder
from docindex.errors import EmbedderMismatchError, OutsideRootsError
from docindex.store import Index

# 2: words first, then CJK n-grams (same multiset); 3: identifiers' words and
# joined names (issue #47). An index of another version answers queries but a
# scan asks for `reindex --full` (check_settings), and `stats` says why.
TOKENIZER_VERSION = 3


def tokenizer_settings(cfg: Config) -> dict[str, object]:
    """What the index records of the tokenizer ``cfg`` builds with."""
    return {"version": TOKENIZER_VERSION, "cjk_ngram": cfg.cjk_ngram, "stem": cfg.stem}


def tokenizer_notice(recorded: object) -> list[str]:
    """What ``stats`` says of an index built by another tokenizer version."""
    if not isinstance(recorded, dict) or recorded.get("version") == TOKENIZER_VERSION:
        return []
    return [
        f"the index was built by tokenizer version {recorded.get('version')} "
        f"(this docindex writes {TOKENIZER_VERSION}: identifiers split into words, "
        "issue #47); queries work, a scan asks for `docindex reindex --full`"
    ]


def embedder_params(cfg: Config) -> dict[str, object] | None:
    """The embedder parameters an index built with ``cfg`` records."""
    emb = _embedder(cfg)
    return None if emb is None else dict(emb.params())


def check_settings(store: Index, cfg: Config) -> None:
    """Refuse an index whose tokenizer or embedder differs from ``cfg``."""
    recorded = store.get_meta("tokenizer")
    wanted = tokenizer_settings(cfg)
    if recorded is not None and recorded != wanted:
        raise EmbedderMismatchError(
            f"the index was built with tokenizer settings {recorded}; "
            "run `docindex reindex --full` to rebuild it"
        )
    emb = store.get_meta("embedder")
    if emb is not None and emb != embedder_params(cfg):
        why = choose(cfg).reason
        held = emb.get("provider")
        if (
            why
            and held in ("minilm", "multilingual")
            and held == cfg.embedding_provider
        ):
            raise EmbedderMismatchError(
                f"this index holds {held} vectors but {why}: {provider_hint(held)}, "
                "or run `docindex reindex --full --provider ngram`"
            )
        raise EmbedderMismatchError(
            f"the index was built with embedder {emb.get('provider')} "
            f"(dim {emb.get('dim')}); run `docindex reindex --full` to rebuild it"
        )


def resolve_scope(roots: Sequence[Path], path: Path) -> Path:
    """Absolute ``path`` if it lies inside a root, else OutsideRootsError.

    It must resolve inside a root. It is kept as named (not resolved) when it
    is inside a root as named, so the walk's symlink rule
    (``walker.escape_reason``) sees its symlinks; a path that reaches a root
    through a symlink above it (a symlinked home folder) is used resolved.
    """
    from docindex.models.limits import check_path

    check_path("PATH", str(path))
    lexical = Path(os.path.normpath(Path(path).absolute()))
    real = Path(path).resolve()
    if any(real == root or root in real.parents for root in roots):
        for target in (lexical, real):
            if any(target == root or root in target.parents for root in roots):
                return target
    raise OutsideRootsError(
        f"{path} is outside the index's roots "
        f"({', '.join(map(str, roots)) or 'none yet'})"
    )


def _remember(store: Index, key: str, value: object) -> None:
    """Record a meta value unless it is already there: a no-op rescan writes nothing."""
    if store.get_meta(key) != value:
        store.set_meta(key, value)


def root_pins(store: Index) -> tuple[tuple[str, int, int, int], ...]:
    """The roots' pinned identities (issue #33), as ``WalkOptions.pins`` takes them."""
    pins = store.get_meta("root_pins") or {}
    return tuple((root, *map(int, pin)) for root, pin in sorted(pins.items()))


def pin_roots(store: Index, roots: Sequence[str], keep: Sequence[str] = ()) -> None:
    """Pin each root that is a real directory and has no pin yet (issue #33).

    The pins of other roots go, but those of ``keep`` (roots this machine
    does not read, issue #44: never looked at here).
    """
    from docindex.ingest.walker import root_problem

    pins = dict(store.get_meta("root_pins") or {})
    changed = False
    for root in roots:
        if root in pins or root_problem(Path(root)) is not None:
            continue
        try:
            st = os.stat(root)
        except OSError:
            continue
        pins[root] = [st.st_dev, st.st_ino, st.st_uid]
        changed = True
    for gone in set(pins) - set(roots) - set(keep):
        del pins[gone]
        changed = True
    if changed:
        with store.atomic():
            store.set_meta("root_pins", pins)
