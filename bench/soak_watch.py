"""Soak test for ``docindex watch`` (issue #5), plus its latency and idle CPU.

1. Build a nested tree, start ``docindex watch --json`` on it (a subprocess).
2. Perform a few thousand random file operations (create, modify, atomic save,
   delete, rename of files; create, rename, delete of directories; text and
   Markdown; some excluded and hidden paths), in bursts with short pauses.
3. Wait until watch has been quiet for a while, stop it with SIGTERM.
4. Scan the same tree from scratch into a second index and compare both
   files with SQL: the same documents (rel_path + hash) and the same segment
   hashes (segments.hash).
5. Start watch again and measure (a) save-to-findable latency, polling
   ``docindex.api.query`` in-process every 10 ms, and the end-to-end time of
   one ``docindex query`` subprocess; (b) idle CPU of the watch process over
   20 s, from /proc/<pid>/stat utime+stime.

Usage: python bench/soak_watch.py [--ops 3000] [--seed 1] [--debounce-ms 300]
                                  [--dir-moves 4]  (0: no folder renames, so
                                  every change goes through the per-path logic)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey xray "
    "yankee zulu river mountain lantern harbour compiler kernel index segment "
    "query vector token 東京 検索 索引 문서 검색"
).split()
ENV = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}


def text(rng: random.Random, md: bool) -> str:
    lines = []
    for _ in range(rng.randint(1, 12)):
        if md and rng.random() < 0.25:
            lines.append("#" * rng.randint(1, 3) + " " + " ".join(rng.sample(WORDS, 3)))
        else:
            lines.append(" ".join(rng.choices(WORDS, k=rng.randint(3, 15))))
    return "\n".join(lines) + "\n"


class Tree:
    """Random operations on a real tree, tracking what exists."""

    def __init__(self, root: Path, rng: random.Random, dir_moves: int = 4) -> None:
        self.root, self.rng = root, rng
        self.dir_moves = dir_moves
        self.files: set[str] = set()
        self.dirs: set[str] = {""}
        self.counts: dict[str, int] = {}
        self.n = 0

    def _p(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def _name(self, ext: str | None = None) -> str:
        self.n += 1
        ext = ext or self.rng.choice([".md", ".md", ".txt"])
        return f"{self.rng.choice(WORDS[:26])}-{self.n}{ext}"

    def _join(self, d: str, name: str) -> str:
        return f"{d}/{name}" if d else name

    def _count(self, op: str) -> None:
        self.counts[op] = self.counts.get(op, 0) + 1

    def create(self) -> None:
        rel = self._join(self.rng.choice(sorted(self.dirs)), self._name())
        self._p(rel).write_text(text(self.rng, rel.endswith(".md")), encoding="utf-8")
        self.files.add(rel)
        self._count("create")

    def modify(self) -> None:
        if not self.files:
            return self.create()
        rel = self.rng.choice(sorted(self.files))
        mode = "a" if self.rng.random() < 0.3 else "w"
        with self._p(rel).open(mode, encoding="utf-8") as fh:
            fh.write(text(self.rng, rel.endswith(".md")))
        self._count("modify")

    def atomic_save(self) -> None:
        if not self.files:
            return self.create()
        rel = self.rng.choice(sorted(self.files))
        target = self._p(rel)
        tmp_name = self.rng.choice(
            [f".{target.name}.swp", f"{target.name}.tmp{self.n}", f"{target.name}~"]
        )
        tmp = target.with_name(tmp_name)
        tmp.write_text(text(self.rng, rel.endswith(".md")), encoding="utf-8")
        os.replace(tmp, target)
        self._count("atomic-save")

    def delete(self) -> None:
        if not self.files:
            return self.create()
        rel = self.rng.choice(sorted(self.files))
        self._p(rel).unlink()
        self.files.discard(rel)
        self._count("delete")

    def rename(self) -> None:
        if not self.files:
            return self.create()
        rel = self.rng.choice(sorted(self.files))
        dest = self._join(
            self.rng.choice(sorted(self.dirs)), self._name(Path(rel).suffix)
        )
        os.rename(self._p(rel), self._p(dest))
        self.files.discard(rel)
        self.files.add(dest)
        self._count("rename")

    def mkdir(self) -> None:
        parent = self.rng.choice(sorted(d for d in self.dirs if d.count("/") < 3))
        rel = self._join(parent, f"dir{self.n}")
        self.n += 1
        self._p(rel).mkdir()
        self.dirs.add(rel)
        self._count("mkdir")

    def _moved(self, old: str, new: str | None) -> None:
        def swap(items: set[str]) -> set[str]:
            out = set()
            for item in items:
                if item == old or item.startswith(old + "/"):
                    if new is not None:
                        out.add(new + item[len(old) :])
                else:
                    out.add(item)
            return out

        self.files, self.dirs = swap(self.files), swap(self.dirs)

    def rename_dir(self) -> None:
        movable = sorted(d for d in self.dirs if d)
        if not movable:
            return self.mkdir()
        old = self.rng.choice(movable)
        targets = sorted(
            d for d in self.dirs if d != old and not d.startswith(old + "/")
        )
        parent = self.rng.choice(targets)
        if parent.count("/") >= 3:
            parent = ""
        new = self._join(parent, f"moved{self.n}")
        self.n += 1
        os.rename(self._p(old), self._p(new))
        self._moved(old, new)
        self._count("rename-dir")

    def delete_dir(self) -> None:
        small = [
            d
            for d in self.dirs
            if d and sum(f.startswith(d + "/") for f in self.files) < 8
        ]
        if not small:
            return self.mkdir()
        old = self.rng.choice(sorted(small))
        shutil.rmtree(self._p(old))
        self._moved(old, None)
        self._count("delete-dir")

    def excluded(self) -> None:
        rel = self.rng.choice(
            ["node_modules/pkg/readme.md", ".hidden.md", "build/out.txt"]
        )
        self._p(rel).parent.mkdir(parents=True, exist_ok=True)
        self._p(rel).write_text(text(self.rng, True), encoding="utf-8")
        self._count("excluded")

    def random_op(self) -> None:
        ops = [
            (self.create, 25), (self.modify, 25), (self.atomic_save, 12),
            (self.delete, 12), (self.rename, 12), (self.mkdir, 5),
            (self.rename_dir, self.dir_moves), (self.delete_dir, 2), (self.excluded, 3),
        ]  # fmt: skip
        fns, weights = zip(*ops, strict=True)
        self.rng.choices(fns, weights)[0]()


class Watcher:
    """``docindex watch --json`` in a subprocess, its stdout lines collected."""

    def __init__(self, root: Path, db: Path, debounce_ms: int) -> None:
        cmd = [sys.executable, "-m", "docindex", "watch", "--root", str(root),
               "--db", str(db), "--debounce-ms", str(debounce_ms), "--json"]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        )
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self.stderr: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), json.loads(line)))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    def wait_lines(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(self.lines) < n:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"watch gave no output: {self.stderr[-5:]}")
            time.sleep(0.02)

    def wait_quiet(self, quiet_s: float, since: float, timeout: float = 300) -> float:
        """Wait until no batch has been reported for ``quiet_s`` (counted from ``since``
        at the earliest); return when the last one was."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = max(self.lines[-1][0] if self.lines else 0.0, since)
            if time.monotonic() - last >= quiet_s:
                return last
            time.sleep(0.1)
        raise SystemExit("watch never went quiet")

    def wait_indexed(self, db: Path, rel_path: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"watch exited: {self.stderr[-5:]}")
            with contextlib.closing(sqlite3.connect(db, timeout=5)) as conn:
                sql = "SELECT 1 FROM documents WHERE rel_path = ?"
                if conn.execute(sql, (rel_path,)).fetchone():
                    return
            time.sleep(0.05)
        raise SystemExit(f"{rel_path} never indexed")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for reader in self.readers:
            reader.join(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code

    def cpu_s(self) -> float:
        fields = (
            Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        )
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def snapshot(db: Path) -> tuple[set[tuple[str, str]], set[tuple[str, int, str]]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        docs = set(conn.execute("SELECT rel_path, hash FROM documents"))
        segs = set(
            conn.execute(
                "SELECT d.rel_path, s.ordinal, s.hash FROM segments s "
                "JOIN documents d ON d.id = s.doc_id"
            )
        )
    finally:
        conn.close()
    return docs, segs


def soak(work: Path, ops: int, seed: int, debounce_ms: int, dir_moves: int = 4) -> bool:
    rng = random.Random(seed)
    root = work / "tree"
    root.mkdir()
    tree = Tree(root, rng, dir_moves)
    for _ in range(12):
        tree.mkdir()
    for _ in range(150):
        tree.create()
    tree.counts.clear()
    db = work / "watch.db"
    watcher = Watcher(root, db, debounce_ms)
    try:
        watcher.wait_lines(1)
        print(f"catch-up: {watcher.lines[0][1]}")
        started = time.monotonic()
        done = 0
        while done < ops:
            burst = rng.choice([1, 5, 20, 100])
            for _ in range(min(burst, ops - done)):
                tree.random_op()
                done += 1
            time.sleep(rng.choice([0.0, 0.01, 0.05, 0.2]))
        ops_s = time.monotonic() - started
        # The last event in: once it is indexed, every earlier event was
        # delivered (inotify keeps order); then wait for watch to fall quiet.
        (root / "zz-sentinel.md").write_text("sentinel\n")
        watcher.wait_indexed(db, "zz-sentinel.md")
        caught_up = time.monotonic() - started
        watcher.wait_quiet(max(1.0, 3 * debounce_ms / 1000), time.monotonic())
    finally:
        code = watcher.stop()
    total_s = time.monotonic() - started
    fresh = work / "fresh.db"
    scan = subprocess.run(
        [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(fresh), "--json"],
        capture_output=True, text=True, env=ENV, check=True,
    )  # fmt: skip
    docs_w, segs_w = snapshot(db)
    docs_f, segs_f = snapshot(fresh)
    reports = [r for _, r in watcher.lines]
    ok = code == 0 and docs_w == docs_f and segs_w == segs_f
    print(f"operations: {sum(tree.counts.values())} {json.dumps(tree.counts)}")
    print(f"ops phase {ops_s:.1f} s; a file saved after the last op was indexed "
          f"{caught_up - ops_s:.1f} s later; "
          f"run length incl. settle + stop {total_s:.1f} s")  # fmt: skip
    print(f"batches: {len(reports) - 1}, paths applied {sum(r['paths'] for r in reports[1:])}, "
          f"max batch {max(r['took_ms'] for r in reports[1:]):.0f} ms, "
          f"median {statistics.median(r['took_ms'] for r in reports[1:]):.0f} ms, "
          f"fallbacks {[r['fallback'] for r in reports if r['fallback']]}, "
          f"errors {sum(len(r['errors']) for r in reports)}")  # fmt: skip
    print(f"fresh scan: {json.loads(scan.stdout)['indexed']} documents")
    print(f"watch index: {len(docs_w)} documents, {len(segs_w)} segments; "
          f"fresh: {len(docs_f)} documents, {len(segs_f)} segments; exit code {code}")  # fmt: skip
    print(f"stderr lines from watch: {len(watcher.stderr)} {watcher.stderr[:3]}")
    if not ok:
        print(f"only in watch: {sorted(docs_w - docs_f)[:10]}")
        print(f"only in fresh: {sorted(docs_f - docs_w)[:10]}")
        print(f"segments differ: {len(segs_w ^ segs_f)}")
        print("stderr:", *watcher.stderr[-10:], sep="\n  ")
    print("RESULT:", "index equals a fresh full scan" if ok else "MISMATCH")
    return ok


def latency_and_idle(work: Path, debounce_ms: int, runs: int, idle_s: float) -> None:
    root = work / "tree"
    db = work / "watch.db"
    watcher = Watcher(root, db, debounce_ms)
    try:
        _probe(watcher, root, db, debounce_ms, runs, idle_s)
    finally:
        watcher.stop()


def _probe(
    watcher: Watcher, root: Path, db: Path, debounce_ms: int, runs: int, idle_s: float
) -> None:
    import docindex

    watcher.wait_lines(1)
    found, cli = [], []
    for i in range(runs):
        word = f"zqx{i}marker{os.getpid()}"
        time.sleep(0.3)
        saved = time.monotonic()
        (root / f"latency-{i}.md").write_text(f"# Probe\n\n{word} here\n")
        while True:
            if docindex.open(str(db)).query(word, top=1).hits:
                found.append(time.monotonic() - saved)
                break
            if time.monotonic() - saved > 10:
                raise SystemExit("file never became findable")
            time.sleep(0.01)
        t0 = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "docindex", "query", word, "--db", str(db), "--json"],
            capture_output=True, text=True, env=ENV, check=True,
        )  # fmt: skip
        cli.append(time.monotonic() - t0)
        assert json.loads(out.stdout)["hits"], out.stdout
    print(f"save -> findable (in-process query poll, debounce {debounce_ms} ms), "
          f"{runs} runs: median {statistics.median(found) * 1000:.0f} ms, "
          f"min {min(found) * 1000:.0f}, max {max(found) * 1000:.0f}")  # fmt: skip
    print(
        f"one `docindex query` subprocess: median {statistics.median(cli) * 1000:.0f} ms"
    )
    time.sleep(2.0)
    before, t0 = watcher.cpu_s(), time.monotonic()
    time.sleep(idle_s)
    used, wall = watcher.cpu_s() - before, time.monotonic() - t0
    print(f"idle CPU over {wall:.1f} s: {used:.2f} CPU-s = {100 * used / wall:.2f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--debounce-ms", type=int, default=300)
    parser.add_argument("--latency-runs", type=int, default=10)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument(
        "--dir-moves",
        type=int,
        default=4,
        help="Weight of folder renames among the operations (0: none).",
    )
    parser.add_argument("--keep", action="store_true", help="Keep the temp folder.")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="docindex-soak-"))
    try:
        ok = soak(work, args.ops, args.seed, args.debounce_ms, args.dir_moves)
        latency_and_idle(work, args.debounce_ms, args.latency_runs, args.idle_s)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
