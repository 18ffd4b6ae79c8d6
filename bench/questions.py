"""Real questions over the docs trees, in English and Chinese (issue #37).

``bench/questions.jsonl`` holds questions a developer asks ("how do I
configure rate limiting in apisix", "apisix 如何开启 jwt 认证", "线段树 懒标记"),
each with the file(s) that answer it, chosen by reading them (a tutorial and
the plugin page it uses may both answer). For each language and both views
(the default chunk list and ``--files``) it prints hit@1, hit@3 and MRR@10 of
the answering file, and, over every top-10 chunk hit, how many are
fragments: markup in the snippet (MDX props, JSX, fences) or fewer than 8
words of prose in the chunk (``docindex.search.quality.prose_words``). No
question here is code, so every such hit counts.

Usage: python bench/questions.py [--db INDEX] [--misses] [--json] [--source DIR]

``--source DIR`` runs the docindex of another source tree (a checkout of the
code before a change) on the same index and questions, for a before/after
comparison; the fragment count always uses this tree's definition.

Without ``--db`` the corpus is scanned into a temporary index first (about
half a minute). Skips with a message when ``../shared`` is absent.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from known_items import CORPUS, read_items, scan_corpus  # noqa: E402

ITEMS = Path(__file__).with_name("questions.jsonl")
# Markup a reader should never see in a snippet: MDX props and expressions,
# MDX/HTML layout tags outside code, and, anywhere, fence marks and mkdocs
# includes. Code in a snippet (a fenced example, `<div>` in inline code) is
# the chunk's text and no markup: a tag counts when the chunk's source holds
# it outside code.
MARKUP = re.compile(
    r"<(?:Tabs|TabItem|Sandpack|sup|span|div|details|summary)\b|\{label:|\]\}>"
    r"|\{/\*|groupId=|defaultValue="
)
NEVER_SHOWN = re.compile(r"```|--8<--")


def run(
    db: Path, items: list[dict[str, Any]], files: bool, source: Path | None = None
) -> list[list[dict[str, Any]]]:
    """Each question's top 10 hits (JSON) in one view (``source``: another tree's)."""
    cmd = [sys.executable, "-m", "docindex", "query", "--db", str(db), "--queries",
           "-", "--json", "--top", "10"]  # fmt: skip
    if files:
        cmd.append("--files")
    out = subprocess.run(
        cmd, input="".join(i["query"] + "\n" for i in items),
        capture_output=True, text=True, check=True, cwd=source,
    ).stdout  # fmt: skip
    return [json.loads(line)["hits"] for line in out.splitlines()]


def rank(hits: list[dict[str, Any]], item: dict[str, Any]) -> int | None:
    """1-based rank of the first hit in an answering file (None: not in the top 10)."""
    want = set(item["files"])
    return next((i for i, h in enumerate(hits, 1) if h["rel_path"] in want), None)


def fragment(hit: dict[str, Any]) -> str | None:
    """Why a hit is a fragment ("markup", "short"), or None."""
    from docindex.search.quality import MIN_PROSE_WORDS, prose_words
    from docindex.search.snippet import open_fence
    from docindex.text.prose import CODE_SPAN, display_lines

    lines = Path(hit["path"]).read_text("utf-8").split("\n")
    before = "\n".join(lines[: hit["start_line"] - 1])
    text = "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])
    if NEVER_SHOWN.search(hit["snippet"]):
        return "markup"
    tags = {m.group() for m in MARKUP.finditer(hit["snippet"])}
    if tags:
        outside = "\n".join(
            CODE_SPAN.sub("", line)
            for line, code in display_lines(text, open_fence(before))
            if not code
        )
        if any(tag in outside for tag in tags):
            return "markup"
    if prose_words(text, open_fence(before)) < MIN_PROSE_WORDS:
        return "short"
    return None


def figures(ranks: list[int | None]) -> dict[str, float]:
    n = max(1, len(ranks))
    return {
        "n": len(ranks),
        "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
        "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / n, 3),
        "mrr@10": round(sum(1 / r for r in ranks if r) / n, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--db", type=Path, help="an index of the corpus to reuse")
    parser.add_argument("--misses", action="store_true", help="list misses, fragments")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--source", type=Path, help="run this source tree's docindex")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} not found")
        return 0
    items = read_items(ITEMS)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or scan_corpus(Path(tmp) / "index.db")
        chunks = run(db, items, files=False, source=args.source)
        files = run(db, items, files=True, source=args.source)
    report: dict[str, Any] = {}
    for view, results in (("chunks", chunks), ("files", files)):
        ranks = [rank(h, i) for h, i in zip(results, items, strict=True)]
        for lang in ("en", "zh"):
            report[f"{lang} {view}"] = figures(
                [r for r, i in zip(ranks, items, strict=True) if i["lang"] == lang]
            )
        if args.misses:
            for r, item in zip(ranks, items, strict=True):
                if r is None or r > 3:
                    print(f"  {view} rank {r}: {item['query']} -> {item['files'][0]}",
                          file=sys.stderr)  # fmt: skip
    bad = [(item["query"], h, why) for hits, item in zip(chunks, items, strict=True)
           for h in hits if (why := fragment(h))]  # fmt: skip
    report["fragments"] = {
        "top10_hits": sum(len(h) for h in chunks),
        "markup": sum(1 for _, _, why in bad if why == "markup"),
        "short": sum(1 for _, _, why in bad if why == "short"),
    }
    if args.misses:
        for query, hit, why in bad:
            print(f"  {why}: {query} -> {hit['rel_path']}:{hit['line']} "
                  f"{hit['snippet'][:80]!r}", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{'set':<10} {'n':>3} {'hit@1':>6} {'hit@3':>6} {'MRR@10':>7}")
    for name, f in report.items():
        if name != "fragments":
            print(f"{name:<10} {f['n']:>3} {f['hit@1']:>6.3f} {f['hit@3']:>6.3f} "
                  f"{f['mrr@10']:>7.3f}")  # fmt: skip
    frag = report["fragments"]
    print(f"top-10 chunk hits: {frag['top10_hits']}, with markup: {frag['markup']}, "
          f"under {8} words of prose: {frag['short']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
