"""Questions across languages: Chinese questions over English pages and back (#47).

The react.dev, Vue and Apache APISIX trees of ``../shared/corpus/docs`` exist
in English and in Chinese, as translations of each other: a page's twin is
the page at the same path in the other tree (APISIX: ``docs/en/`` and
``docs/zh/``). This bench builds a dev set from them (nothing is copied into
the repository; the questions are made again on every run, deterministically)
and measures it:

- ``zh->en``: the English tree (``docs/en``: all four projects, the Rust RFCs
  being distractors) is indexed alone, and each Chinese page of a pair asks
  one question made of its title, its first heading below the title and its
  first sentence (cut to QUESTION_CHARS); the answer is the English twin;
- ``en->zh``: the reverse, over the Chinese tree (with OI-wiki as distractors).

The pairs are split by a hash of their path into a ``dev`` half (the one the
design was chosen on) and a ``held`` half (reported, never tuned on).

For each provider (``--providers``, default ``ngram,multilingual``) and
direction it scans the tree into ``--workdir`` (kept: a later run reuses the
index), runs ``docindex query --queries - --json --top 10`` (chunk list and
``--files``) and prints nDCG@10 (one relevant page: 1 / log2(rank + 1)),
hit@3 and the scan's and queries' wall time with the load average.

Usage: python bench/crosslingual.py [--workdir DIR] [--providers a,b]
                                   [--directions zh-en,en-zh] [--json]
                                   [--dump FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from _common import SHARED_DIR

DOCS = SHARED_DIR / "corpus" / "docs"
# (English folder, Chinese folder, English path part -> Chinese path part)
TREES = [
    ("en/react.dev", "zh/zh-hans.react.dev", ("", "")),
    ("en/vuejs-docs", "zh/vuejs-docs-zh-cn", ("", "")),
    ("en/apisix", "zh/apisix", ("docs/en/", "docs/zh/")),
]
QUESTION_CHARS = 120  # the first sentence is cut to this many characters
_FRONT = re.compile(r"\A---\n.*?\n---\n", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ATTR = re.compile(r"\s*\{(?:#[^}]*|/\*.*?\*/)\}")
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s")
_TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$", re.M)


def pairs() -> list[tuple[str, str]]:
    """(English rel path, Chinese rel path) under ``docs/``, sorted."""
    out = []
    for en, zh, (a, b) in TREES:
        for path in sorted((DOCS / en).rglob("*.md")):
            rel = path.relative_to(DOCS / en).as_posix()
            twin = DOCS / zh / (rel.replace(a, b, 1) if a else rel)
            if twin.is_file():
                out.append((f"{en}/{rel}", twin.relative_to(DOCS).as_posix()))
    return out


def half(rel: str) -> str:
    """``dev`` or ``held``, by a stable hash of the English path."""
    return "dev" if zlib.crc32(rel.encode()) % 2 == 0 else "held"


def _plain(line: str) -> str:
    line = _LINK.sub(r"\1", line)
    return re.sub(r"[`*_]|<[^>]+>", "", _ATTR.sub("", line)).strip()


def question(path: Path) -> str:
    """The page's title, first heading below it and first sentence, as one question."""
    raw = path.read_text("utf-8")
    front = _FRONT.match(raw)
    title = ""
    if front:
        found = _TITLE.search(front.group(0))
        title = found.group(1).strip() if found else ""
        raw = raw[front.end() :]
    raw = _FENCE.sub("", _COMMENT.sub("", raw))
    heading, sentence = "", ""
    for line in raw.splitlines():
        text = line.strip()
        if not text:
            continue
        if text.startswith("#"):
            level = len(text) - len(text.lstrip("#"))
            words = _plain(text.lstrip("#"))
            if level == 1 and not title:
                title = words
            elif level > 1 and not heading:
                heading = words
            continue
        if sentence or text.startswith(
            ("<", ">", "|", "import ", ":::", "{", "-", "*")
        ):
            continue
        plain = _plain(text)
        if len(plain) >= 12:
            sentence = _SENTENCE_END.split(plain, maxsplit=1)[0][:QUESTION_CHARS]
        if heading and sentence:
            break
    parts = [p for p in (title, heading, sentence) if p]
    return " ".join(dict.fromkeys(parts))


def dev_set(direction: str) -> list[dict[str, str]]:
    """The questions of one direction: ``zh-en`` asks in Chinese for English pages."""
    items = []
    for en, zh in pairs():
        ask, answer = (zh, en) if direction == "zh-en" else (en, zh)
        text = question(DOCS / ask)
        if text:
            items.append({"query": text, "answer": answer, "half": half(en)})
    return items


def scan(db: Path, root: Path, provider: str) -> dict[str, Any]:
    """Scan ``root`` into ``db`` with ``provider`` unless it is there already."""
    if db.is_file():
        return {"scan_s": None, "load": None}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(db),
         "--provider", provider, "-q"],
        check=True,
    )  # fmt: skip
    return {
        "scan_s": round(time.perf_counter() - started, 1),
        "load": round(os.getloadavg()[0], 2),
    }


