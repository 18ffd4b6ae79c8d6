"""Installing docindex: the distribution's name and the README's two commands (#45).

PyPI's ``docindex`` is an unrelated project, so every install line in the docs,
the hints in the code and the extras that name this project must say
``docindex-cli`` (or ``.`` in a checkout), never ``docindex``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from docindex.errors import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parents[1]
# `pip install [-flags] 'docindex[x]'`, `pip install -U docindex`: the wrong project
_PIP = re.compile(r"pip3?\s+install\b([^\n`#&;|]*)")
_WRONG = re.compile(r"""(?:^|\s)['"]?docindex(?:\[[^\]]*\])?['"]?(?=\s|$|[;)&|,])""")


def _texts() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "README.zh.md", ROOT / "pyproject.toml"]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted((ROOT / "docindex").rglob("*.py"))
    files += [ROOT / ".ci" / "run", ROOT / "CHANGELOG.md"]
    return files


def wrong_install_lines(text: str) -> list[str]:
    """The ``pip install`` commands in ``text`` that would install PyPI's docindex."""
    found = []
    for match in _PIP.finditer(text):
        if _WRONG.search(match[1]):
            found.append(match[0].strip())
    # extras named in prose next to the hint: 'docindex[ocr]', "docindex[postgres]"
    found += re.findall(r"""['"`]docindex\[[a-z,]+\]['"`]""", text)
    return found


def test_the_checker_finds_the_wrong_name() -> None:
    assert wrong_install_lines("run: pip install 'docindex[ocr]' now")
    assert wrong_install_lines("pip install -U docindex")
    assert wrong_install_lines("the extra 'docindex[postgres]' from a package index")
    assert not wrong_install_lines("pip install 'docindex-cli[ocr]' or '.[ocr]'")
    assert not wrong_install_lines("pip install -e '.[dev]' && docindex scan .")


@pytest.mark.parametrize("path", _texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_line_names_the_other_project(path: Path) -> None:
    text = path.read_text("utf-8")
    if path.name == "CHANGELOG.md":  # history may quote the old lines
        text = text.split("\n## ", 2)[1]
    assert not wrong_install_lines(text), path


def test_the_distribution_is_this_project_and_its_extras_name_it() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert meta["name"] == DISTRIBUTION == "docindex-cli"
    assert meta["scripts"]["docindex"].startswith("docindex.")
    selves = [
        req
        for reqs in meta["optional-dependencies"].values()
        for req in reqs
        if re.match(r"docindex\b", req)
    ]
    assert selves and all(req.startswith("docindex-cli[") for req in selves), selves


def test_install_hints_name_this_project() -> None:
    assert install_hint("ocr").startswith("pip install 'docindex-cli[ocr]'")
    assert "'.[ocr]'" in install_hint("ocr")  # and the line for a checkout
    assert install_hint(upgrade=True).startswith("pip install -U docindex-cli ")


# -- the README's two commands (#45 item 2) -----------------------------------


def readme_commands(readme: str = "README.md") -> tuple[str, str]:
    """The "Try it" and "Run the tests" command lines, as printed."""
    text = (ROOT / readme).read_text("utf-8")
    blocks = [b.split("```")[0].strip() for b in text.split("```sh\n")[1:3]]
    assert all("\n" not in b for b in blocks), blocks  # one line each, to paste
    return blocks[0], blocks[1]


def _clone(dest: Path) -> Path:
    """The project's files as a fresh clone has them (tracked and new, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _after_install(line: str) -> str:
    """``line`` without its virtualenv and pip steps (the fast variant installs nothing)."""
    steps = line.split(" && ")
    setup = [s for s in steps if "venv" in s or "pip install" in s]
    assert steps[: len(setup)] == setup, line  # the install comes first
    return " && ".join(steps[len(setup) :])


@pytest.mark.parametrize("readme", ["README.md", "README.zh.md"])
def test_try_it_ends_where_it_started(readme: str, tmp_path: Path) -> None:
    """Pasted with the test command, "Try it" must not leave the shell in example/."""
    try_it, tests = readme_commands(readme)
    assert tests == readme_commands()[1]
    clone = _clone(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items() if k != "DOCINDEX_DB"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["sh", "-c", f"{_after_install(try_it)}\npwd"], cwd=clone, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(clone), done.stdout
    assert "example/.docindex" not in done.stdout


def test_try_it_leaves_nothing_the_tests_trip_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After "Try it" a clone's example/ holds an index; the quick-start test
    (which copies example/) must still see a fresh folder."""
    from test_readme import check_quick_start

    try_it, _ = readme_commands()
    clone = _clone(tmp_path / "clone")
    env = {k: v for k, v in os.environ.items() if k != "DOCINDEX_DB"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    subprocess.run(["sh", "-c", _after_install(try_it)], cwd=clone, env=env,
                   capture_output=True, check=True, timeout=120)  # fmt: skip
    assert (clone / "example" / ".docindex").is_dir()  # what "Try it" leaves
    work = tmp_path / "work"
    work.mkdir()
    check_quick_start(clone / "example", work, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("order", ["pasted: try, tests", "apart: tests, try"])
def test_the_readme_commands_work_in_either_order(order: str, tmp_path: Path) -> None:
    """Both command lines as printed, in a clone, under ``sh``: they install for real.
    The test command runs only the tests that read example/ (PYTEST_ADDOPTS)."""
    try_it, tests = readme_commands()
    clone = _clone(tmp_path / "clone")
    env = {
        k: v for k, v in os.environ.items() if k not in ("DOCINDEX_DB", "VIRTUAL_ENV")
    }
    env["PYTEST_ADDOPTS"] = (
        "-p no:cacheprovider tests/test_readme.py tests/test_docs.py "
        "tests/test_api.py::test_the_readmes_python_example_runs"
    )
    scripts = [f"{try_it}\n{tests}"] if order.startswith("pasted") else [tests, try_it]
    for script in scripts:
        done = subprocess.run(["sh", "-c", script], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=1200)  # fmt: skip
        assert done.returncode == 0, (script, done.stdout[-3000:], done.stderr[-3000:])
        assert "passed" in done.stdout or "configuring.md" in done.stdout
