"""docindex watch: pure debounce/coalesce logic, then the real watcher on a temp tree."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from docindex.config import Config
from docindex.ingest.watch import (
    Batch,
    BatchReport,
    Coalescer,
    PathFilter,
    RawEvent,
    own_files,
)
from docindex.ingest.watch import watch as core_watch
from docindex.store import Store

R = "/r"


def ev(kind: str, src: str, dest: str = "", *, t: float, d: bool = False) -> RawEvent:
    return RawEvent(kind, f"{R}/{src}", f"{R}/{dest}" if dest else "", d, t)


def drain(co: Coalescer, now: float) -> list[Batch]:
    out = []
    while (b := co.due(now)) is not None:
        out.append(b)
    return out


def paths(batches: list[Batch]) -> list[str]:
    return [p.removeprefix(R + "/") for b in batches for p in b.paths]


# -- pure logic, fake clock ----------------------------------------------------


def test_debounce_waits_for_quiet() -> None:
    co = Coalescer(0.3, roots=[R])
    co.add(ev("modified", "a.md", t=0.0))
    co.add(ev("modified", "a.md", t=0.2))
    assert co.due(0.4) is None  # 0.2 s after the last event
    assert co.next_deadline() == pytest.approx(0.5)
    assert paths(drain(co, 0.5)) == ["a.md"]
    assert co.due(10.0) is None and co.pending == 0


def test_steady_stream_lands_after_max_wait() -> None:
    co = Coalescer(0.3, max_wait_s=1.0, roots=[R])
    for i in range(10):
        co.add(ev("modified", f"f{i}.txt", t=i / 10))
        assert co.due(i / 10) is None
    assert len(paths(drain(co, 1.0))) == 10


def test_atomic_save_is_one_modify_of_the_original() -> None:
    co = Coalescer(0.1, roots=[R])
    co.add(ev("created", "notes/.a.md.swp", t=0.0))
    co.add(ev("created", "notes/a.md~tmp", t=0.0))
    co.add(ev("modified", "notes/a.md~tmp", t=0.01))
    co.add(ev("moved", "notes/a.md~tmp", "notes/a.md", t=0.02))
    co.add(ev("deleted", "notes/.a.md.swp", t=0.03))
    assert paths(drain(co, 1.0)) == ["notes/a.md"]


def test_temp_created_and_deleted_collapses_to_nothing() -> None:
    co = Coalescer(0.1, roots=[R])
    co.add(ev("created", "t.tmp", t=0.0))
    co.add(ev("modified", "t.tmp", t=0.0))
    co.add(ev("deleted", "t.tmp", t=0.0))
    # Not a change; applied only if the index knows it (a scan saw it early).
    assert drain(co, 1.0) == [Batch((), maybe=(f"{R}/t.tmp",))]


def test_deleted_then_recreated_is_rescanned() -> None:
    co = Coalescer(0.1, roots=[R])
    co.add(ev("deleted", "a.md", t=0.0))
    co.add(ev("created", "a.md", t=0.0))
    co.add(ev("moved", "b.md", "c.md", t=0.0))
    co.add(ev("deleted", "c.md", t=0.0))  # c.md may have replaced an indexed file
    assert paths(drain(co, 1.0)) == ["a.md", "b.md", "c.md"]


def test_directory_move_is_old_prefix_and_new_scan() -> None:
    co = Coalescer(0.1, roots=[R])
    co.add(ev("modified", "old/x.md", t=0.0))
    co.add(ev("moved", "old", "new", t=0.0, d=True))
    co.add(ev("moved", "old/x.md", "new/x.md", t=0.0))
    co.add(ev("moved", "old/sub", "new/sub", t=0.0, d=True))
    co.add(ev("modified", "new", t=0.0, d=True))  # directory mtime: ignored
    assert paths(drain(co, 1.0)) == ["new", "old"]


def test_new_directory_gone_again_drops_its_content() -> None:
    co = Coalescer(0.1, roots=[R])
    co.add(ev("created", "d", t=0.0, d=True))
    co.add(ev("created", "d/x.md", t=0.0))
    co.add(ev("modified", "d/x.md", t=0.0))
    co.add(ev("deleted", "d", t=0.0, d=True))  # moved out of the roots
    assert drain(co, 1.0) == [Batch((), maybe=(f"{R}/d",))]


def test_exclusion_turns_moves_into_creates_or_deletes() -> None:
    def accept(path: str, is_dir: bool) -> bool:
        return not os.path.basename(path).startswith(".")

    co = Coalescer(0.1, roots=[R], accept=accept)
    co.add(ev("created", ".hidden.md", t=0.0))
    co.add(ev("moved", ".draft.md", "pub.md", t=0.0))
    co.add(ev("moved", "old.md", ".trash.md", t=0.0))
    assert paths(drain(co, 1.0)) == ["old.md", "pub.md"]


def test_burst_is_split_into_batches() -> None:
    co = Coalescer(0.05, max_batch=256, roots=[R])
    for i in range(1000):
        co.add(ev("created", f"d{i % 7}/f{i}.txt", t=0.0))
    batches = drain(co, 1.0)
    assert [len(b.paths) for b in batches] == [256, 256, 256, 232]
    assert len(set(paths(batches))) == 1000


def test_too_many_pending_falls_back_to_root_scans() -> None:
    co = Coalescer(0.05, max_pending=100, roots=[R, "/other"])
    for i in range(150):
        co.add(ev("created", f"f{i}.txt", t=0.0))
    batches = drain(co, 1.0)
    assert [b.paths for b in batches] == [(R,)]
    assert batches[0].fallback and "too many" in batches[0].fallback


def test_fallback_and_deferred_batches() -> None:
    co = Coalescer(0.1, roots=[R, "/s"])
    co.add(ev("modified", "a.md", t=0.0))
    co.add_fallback(None, "event queue overflow", 0.0)
    batches = drain(co, 1.0)
    assert [(b.paths, b.fallback) for b in batches] == [
        (("/r",), "event queue overflow"),
        (("/s",), "event queue overflow"),
    ]  # a.md is covered by its root's rescan
    co.defer(Batch(("/r/b.md",)), until=5.0)
    assert co.due(4.9) is None
    assert paths(drain(co, 5.2)) == ["b.md"]


def test_path_filter_follows_walk_rules(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / ".gitignore").write_text("secret/\n*.log\n")
    db = root / ".docindex" / "index.db"
    cfg = Config(roots=(str(root),), exclude=("drafts/",))
    f = PathFilter([str(root)], cfg, own_files(db))
    ok = lambda rel, d=False: f.accept(str(root / rel), d)  # noqa: E731
    assert ok("a.md") and ok("sub/b.txt") and ok("sub", True)
    assert not ok(".hidden.md") and not ok("sub/.x/y.md")
    assert not ok("node_modules/p/readme.md") and not ok("build", True)
    assert not ok("secret/k.md") and not ok("sub/x.log")
    assert not ok("drafts/d.md") and not ok("img.png")
    assert not ok(".docindex/index.db-wal") and not ok(".docindex", True)
    assert not f.accept(str(tmp_path / "outside.md"), False)
    other = PathFilter([str(root)], cfg, own_files(root / "index.db"))
    assert not other.accept(str(root / "index.db-journal"), False)
    (root / ".gitignore").write_text("")
    f.invalidate()
    assert ok("sub/x.log")


# -- the real watcher ------------------------------------------------------------


def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"condition not met within {timeout} s")


def indexed(db: Path) -> dict[str, str]:
    """rel_path -> content hash of every indexed document."""
    if not db.exists():
        return {}
    with Store.open(db) as store:
        return {
            rel: row.hash
            for rid in store.roots()
            for rel, row in store.fingerprints(rid).items()
        }


class Running:
    def __init__(self, root: Path, db: Path, busy_timeout: float = 2.0) -> None:
        self.root, self.db = root, db
        self.reports: list[BatchReport] = []
        self.notices: list[str] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        cfg = Config(roots=(str(root),))

        def target() -> None:
            try:
                core_watch(
                    lambda: Store.open(db, create=True, busy_timeout=busy_timeout), cfg,
                    debounce_ms=50, on_batch=self.reports.append,
                    stop_event=self.stop, on_notice=self.notices.append,
                )  # fmt: skip
            except BaseException as exc:  # surfaced by the test
                self.error = exc

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()
        wait_for(lambda: bool(self.reports) or self.error is not None)
        assert self.error is None and self.reports[0].kind == "catch-up"

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(files: dict[str, str], db: Path | None = None, **kw: float) -> Running:
        root = tmp_path / "docs"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        run = Running(root, db or tmp_path / "db" / "index.db", **kw)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


def test_catch_up_then_file_create_modify_rename_delete(watching) -> None:
    w = watching({"a.md": "# A\n\nalpha apples\n"})
    assert set(indexed(w.db)) == {"a.md"} and w.reports[0].added == 1
    (w.root / "b.txt").write_text("bravo bananas\n")
    wait_for(lambda: "b.txt" in indexed(w.db))
    old = indexed(w.db)["a.md"]
    (w.root / "a.md").write_text("# A\n\nalpha apricots\n")
    wait_for(lambda: indexed(w.db).get("a.md") not in (None, old))
    (w.root / "b.txt").rename(w.root / "c.txt")
    wait_for(lambda: set(indexed(w.db)) == {"a.md", "c.txt"})
    (w.root / "a.md").unlink()
    wait_for(lambda: set(indexed(w.db)) == {"c.txt"})
    assert not any(r.errors for r in w.reports)


def test_directory_create_rename_delete(watching) -> None:
    w = watching({"keep.md": "keep\n"})
    tmp = w.root.parent / "staging"
    (tmp / "deep").mkdir(parents=True)
    (tmp / "x.md").write_text("# X\n\nxylophone\n")
    (tmp / "deep" / "y.txt").write_text("yak\n")
    tmp.rename(w.root / "proj")  # a whole tree moved in
    wait_for(lambda: set(indexed(w.db)) == {"keep.md", "proj/x.md", "proj/deep/y.txt"})
    (w.root / "proj").rename(w.root / "renamed")
    want = {"keep.md", "renamed/x.md", "renamed/deep/y.txt"}
    wait_for(lambda: set(indexed(w.db)) == want)
    shutil.rmtree(w.root / "renamed")
    wait_for(lambda: set(indexed(w.db)) == {"keep.md"})


def test_atomic_save_counts_as_one_update(watching) -> None:
    w = watching({"note.md": "# Note\n\nfirst draft\n"})
    before = len(w.reports)
    tmp = w.root / "note.md.tmp123"
    tmp.write_text("# Note\n\nsecond draft\n")
    os.replace(tmp, w.root / "note.md")
    wait_for(lambda: sum(r.updated for r in w.reports[before:]) == 1)
    assert set(indexed(w.db)) == {"note.md"}
    assert sum(r.added + r.removed for r in w.reports[before:]) == 0


def test_excluded_paths_and_own_files_are_ignored(watching, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    w = watching({".gitignore": "*.log\n"}, db=root / ".docindex" / "index.db")
    for rel in ("node_modules/m/readme.md", ".hidden/h.md", "x.log", "build/b.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("ignored words\n")
    (root / "real.md").write_text("real words\n")
    wait_for(lambda: set(indexed(w.db)) == {"real.md"})
    n = len(w.reports)
    time.sleep(0.5)  # ten debounce windows: the index's own writes must not wake it
    assert len(w.reports) == n
    assert sum(r.paths for r in w.reports[1:]) == 1  # only real.md was applied


def test_gitignore_change_rescans_its_folder(watching) -> None:
    w = watching({"a.md": "alpha\n", "b.log": "bravo\n"})
    assert set(indexed(w.db)) == {"a.md", "b.log"}
    (w.root / ".gitignore").write_text("*.log\n")
    wait_for(lambda: set(indexed(w.db)) == {"a.md"})


def test_busy_index_is_retried(watching) -> None:
    w = watching({"a.md": "alpha\n"}, busy_timeout=0.1)
    with Store.open(w.db, busy_timeout=1.0) as other, other.atomic():
        (w.root / "b.md").write_text("bravo\n")
        wait_for(lambda: any("busy" in n for n in w.notices))
    wait_for(lambda: "b.md" in indexed(w.db))


def test_cli_watch_json_sigterm_and_concurrent_query(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    db = tmp_path / "w.db"
    cmd = [sys.executable, "-m", "docindex", "watch", "--root", str(root), "--db",
           str(db), "--debounce-ms", "50", "--json"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            first = json.loads(proc.stdout.readline())
            assert first["kind"] == "catch-up" and first["added"] == 1
            (root / "b.md").write_text("zebra crossing\n")
            assert json.loads(proc.stdout.readline())["added"] == 1
            q = subprocess.run(
                [sys.executable, "-m", "docindex", "query", "zebra", "--db", str(db),
                 "--json"], capture_output=True, text=True, env=env, timeout=30,
            )  # fmt: skip
            assert q.returncode == 0, q.stderr
            assert json.loads(q.stdout)["hits"][0]["rel_path"] == "b.md"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 143  # 128 + SIGTERM (issue #17)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0


def test_overflow_falls_back_to_a_root_scan(watching) -> None:
    import logging

    w = watching({"a.md": "alpha\n"})
    (w.root / "b.md").write_text("bravo\n")
    wait_for(lambda: "b.md" in indexed(w.db))
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost"
    )
    wait_for(lambda: any(r.fallback == "event queue overflow" for r in w.reports))
    assert w.reports[-1].paths == 1 and w.reports[-1].kind == "fallback"


def test_root_deleted_and_recreated(watching, monkeypatch) -> None:
    import docindex.ingest.watch as watch_mod

    monkeypatch.setattr(watch_mod, "HEALTH_INTERVAL_S", 0.1)
    w = watching({"a.md": "alpha\n"})
    shutil.rmtree(w.root)
    wait_for(lambda: any("disappeared" in n for n in w.notices))
    assert set(indexed(w.db)) == {"a.md"}  # kept while the root is away, as scan does
    w.root.mkdir()
    (w.root / "back.md").write_text("back again\n")
    wait_for(lambda: set(indexed(w.db)) == {"back.md"})
    assert any(r.fallback == "root was deleted and recreated" for r in w.reports)
    (w.root / "later.md").write_text("later\n")  # and events flow again
    wait_for(lambda: set(indexed(w.db)) == {"back.md", "later.md"})


def test_scan_while_watching_waits_and_agrees(watching) -> None:
    from conftest import run_json

    w = watching(
        {f"d{i}/f{j}.md": f"# F\n\nword{i}{j}\n" for i in range(3) for j in range(5)}
    )
    for i in range(20):
        (w.root / f"new{i}.txt").write_text(f"fresh {i}\n")
    out = run_json("scan", str(w.root))  # DOCINDEX_DB is the watched index
    assert out["errors"] == []
    wait_for(lambda: len(indexed(w.db)) == 35)


def test_root_moved_away_and_replaced(watching, monkeypatch) -> None:
    import docindex.ingest.watch as watch_mod

    monkeypatch.setattr(watch_mod, "HEALTH_INTERVAL_S", 0.1)
    w = watching({"a.md": "alpha\n"})
    w.root.rename(w.root.parent / "elsewhere")  # the old watch follows the old inode
    w.root.mkdir()
    (w.root / "b.md").write_text("bravo\n")
    wait_for(lambda: set(indexed(w.db)) == {"b.md"})
    (w.root / "c.md").write_text("charlie\n")
    wait_for(lambda: set(indexed(w.db)) == {"b.md", "c.md"})


def test_temp_paths_are_applied_only_when_indexed(tmp_path: Path) -> None:
    from docindex.ingest.indexer import scan
    from docindex.ingest.pathfilter import indexed_paths

    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("alpha\n")
    (root / "sub" / "b.md").write_text("bravo\n")
    cfg = Config(roots=(str(root),))
    with Store.open(tmp_path / "i.db", create=True) as store:
        scan(store, cfg)
        filt = PathFilter([str(root)], cfg)
        asked = [str(root / p) for p in ("a.md", "sub", "su", "nope.md", "sub/c.md")]
        assert indexed_paths(store, filt, asked) == (
            str(root / "a.md"),
            str(root / "sub"),
        )


def test_catch_up_stopped_by_a_signal_reports_instead_of_crashing(
    tmp_path: Path,
) -> None:
    """A stop during the catch-up scan ends the batch cleanly (issue #33: was
    ``UnboundLocalError: 'errors'`` and exit 1)."""
    from docindex.ingest.changes import apply_batch

    root = tmp_path / "notes"
    root.mkdir()
    for i in range(5):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nbody {i}\n")
    cfg = Config(roots=(str(root),))
    with Store.open(tmp_path / "index.db", create=True) as store:
        report, raced = apply_batch(
            store, cfg, Batch((str(root),)), "catch-up", stop=lambda: True
        )
    assert report.kind == "catch-up" and report.errors == [] and not raced


def test_a_second_watch_on_one_index_names_the_first_and_exits_2(
    tmp_path: Path,
) -> None:
    """Issue #38: it ran with only a warning, both applying every change."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    db = tmp_path / "w.db"
    cmd = [sys.executable, "-m", "docindex", "watch", "--root", str(root), "--db",
           str(db), "--json", "--no-serve"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env=env) as first:  # fmt: skip
        try:
            assert first.stdout is not None
            assert json.loads(first.stdout.readline())["kind"] == "catch-up"
            second = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                    timeout=30)  # fmt: skip
            assert second.returncode == 2, second.stderr
            assert f"pid {first.pid}" in second.stderr
            assert len(second.stderr.strip().splitlines()) == 1, second.stderr
            assert "Traceback" not in second.stderr
        finally:
            first.send_signal(signal.SIGTERM)
            first.wait(10)
    # once the first has gone, a new watcher takes the index
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env=env) as again:  # fmt: skip
        try:
            assert again.stdout is not None
            assert json.loads(again.stdout.readline())["kind"] == "catch-up"
        finally:
            again.send_signal(signal.SIGTERM)
            again.wait(10)
