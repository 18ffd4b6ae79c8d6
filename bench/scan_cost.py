"""Full-scan cost and index size beside other versions, and how they grow (issue #35).

Builds trees of ``../shared/corpus/docs`` copied N times under renamed folders
(hard links under /tmp/docindex-bench/scan_cost, as ``bench/speed.py`` does;
5x is ~10,800 files), then for each tree and each run, in an interleaved
order that rotates every run, gives every version a full scan into a fresh
index, each in its own process (``bench/_common.py measure``): wall time,
CPU (user + system of the whole process tree, workers included) and the
index's bytes (file + WAL). The caps are raised (``DOCINDEX_MAX_*``) so every
scale indexes every file.

Versions: this checkout ("current"), and each ``--rev NAME=COMMIT`` (e.g.
``--rev 0.1.0=78c9689``), which is exported with ``git archive`` and installed
into its own venv under /tmp/docindex-bench/scan_cost/venv-COMMIT (once,
cached). ``--dbstat`` adds bytes per table and index (SQLite ``dbstat``) of
each version's last index at each scale.

Prints one table per scale (min / median / max over runs), then the current
version's cost per corpus-copy at each scale against the first (linear
growth is 1.00).

Usage: python bench/scan_cost.py [--scales 1,5] [--runs 3]
                                 [--rev NAME=COMMIT ...] [--dbstat] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import corpus_copies, docindex_cmd, measure, mmm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "docs"
WORK = Path(tempfile.gettempdir()) / "docindex-bench" / "scan_cost"
CAPS = ("MAX_DOCS", "MAX_SEGMENTS", "MAX_EMBEDDED")


def install_rev(commit: str) -> list[str]:
    """The console script of ``commit`` installed in its own venv (built once)."""
    full = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", commit],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    home = WORK / f"venv-{full[:12]}"
    exe = home / "bin" / "docindex"
    if exe.is_file():
        return [str(exe)]
    src = WORK / f"src-{full[:12]}"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", full], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    shutil.rmtree(home, ignore_errors=True)
    venv.create(home, with_pip=True)
    pip = [str(home / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-U", "pip"], check=True)
    subprocess.run([*pip, str(src)], check=True)
    return [str(exe)]


def make_tree(scale: int) -> Path:
    """``scale`` copies of the corpus under renamed folders (hard links, else copies)."""
    if scale == 1:
        return CORPUS
    return corpus_copies(CORPUS, WORK / f"x{scale}", scale)


def tree_bytes(tree: Path) -> tuple[int, int]:
    """(files, bytes) of the tree's files (the marker left out)."""
    files = [p for p in tree.rglob("*") if p.is_file() and p.name != ".complete"]
    return len(files), sum(p.stat().st_size for p in files)


def index_bytes(db: Path) -> int:
    return sum(
        Path(f"{db}{s}").stat().st_size
        for s in ("", "-wal")
        if Path(f"{db}{s}").exists()
    )


