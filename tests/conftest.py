"""Shared fixtures: real SQLite files in tmp dirs, corpora built on disk, a CLI runner."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from docindex.cli.main import cli

#: The shared data (corpus, samples, judged sets): DOCINDEX_SHARED, else ../shared
#: beside the checkout. Read once, before the autouse fixture clears DOCINDEX_*.
SHARED = Path(
    os.environ.get("DOCINDEX_SHARED") or Path(__file__).resolve().parents[2] / "shared"
)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """Say how many tests were skipped and why, grouped by reason (issue #38)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for report in skipped:
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.section(f"{len(skipped)} skipped", sep="-")
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{count:4d}  {reason}")
    if not SHARED.is_dir():
        terminalreporter.write_line(
            f"shared data not found at {SHARED}: set DOCINDEX_SHARED to the folder "
            "that holds corpus/, samples/ and eval/"
        )


@pytest.fixture(scope="session")
def _cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the session: tests never write the user's ~/.cache."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _cache_home: Path) -> None:
    """Point DOCINDEX_DB into tmp_path and clear every other DOCINDEX_* variable."""
    for key in list(os.environ):
        if key.startswith("DOCINDEX_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("DOCINDEX_DB", str(tmp_path / "db" / "index.db"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(_cache_home))
    # The developer's git config must not change what the walk ignores
    # (core.excludesFile, issue #25): no system or global config in tests.
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    # What a user accepted (issue #44) lives here, beside tmp_path, not in it:
    # a test that scans tmp_path must not index it.
    monkeypatch.setenv(
        "XDG_CONFIG_HOME", str(tmp_path.with_name(tmp_path.name + "-config"))
    )


@pytest.fixture
def shared() -> Path:
    """The shared data folder (DOCINDEX_SHARED, else ../shared), or skip saying so."""
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set DOCINDEX_SHARED)")
    return SHARED


def write_tree(base: Path, files: dict[str, str | bytes]) -> Path:
    """Create files under ``base`` (str content is written as UTF-8)."""
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return base


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """Factory: build a document tree under tmp_path/docs and return its root."""

    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / "docs", files)

    return make


def run(*args: str, input: str | None = None, ok: bool = True) -> Result:
    """Invoke the CLI in-process; assert success unless ``ok`` is False."""
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def run_json(*args: str, input: str | None = None) -> Any:
    """Invoke the CLI with --json and parse stdout."""
    result = run(*args, "--json", input=input)
    return json.loads(result.stdout)


@pytest.fixture
def cli_run() -> Callable[..., Result]:
    return run


@pytest.fixture
def cli_json() -> Callable[..., Any]:
    return run_json


# -- PostgreSQL (issue #34) ------------------------------------------------------


@pytest.fixture
def tesseract() -> Any:
    """The real tesseract with English, for the OCR tests: skipped without it,
    except under CI=true, where that is a failure (``.ci/run`` installs it)."""
    from docindex.ingest.extract import ocr

    found = ocr.engine()
    if found is None or "eng" not in found.installed:
        if os.environ.get("CI") == "true":
            pytest.fail("tesseract with eng must be installed in CI (.ci/run)")
        pytest.skip("tesseract (with eng) is not installed")
    return found


@pytest.fixture
def ocr_english(monkeypatch: pytest.MonkeyPatch) -> None:
    """OCR in English only: the fast tests need not pay for the CJK models."""
    monkeypatch.setenv("DOCINDEX_OCR_LANGUAGES", "eng")


def _pg_unavailable(reason: str) -> None:
    """Skip outside CI; under CI=true the PostgreSQL tests must run, so fail."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Any:
    """A PostgreSQL server URL: DOCINDEX_TEST_PG, else a throwaway cluster."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_unavailable("psycopg not installed: pip install 'docindex-cli[postgres]'")
    given = os.environ.get("DOCINDEX_TEST_PG")
    if given:
        yield given
        return
    import pgcluster

    bin_dir = pgcluster.binaries()
    if bin_dir is None:
        _pg_unavailable(pgcluster.MISSING)
    assert bin_dir is not None
    with pgcluster.cluster(bin_dir) as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """A URL of an empty schema of its own on the test server."""
    import pgcluster

    return pgcluster.new_schema(pg_server)


@contextlib.contextmanager
def mounted(target: Path, *args: str) -> Iterator[None]:
    """``mount ARGS TARGET`` for the block (root only: skips when it cannot)."""
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)
