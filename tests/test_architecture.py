"""The layer map in docs/architecture.md holds: an AST scan of every import (#18)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "docindex"

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("docindex", "errors", "models", "config"),
    1: (
        "anchors", "stem", "tokenize", "segment", "snippet", "cursor", "_debounce",
        "mdsyntax", "query", "limits", "signals", "pool", "_forkserver", "ignore",
        "walker", "extract", "embed", "embed_minilm", "embedder", "analyze", "store",
        "rendezvous",
    ),
    2: (
        "indexer", "search", "hints", "navigate", "evaluate", "watch", "workspace",
        "roots", "server", "docstage", "fusion", "semantic", "quality", "spelling",
    ),
    3: ("api", "serialize"),
    4: (
        "cli", "cli_help", "cli_nav", "cli_output", "cli_roots", "__main__", "render",
        "progress", "mcp_server", "launcher",
    ),
}  # fmt: skip
CLI_ONLY = {"render", "progress"}


def _name(path: Path) -> str:
    """Dotted module name below ``docindex`` ("" for the package itself)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """docindex modules imported anywhere in the file (deferred imports included)."""
    name = _name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif (node.module or "").startswith("docindex"):
                target = node.module.removeprefix("docindex").lstrip(".")  # type: ignore[union-attr]
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if (PACKAGE / f"{sub.replace('.', '/')}.py").exists()
                        or (PACKAGE / sub.replace(".", "/")).is_dir() else target)  # fmt: skip
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("docindex"):
                    out.add(alias.name.removeprefix("docindex").lstrip("."))
    out.discard(name)
    return out


def _external(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
    return out


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _top(name: str) -> str:
    return name.split(".")[0] if name else "docindex"


def _layer(name: str) -> int:
    """The module's layer; 99 (above everything) when it is in no layer yet."""
    top = _top(name)
    for layer, names in LAYERS.items():
        if top in names:
            return layer
    return 99


def test_every_module_is_in_the_layer_map() -> None:
    placed = {n for names in LAYERS.values() for n in names}
    missing = sorted({_top(n) for n in MODULES} - placed)
    assert not missing, f"place these in docs/architecture.md and LAYERS: {missing}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_or_sideways(module: str) -> None:
    upward = [
        target for target in sorted(GRAPH[module])
        if target in MODULES and _layer(target) > _layer(module)
    ]  # fmt: skip
    assert not upward, f"{module or 'docindex'} imports upward: {upward}"


def test_no_import_cycles() -> None:
    """Between modules (a package's own files may import each other's names)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if nxt not in MODULES or nxt == "" or node.startswith(nxt + "."):
                continue  # a package's __init__ re-exporting its own modules
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module)


def test_presentation_is_the_clis_own() -> None:
    for module, targets in GRAPH.items():
        for target in targets & CLI_ONLY:
            assert module.startswith("cli"), f"{module} imports {target} (the CLI's)"
        if "cli" in targets:
            assert module == "launcher", f"{module} imports cli"


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if _layer(m) < 4 or _layer(m) == 99)
)  # fmt: skip
def test_the_core_never_prints_through_click_or_rich(module: str) -> None:
    assert not _external(MODULES[module]) & {"click", "rich"}
