"""Known items (issue #21): the page whose title, file name or heading *is* the
query's key term outranks pages that merely repeat it, in the chunk list and
with ``--files``. Document rows weigh the title (with the file name) and the
headings as fields beside the body (bm25 over document fields)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run, run_json

COMMANDS = {
    # the page named and titled by the command (tldr-pages style)
    "unzip.md": "# unzip\n\n> List, test and extract files in a ZIP archive.\n",
    # pages that mention it more often
    "tar.md": "# tar\n\n> Archiving utility. Unlike unzip, tar reads tarballs; "
    "unzip reads zip files.\n",
    "gzip.md": "# gzip\n\n> Compress or expand files. gzip is not unzip: unzip "
    "reads zip archives.\n",
}
PLUGINS = {
    # the plugin's page: its title is the product name
    "limit-req.md": "# 限流插件\n\n`limit-req` 插件使用漏桶算法限制单个客户端对服务的"
    "请求速率。\n",
    # pages that repeat the words, not the name
    "plugins.md": "# 插件列表\n\n本页列出所有插件。限流、限速和熔断的插件在流量分类下；"
    "限流可以按 IP 限流，也可以按消费者限流。插件可以热加载，插件顺序由优先级决定。\n",
    "faq.md": "# 常见问题\n\n如何限流？限流有哪些插件？插件怎么配置限流？"
    "限流失败时插件返回 503。\n",
}
# Other pages of the folders: in a real one most pages do not hold the key
# term (FTS5's idf is ~0 for a term in half the documents or more).
FILLER = {
    f"{name}.md": f"# {name}\n\n{text}\n"
    for name, text in {
        "ls": "List directory contents, one entry per line with -1.",
        "cp": "Copy files and directories; -r copies recursively.",
        "mv": "Move or rename files; -n does not overwrite.",
        "grep": "Print lines that match patterns in each file.",
        "sed": "Stream editor for filtering and transforming text.",
        "awk": "Pattern scanning and text processing language.",
        "curl": "Transfer a URL; -O saves the file under its remote name.",
        "ssh": "OpenSSH remote login client.",
        "chmod": "Change file mode bits.",
        "find": "Search for files in a directory hierarchy.",
        "网关": "网关接收请求并转发给上游服务。",
        "路由": "路由按路径和主机匹配请求。",
        "上游": "上游是一组后端节点，支持健康检查。",
        "证书": "证书用于 TLS 握手。",
    }.items()
}


@pytest.mark.parametrize(
    ("pages", "query", "page"),
    [
        (COMMANDS, "unzip", "unzip.md"),
        (PLUGINS, "限流插件", "limit-req.md"),
    ],
)
def test_the_page_named_by_the_key_term_comes_first(
    tree: Callable[[dict[str, str | bytes]], Path],
    pages: dict[str, str], query: str, page: str,
) -> None:  # fmt: skip
    root = tree({**FILLER, **pages})
    run("scan", str(root), "--quiet")
    for extra in ((), ("--files",)):
        hits = run_json("query", query, *extra)["hits"]
        assert hits[0]["rel_path"] == page, (extra, [h["rel_path"] for h in hits])
