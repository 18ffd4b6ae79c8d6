"""Issue #19: Markdown/MDX structure as a renderer shows it, checked against markdown-it-py.

markdown-it-py (CommonMark, installed with rich) is the reference for where
headings are. Documents drawn by hypothesis from lines that exercise the
rules (ATX and setext headings, fences of both kinds and several lengths,
info strings, indented code, HTML comments, quotes, list items) must give the
same top-level headings; so must every file of the shared docs corpus (slow).
Quoted headings (``> ## x``) are content, not sections, so headings inside
block quotes are not compared; an unclosed ``<!--`` is left as text on purpose (see
``mdsyntax``), so the drawn comments are closed. List items are not drawn:
docindex does not nest blocks in list items (a heading indented under a list
item is not a section), see ``test_setext_after_list_item``. Real-world shaped fixtures check the rest through the
public API and the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SHARED
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from docindex.cli.main import cli
from docindex.ingest.extract import ExtractLimits
from docindex.ingest.extract.markdown import extract
from docindex.ingest.segment import segment_document
from docindex.models import Extracted, Unit
from docindex.text.headings import markdown_headings

_MD = MarkdownIt("commonmark")
CORPUS = SHARED / "corpus" / "docs"


def reference_headings(text: str) -> list[tuple[int, int]]:
    """(0-based line, level) of markdown-it-py's headings outside block quotes."""
    out: list[tuple[int, int]] = []
    quoted = 0
    for tok in _MD.parse(text):
        quoted += {"blockquote_open": 1, "blockquote_close": -1}.get(tok.type, 0)
        if tok.type == "heading_open" and not quoted and tok.map:
            out.append((tok.map[0], int(tok.tag[1])))
    return out


def our_headings(text: str) -> list[tuple[int, int]]:
    """The same as docindex sees them, after the Markdown extractor."""
    body = extract(text.encode(), "a.md", ExtractLimits()).units[0].text
    return [(line, level) for line, level, _ in markdown_headings(body.split("\n"))]


LINE = st.sampled_from([
    "", "  ", "text", "more words here", "# H1", "## H2 ##", "   ### H3", "#nope",
    "    # indented code", "\t# tab", "===", "---", "  ---  ", "***", "= x",
    "> quote", "> ## quoted", "```", "```py", "````", "``` x ` y", "~~~", "~~~~",
    "   ```", "    ```", "<!-- a comment -->", "<!--\n# licence\n\n## header\n-->",
    "# licence line", "-->",
    "| a | b |", "*emphasis*", "#\tTab heading", "## Trailing #",
])  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINE, max_size=30))
def test_headings_match_markdown_it(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert our_headings(text) == reference_headings(text)


DEF_LINE = st.sampled_from([
    "", "text", "more words here", "# H", "## H2 ##", "```", "~~~",
    "[a]: /url", "[//]: <TODO: add the link>", "[//]: # (a comment)",
    '[b]: http://x.y "Title"', "   [c]: <>", "[d]: /u junk after", "[]: /x",
    "[e]: /u 'T'", "[a b]: /x", "[link](/x) is text", "[f] not a definition",
])  # fmt: skip


def reference_definition_lines(text: str) -> set[int]:
    """0-based lines markdown-it-py renders nothing for: link reference
    definitions (no other hidden construct is in DEF_LINE)."""
    shown: set[int] = set()
    for tok in _MD.parse(text):
        if tok.map and tok.type in {"inline", "fence", "code_block", "hr"}:
            shown.update(range(*tok.map))
    lines = text.split("\n")
    return {i for i, line in enumerate(lines) if line.strip() and i not in shown}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(DEF_LINE, max_size=20))
def test_link_reference_definitions_are_hidden_as_markdown_it_does(
    lines: list[str],
) -> None:
    """Issue #37: ``[//]: <TODO: ...>`` comments showed in the first hit's snippet."""
    text = "\n".join(lines)
    body = extract(text.encode(), "a.md", ExtractLimits()).units[0].text
    hidden = {
        i for i, (a, b) in enumerate(zip(text.split("\n"), body.split("\n"), strict=True))
        if a.strip() and not b.strip()
    }  # fmt: skip
    assert hidden == reference_definition_lines(text)


