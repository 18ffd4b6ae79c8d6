"""MkDocs heading attributes: ``## Use CORSMiddleware { #use-corsmiddleware }`` (#45).

FastAPI writes one on every heading (attr_list). The heading reads without the
braces, and its id names the section for ``show FILE#id``, ``section``,
``outline`` and the citations, where the id used to be doubled
(``#cors-…--cors-…-``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run, run_json, write_tree
from hypothesis import given
from hypothesis import strategies as st
from markdown.extensions.attr_list import get_attrs_and_remainder

from docindex.text.mdsyntax import attr_list, heading_text

PAGE = """\
# CORS (Cross-Origin Resource Sharing) { #cors-cross-origin-resource-sharing }

CORS refers to situations when a frontend running in a browser talks to a backend.

## Use `CORSMiddleware` { #use-corsmiddleware }

You can configure it in your application using the middleware and its origins.

### Simple requests {#simple-requests .note data-x="a b"}

Any request with an Origin header and no preflight is a simple request.

## Wide table {.wide}

A heading with a class and no id keeps its slug as the anchor of its section.

Setext heading { #setext-id }
-----------------------------

Text under a setext heading with an attribute list.
"""


@given(st.text(alphabet=" #.=x\"'}{-:ab", max_size=24))
def test_attr_list_reads_as_python_markdown_does(text: str) -> None:
    attrs, rest = get_attrs_and_remainder(text)
    want = None if rest else [(k, v) for k, v in attrs]
    assert attr_list(text) == want


@pytest.mark.parametrize(
    ("raw", "text", "anchor"),
    [
        ("Use `CORSMiddleware` { #use-corsmiddleware }", "Use CORSMiddleware",
         "use-corsmiddleware"),
        ("Title {#id .class key=value}", "Title", "id"),
        ("Kramdown {: #k }", "Kramdown", "k"),
        ("Wide {.wide}", "Wide", None),
        ("Usage {/*usage*/}", "Usage", "usage"),
        ("Title{#x}", "Title", "x"),
        ("Object {x}", "Object {x}", None),  # a word in braces is text
        ("Struct {}", "Struct {}", None),
        ("a {b} c}", "a {b} c}", None),
    ],
)  # fmt: skip
def test_heading_text_and_id(raw: str, text: str, anchor: str | None) -> None:
    assert heading_text(raw) == (text, anchor)


@pytest.fixture
def page(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "docs", {"tutorial/cors.md": PAGE})
    run("scan", str(root))
    return root


def test_outline_shows_clean_headings_and_their_ids(page: Path) -> None:
    entries = run_json("outline", "tutorial/cors.md")["outline"]
    assert [e["text"] for e in entries] == [
        "CORS (Cross-Origin Resource Sharing)", "Use CORSMiddleware",
        "Simple requests", "Wide table", "Setext heading",
    ]  # fmt: skip
    ids = [e["anchor"].partition("#")[2] for e in entries]
    assert ids == [
        "cors-cross-origin-resource-sharing",
        "cors-cross-origin-resource-sharing/use-corsmiddleware",
        "cors-cross-origin-resource-sharing/use-corsmiddleware/simple-requests",
        "cors-cross-origin-resource-sharing/wide-table",
        "cors-cross-origin-resource-sharing/setext-id",
    ]
    human = run("outline", "tutorial/cors.md").output
    assert "{" not in human and "--" not in human


@pytest.mark.parametrize(
    ("target", "line"),
    [("use-corsmiddleware", 5), ("simple-requests", 9), ("setext-id", 17),
     ("cors-cross-origin-resource-sharing/use-corsmiddleware", 5)],
)  # fmt: skip
def test_show_and_section_take_the_pages_own_id(
    page: Path, target: str, line: int
) -> None:
    shown = run_json("show", f"tutorial/cors.md#{target}")
    assert shown["chunk"]["start_line"] == line
    text = run("show", f"tutorial/cors.md#{target}").output
    assert "{" not in text.splitlines()[1]  # the heading line, read as rendered
    section = run_json("section", "tutorial/cors.md", f"#{target}")
    assert section["start_line"] == line
    missing = run("section", "tutorial/cors.md", "#nope", ok=False)
    assert missing.exit_code == 2 and "docindex outline" in missing.output


def test_citations_and_snippets_read_without_braces(page: Path) -> None:
    hits = run_json("query", "simple request preflight")["hits"]
    top = hits[0]
    assert top["chunk_id"].endswith("#cors-cross-origin-resource-sharing/"
                                     "use-corsmiddleware/simple-requests")  # fmt: skip
    assert top["heading_path"][-1] == "Simple requests"
    human = run("query", "simple request preflight", "--color", "never").output
    assert "{" not in human and "#simple-requests" not in human
