"""Scan a generated N-page text PDF: wall time and peak memory (issue #23).

    python bench/big_pdf.py [--pages 1000] [--runs 3] [--shared-mb 16]

``--shared-mb N`` builds the attack of issue #33 instead: every page draws one
shared content stream of N MB (2,000 pages and 16 MB make a ~360 KB file).

Each run scans a folder holding only the PDF into a fresh index, in a fresh
process measured by ``bench/_common.py``; prints each run and the median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def main() -> None:
    import _formats

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shared-mb", type=float, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "pdf"
        folder.mkdir()
        if args.shared_mb:
            size = int(args.shared_mb * 2**20)
            data = _formats.shared_stream_pdf(args.pages, size)
        else:
            data = _formats.pdf(args.pages)
        (folder / "manual.pdf").write_bytes(data)
        walls, rss = [], []
        for run in range(args.runs):
            db = Path(tmp) / f"i{run}.db"
            cmd = [sys.executable, str(HERE / "_common.py"), "measure", "--",
                   sys.executable, "-m", "docindex", "scan", str(folder),
                   "--db", str(db), "--json"]  # fmt: skip
            out = json.loads(subprocess.check_output(cmd, text=True).splitlines()[-1])
            walls.append(out["wall_s"])
            rss.append(out["tree_rss_kb"] / 1024)
            print(f"run {run + 1}: {out['wall_s']:.2f} s, {rss[-1]:.0f} MB")
        print(
            f"{args.pages} pages: median {statistics.median(walls):.2f} s, "
            f"{statistics.median(rss):.0f} MB peak (tree RSS), {args.runs} runs"
        )


if __name__ == "__main__":
    main()
