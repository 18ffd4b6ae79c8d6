"""Installing docindex: the distribution's name and the README's two commands (#45).

PyPI's ``docindex`` is an unrelated project, so every install line in the docs,
the hints in the code and the extras that name this project must say
``docindex-cli`` (or ``.`` in a checkout), never ``docindex``.
"""

from __future__ import annotations

import re
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
