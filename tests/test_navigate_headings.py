"""Issue #37: duplicate headings, anchors of bare headings and --depth in files
whose headings start at ``##`` (React's pages keep their title in front matter)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

Tree = Callable[[dict[str, str | bytes]], Path]

USE_EFFECT = """---
title: useEffect
---

<Intro>

`useEffect` is a React Hook that lets you synchronize a component.

</Intro>

## Reference {/*reference*/}

### `useEffect(setup, dependencies?)` {/*useeffect*/}

Call `useEffect` at the top level of your component to declare an Effect.

#### Parameters {/*parameters*/}

* `setup`: The function with your Effect's logic.

### `set` functions {/*setstate*/}

#### Parameters {/*setstate-parameters*/}

* `nextState`: The value that you want the state to be.

## Usage {/*usage*/}

Connecting to an external system is what Effects are for.
"""


@pytest.fixture
def docs(tree: Tree) -> Path:
    root = tree({"useEffect.md": USE_EFFECT})
    run("scan", str(root), "-q")
    return root


def test_outline_depth_counts_from_the_top_level_present(docs: Path) -> None:
    shallow = run_json("outline", "useEffect.md", "--depth", "1")
    assert [e["text"] for e in shallow["outline"]] == ["Reference", "Usage"]
    two = run_json("outline", "useEffect.md", "--depth", "2")
    assert [e["level"] for e in two["outline"]] == [2, 3, 3, 2]
    assert "no headings" not in run("outline", "useEffect.md", "--depth", "1").stdout


def test_ambiguous_section_name_is_an_error_listing_heading_paths(docs: Path) -> None:
    result = run("section", "useEffect.md", "Parameters", ok=False)
    assert result.exit_code == 2
    assert "2 headings match 'Parameters'" in result.stderr
    assert "line 17" in result.stderr and "line 23" in result.stderr
    assert "set functions > Parameters" in result.stderr


def test_duplicate_section_addressed_by_heading_path(docs: Path) -> None:
    second = run_json("section", "useEffect.md", "set functions > parameters")
    assert (second["heading"], second["start_line"]) == ("Parameters", 23)
    assert "nextState" in second["text"] and "setup" not in second["text"]
    full = "Reference > useEffect(setup, dependencies?) > Parameters"
    first = run_json("section", "useEffect.md", full)
    assert first["start_line"] == 17 and "`setup`" in first["text"]
    assert run_json("section", "useEffect.md", "usage")["start_line"] == 27


def test_show_a_bare_headings_anchor_opens_its_first_chunk(docs: Path) -> None:
    listed = run_json("outline", "useEffect.md")["outline"][0]
    assert listed["text"] == "Reference"
    data = run_json("show", "useEffect.md#reference")
    assert data["chunk"]["chunk_id"] == listed["chunk_id"]
    assert data["chunk"]["start_line"] == 13
    missing = run("show", "useEffect.md#nope", ok=False)
    assert missing.exit_code == 2 and "has no chunk" in missing.stderr