def ask(
    db: Path, items: list[dict[str, str]], files: bool, path: str | None = None,
    weight: str | None = None,
) -> tuple[list[Any], float]:  # fmt: skip
    """Each question's top 10 hits (JSON) and the wall time of the whole batch."""
    cmd = [sys.executable, "-m", "docindex", "query", "--db", str(db), "--queries",
           "-", "--json", "--top", "10"]  # fmt: skip
    if files:
        cmd.append("--files")
    if path:
        cmd += ["--path", path]
    env = dict(os.environ)
    if weight:
        env["DOCINDEX_MULTILINGUAL_WEIGHT"] = weight
    started = time.perf_counter()
    out = subprocess.run(
        cmd, input="".join(i["query"].replace("\n", " ") + "\n" for i in items),
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip
    took = time.perf_counter() - started
    return [json.loads(line)["hits"] for line in out.splitlines()], took


def rank_of(hits: list[dict[str, Any]], answer: str, root: str) -> int | None:
    """1-based rank of the answer among the hits' distinct files, or None."""
    seen: list[str] = []
    for hit in hits:
        rel = f"{root}/{hit['rel_path']}" if root else hit["rel_path"]
        if rel not in seen:
            seen.append(rel)
    return seen.index(answer) + 1 if answer in seen else None


def figures(ranks: list[int | None]) -> dict[str, float]:
    n = max(1, len(ranks))
    return {
        "ndcg10": round(sum(1 / math.log2(r + 1) for r in ranks if r) / n, 4),
        "hit3": round(sum(1 for r in ranks if r and r <= 3) / n, 4),
        "n": len(ranks),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/docindex-xling"))
    parser.add_argument("--providers", default="ngram,multilingual")
    parser.add_argument("--directions", default="zh-en,en-zh")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump", type=Path, help="write the questions as JSONL")
    parser.add_argument(
        "--combined", action="store_true",
        help="one index of the whole corpus per provider, each direction's "
        "answers kept to its language by --path (idf then counts both trees)",
    )  # fmt: skip
    parser.add_argument(
        "--weights",
        default="",
        help="multilingual_weight values to run (default: the setting's)",
    )
    parser.add_argument(
        "--half",
        choices=("dev", "held", "all"),
        default=None,
        help="ask only this half's questions",
    )
    parser.add_argument("--views", default="chunks,files")  # fmt: skip
    args = parser.parse_args()
    if not DOCS.is_dir():
        print(f"skipped: corpus not found at {DOCS}", file=sys.stderr)
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for direction in args.directions.split(","):
        items = dev_set(direction)
        if args.half and args.half != "all":
            items = [i for i in items if i["half"] == args.half]
        if args.dump:
            with args.dump.open("a", encoding="utf-8") as fh:
                for item in items:
                    fh.write(json.dumps({"direction": direction, **item},
                                        ensure_ascii=False) + "\n")  # fmt: skip
        tree = "en" if direction == "zh-en" else "zh"
        for provider in args.providers.split(","):
            if args.combined:
                db = args.workdir / f"docs-{provider}.db"
                cost, root, only = scan(db, DOCS, provider), "", f"{tree}/**"
            else:
                db = args.workdir / f"{tree}-{provider}.db"
                cost, root, only = scan(db, DOCS / tree, provider), tree, None
            runs = [
                (view == "files", weight)
                for weight in (args.weights.split(",") if args.weights else [None])
                for view in args.views.split(",")
            ]
            for files, weight in runs:
                hits, took = ask(db, items, files, only, weight)
                ranks = [
                    rank_of(h, i["answer"], root)
                    for h, i in zip(hits, items, strict=True)
                ]
                for part in ("dev", "held", "all"):
                    chosen = [r for r, i in zip(ranks, items, strict=True)
                              if part == "all" or i["half"] == part]  # fmt: skip
                    rows.append({
                        "direction": direction, "provider": provider,
                        "weight": weight,
                        "view": "files" if files else "chunks", "half": part,
                        **figures(chosen), **cost,
                        "ms_per_query": round(1000 * took / max(1, len(items)), 1),
                        "query_load": round(os.getloadavg()[0], 2),
                    })  # fmt: skip
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    print(f"{'direction':<9} {'provider':<13} {'weight':>6} {'view':<6} {'half':<5} {'nDCG@10':>8} "
          f"{'hit@3':>6} {'n':>4} {'scan s':>7} {'load':>5} {'ms/q':>6}")  # fmt: skip
    for r in rows:
        print(f"{r['direction']:<9} {r['provider']:<13} {r['weight'] or '-':>6} {r['view']:<6} {r['half']:<5} "
              f"{r['ndcg10']:>8.4f} {r['hit3']:>6.3f} {r['n']:>4} "
              f"{r['scan_s'] or '-':>7} {r['load'] or '-':>5} {r['ms_per_query']:>6}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
