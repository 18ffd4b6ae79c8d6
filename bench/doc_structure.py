r"""Structure and snippet figures of an index of ``../shared/corpus/docs`` (issue #19).

Prints, for the index given with ``--db`` (scan the corpus into it first):

- ``comment_or_jsx_headings``: section headings whose line lies inside an HTML
  comment of the source file, or whose text holds MDX/JSX (``{/*``, ``{#``,
  ``<Tag``);
- ``docs_without_chunk``: corpus files with no indexed chunk, and how many of
  them are truly empty (whitespace only);
- over the top-10 hits of QUERIES (default options): ``short_snippets``
  (fewer than 3 words; a CJK character counts as a word), ``noisy_hits``
  (snippet or heading path holding an MDX anchor, ``{#id}``, ``:::``, ``!!!``,
  comment marks, ``\*`` escapes or ``<Tabs>``/``<TabItem>``; code is not
  noise) and
  ``third_or_later`` (a document's third or later hit on the page).

Usage: python bench/doc_structure.py --db INDEX [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from _common import SHARED_DIR

CORPUS = SHARED_DIR / "corpus" / "docs"
QUERIES = [
    "rate limiting", "custom hooks", "配置", "authentication plugin", "state",
    "upload a file", "插件", "组件", "reactivity", "traits", "error handling",
    "最短路", "install", "动态规划", "server components",
]  # fmt: skip
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_NOISE = re.compile(
    r"\{/\*\s*[\w-]+\s*\*/\}|\{#[\w-]+\}|:::|^!!! |<!--|-->|\\\*|</?Tabs?(?:Item)?[\s>]"
)
_JSX = re.compile(r"\{/\*|\*/\}|\{#[\w-]|<[A-Za-z][\w.]*\s+[\w:-]+=")
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\W_]+")


def heading_figures(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    bad = total = 0
    docs = conn.execute("SELECT id, rel_path FROM documents").fetchall()
    conn.close()
    from docindex.store import Store

    with Store.open(db) as store:
        for doc_id, rel in docs:
            raw = (CORPUS / rel).read_text(errors="replace")
            comments = [
                (raw.count("\n", 0, m.start()) + 1, raw.count("\n", 0, m.end()) + 1)
                for m in _COMMENT.finditer(raw)
            ]
            first: dict[tuple[str, ...], int] = {}
            for seg in store.segments_of(doc_id):
                if seg.heading:
                    key = tuple(seg.heading)
                    first[key] = min(first.get(key, seg.start_line), seg.start_line)
            for path, line in first.items():
                total += 1
                if _JSX.search(path[-1]) or any(a <= line <= b for a, b in comments):
                    bad += 1
    return {"headings": total, "comment_or_jsx_headings": bad}


def empty_figures(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    indexed = {r[0] for r in conn.execute("SELECT rel_path FROM documents")}
    conn.close()
    files = [p for p in CORPUS.rglob("*") if p.is_file()]
    missing = [p for p in files if str(p.relative_to(CORPUS)) not in indexed]
    truly = [p for p in missing if not p.read_bytes().strip()]
    return {"docs_without_chunk": len(missing), "truly_empty": len(truly)}


def snippet_figures(db: Path) -> dict[str, int]:
    out = subprocess.run(
        [sys.executable, "-m", "docindex", "query", "--db", str(db), "--queries",
         "-", "--json", "--top", "10"],
        input="".join(q + "\n" for q in QUERIES), capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    hits = short = noisy = third = 0
    for line in out.splitlines():
        seen: dict[str, int] = {}
        for hit in json.loads(line)["hits"]:
            hits += 1
            text = hit["snippet"].replace("**", "")
            if len(_WORD.findall(text)) < 3:
                short += 1
            if _NOISE.search(text) or _NOISE.search(" ".join(hit["heading_path"])):
                noisy += 1
            seen[hit["rel_path"]] = seen.get(hit["rel_path"], 0) + 1
            third += seen[hit["rel_path"]] >= 3
    return {"hits": hits, "short_snippets": short, "noisy_hits": noisy,
            "third_or_later": third}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} not found")
        return 0
    report = {
        **heading_figures(args.db), **empty_figures(args.db),
        **snippet_figures(args.db),
    }  # fmt: skip
    print(json.dumps(report) if args.json else
          "\n".join(f"{k:<24} {v}" for k, v in report.items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