def test_setext_after_list_item_is_a_rule_not_a_heading() -> None:
    text = "- item\n---\n\npara\n---\n\n1. one\n===\n"
    assert our_headings(text) == reference_headings(text) == [(3, 2)]


@pytest.mark.slow
@pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"{CORPUS} not found (set DOCINDEX_SHARED)"
)
def test_corpus_headings_match_markdown_it() -> None:
    """Every corpus file but MkDocs math/admonition oddities agrees with markdown-it-py."""
    differ = []
    for path in sorted(CORPUS.rglob("*.md*")):
        raw = path.read_text(errors="replace")
        extracted = extract(raw.encode(), path.name, ExtractLimits())
        body = extracted.units[0].text
        # The front matter is blanked first in both (CommonMark does not know it).
        ours = [(ln, lv) for ln, lv, _ in markdown_headings(body.split("\n"))]
        if ours != reference_headings(_front_blanked(raw)):
            differ.append(str(path.relative_to(CORPUS)))
    # The renderer hides comments and JSX lines that markdown-it shows as HTML
    # blocks; only MkDocs math/admonition edge cases may differ.
    assert len(differ) <= 3, differ


def _front_blanked(raw: str) -> str:
    from docindex.ingest.extract.markdown import parse_front_matter
    from docindex.text.mdsyntax import hide_unrendered

    _, span = parse_front_matter(raw)
    lines = raw.split("\n")
    return hide_unrendered("\n" * span + "\n".join(lines[span:]))


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINE | st.text(max_size=8), max_size=30), size=st.integers(5, 60))
def test_segments_tile_the_text(lines: list[str], size: int) -> None:
    """Chunks are in order, never overlap, hold the text they cite, ids unique."""
    text = "\n".join(lines)
    body, segments = segment_document(
        Extracted(units=(Unit(text=text, markdown=True),)), "a.md", size
    )
    assert body == text
    ids = [s.chunk_id for s in segments]
    assert len(ids) == len(set(ids))
    end = 0
    for s in segments:
        assert s.char_start >= end
        assert s.text == body[s.char_start : s.char_end]
        assert s.start_line == body.count("\n", 0, s.char_start) + 1
        assert s.text.strip()
        end = s.char_end


# -- real-world shaped fixtures ---------------------------------------------------

APISIX = """---
title: limit-count
keywords:
  - Rate limiting
---

<!--
#
# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.  See the NOTICE file distributed with
#
# Unless required by applicable law or agreed to in writing, software
# limitations under the License.
#
-->

## Description

The `limit-count` Plugin limits the number of requests within a time window.

:::note

You can fetch the `admin_key` from `config.yaml`.

:::

## Examples

### Apply rate limiting by remote address

<Tabs groupId="api" defaultValue="admin-api">
<TabItem value="admin-api" label="Admin API">

Create a Route with the plugin that allows a quota of one request per window.

</TabItem>
</Tabs>
"""

REACT = """---
title: useState
---

import {Sandpack} from '../components';
export const meta = {layout: 'api'};

<Intro>

`useState` is a React Hook that lets you add a state variable to your component.

</Intro>

## Reference {/*reference*/}

### `useState(initialState)` {/*usestate*/}

Call `useState` at the top level of your component to declare a state variable.
{/* TODO: a longer explanation of lazy initial state */}
Write JSX comments as `{/* like this */}`.

## Usage {/*usage*/}

### Adding state to a component {/*adding-state-to-a-component*/}

Pass the initial state and read the current value on every render.

## 用法 {/*zh-usage*/}

中文段落在这里。
"""

VITEPRESS = """# Teleport {#teleport}

## Basic Usage {#basic-usage}

::: tip Try it
Teleport moves a part of the template into a DOM node outside the component.
:::

::: warning
Mount the target before the Teleport.
:::

## **Disabling** \\*\\*Teleport\\*\\* <sup class="vt-badge" data-text="3.5+" />

Use the `disabled` prop to render in place.

Setext heading
--------------

Under a setext heading.
"""


def _segments(text: str, name: str = "a.md") -> list[object]:
    extracted = extract(text.encode(), name, ExtractLimits())
    return segment_document(extracted, name, 400)[1]


