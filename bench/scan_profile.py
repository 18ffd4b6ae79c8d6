"""Where a full scan's CPU goes: the workers' part and the writer's (issue #46).

``workers``: every file of the corpus prepared in this one process, as a pool
worker prepares it (``prepare_bulk``: extract, segment, tokenise, count,
embed, compress), under cProfile: total CPU and the functions with the most
cumulative time.

``writer``: a full scan into a fresh index in this process with the worker
pool as usual; cProfile sees the main process only (the single writer):
time in SQLite statements (``execute``/``executemany``), waiting for the
workers, the rest.

Run it with ``PYTHONPATH=OTHER_TREE`` to profile another version.

Usage: python bench/scan_profile.py workers|writer [--tree DIR] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DIR  # noqa: E402

CORPUS = SHARED_DIR / "corpus" / "docs"


def _cfg(tree: Path) -> object:
    from docindex.config import Config

    return Config().replace(roots=(str(tree),), max_docs=10_000_000,
                            max_segments=10_000_000, max_embedded=10_000_000)  # fmt: skip


def workers(tree: Path, top: int) -> None:
    from docindex.ingest.prepare import Job, prepare_bulk

    cfg = _cfg(tree)
    jobs = []
    for path in sorted(tree.rglob("*.md")):
        st = path.stat()
        jobs.append(Job(str(path), str(path.relative_to(tree)), str(tree),
                        st.st_size, st.st_mtime_ns, None))  # fmt: skip
    prof = cProfile.Profile()
    cpu = time.process_time()
    prof.enable()
    for job in jobs:
        prepare_bulk(job, cfg)  # type: ignore[arg-type]
    prof.disable()
    cpu = time.process_time() - cpu
    print(f"workers' part: {len(jobs)} files prepared in {cpu:.2f} CPU-s (one process)")
    _print(prof, top)


def writer(tree: Path, top: int) -> None:
    from docindex.ingest.indexer import scan
    from docindex.store import Store

    cfg = _cfg(tree)
    with tempfile.TemporaryDirectory(prefix="scan-profile-") as tmp:
        prof = cProfile.Profile()
        cpu, wall = time.process_time(), time.perf_counter()
        with Store.open(Path(tmp) / "index.db", create=True) as store:
            prof.enable()
            scan(store, cfg, bulk=True)  # type: ignore[arg-type]
            prof.disable()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        size = os.path.getsize(Path(tmp) / "index.db")
    stats = pstats.Stats(prof)
    sql = sum(
        tt for (file, _, name), (_, _, tt, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if name in ("<method 'execute' of 'sqlite3.Connection' objects>",
                    "<method 'executemany' of 'sqlite3.Connection' objects>",
                    "<method 'execute' of 'sqlite3.Cursor' objects>",
                    "<method 'executemany' of 'sqlite3.Cursor' objects>")
    )  # fmt: skip
    wait = sum(
        tt for (file, _, name), (_, _, tt, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if "acquire" in name or "poll" in name or "recv" in name or "select" in name
        or "wait" in name
    )  # fmt: skip
    print(f"writer (main process): {wall:.2f} s wall, {cpu:.2f} CPU-s; SQLite "
          f"statements {sql:.2f} s, waiting {wait:.2f} s; index {size / 1e6:.1f} MB")  # fmt: skip
    _print(prof, top)


def _print(prof: cProfile.Profile, top: int) -> None:
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("part", choices=("workers", "writer"))
    ap.add_argument("--tree", type=Path, default=CORPUS)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if not args.tree.is_dir():
        print(f"skipped: {args.tree} not found")
        return 0
    import docindex

    print(f"docindex from {Path(docindex.__file__).parent}")
    (workers if args.part == "workers" else writer)(args.tree, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
