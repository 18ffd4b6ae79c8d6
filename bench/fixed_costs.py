"""The fixed costs people repeat all day, on the 1x and 10x corpus (issue #24).

Whole-process wall time (and the process's own CPU, user + system, which a
busy machine disturbs less) of:

- ``scan`` that finds nothing to do (no-op rescan);
- ``scan`` after one file was replaced (``os.replace`` of a new file, never a
  write through the hard link the copy shares with the corpus);
- ``query --json`` in ``--mode lexical`` and in the default ``auto`` mode
  (a few queries in turn);
- ``docindex --help``;
- ``scan FILE`` after that one file was replaced again (what a git hook or an
  editor's on-save scan runs).

The trees are ``bench/speed.py``'s ``make_tree`` copies of
``../shared/corpus/docs`` (hard links, under /tmp/docindex-bench/fixed/trees so
that a run of ``speed.py`` at the same time edits none of them); 10x is 21,660
files, so the DOCINDEX_MAX_* caps are raised as ``speed.py`` does. Each
installation (this interpreter's ``docindex``, plus every ``--exe``) gets its
own index under /tmp/docindex-bench/fixed, built on first use (a few
minutes at 10x) and kept; a warm-up scan, query and ``--help`` before the
timed runs bring it up to date and cache the bytecode. Runs are interleaved
(run 1 of every installation, then run 2, ...) so that the machine's drift
hits them alike; compare the ratios, read the medians.

Bytecode: the child processes run without ``PYTHONDONTWRITEBYTECODE`` and with
``PYTHONPYCACHEPREFIX`` pointing into the work folder, so every installation
starts from cached bytecode as a ``pip install``-ed copy does, even when its
source folder is read-only or the caller's environment disables ``.pyc`` files
(that alone costs 30-60 ms a process). Run under ``nice`` on a shared machine.

``--phases`` adds where the CPU goes: the walk, the stored fingerprints, FTS5's
bm25 and the in-process scan and queries, each timed in one warm process, and
the start-up as the whole process's CPU minus that work.

Usage: python bench/fixed_costs.py [--quick] [--runs N] [--scales 1,10]
       [--exe OTHER/bin/docindex ...] [--phases] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speed  # noqa: E402
from _common import docindex_cmd, start_watcher  # noqa: E402
from speed import CORPUS, make_tree  # noqa: E402

WORK = Path(tempfile.gettempdir()) / "docindex-bench" / "fixed"
# speed.py's trees under a folder of our own: its one-edit figure replaces a
# file in its trees, which a run of both benchmarks at once would see here.
speed.WORK = WORK / "trees"
CAPS = ("MAX_DOCS", "MAX_SEGMENTS", "MAX_EMBEDDED")
QUERIES = [
    "useEffect cleanup function",
    "how to configure an upstream health check",
    "路由 插件 配置",
    "lifetime elision rules",
]
# (figure, key, target at 1x, target at 10x), seconds; None: no target.
FIGURES = [
    ("no-op rescan", "noop", 0.12, 0.35),
    ("rescan after one edit", "edit", None, 0.40),
    ("`query --mode lexical`", "lexical", None, 0.08),
    ("`query` (auto mode)", "auto", None, 0.08),
    ("`docindex --help`", "help", None, 0.10),
    # A git hook's or an editor's on-save scan names the changed file.
    ("`scan FILE` after that file's edit", "file", None, None),
]


@dataclass
class Install:
    """One docindex to time: its command and its own index per scale."""

    label: str
    cmd: list[str]
    # Served: a `docindex watch` runs for its index (its own), and every
    # timed command must be run by the watcher's server (DOCINDEX_WATCHER=require).
    served: bool = False
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)


def _env(scale: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(WORK / "pycache")
    if scale > 1:  # the default caps would stop a 10x scan part-way
        env.update({f"DOCINDEX_{k}": "10000000" for k in CAPS})
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; raises when it fails."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err[-800:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def _key(cmd: list[str]) -> str:
    return hashlib.blake2b(" ".join(cmd).encode(), digest_size=4).hexdigest()


def _edit_target(tree: Path) -> Path:
    """The first English page of 8-16 KB in the first copy (a typical size)."""
    pages = sorted((tree / "copy0" / "en").rglob("*.md"))
    return next((p for p in pages if 8_000 <= p.stat().st_size <= 16_000), pages[0])


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".fixed-costs.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # a new inode: the corpus behind the hard link is kept


def bench_scale(scale: int, installs: list[Install], runs: int) -> Path:
    """Every figure for one scale, runs interleaved across ``installs``."""
    env = _env(scale)
    tree = make_tree(scale)
    target = _edit_target(tree)
    original = target.read_bytes()
    # One index per installation (by its command): an older docindex cannot
    # open an index a newer one has migrated.
    dbs = {
        i.label: WORK
        / f"{_key([*i.cmd, *(['served'] if i.served else [])])}-x{scale}.db"
        for i in installs
    }
    envs = {i.label: {**env, "DOCINDEX_WATCHER": "require" if i.served else "off"}
            for i in installs}  # fmt: skip
    watchers: list[subprocess.Popen[bytes]] = []
    for inst in installs:
        inst.wall, inst.cpu = {}, {}
        db = str(dbs[inst.label])
        started = time.perf_counter()
        # Warm-up: builds the index on first use (minutes at 10x), brings it
        # up to date, and caches every module's bytecode the figures load.
        for cmd in (["scan", str(tree), "--db", db, "-q"],
                    ["query", QUERIES[0], "--db", db, "--json"], ["--help"]):  # fmt: skip
            done = subprocess.run([*inst.cmd, *cmd], env=env, capture_output=True)
            if done.returncode:
                raise SystemExit(f"{inst.label}: `{' '.join(cmd[:1])}` failed: "
                                 f"{done.stderr.decode(errors='replace')[-600:]}")  # fmt: skip
        print(f"  {inst.label}: index {db} up to date "
              f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)  # fmt: skip
        if inst.served:
            watchers.append(start_watcher(inst.cmd, db, env, inst.label))

    def record(inst: Install, key: str, cmd: list[str]) -> None:
        w, c = timed(cmd, envs[inst.label])
        inst.wall.setdefault(key, []).append(w)
        inst.cpu.setdefault(key, []).append(c)

    try:
        for run in range(runs):
            _replace(target, original + f"\n\nedited {run} {time.time()}\n".encode())
            for inst in installs:
                db = str(dbs[inst.label])
                scan = [*inst.cmd, "scan", str(tree), "--db", db, "-q"]
                record(inst, "edit", scan)
                record(inst, "noop", scan)
                q = QUERIES[run % len(QUERIES)]
                query = [*inst.cmd, "query", q, "--db", db, "--json"]
                record(inst, "lexical", [*query, "--mode", "lexical"])
                record(inst, "auto", query)
                record(inst, "help", [*inst.cmd, "--help"])
                _replace(target, original + f"\n\nsaved {run} {time.time()}\n".encode())
                record(inst, "file", [*inst.cmd, "scan", str(target), "--db", db, "-q"])
    finally:
        for watcher in watchers:
            watcher.send_signal(signal.SIGINT)  # applies the pending edit, then ends
            watcher.wait(timeout=120)
        _replace(target, original)
        for inst in installs:  # leave every index matching the tree
            subprocess.run([*inst.cmd, "scan", str(tree), "--db",
                            str(dbs[inst.label]), "-q"], env=env,
                           check=False, capture_output=True)  # fmt: skip
    return tree


def _mmm(values: list[float]) -> str:
    lo, med, hi = min(values), statistics.median(values), max(values)
    return f"{lo:.3f} / **{med:.3f}** / {hi:.3f}"


def print_table(scale: int, files: int, installs: list[Install], runs: int) -> None:
    """One Markdown table: a row per figure, wall and CPU per installation."""
    print(f"\n### {scale}x corpus: {files} files, {runs} runs each"
          f"{' (DOCINDEX_MAX_* caps raised)' if scale > 1 else ''}\n")  # fmt: skip
    head = ["figure"]
    for inst in installs:
        head += [f"{inst.label}: wall s min / **median** / max", "CPU s"]
    for other in installs[1:]:
        head.append(f"median {installs[0].label} / {other.label}")
    head.append("target")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, key, t1, t10 in FIGURES:
        row = [name]
        for inst in installs:
            row += [_mmm(inst.wall[key]), f"{statistics.median(inst.cpu[key]):.3f}"]
        for other in installs[1:]:
            a = statistics.median(installs[0].wall[key])
            b = statistics.median(other.wall[key])
            row.append(f"{a / b:.2f}x")
        target = t10 if scale >= 10 else t1
        row.append(f"<= {target:.2f} s" if target is not None else "")
        print("| " + " | ".join(row) + " |")


PHASES = r"""
import json, sqlite3, statistics, sys, time
from pathlib import Path
import docindex
from docindex.config import Config
from docindex.search.candidates import fts_match
from docindex.search.engine import parse
from docindex.ingest.walker import WalkOptions, walk
db, tree, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
q = queries[0]
def med(f, n=5):
    f()
    xs = []
    for _ in range(n):
        t = time.process_time()
        f()
        xs.append((time.process_time() - t) * 1000)
    return statistics.median(xs)