def test_apisix_licence_comment_makes_no_headings_and_no_text() -> None:
    extracted = extract(APISIX.encode(), "limit-count.md", ExtractLimits())
    assert extracted.title == "limit-count"
    body = extracted.units[0].text
    assert body.count("\n") == APISIX.count("\n")  # line numbers unchanged
    assert "Licensed" not in body and "TabItem" not in body and ":::" not in body
    assert "Create a Route" in body and "fetch the `admin_key`" in body
    heads = [h for _, _, h in markdown_headings(body.split("\n"))]
    assert heads == ["Description", "Examples", "Apply rate limiting by remote address"]
    segs = _segments(APISIX, "limit-count.md")
    assert [s.heading_path for s in segs][0] == ("Description",)  # type: ignore[attr-defined]
    assert all("License" not in " ".join(s.heading_path) for s in segs)  # type: ignore[attr-defined]


def test_react_mdx_anchors_imports_and_jsx() -> None:
    segs = _segments(REACT, "useState.md")
    ids = [s.chunk_id for s in segs]  # type: ignore[attr-defined]
    paths = [s.heading_path for s in segs]  # type: ignore[attr-defined]
    assert "useState.md#reference/usestate" in ids
    assert "useState.md#usage/adding-state-to-a-component" in ids
    assert "useState.md#zh-usage" in ids  # the explicit anchor wins over 用法
    assert ("Reference", "useState(initialState)") in paths
    assert ("用法",) in paths
    text = " ".join(s.text for s in segs)  # type: ignore[attr-defined]
    assert "import" not in text and "export const" not in text
    assert "<Intro>" not in text and "TODO" not in text
    assert "lets you add a state variable" in text  # text inside components stays
    assert "`{/* like this */}`" in text  # inline code is shown as written


def test_vitepress_admonitions_escapes_markup_and_setext() -> None:
    extracted = extract(VITEPRESS.encode(), "teleport.md", ExtractLimits())
    assert extracted.title == "Teleport"
    body = extracted.units[0].text
    assert ":::" not in body and "tip" not in body.split("Try it")[0][-12:]
    assert "Try it" in body  # an admonition's title stays
    heads = [h for _, _, h in markdown_headings(body.split("\n"))]
    assert heads == [
        "Teleport",
        "Basic Usage",
        "Disabling **Teleport**",
        "Setext heading",
    ]
    ids = [s.chunk_id for s in _segments(VITEPRESS, "t.md")]  # type: ignore[attr-defined]
    assert ids[0] == "t.md#teleport/basic-usage"
    assert "t.md#teleport/disabling-teleport" in ids
    assert "t.md#teleport/setext-heading" in ids


def test_wordless_chunk_joins_its_neighbour() -> None:
    text = "# Doc\n\nIntro words here.\n\n## Example\n\n```js\n}\n```\n\n## Next\n\nMore prose.\n"
    segs = _segments(text)
    assert [s.heading_path for s in segs] == [("Doc",), ("Doc", "Next")]  # type: ignore[attr-defined]
    assert "```js" in segs[0].text  # type: ignore[attr-defined]


