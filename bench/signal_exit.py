"""How long a scan or a watch takes to exit after SIGTERM/SIGINT with a worker
stuck in one file (issue #33: a signal waited 100 s for one PDF).

Builds (under /tmp/docindex-bench/signal) a folder of two files: ``slow.pdf``,
2,000 pages sharing one 3 MB content stream (about 95 s of parsing, under the
content budget), and ``a.md``. Per run it starts ``docindex scan`` (or
``docindex watch``, whose catch-up scan reads the same files) in a new session,
waits ``--after`` seconds so that a worker is inside the PDF, signals the
process group and times the exit. It prints the median and range per case and
whether any process of the run outlived it.

Usage: python bench/signal_exit.py [--runs 5] [--after 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

BASE = Path("/tmp/docindex-bench/signal")


def build() -> Path:
    import _formats  # the tests' PDF builder: the same attack file

    docs = BASE / "docs"
    if not (docs / "slow.pdf").is_file():
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "slow.pdf").write_bytes(_formats.shared_stream_pdf(2000, 3 * 2**20))
        (docs / "a.md").write_text("# A\n\nalphaword\n", encoding="utf-8")
    return docs


def session_pids(sid: int) -> list[int]:
    """Live processes of the session (a zombie, awaiting its reaper, runs nothing)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) != sid:
                    continue
                with open(f"/proc/{entry}/stat") as fh:
                    if fh.read().rpartition(")")[2].split()[0] != "Z":
                        out.append(int(entry))
            except OSError:
                pass
    return out


def one(command: str, sig: int, docs: Path, after: float) -> tuple[float, int, int]:
    """(seconds to exit, exit code, processes of the session left 1 s later)."""
    db = BASE / "idx" / "index.db"
    shutil.rmtree(db.parent, ignore_errors=True)
    args = ["scan", str(docs)] if command == "scan" else ["watch", "--root", str(docs)]
    env = {**os.environ, "DOCINDEX_WORKERS": "2", "DOCINDEX_WATCHER": "off"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "docindex", *args, "--db", str(db)], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd="/tmp",
    )  # fmt: skip
    time.sleep(after)
    sent = time.monotonic()
    os.killpg(proc.pid, sig)
    code = proc.wait(timeout=300)
    took = time.monotonic() - sent
    time.sleep(1)
    return took, code, len(session_pids(proc.pid))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--after", type=float, default=4.0)
    args = ap.parse_args()
    docs = build()
    cases = [(c, s) for c in ("scan", "watch") for s in (signal.SIGTERM, signal.SIGINT)]
    times: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    left: dict[tuple[str, int], int] = {case: 0 for case in cases}
    codes: dict[tuple[str, int], set[int]] = {case: set() for case in cases}
    for _ in range(args.runs):  # interleaved: the machine's load hits every case
        for case in cases:
            took, code, rest = one(case[0], case[1], docs, args.after)
            times[case].append(took)
            left[case] += rest
            codes[case].add(code)
    print(
        f"{'case':<15} {'median s':>9} {'range s':>13}  exit  left  ({args.runs} runs)"
    )
    for (command, sig), values in times.items():
        name = f"{command} {signal.Signals(sig).name}"
        span = f"{min(values):.2f}-{max(values):.2f}"
        exits = ",".join(str(c) for c in sorted(codes[(command, sig)]))
        print(
            f"{name:<15} {statistics.median(values):>9.2f} {span:>13}  {exits:>4}"
            f"  {left[(command, sig)]:>4}"
        )


if __name__ == "__main__":
    main()
