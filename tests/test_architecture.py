"""The architecture holds (issue #32): import-linter's contracts, the package map, the doc.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); this test runs
the field's tool on them, so ``python -m pytest`` (the README's test command and
CI's) fails on a layer broken anywhere, deferred imports inside functions included.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "docindex"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"][
    "importlinter"
]["contracts"]
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())


def _lint_imports(config: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from importlinter.cli import lint_imports_command as c; c()"
    return subprocess.run(
        [sys.executable, "-c", code, "--config", str(config), "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_import_linter_contracts_are_kept() -> None:
    result = _lint_imports(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert f"{len(CONTRACTS)} kept, 0 broken" in result.stdout


def test_a_broken_layer_is_caught(tmp_path: Path) -> None:
    """The contracts bite: the store importing the search breaks the layers."""
    copy = tmp_path / "docindex"
    import shutil

    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    store = copy / "store" / "records.py"
    store.write_text(store.read_text("utf-8") + "\nimport docindex.search.engine\n")
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text("utf-8"), "utf-8")
    code = (
        "import sys; sys.path.insert(0, sys.argv.pop(1)); "
        "from importlinter.cli import lint_imports_command as c; c()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), "--config", str(config),
         "--no-cache"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert "docindex.store.records -> docindex.search.engine" in result.stdout


def test_the_top_of_the_package_is_short() -> None:
    """A newcomer sees the pipeline's rooms, not 47 modules (at most ~12 entries
    besides ``__main__.py`` and ``py.typed``)."""
    entries = sorted(
        p.name for p in PACKAGE.iterdir()
        if p.name not in {"__pycache__", "__main__.py", "py.typed"}
    )  # fmt: skip
    assert len(entries) <= 12, entries


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_package_says_what_lives_there_and_what_it_may_import(
    package: str,
) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    assert doc, f"docindex/{package}/__init__.py has no docstring"
    assert "May import:" in doc, f"docindex/{package}: say what it may import"


def test_every_package_is_in_a_contract_and_in_the_doc() -> None:
    """docs/architecture.md is drawn from the same contracts: every layer and
    every contract's name stands in it, and every package is in a layer."""
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    layers = next(c for c in CONTRACTS if c["type"] == "layers")["layers"]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    for package in SUBPACKAGES:
        assert f"docindex.{package}" in placed, f"{package} is in no layer"
    for layer in layers:
        assert f"`{layer}`" in doc, f"docs/architecture.md lacks the layer {layer}"
    for contract in CONTRACTS:
        assert contract["name"] in doc, contract["name"]
    for package in SUBPACKAGES:
        assert f"### `{package}/`" in doc, (
            f"docs/architecture.md: no paragraph on {package}"
        )


def _imports(path: Path) -> set[str]:
    """docindex modules imported anywhere in a file (deferred imports included).

    A name from a package is an import of its ``__init__``, inside the package
    too (issue #49); a package ``__init__`` that loads its modules by
    ``importlib`` imports every one of them.
    """
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.startswith("docindex"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    is_module = (ROOT / (sub.replace(".", "/") + ".py")).exists()
                    out.add(sub if is_module else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("docindex"))
        elif (
            path.name == "__init__.py"
            and isinstance(node, ast.Attribute)
            and node.attr == "import_module"
        ):
            out.update(_module(p) for p in path.parent.glob("*.py") if p != path)
    return out


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles_between_modules() -> None:
    """No cycle, not even inside a package (issue #49): a package's ``__init__``
    may re-export its own modules only if none of them imports the package."""
    graph = {_module(p): _imports(p) for p in PACKAGE.rglob("*.py")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph or nxt == "docindex":
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def _package_paragraphs(doc: str) -> dict[str, str]:
    """``### `pkg/` `` heading -> its text, up to the next heading."""
    out: dict[str, str] = {}
    for block in doc.split("\n### ")[1:]:
        title, _, text = block.partition("\n")
        if title.startswith("`") and title.endswith("/`"):
            out[title.strip("`/")] = text.split("\n## ")[0]
    return out


def _unplaced(doc: str) -> list[str]:
    """Modules that docs/architecture.md does not name where it should.

    A module of the top (``config.py``) is named anywhere; ``pkg/name.py`` in
    the paragraph of ``pkg/`` as `` `name` `` (or `` `name.py` ``); a module of
    a nested package, ``pkg/sub/name.py``, there as `` `sub/name` ``, and the
    nested package itself as `` `sub/` ``.
    """
    paragraphs = _package_paragraphs(doc)
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if len(parts) == 1:
            found = f"`{parts[0]}.py`" in doc
        else:
            text = paragraphs.get(parts[0], "")
            inner = "/".join(parts[1:])
            if parts[-1] == "__init__":
                inner = "/".join(parts[1:-1])
                found = not inner or f"`{inner}/`" in text
            else:
                found = f"`{inner}`" in text or f"`{inner}.py`" in text
        if not found:
            missing.append(str(path.relative_to(ROOT)))
    return missing


def test_every_module_is_placed_in_the_doc() -> None:
    """Issue #49: docs/architecture.md places every module, and a new module
    fails this test until it is named in its package's paragraph."""
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    assert _unplaced(doc) == []


def test_a_module_left_out_of_the_doc_is_caught() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    paragraphs = _package_paragraphs(doc)
    assert "`transfer`" in paragraphs["api"]
    assert _unplaced(doc.replace("`transfer`", "transfer")) == [
        "docindex/api/transfer.py"
    ]