def _scan(tmp_path: Path, files: dict[str, str]) -> str:
    docs = tmp_path / "docs"
    for name, text in files.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    db = str(tmp_path / "i.db")
    result = CliRunner().invoke(
        cli, ["scan", str(docs), "--db", db, "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return db


def _query(db: str, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(
        cli, ["query", *args, "--db", db, "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_heading_only_and_title_only_files_are_found(tmp_path: Path) -> None:
    db = _scan(tmp_path, {
        "only-heading.md": "# Zephyrine migration checklist\n",
        "only-title.md": "---\ntitle: Quillwort glossary\n---\n",
        "blank.md": "\n\n",
    })  # fmt: skip
    hits = _query(db, "zephyrine")["hits"]
    assert [h["rel_path"] for h in hits] == ["only-heading.md"]  # type: ignore[index]
    assert hits[0]["heading_path"] == ["Zephyrine migration checklist"]  # type: ignore[index]
    hits = _query(db, "quillwort")["hits"]
    assert [h["rel_path"] for h in hits] == ["only-title.md"]  # type: ignore[index]
    assert hits[0]["snippet"]  # type: ignore[index]


def test_apisix_file_hits_carry_clean_paths_and_snippets(tmp_path: Path) -> None:
    db = _scan(tmp_path, {"limit-count.md": APISIX, "useState.md": REACT})
    hits = _query(db, "quota of one request per window")["hits"]
    top = hits[0]  # type: ignore[index]
    assert top["heading_path"] == ["Examples", "Apply rate limiting by remote address"]
    assert "TabItem" not in top["snippet"] and "<" not in top["snippet"]
    hits = _query(db, "state variable")["hits"]
    for hit in hits:  # type: ignore[union-attr]
        assert "{/*usestate*/}" not in hit["snippet"]
        assert "{/*" not in " ".join(hit["heading_path"])


def test_chunks_never_join_across_units() -> None:
    """Line numbers are per page: a wordless page keeps its own chunk."""
    units = (Unit(text="# Title", page=None), Unit(text="# Title"), Unit(text="}"))
    body, segs = segment_document(Extracted(units=units, kind="pdf"), "b.pdf", 400)
    for s in segs:
        assert body[s.char_start : s.char_end] == s.text
        assert s.end_line - s.start_line + 1 == len(s.text.split("\n"))
    assert [s.ordinal for s in segs] == list(range(len(segs)))
    assert len(segs) == 3


def test_heading_split_from_a_big_table_joins_its_own_section() -> None:
    rows = "\n".join(f"| name{i} | string | the {i}th attribute |" for i in range(40))
    text = f"# Doc\n\n## Description\n\nSome words here.\n\n## Attributes\n\n{rows}\n"
    segs = _segments(text)
    first = next(s for s in segs if s.heading_path == ("Doc", "Attributes"))  # type: ignore[attr-defined]
    assert first.chunk_id == "a.md#doc/attributes"  # type: ignore[attr-defined]
    assert first.text.startswith("## Attributes")  # type: ignore[attr-defined]
    assert "Attributes" not in segs[0].text  # type: ignore[attr-defined]


def _reference_heading_text(line: str) -> str:
    """markdown-it-py's plain text of one heading (text and code spans only)."""
    inline = next(t for t in _MD.parse(line) if t.type == "inline")
    return "".join(
        c.content for c in inline.children or [] if c.type in {"text", "code_inline"}
    )


@pytest.mark.parametrize(
    "line",
    [
        "# \\<script setup>",
        "## PropType\\<T>",
        "## `<Suspense>` and \\<KeepAlive>",
        "### a \\<b> c \\*d\\*",
    ],
)
def test_escaped_angle_brackets_in_headings_are_text(line: str) -> None:
    """Issue #37: Vue's ``# \\<script setup>`` page was titled ``\\``."""
    expected = _reference_heading_text(line)
    assert "\\" not in expected and "<" in expected
    extracted = extract(f"{line}\n\nSome prose.\n".encode(), "a.md", ExtractLimits())
    assert extracted.title == (expected if line.startswith("# ") else None)
    heads = [h for _, _, h in markdown_headings(extracted.units[0].text.split("\n"))]
    assert heads == [expected]


DOCUSAURUS_TABS = """# limit-req

Create a Route that allows 1 QPS per remote address:

<Tabs
groupId="api"
defaultValue="admin-api"
values={[
{label: 'Admin API', value: 'admin-api'},
{label: 'Ingress Controller', value: 'aic'}
]}>

<TabItem value="admin-api">

Send a request to the Admin API.

</TabItem>
</Tabs>

A line that says a < b and c > d stays.
"""


def test_multi_line_jsx_props_are_blanked() -> None:
    """Issue #37: ``{label: 'Ingress Controller', value: 'aic'} ]}>`` in snippets."""
    body = extract(DOCUSAURUS_TABS.encode(), "a.md", ExtractLimits()).units[0].text
    assert body.count("\n") == DOCUSAURUS_TABS.count("\n")  # lines keep their numbers
    assert "label" not in body and "]}>" not in body and "groupId" not in body
    assert "Send a request to the Admin API." in body
    assert "allows 1 QPS" in body and "a < b and c > d stays" in body
    chunks = " ".join(s.text for s in _segments(DOCUSAURUS_TABS))  # type: ignore[attr-defined]
    assert "Ingress Controller" not in chunks and "Admin API." in chunks
