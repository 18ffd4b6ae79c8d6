"""Helpers for the benchmarks: run a command and measure its wall time and peak RSS.

``python bench/_common.py measure -- CMD ...`` runs CMD in this fresh helper
process and prints one JSON line: ``wall_s`` (whole process), ``rc``,
``cpu_s`` (user + system CPU of CMD and its descendants, polled), ``max_rss_kb`` (``ru_maxrss`` of RUSAGE_CHILDREN: the largest single process
among CMD and its descendants, workers included) and ``tree_rss_kb`` (the
largest sum of VmRSS over CMD's process tree, polled every 20 ms).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

#: The shared data (corpus, samples, judged sets): DOCINDEX_SHARED, else ../shared.
SHARED_DIR = Path(
    os.environ.get("DOCINDEX_SHARED") or Path(__file__).resolve().parents[2] / "shared"
)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def _tree_rss_kb(root: int, cpu: dict[int, int]) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kb(pid)
        cpu[pid] = max(cpu.get(pid, 0), _cpu_ticks(pid))
        todo.extend(_children(pid))
    return total


def _measure(cmd: Sequence[str]) -> dict[str, float | int]:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree_peak = 0
    cpu: dict[int, int] = {}
    can_poll = os.path.isdir("/proc")
    while proc.poll() is None:
        if can_poll:
            tree_peak = max(tree_peak, _tree_rss_kb(proc.pid, cpu))
        time.sleep(0.02)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": wall,
        "rc": proc.returncode,
        # The larger of: what rusage saw (CMD and the children it waited for)
        # and the polled per-process CPU (pool workers are reaped elsewhere).
        "cpu_s": max(
            usage.ru_utime + usage.ru_stime,
            sum(cpu.values()) / os.sysconf("SC_CLK_TCK") if cpu else 0.0,
        ),
        "max_rss_kb": int(usage.ru_maxrss),
        "tree_rss_kb": tree_peak,
        "stderr": err[-2000:],
    }


def measure(
    cmd: Sequence[str], env: dict[str, str] | None = None
) -> dict[str, float | int]:
    """Run ``cmd`` through a fresh helper process; wall time and peak RSS."""
    helper = [sys.executable, str(Path(__file__).resolve()), "measure", "--", *cmd]
    out = subprocess.run(helper, capture_output=True, text=True, env=env, check=True)
    result: dict[str, float | int] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {result.get('stderr')}")
    return result


def wall(cmd: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Whole-process wall time of ``cmd`` (output discarded; raises on failure)."""
    started = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, check=True)  # fmt: skip
    return time.perf_counter() - started


def docindex_cmd() -> list[str]:
    """The console script beside this interpreter (a version-manager shim on
    PATH, e.g. pyenv's, would add its own start-up to every figure)."""
    import shutil

    exe = Path(sys.executable).with_name("docindex")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("docindex")
    return [found] if found else [sys.executable, "-m", "docindex"]


def mmm(values: Sequence[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    return min(values), statistics.median(values), max(values)


if __name__ == "__main__" and sys.argv[1:2] == ["measure"]:
    print(json.dumps(_measure(sys.argv[3:])))


def start_watcher(
    cmd: Sequence[str], db: str, env: dict[str, str], label: str = "docindex"
) -> subprocess.Popen[bytes]:
    """``CMD watch --db DB`` once its server answers (issue #24); stop it with SIGINT.

    A 60 s debounce: the watcher applies no edit while figures run, so a
    served rescan does the same work as a cold one (a watcher that kept up
    would leave it nothing to do).
    """
    watcher = subprocess.Popen(
        [*cmd, "watch", "--db", db, "--debounce-ms", "60000"],
        env={**env, "DOCINDEX_WATCHER": "auto"},  # "off" would make it serve nothing
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    probe = [*cmd, "stats", "--db", db, "--json"]
    deadline = time.monotonic() + 300
    while subprocess.run(probe, env={**env, "DOCINDEX_WATCHER": "require"},
                         capture_output=True).returncode:  # fmt: skip
        if watcher.poll() is not None or time.monotonic() > deadline:
            watcher.kill()
            raise SystemExit(f"{label}: the watcher's server does not answer")
        time.sleep(0.2)
    return watcher


def corpus_copies(corpus: Path, tree: Path, scale: int) -> Path:
    """``scale`` copies of ``corpus`` under ``tree``/copyN (hard links, else copies),
    made once: a ``.complete`` marker says the tree is whole."""
    import shutil

    marker = tree / ".complete"
    if marker.exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    for i in range(scale):
        dest = tree / f"copy{i}"
        try:
            shutil.copytree(corpus, dest, copy_function=os.link)
        except OSError:
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(corpus, dest)
    marker.write_text("ok")
    return tree