def fresh(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def table_bytes(db: Path) -> dict[str, int]:
    """Bytes per table and index (``dbstat``), FTS shadow tables included."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return {str(n): int(b) for n, b in rows}


def _scan(
    cmd: list[str], tree: Path, db: Path, env: dict[str, str]
) -> dict[str, float | int]:
    """One full scan into a fresh index; a failed run is said and tried once more."""
    for attempt in (1, 2):
        fresh(db)
        try:
            return measure([*cmd, "scan", str(tree), "--db", str(db), "-q"], env)
        except RuntimeError as exc:
            if attempt == 2:
                raise
            print(f"  failed, run again: {str(exc)[-300:]}", file=sys.stderr)
    raise AssertionError("unreachable")


def bench(
    scales: list[int], runs: int, versions: dict[str, list[str]], dbstat: bool
) -> list[dict[str, object]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env.update({f"DOCINDEX_{k}": "10000000" for k in CAPS}, DOCINDEX_WATCHER="off")
    out: list[dict[str, object]] = []
    names = list(versions)
    for scale in scales:
        tree = make_tree(scale)
        files, corpus = tree_bytes(tree)
        figures: dict[str, dict[str, list[float]]] = {
            n: {"wall": [], "cpu": [], "size": []} for n in names
        }
        for run in range(runs):
            order = names[run % len(names) :] + names[: run % len(names)]
            for name in order:
                db = WORK / f"{name}-x{scale}.db"
                fresh(db)
                m = _scan(versions[name], tree, db, env)
                figures[name]["wall"].append(float(m["wall_s"]))
                figures[name]["cpu"].append(float(m["cpu_s"]))
                figures[name]["size"].append(float(index_bytes(db)))
                print(f"  x{scale} run {run + 1} {name}: {m['wall_s']:.1f} s",
                      file=sys.stderr)  # fmt: skip
        for name in names:
            row: dict[str, object] = {
                "scale": scale, "version": name, "files": files,
                "corpus_bytes": corpus, **figures[name],
            }  # fmt: skip
            if dbstat:
                row["tables"] = table_bytes(WORK / f"{name}-x{scale}.db")
            out.append(row)
    return out


def _fmt(values: list[float], unit: str, scale: float = 1.0) -> str:
    lo, mid, hi = mmm([v / scale for v in values])
    return f"{mid:.1f} {unit} ({lo:.1f}-{hi:.1f})"


def report(rows: list[dict[str, object]], dbstat: bool) -> None:
    for scale in sorted({int(r["scale"]) for r in rows}):  # type: ignore[call-overload]
        at = [r for r in rows if r["scale"] == scale]
        files, corpus = at[0]["files"], int(at[0]["corpus_bytes"])  # type: ignore[call-overload]
        print(f"\n## {scale}x the corpus: {files} files, {corpus / 1e6:.1f} MB")
        print(
            "| version | full scan wall | CPU (all processes) | index | index / corpus |"
        )
        print("|---|---|---|---|---|")
        for r in at:
            size = r["size"]
            assert isinstance(size, list)
            print(
                f"| {r['version']} | {_fmt(r['wall'], 's')} | "  # type: ignore[arg-type]
                f"{_fmt(r['cpu'], 's')} | {_fmt(size, 'MB', 1e6)} | "  # type: ignore[arg-type]
                f"{sorted(size)[len(size) // 2] / corpus:.2f}x |"
            )
        if dbstat:
            names = [str(r["version"]) for r in at]
            tables: list[dict[str, int]] = [r["tables"] for r in at]  # type: ignore[misc]
            keys = sorted({k for t in tables for k in t},
                          key=lambda k: -max(t.get(k, 0) for t in tables))  # fmt: skip
            print(f"\n| table (MB, {scale}x) | " + " | ".join(names) + " |")
            print("|---|" + "---|" * len(names))
            for k in keys:
                if max(t.get(k, 0) for t in tables) < 50_000:
                    continue
                cells = " | ".join(f"{t.get(k, 0) / 1e6:.2f}" for t in tables)
                print(f"| {k} | {cells} |")
    cur = [r for r in rows if r["version"] == "current"]
    if len(cur) > 1:
        base = cur[0]
        print(
            "\n## current: cost per corpus copy against the first scale (linear = 1.00)"
        )
        print("| scale | wall / copy | CPU / copy | index / copy |")
        print("|---|---|---|---|")
        for r in cur:
            s, s0 = int(r["scale"]), int(base["scale"])  # type: ignore[call-overload]
            ratio = [
                (sorted(r[k])[len(r[k]) // 2] / s)  # type: ignore[arg-type,index]
                / (sorted(base[k])[len(base[k]) // 2] / s0)  # type: ignore[arg-type,index]
                for k in ("wall", "cpu", "size")
            ]
            print(f"| {s}x | " + " | ".join(f"{x:.2f}" for x in ratio) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="1,5")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rev", action="append", default=[], metavar="NAME=COMMIT",
                    help="another version, built from COMMIT into its own venv")  # fmt: skip
    ap.add_argument("--dbstat", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if not CORPUS.is_dir():
        print(f"skipped: no corpus at {CORPUS}")
        return
    WORK.mkdir(parents=True, exist_ok=True)
    # Not from this checkout: another version's workers would import its
    # ``docindex`` from the working directory.
    os.chdir(WORK)
    versions: dict[str, list[str]] = {}
    for spec in args.rev:
        name, _, commit = spec.partition("=")
        versions[name] = install_rev(commit or name)
    versions["current"] = docindex_cmd()
    scales = [int(s) for s in args.scales.split(",")]
    rows = bench(scales, args.runs, versions, args.dbstat)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    report(rows, args.dbstat)


if __name__ == "__main__":
    main()
