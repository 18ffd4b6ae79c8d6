"""Settings: defaults, TOML (flat and grouped), environment, validation."""

import os
from pathlib import Path

import pytest

from docindex.config import Config, from_env, from_mapping, load_file
from docindex.errors import ConfigError


def test_defaults() -> None:
    cfg = Config()
    assert cfg.max_docs == 20_000 and cfg.max_segments == 300_000
    assert cfg.max_file_bytes == 5 * 1024 * 1024 and cfg.max_depth == 64
    assert cfg.max_walked_files == 200_000 and cfg.cjk_ngram == 2
    assert cfg.rrf_k == 60 and cfg.semantic_weight == 0.15


def test_toml_grouped_and_flat(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'exclude = ["*.log"]\n[embedding]\ndim = 512\nprovider = "none"\n'
        "[segment]\nchars = 300\n[ranking]\nrrf_k = 30\n"
    )
    cfg = load_file(path)
    assert cfg.exclude == ("*.log",) and cfg.embedding_dim == 512
    assert cfg.embedding_provider == "none" and cfg.segment_chars == 300
    assert cfg.rrf_k == 30


def test_env_roots_split_on_pathsep_only() -> None:
    env = {
        "DOCINDEX_ROOTS": os.pathsep.join(["/a,b", "/c d"]),
        "DOCINDEX_HIDDEN": "yes",
    }
    cfg = from_env(Config(), env)
    assert cfg.roots == ("/a,b", "/c d") and cfg.hidden is True


@pytest.mark.parametrize(
    "data",
    [{"cjk_ngram": 4}, {"embedding": {"dim": 8}}, {"nope": 1}, {"max_docs": "many"},
     {"hidden": "perhaps"}, {"embedding": {"provider": "gpt"}}],
)  # fmt: skip
def test_invalid_values_are_errors(data) -> None:
    with pytest.raises(ConfigError):
        from_mapping(data)


def test_bad_toml(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("= broken")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_file(path)
