"""The warm server under the attacks of issue #33 (item 3), before and after.

For each installation tree given (default: this checkout), a ``docindex
watch`` serves a copy of 200 Markdown files of ``../shared/corpus/docs``;
then, interleaved between the trees:

- *stuck server*: watcher and server stopped with SIGSTOP; the whole-process
  wall time of ``docindex query`` (auto), output to /dev/null, against the
  same command with ``DOCINDEX_WATCHER=off``; and once with stdout a pipe
  read to its end (capped), as ``$(docindex query ...)`` would.
- *trickle*: 16 connections that send the length line, then one byte every
  1.5 s; whether a normal client (``DOCINDEX_WATCHER=require``) is served
  meanwhile and how long it took; how long until the server dropped all 16.

    python bench/serve_attacks.py [--runs 5] [--tree /path/to/other/checkout ...]

A tree is run with ``PYTHONPATH=TREE``; the protocol (2: descriptors with
the request, 3: with the confirmation) is read from its rendezvous.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_DIR  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
CORPUS = SHARED_DIR / "corpus" / "docs" / "en" / "apisix"
QUERY = ["query", "install plugin", "--json"]


class Tree:
    def __init__(self, path: Path, work: Path) -> None:
        self.path = path
        self.label = path.name
        text = (path / "docindex" / "serve" / "rendezvous.py").read_text()
        self.protocol = int(re.search(r"PROTOCOL = (\d+)", text).group(1))  # type: ignore[union-attr]
        self.root = work / "docs"
        self.db = work / "index.db"
        files = sorted(CORPUS.rglob("*.md"))[:200]
        for src in files:
            dest = self.root / src.relative_to(CORPUS)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        self.run(["scan", str(self.root), "-q"], "off", check=True)
        self.watcher = subprocess.Popen(
            [sys.executable, "-m", "docindex", "watch", "--db", str(self.db)],
            env=self.env("auto"), cwd="/", stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while self.run(["stats"], "require").returncode:
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.label}: the server does not answer")
            time.sleep(0.2)
        self.server = _children(self.watcher.pid)[0]

    def env(self, mode: str) -> dict[str, str]:
        out = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
        return {**out, "PYTHONPATH": str(self.path), "DOCINDEX_WATCHER": mode}

    def cmd(self, args: list[str]) -> list[str]:
        return [sys.executable, "-m", "docindex", *args, "--db", str(self.db)]

    def run(self, args: list[str], mode: str, check: bool = False,
            ) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
        return subprocess.run(self.cmd(args), env=self.env(mode), cwd="/",
                              capture_output=True, check=check)  # fmt: skip

    def wall(self, mode: str, piped: bool = False, cap: float = 20.0) -> float:
        """Whole-process seconds (``inf`` past ``cap`` for a piped read)."""
        out = subprocess.PIPE if piped else subprocess.DEVNULL
        started = time.perf_counter()
        proc = subprocess.Popen(self.cmd(QUERY), env=self.env(mode), cwd="/",
                                stdout=out, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            proc.communicate(timeout=cap)  # to end of output, as $(...) reads
        except subprocess.TimeoutExpired:
            proc.kill()  # the pipe may stay held by the stopped server: no read
            proc.wait()
            return float("inf")
        return time.perf_counter() - started

    def pause(self, how: signal.Signals) -> None:
        for pid in (self.watcher.pid, self.server):
            os.kill(pid, how)

    def stop(self) -> None:
        self.pause(signal.SIGCONT)
        self.watcher.send_signal(signal.SIGINT)
        self.watcher.wait(timeout=30)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            out.extend(int(c) for c in fh.read().split())
    return out


def trickle(tree: Tree) -> tuple[bool, float, float]:
    """(normal client served?, its seconds, seconds until all 16 were dropped)."""
    sys.path.insert(0, str(tree.path))
    payload = b"%d\n" % 4000 + b"x" * 4000  # the length line, then the body
    null = os.open(os.devnull, os.O_RDWR)
    conns = []
    first = payload.index(b"\n") + 2
    for _ in range(16):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(f"{tree.db}.sock")
        if tree.protocol < 3:  # descriptors with the request's first bytes
            socket.send_fds(s, [payload[:first]], [null] * 3)
        else:
            s.send(payload[:first])
        conns.append(s)
    started = time.perf_counter()
    time.sleep(0.3)
    t0 = time.perf_counter()
    served = tree.run(QUERY, "require").returncode == 0
    took = time.perf_counter() - t0
    dropped: set[int] = set()
    sent = first
    while len(dropped) < len(conns) and time.perf_counter() - started < 15:
        time.sleep(1.5)
        for i, s in enumerate(conns):
            if i not in dropped:
                try:
                    s.send(payload[sent : sent + 1])
                except OSError:
                    dropped.add(i)
        sent += 1
    held = time.perf_counter() - started if len(dropped) == len(conns) else 15.0
    for s in conns:
        s.close()
    os.close(null)
    return served, took, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", action="append", type=Path, default=[])
    args = parser.parse_args()
    paths = [p.resolve() for p in args.tree] + [HERE]
    work = Path(tempfile.mkdtemp(prefix="serve-attacks-"))
    trees = [Tree(p, work / f"t{i}") for i, p in enumerate(paths)]
    try:
        walls: dict[tuple[str, str], list[float]] = {}
        for t in trees:
            t.pause(signal.SIGSTOP)
        for _ in range(args.runs):
            for t in trees:
                for mode in ("auto", "off"):
                    walls.setdefault((t.label, mode), []).append(t.wall(mode))
        piped = {t.label: t.wall("auto", piped=True, cap=10) for t in trees}
        for t in trees:
            t.pause(signal.SIGCONT)
        print(f"stuck server (SIGSTOP), docindex {' '.join(QUERY)}, "
              f"median of {args.runs} whole processes (min-max):")  # fmt: skip
        for t in trees:
            auto, off = walls[(t.label, "auto")], walls[(t.label, "off")]
            added = statistics.median(auto) - statistics.median(off)
            print(f"  {t.label:>12} (protocol {t.protocol}): "
                  f"stopped server {statistics.median(auto):.2f} s "
                  f"({min(auto):.2f}-{max(auto):.2f}), no server "
                  f"{statistics.median(off):.2f} s, added {added:+.2f} s; "
                  f"piped to its end: {piped[t.label]:.2f} s")  # fmt: skip
        print("trickle: 16 connections, one byte every 1.5 s:")
        for t in trees:
            served, took, held = trickle(t)
            print(f"  {t.label:>12}: normal client "
                  f"{'served' if served else 'NOT served'} in {took:.2f} s; "
                  f"all 16 dropped after {held:.1f} s"
                  f"{' (cap: still held)' if held >= 15 else ''}")  # fmt: skip
    finally:
        for t in trees:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                t.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
