"""Issue #6: ``docindex mcp`` end to end over stdio with the official SDK client."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run

from docindex.serve.mcp import INSTALL_HINT, MAX_BATCH, tool_schemas

TOOLS = {
    "doc_scan", "doc_query", "doc_reindex", "doc_stats", "get_doc", "get_outline",
    "get_section", "find_related", "list_documents", "search_batch",
}  # fmt: skip

GUIDE = """---
title: The Guide
lang: en
---
# Install
Run pip install docindex.

## On Linux
Use pip3 install docindex.

# Usage {#usage}
Query the index.
"""


def test_schemas_carry_index_enums() -> None:
    schemas = tool_schemas({"types": ["md", "pdf"], "facets": {"lang": ["de", "en"]}})
    assert set(schemas) == TOOLS
    query = schemas["doc_query"][1]
    assert query["properties"]["mode"]["enum"] == ["auto", "lexical", "semantic"]
    assert query["properties"]["type"]["anyOf"][0]["enum"] == ["md", "pdf"]
    assert query["properties"]["where"]["properties"]["lang"]["enum"] == ["de", "en"]
    assert query["required"] == ["query"]
    batch = schemas["search_batch"][1]["properties"]["queries"]
    assert batch["maxItems"] == MAX_BATCH
    empty = tool_schemas({"types": [], "facets": {}})["doc_query"][1]
    assert "enum" not in empty["properties"]["type"]["anyOf"][0]


def test_missing_sdk_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.stdio", None)
    result = run("mcp", ok=False)
    assert result.exit_code == 1
    assert INSTALL_HINT in result.stderr


def _payload(result: Any) -> Any:
    return json.loads(result.content[0].text)


def test_mcp_server_end_to_end(
    tree: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = tree(
        {
            "guide.md": GUIDE,
            "sub/notes.txt": "notes about pip install on every system\n",
            "sub/more.md": "---\nlang: de\n---\n# Mehr\npip install auf Deutsch\n",
        }
    )
    (tmp_path / "outside.md").write_text("# Outside\nsecret pip\n", "utf-8")
    db = tmp_path / "db" / "index.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "docindex", "mcp", "--db", str(db), "--root", str(root)],
        cwd=str(tmp_path),
    )

    async def main() -> None:
        with anyio.fail_after(60):
            await session_checks()

    async def session_checks() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def call(name: str, args: dict[str, Any]) -> tuple[bool, Any]:
                    result = await session.call_tool(name, args)
                    return result.is_error, _payload(result)

                listed = await session.list_tools()
                assert {t.name for t in listed.tools} == TOOLS

                err, scan = await call("doc_scan", {})
                assert not err and scan["indexed"] == 3
                schemas = {
                    t.name: t.input_schema for t in (await session.list_tools()).tools
                }
                props = schemas["doc_query"]["properties"]
                assert props["type"]["anyOf"][0]["enum"] == ["md", "txt"]
                assert props["where"]["properties"]["lang"]["enum"] == ["de", "en"]

                err, page1 = await call(
                    "doc_query", {"query": "pip install", "top_k": 2}
                )
                assert not err and len(page1["hits"]) == 2
                hit = page1["hits"][0]
                assert {"path", "line", "chunk_id", "score", "coverage"} <= set(hit)
                assert 0.0 <= hit["coverage"] <= 1.0 and "did_you_mean" in page1
                err, weak = await call("doc_query", {"query": "pip tidbwarehouse"})
                assert not err and weak["hint"]["weak_match"] is True  # issue #37
                assert weak["hint"]["unmatched_words"] == ["tidbwarehouse"]
                err, page2 = await call(
                    "doc_query",
                    {
                        "query": "pip install",
                        "top_k": 2,
                        "cursor": page1["next_cursor"],
                    },
                )
                assert not err
                first = {h["chunk_id"] for h in page1["hits"]}
                assert first.isdisjoint(h["chunk_id"] for h in page2["hits"])

                err, filtered = await call(
                    "doc_query", {"query": "pip", "type": "md", "where": {"lang": "de"}}
                )
                assert not err
                assert [h["rel_path"] for h in filtered["hits"]] == ["sub/more.md"]
                err, empty = await call("doc_query", {"query": "pip", "type": ["pdf"]})
                assert not err and empty["hits"] == [] and empty["hint"]["filtered_out"]

                err, doc = await call("get_doc", {"chunk_id": "guide.md#install/on-linux",
                                                  "context": 1})  # fmt: skip
                assert not err and (doc["position"], doc["total"]) == (2, 3)
                assert doc["chunk"]["start_line"] == 8 and len(doc["before"]) == 1

                err, outline = await call("get_outline", {"path": "guide.md",
                                                          "max_depth": 1})  # fmt: skip
                assert not err and outline["title"] == "The Guide"
                assert [e["text"] for e in outline["outline"]] == ["Install", "Usage"]

                err, section = await call("get_section", {"path": str(root / "guide.md"),
                                                          "section": "install"})  # fmt: skip
                assert not err and (section["start_line"], section["end_line"]) == (
                    5,
                    9,
                )

                err, usage = await call("get_section", {"path": "guide.md",
                                                        "section": "usage"})  # fmt: skip
                assert not err and usage["heading_path"] == ["Usage"]  # issue #37
                assert usage["text"].startswith("# Usage\n")  # no {#usage}
                err, doc = await call("get_doc", {"chunk_id": "guide.md#usage"})
                assert not err and "{#" not in doc["chunk"]["text"]

                err, related = await call(
                    "find_related", {"path": "guide.md", "limit": 3}
                )
                assert not err and related["hits"]
                assert all(h["rel_path"] != "guide.md" for h in related["hits"])
                files = [h["rel_path"] for h in related["hits"]]  # issue #37
                assert len(files) == len(set(files))
                assert all("folded_count" in h and h["heading_path"] is not None
                           for h in related["hits"])  # fmt: skip
                err, related = await call(
                    "find_related",
                    {"path": "guide.md", "chunk_id": "install", "same_file": True},
                )
                assert not err and related["source"] == "guide.md#install"

                err, listing = await call(
                    "list_documents", {"type": ["md"], "limit": 1}
                )
                assert not err and listing["total"] == 2 and listing["has_more"]

                err, batch = await call("search_batch", {
                    "queries": [{"query": "pip"}, {"query": "usage", "type": "md"}],
                    "limit": 1,
                })  # fmt: skip
                assert not err and [len(r["hits"]) for r in batch["results"]] == [1, 1]
                too_many = [{"query": "pip"}] * (MAX_BATCH + 1)
                err, _ = await call("search_batch", {"queries": too_many})
                assert err

                err, stats = await call("doc_stats", {})
                assert not err and stats["documents"] == 3
                err, again = await call("doc_reindex", {})
                assert not err and again["scanned"] == 3
                err, scoped = await call("doc_scan", {"path": "sub", "force": True})
                assert not err and scoped["scanned"] == 2

                for name, args in [
                    ("get_outline", {"path": str(tmp_path / "outside.md")}),
                    ("get_outline", {"path": "../outside.md"}),
                    ("get_doc", {"chunk_id": "../outside.md#outside"}),
                    ("get_section", {"path": "../outside.md", "section": "outside"}),
                    ("find_related", {"path": "../outside.md"}),
                    ("doc_scan", {"path": str(tmp_path)}),
                ]:
                    err, payload = await call(name, args)
                    assert err, (name, payload)
                    assert "outside" in payload["error"], (name, payload)

    anyio.run(main)


def test_calls_queued_when_stdin_closes_are_answered(
    tree: Callable[[dict[str, str | bytes]], Path], tmp_path: Path
) -> None:
    """Issue #38: `printf CALLS | docindex mcp` answered "-32000 Connection closed"."""
    pytest.importorskip("mcp")
    import subprocess

    import mcp.types as types

    root = tree({"guide.md": GUIDE})
    db = tmp_path / "db" / "index.db"
    run("scan", str(root), "--db", str(db), "-q")
    init = {"protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    calls = range(1, 9)
    lines += [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call",
         "params": {"name": "doc_query", "arguments": {"query": "pip install"}}}
        for i in calls
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "docindex", "mcp", "--db", str(db), "--root", str(root)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answers = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert set(answers) == {0, *calls}
    for i in calls:
        assert "error" not in answers[i], answers[i]
        assert not answers[i]["result"].get("isError"), answers[i]


def test_the_readmes_search_batch_call_works(tmp_path: Path) -> None:
    """The README's `search_batch` request, sent as printed to a real server (#45)."""
    pytest.importorskip("mcp")
    import re
    import subprocess

    import mcp.types as types

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    part = readme[readme.index("## MCP server for agents") :]
    shown = next(b for b in re.findall(r"```json\n(.*?)```", part, re.S)
                 if "search_batch" in b)  # fmt: skip
    request = json.loads(shown)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "keys.md").write_text("# Keys\n\nRotate the API keys every month.\n")
    (root / "cors.md").write_text("# 跨域\n\n在后端配置跨域请求的源。\n")
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db), "-q")
    init = {"protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request,
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "docindex", "mcp", "--db", str(db), "--root", str(root)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    answer = next(m for m in map(json.loads, proc.stdout.splitlines())
                  if m.get("id") == request["id"])  # fmt: skip
    assert not answer["result"].get("isError"), answer
    results = json.loads(answer["result"]["content"][0]["text"])["results"]
    assert [r["hits"][0]["rel_path"] for r in results] == ["keys.md", "cors.md"]
