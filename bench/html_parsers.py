"""Compare HTML parsers on real pages: the time to get a page's text (issue #23).

    python bench/html_parsers.py [--pages N] [--runs R] [DIR ...]

Pages: every ``*.html`` under the DIRs (default: the Rust docs installed with
rustup, if any), plus pages rendered from the shared Markdown corpus with
markdown-it-py inside a small site template (nav, header, footer, scripts).
For each parser it prints the median of R runs over N pages. Parsers that are
not installed are left out (``pip install beautifulsoup4 selectolax``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from _common import SHARED_DIR

_SITE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<script>window.x = 1;</script><style>body {{ margin: 0 }}</style></head>
<body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></nav>
<main>
{body}
</main>
<footer>Copyright the authors. <a href="/privacy">Privacy</a></footer>
</body></html>
"""


def corpus_pages(limit: int) -> list[bytes]:
    """Pages rendered from the shared corpus's Markdown files."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    root = SHARED_DIR / "corpus" / "docs"
    out = []
    for path in sorted(root.rglob("*.md"))[:limit]:
        text = path.read_text("utf-8", "replace")
        out.append(_SITE.format(title=path.stem, body=md.render(text)).encode())
    return out


def _ours(data: bytes) -> str:
    from docindex.ingest.extract import ExtractLimits
    from docindex.ingest.extract.html import extract

    return extract(data, "x.html", ExtractLimits()).units[0].text


def _bs4(backend: str) -> Callable[[bytes], str]:
    def run(data: bytes) -> str:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(data, backend)
        for tag in soup(["script", "style", "nav", "footer", "aside"]):
            tag.decompose()
        return str(soup.get_text("\n"))

    return run


def _selectolax(data: bytes) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(data)
    tree.strip_tags(["script", "style", "nav", "footer", "aside"])
    body = tree.body
    return body.text(separator="\n") if body is not None else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dirs", nargs="*")
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    dirs = [Path(d) for d in args.dirs] or sorted(
        Path.home().glob(".rustup/toolchains/*/share/doc/rust/html/book")
    )
    real: list[bytes] = []
    for d in dirs:
        real += [p.read_bytes() for p in sorted(d.rglob("*.html"))[: args.pages]]
    sets = {"real pages": real[: args.pages], "corpus pages": corpus_pages(args.pages)}
    parsers: dict[str, Callable[[bytes], str]] = {
        "docindex (lxml.html)": _ours,
        "bs4 + lxml": _bs4("lxml"),
        "bs4 + html.parser": _bs4("html.parser"),
        "selectolax (lexbor)": _selectolax,
    }
    for label, pages in sets.items():
        if not pages:
            continue
        mb = sum(map(len, pages)) / 1e6
        print(f"{label}: {len(pages)} pages, {mb:.1f} MB, median of {args.runs} runs")
        for name, fn in parsers.items():
            try:
                fn(pages[0])
            except ImportError:
                print(f"  {name:24} not installed")
                continue
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                for page in pages:
                    fn(page)
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            print(f"  {name:24} {med * 1000:8.0f} ms  {mb / med:6.1f} MB/s")


if __name__ == "__main__":
    main()