def fingerprints():
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    c.execute("SELECT rel_path, id, size, mtime_ns, hash FROM documents").fetchall()
    c.close()
match = fts_match(parse(q, Config()))
def fts():
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    c.execute("SELECT rowid, -bm25(fts, 1.0, 1.0) FROM fts WHERE fts MATCH ? "
              "ORDER BY bm25(fts, 1.0, 1.0), rowid LIMIT 200", (match,)).fetchall()
    c.close()
print(json.dumps({
    "walk": med(lambda: sum(1 for _ in walk([Path(tree)], WalkOptions()))),
    "fingerprints": med(fingerprints),
    "scan": med(lambda: docindex.open(db).scan()),
    "lexical": statistics.median(
        med(lambda: docindex.open(db).query(x, mode="lexical")) for x in queries),
    "auto": statistics.median(
        med(lambda: docindex.open(db).query(x, mode="auto")) for x in queries),
    "fts": med(fts),
}))
"""


def phases(scale: int, tree: Path, installs: list[Install]) -> None:
    """Where the CPU goes (``--phases``): each phase timed in one warm process.

    The whole-process CPU minus the in-process work is the start-up: the
    interpreter, ``site``, the imports and first (cold) reads of the index.
    """
    env = _env(scale)
    rows: dict[str, list[str]] = {}
    for inst in installs:
        if inst.served:  # the same code as "this", in one warm process
            continue
        beside = Path(inst.cmd[0]).with_name("python")
        python = str(beside) if beside.is_file() else sys.executable
        db = str(WORK / f"{_key(inst.cmd)}-x{scale}.db")
        # Run in WORK: "python -c" puts the current folder first on sys.path,
        # and from a checkout that would import its docindex, not the exe's.
        out = subprocess.run([python, "-c", PHASES, db, str(tree), json.dumps(QUERIES)],
                             env=env, check=True, capture_output=True, text=True,
                             cwd=WORK)  # fmt: skip
        ms = json.loads(out.stdout)
        bare = statistics.median(
            timed([python, "-c", "pass"], env)[1] for _ in range(5)
        )
        noop = statistics.median(inst.cpu["noop"]) * 1000
        lexical = statistics.median(inst.cpu["lexical"]) * 1000
        for name, value in (
            ("interpreter + site (`python -c pass`)", bare * 1000),
            ("walk (`walker.walk`)", ms["walk"]),
            ("stored fingerprints (one SELECT)", ms["fingerprints"]),
            ("no-op scan in-process (walk, fingerprints included)", ms["scan"]),
            ("no-op process minus in-process scan", noop - ms["scan"]),
            (f"FTS5 bm25 alone, {QUERIES[0]!r}", ms["fts"]),
            ("lexical query in-process (median of the queries)", ms["lexical"]),
            ("auto query in-process (median of the queries)", ms["auto"]),
            ("lexical query process minus in-process", lexical - ms["lexical"]),
        ):
            rows.setdefault(name, []).append(f"{value:.0f}")
    print(f"\n#### {scale}x: where the CPU goes (ms; in-process phases: median of 5 "
          "in one warm process)\n")  # fmt: skip
    labels = [i.label for i in installs if not i.served]
    print("| phase | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, values in rows.items():
        print(f"| {name} | " + " | ".join(values) + " |")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print Markdown tables; 0 on success or when skipped."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs per figure")
    parser.add_argument("--runs", type=int, help="timed runs per figure (default 7)")
    parser.add_argument("--scales", help="corpus copies (default 1,10)")
    parser.add_argument(
        "--exe", type=Path, action="append", default=[],
        help="another installation's docindex to time side by side, e.g. "
        "/tmp/venv-base/bin/docindex (repeatable)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument(
        "--watch", action="store_true",
        help="also time this docindex (and every --exe) served by a running "
        "`docindex watch` (its own index; DOCINDEX_WATCHER=require)",
    )  # fmt: skip
    parser.add_argument(
        "--phases", action="store_true",
        help="also time the phases (walk, fingerprints, FTS5, ...) in one process",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not CORPUS.is_dir():
        print(f"skipped: no corpus at {CORPUS} (see ../shared/README.md)")
        return 0
    runs = args.runs or (3 if args.quick else 7)
    scales = [int(s) for s in (args.scales or "1,10").split(",")]
    installs = [Install("this", docindex_cmd())]
    if args.watch:
        installs.append(Install("this+watch", docindex_cmd(), served=True))
    for i, exe in enumerate(args.exe, start=1):
        installs.append(Install(f"exe{i}", [str(exe.absolute())]))
        if args.watch:  # served too: a before/after of the served figures
            installs.append(
                Install(f"exe{i}+watch", [str(exe.absolute())], served=True)
            )
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"docindex fixed costs (issue #24): cpus {os.cpu_count()}, load "
          f"{os.getloadavg()[0]:.1f}; " + "; ".join(
              f"{i.label} = {' '.join(i.cmd)}" for i in installs))  # fmt: skip
    print(
        "wall: whole process, min / **median** / max; CPU: the process's "
        "user + system, median. The targets (issue #24) are wall times on a quiet "
        "machine; on a busy one, compare the CPU and the ratios."
    )
    out = []
    for scale in scales:
        print(f"{scale}x: preparing the tree and the indexes ...", file=sys.stderr)
        tree = bench_scale(scale, installs, runs)
        files = sum(1 for p in tree.rglob("*") if p.is_file()) - 1  # .complete
        print_table(scale, files, installs, runs)
        if args.phases:
            phases(scale, tree, installs)
        sys.stdout.flush()
        out.append({"scale": scale, "files": files,
                    "installs": [{"label": i.label, "cmd": i.cmd, "wall": i.wall,
                                  "cpu": i.cpu} for i in installs]})  # fmt: skip
    print(f"\nload at the end: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
