"""Modules over 600 lines and functions over 80 lines under docindex/ (issue #49).

The house style splits a module near 600 lines and keeps a function under ~80;
this prints every one past those marks, longest first, and the counts, so a
refactor can show before and after. A function counts from its ``def`` line to
its last line; ``--decorators`` counts its decorators too (a click command's
options).

Usage: python bench/code_sizes.py [--root docindex] [--module 600] [--function 80]
                                  [--decorators]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def _functions(tree: ast.AST, decorators: bool) -> list[tuple[str, int]]:
    """Every function and method with its length in lines."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                start = child.lineno
                if decorators:
                    start = min([start] + [d.lineno for d in child.decorator_list])
                end = child.end_lineno or child.lineno
                found.append((prefix + child.name, end - start + 1))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="docindex")
    parser.add_argument("--module", type=int, default=600)
    parser.add_argument("--function", type=int, default=80)
    parser.add_argument("--decorators", action="store_true")
    args = parser.parse_args()
    modules: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for path in sorted(Path(args.root).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > args.module:
            modules.append((lines, str(path)))
        for name, length in _functions(ast.parse(text), args.decorators):
            if length > args.function:
                functions.append((length, f"{path}:{name}"))
    print(f"modules over {args.module} lines: {len(modules)}")
    for lines, name in sorted(modules, reverse=True):
        print(f"  {lines:5d}  {name}")
    print(f"functions over {args.function} lines: {len(functions)}")
    for length, name in sorted(functions, reverse=True):
        print(f"  {length:5d}  {name}")


if __name__ == "__main__":
    main()
