"""Big legitimate files, whatever the load (issue #46).

Writes, once, under /tmp/docindex-bench/big_files:

- ``md-10000.md`` / ``md-20000.md`` / ``md-40000.md``: Markdown files of N short
  sections (``## Step i`` and two words; 40,000 is ~1 MB);
- ``headings-200000.md``: 200,000 bare headings (no text between them);
- ``text-50000.txt``: a 5 MB plain-text file of 50,000 paragraphs (16 words);

then times a whole-process ``docindex scan`` of a folder holding each file
alone (a fresh index each run): wall time, the CPU of the scan and its
workers, and whether the file was indexed whole (segments, skip reason).
``--load N`` starts N busy loops (``python -c "while True: pass"``) for the
whole run and kills them at the end; ``--profile FILE`` profiles one worker's
``prepare`` of that file in this process instead (cProfile, top functions).

Prints one table; the ratio column is each file's wall time over the
10,000-section file's (the issue's target: 40,000 sections within 4.5x).

Usage: python bench/big_files.py [--runs 3] [--load 6] [--only NAME,...]
       python bench/big_files.py --profile md-40000.md
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import docindex_cmd, measure  # noqa: E402

WORK = Path(tempfile.gettempdir()) / "docindex-bench" / "big_files"
WORDS = (
    "the index keeps every section of a long reference page so that a reader "
    "finds the paragraph that answers the question without scrolling through "
    "thousands of lines rate limit upstream plugin route consumer token"
).split()


def _sentence(i: int, n: int = 12) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + "."


def make_files() -> dict[str, Path]:
    """The test files (written once)."""
    WORK.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for n in (10_000, 20_000, 40_000):
        path = WORK / f"md-{n}.md"
        if not path.exists():
            parts = ["# A long reference page\n\nIntroduction.\n"]
            parts += [f"\n## Step {i}\n\n{_sentence(i, 2)}\n" for i in range(n)]
            path.write_text("".join(parts), "utf-8")
        files[path.name] = path
    path = WORK / "headings-200000.md"
    if not path.exists():
        path.write_text("".join(f"## Heading {i}\n" for i in range(200_000)), "utf-8")
    files[path.name] = path
    path = WORK / "text-50000.txt"
    if not path.exists():
        paras = [
            " ".join(_sentence(i * 5 + k, 8) for k in range(2)) for i in range(50_000)
        ]
        path.write_text("\n\n".join(paras) + "\n", "utf-8")
    files[path.name] = path
    return files


def _one(cmd: list[str], path: Path, env: dict[str, str]) -> dict[str, object]:
    """One whole-process scan of a folder holding ``path`` alone."""
    with tempfile.TemporaryDirectory(prefix="big-") as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        os.link(path, folder / path.name)
        db = Path(tmp) / "index.db"
        m = measure([*cmd, "scan", str(folder), "--db", str(db), "-q"], env)
        out = subprocess.run(
            [*cmd, "stats", "--db", str(db), "--json"], env=env, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip
        skipped = subprocess.run(
            [*cmd, "skipped", "--db", str(db), "--json"], env=env,
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    stats = json.loads(out)
    return {
        "wall": float(m["wall_s"]), "cpu": float(m["cpu_s"]),
        "segments": stats.get("segments"), "documents": stats.get("documents"),
        "skipped": [s.get("reason") for s in json.loads(skipped).get("skipped", [])],
    }  # fmt: skip


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
    ]


def bench(files: dict[str, Path], runs: int, load: int) -> None:
    cmd = docindex_cmd()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env.update(DOCINDEX_WATCHER="off", DOCINDEX_MAX_SEGMENTS="10000000",
               DOCINDEX_MAX_EMBEDDED="10000000")  # fmt: skip
    loops = _busy(load)
    try:
        time.sleep(1.0 if load else 0.0)
        rows: dict[str, list[dict[str, object]]] = {name: [] for name in files}
        for run in range(runs):
            for name, path in files.items():
                rows[name].append(_one(cmd, path, env))
                print(f"  run {run + 1} {name}: {rows[name][-1]['wall']:.1f} s",
                      file=sys.stderr)  # fmt: skip
        load_avg = os.getloadavg()
    finally:
        for p in loops:
            p.kill()
            p.wait()
    base = statistics.median(float(r["wall"]) for r in rows.get("md-10000.md", [{}]))  # type: ignore[arg-type]
    print(f"\n{runs} runs, {load} busy loops, load average at the end "
          f"{load_avg[0]:.1f} {load_avg[1]:.1f} {load_avg[2]:.1f}")  # fmt: skip
    print("| file | size | wall (median, min-max) | CPU | / 10,000 sections | "
          "segments | skipped |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, got in rows.items():
        walls = [float(r["wall"]) for r in got]  # type: ignore[arg-type]
        cpus = [float(r["cpu"]) for r in got]  # type: ignore[arg-type]
        size = files[name].stat().st_size
        print(f"| {name} | {size / 1e6:.1f} MB | {statistics.median(walls):.1f} s "
              f"({min(walls):.1f}-{max(walls):.1f}) | {statistics.median(cpus):.1f} s | "
              f"{statistics.median(walls) / base:.2f}x | {got[-1]['segments']} | "
              f"{','.join(map(str, got[-1]['skipped'])) or '-'} |")  # fmt: skip


def profile(path: Path, top: int) -> None:
    """cProfile of one worker's ``prepare`` of ``path`` (in this process)."""
    from docindex.config import Config
    from docindex.ingest.prepare import Job, prepare_bulk

    cfg = Config().replace(roots=(str(path.parent),), max_segments=10_000_000,
                           max_embedded=10_000_000)  # fmt: skip
    st = path.stat()
    job = Job(str(path), path.name, str(path.parent), st.st_size, st.st_mtime_ns, None)
    prof = cProfile.Profile()
    cpu = time.process_time()
    prof.enable()
    prep = prepare_bulk(job, cfg)
    prof.disable()
    cpu = time.process_time() - cpu
    print(f"{path.name}: {len(prep.segments)} segments, skip {prep.skip or '-'}, "
          f"{cpu:.2f} CPU-s under cProfile")  # fmt: skip
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    print("\n".join(x for x in out.getvalue().splitlines()[6:] if x.strip()))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="busy loops to run meanwhile")
    ap.add_argument("--only", default="", help="comma-separated file names")
    ap.add_argument("--profile", metavar="NAME", help="profile one worker on it")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    files = make_files()
    if args.profile:
        profile(files[args.profile], args.top)
        return 0
    if args.only:
        files = {k: v for k, v in files.items() if k in args.only.split(",")}
    bench(files, args.runs, args.load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
