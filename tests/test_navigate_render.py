"""Issue #37 item 5: related, outline, section and show read like query's hits.

Cleaned snippets with "…" where cut, heading paths instead of chunk ids, one
entry per document with its other near chunks folded behind it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

import docindex

Tree = Callable[[dict[str, str | bytes]], Path]

PROSE = (
    "Props let a parent component pass data down to a child component, "
    "and the child reads each prop from its props object when it renders. "
)

SOURCE = f"""# Passing data

## Props and components

{PROSE * 3}
"""

# Three sections near the source, each opening with a fenced block whose info
# string carries a line range and a heading with an explicit anchor.
GUIDE = "# Guide\n\n## Props {/*props*/}\n\n" + "\n".join(
    f"""### Passing props {n} {{/*passing-props-{n}*/}}

```js {{1,2}}
function Child({{ name }}) {{ return name; }}
```

{PROSE * 3}
"""
    for n in (1, 2, 3)
)

OTHER = f"""# Other

## Elsewhere

{PROSE * 3}
"""


@pytest.fixture
def corpus(tree: Tree) -> Path:
    root = tree({"source.md": SOURCE, "guide.md": GUIDE, "other.md": OTHER})
    run("scan", str(root), "-q")
    return root


def test_related_folds_by_document_with_clean_snippets(corpus: Path) -> None:
    data = run_json("related", "source.md", "--top", "5")
    files = [h["rel_path"] for h in data["hits"]]
    assert sorted(files) == ["guide.md", "other.md"]  # one entry per document
    guide = next(h for h in data["hits"] if h["rel_path"] == "guide.md")
    # each section is two chunks (its code block, then its prose): 6 near chunks
    assert guide["folded_count"] == 5 and len(guide["folded"]) == 5
    folded = [f["chunk_id"] for f in guide["folded"]]
    assert all(c.startswith("guide.md#guide/props/passing-props-") for c in folded)
    assert guide["chunk_id"] not in folded
    assert guide["heading_path"][:2] == ["Guide", "Props"]
    for hit in data["hits"]:
        assert "```" not in hit["snippet"] and "{/*" not in hit["snippet"]
        assert hit["snippet"].endswith("…")  # cut, and says so
        assert len(hit["snippet"]) <= 230

    text = run("related", "source.md").stdout
    assert "Guide > Props > Passing props" in text
    assert "+ 5 more here" in text
    assert "```" not in text and "{/*" not in text and "{1,2}" not in text
    assert "guide.md#" not in text  # heading paths, not chunk ids
    assert text.count("guide.md:") == 1


def test_related_same_file_lists_each_own_chunk(corpus: Path) -> None:
    data = run_json("related", "guide.md#guide/props/passing-props-1", "--same-file")
    ids = [h["chunk_id"] for h in data["hits"]]
    assert "guide.md#guide/props/passing-props-2" in ids
    assert "guide.md#guide/props/passing-props-3" in ids
    assert "guide.md#guide/props/passing-props-1" not in ids


def test_related_through_the_library_and_after_a_rescan(corpus: Path) -> None:
    index = docindex.open(run_json("stats")["db"])
    first = index.related("source.md", top=5)
    assert [h.rel_path for h in first.hits].count("guide.md") == 1
    (corpus / "new.md").write_text(f"# New\n\n## Fresh\n\n{PROSE * 2}\n", "utf-8")
    run("scan", str(corpus), "-q")
    again = index.related("source.md", top=5)  # vectors read again, not stale
    assert "new.md" in [h.rel_path for h in again.hits]


def test_warm_keeps_every_vector_and_related_answers_the_same(corpus: Path) -> None:
    index = docindex.open(run_json("stats")["db"])
    before = index.related("source.md", top=5)
    assert index.warm() == run_json("stats")["embedded"]
    assert index.related("source.md", top=5) == before
    (corpus / "new.md").write_text(f"# New\n\n## Fresh\n\n{PROSE * 2}\n", "utf-8")
    run("scan", str(corpus), "-q")
    assert index.warm() == run_json("stats")["embedded"]  # the new chunks too


def test_warm_without_vectors_keeps_nothing(tree: Tree) -> None:
    root = tree({"a.md": "# A\n\nsome words here\n"})
    run("scan", str(root), "-q", "--provider", "none")
    assert docindex.open(run_json("stats")["db"]).warm() == 0


def test_section_and_show_print_heading_paths_without_anchors(corpus: Path) -> None:
    section = run("section", "guide.md", "Passing props 2").stdout
    head = section.splitlines()[0]
    assert "Guide > Props > Passing props 2" in head
    assert "{/*" not in section
    assert "```js" in section  # the section's own text stays as written
    data = run_json("section", "guide.md", "Passing props 2")
    assert data["heading_path"] == ["Guide", "Props", "Passing props 2"]
    assert "{/*passing-props-2*/}" in data["text"]  # JSON stays exact

    shown = run("show", "guide.md#guide/props/passing-props-3").stdout
    assert "Guide > Props > Passing props 3" in shown
    assert "{/*" not in shown


def test_outline_names_headings_by_their_own_anchor(corpus: Path) -> None:
    text = run("outline", "guide.md").stdout
    lines = {line.strip().split("  ")[0]: line for line in text.splitlines()}
    assert "#guide/props " in lines["Props"] + " "  # not its first child's id
    assert "{/*" not in text
    data = run_json("outline", "guide.md")
    props = next(e for e in data["outline"] if e["text"] == "Props")
    assert props["heading_path"] == ["Guide", "Props"]
    assert props["chunk_id"]  # the chunk it opens, as before
    json.dumps(data)


def test_related_to_a_heading_without_a_chunk_of_its_own(corpus: Path) -> None:
    # `outline` names "Props" guide.md#guide/props; its first chunk is its child's
    data = run_json("related", "guide.md#guide/props", "--same-file")
    assert data["source"] == "guide.md#guide/props"
    ids = [h["chunk_id"] for h in data["hits"]]
    assert not any(i.startswith("guide.md#guide/props/") for i in ids)  # itself
    assert "source.md" in [h["rel_path"] for h in data["hits"]]
    missing = run("related", "guide.md#nope", ok=False)
    assert missing.exit_code != 0 and "docindex outline" in missing.stderr


def test_related_looks_past_a_document_that_fills_the_nearest_chunks(
    tree: Tree,
) -> None:
    # 210 sections nearer the source than anything else: more than related
    # folds at first (200), yet the other documents still get their entries
    crowd = "".join(f"## Props and components\n\n{PROSE * 3}\n\n" for _ in range(210))
    root = tree({"source.md": SOURCE, "crowd.md": crowd, "other.md": OTHER,
                 "guide.md": GUIDE})  # fmt: skip
    run("scan", str(root), "-q")
    data = run_json("related", "source.md", "--top", "3")
    assert sorted(h["rel_path"] for h in data["hits"]) == [
        "crowd.md",
        "guide.md",
        "other.md",
    ]
    crowd_hit = next(h for h in data["hits"] if h["rel_path"] == "crowd.md")
    assert crowd_hit["folded_count"] == 209
