"""Reliability (issue #8): crash safety, full disks, damaged indexes, concurrency, scope.

Real processes and real SQLite files throughout: scans are killed with SIGKILL,
written onto a full tmpfs, run two at a time, and pointed at broken files.
``bench/crash_kill.py`` runs the kill loop for longer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import mounted, run

# -- helpers --------------------------------------------------------------------

WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega index "
    "search query segment vector token 检索 文档 索引 查询 日本語 テキスト 한국어"
).split()


def write_variant(root: Path, n_files: int, variant: int, seed: int = 8) -> None:
    """Make ``root`` hold tree ``variant`` (0 or 1) of ``n_files`` Markdown files.

    Variant 1 rewrites most files, deletes a few and adds a few, so a scan from
    one variant to the other inserts, updates and removes documents.
    """
    rng = random.Random(seed * 1000 + variant)
    root.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for i in range(n_files):
        if variant == 1 and i % 7 == 3:
            continue  # deleted in variant 1
        wanted.add(f"d{i % 5}/f{i:03d}.md")
    if variant == 1:
        wanted |= {f"new/n{i:03d}.md" for i in range(n_files // 8)}
    for rel in sorted(wanted):
        keep_same = variant == 1 and rel.endswith(("0.md", "5.md"))
        text_rng = random.Random(rel) if keep_same else rng
        parts = []
        for s in range(6):
            words = " ".join(text_rng.choice(WORDS) for _ in range(90))
            parts.append(f"## Part {s} {rel}\n\n{words}\n")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        content = f"# {rel} v{0 if keep_same else variant}\n\n" + "\n".join(parts)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
    for path in sorted(root.rglob("*.md")):
        if path.relative_to(root).as_posix() not in wanted:
            path.unlink()


@dataclass(frozen=True)
class Snapshot:
    """What an index holds, independent of row ids and timestamps."""

    documents: tuple[tuple[str, str, int], ...]
    segments: tuple[tuple[str, int, str], ...]


EMPTY = Snapshot((), ())


def snapshot(db: Path) -> Snapshot:
    """Documents (rel_path, hash, n_segments) and segments (rel_path, ordinal, span)."""
    conn = sqlite3.connect(db)
    try:
        docs = conn.execute(
            "SELECT rel_path, hash, n_segments FROM documents ORDER BY rel_path"
        ).fetchall()
        segs = conn.execute(
            "SELECT d.rel_path, s.id - d.first_segment, s.char_start, s.chars "
            "FROM segments s "
            "JOIN documents d "
            "ON d.id = s.doc_id ORDER BY d.rel_path, s.id"
        ).fetchall()
    finally:
        conn.close()
    return Snapshot(tuple(docs), tuple(segs))


def check_index(db: Path) -> Snapshot:
    """Assert the index opens and is whole; return its snapshot (EMPTY if none yet)."""
    from docindex.errors import IndexNotFoundError
    from docindex.store import Store

    try:
        store = Store.open(db)
    except IndexNotFoundError:  # killed before the first migration committed
        return EMPTY
    store.close()
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO fts(fts) VALUES('integrity-check')")
        half = conn.execute(
            "SELECT d.rel_path FROM documents d WHERE d.n_segments != "
            "(SELECT count(*) FROM segments s WHERE s.doc_id = d.id)"
        ).fetchall()
        assert half == [], f"half-indexed documents: {half}"
        seg_ids = {r[0] for r in conn.execute("SELECT id FROM segments")}
        fts_ids = {r[0] for r in conn.execute("SELECT rowid FROM fts")}
        assert seg_ids == fts_ids, "segments and FTS rows disagree"
        no_vec = conn.execute("SELECT count(*) FROM segments WHERE vec IS NULL")
        assert no_vec.fetchone()[0] == 0, "segments without vectors"
        empty_docs = conn.execute(
            "SELECT count(*) FROM documents WHERE n_segments = 0"
        ).fetchone()[0]
        assert empty_docs == 0
    finally:
        conn.close()
    return snapshot(db)


def scan_cmd(root: Path, db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "docindex", "scan", str(root), "--db", str(db),
            "-q", *extra]  # fmt: skip


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCINDEX_")}
    env.update(extra)
    return env


def kill_after(cmd: list[str], delay: float, env: dict[str, str]) -> int | None:
    """Start ``cmd``, SIGKILL it after ``delay`` s; return its exit code if it ended first."""
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        code = proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        code = None
    finally:
        # Orphaned pool workers (our own session) must not outlive the test.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        assert proc.stderr is not None
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    assert "Traceback" not in err, err
    return code


def fresh_snapshot(root: Path, db: Path, env: dict[str, str]) -> Snapshot:
    """Scan ``root`` into a new index ``db`` (a real process) and snapshot it."""
    for side in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        side.unlink(missing_ok=True)
    subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=120)
    return check_index(db)


def remove_index(db: Path) -> None:
    for side in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        side.unlink(missing_ok=True)


def crash_loop(
    base: Path, *, kills: int, n_files: int, complete_every: int, seed: int = 1,
    env: dict[str, str] | None = None,
) -> dict[str, int]:  # fmt: skip
    """SIGKILL ``kills`` real scans at random moments; check the index after each.

    The tree flips between two variants before each scan, so every killed scan
    has inserts, updates and deletes in flight. After a kill the index must be
    whole and hold exactly the previous committed state or (if the kill came
    after the commit) a fresh scan of the current tree. Every
    ``complete_every`` rounds, and at the end, a scan runs to completion and
    must equal a fresh scan.

    Returns:
        Counts of rounds that ended before/after the commit and completions.
    """
    rng = random.Random(seed)
    env = env or child_env()
    root, db, ref_db = base / "docs", base / "idx" / "index.db", base / "ref" / "r.db"
    refs: dict[int, Snapshot] = {}
    started = time.perf_counter()
    for variant in (0, 1):
        write_variant(root, n_files, variant)
        t0 = time.perf_counter()
        refs[variant] = fresh_snapshot(root, ref_db, env)
        full = time.perf_counter() - t0
    assert refs[0] != refs[1]
    stats = {"kills": 0, "before_commit": 0, "after_commit": 0, "completed": 0,
             "fresh_db": 0}  # fmt: skip
    state, variant = EMPTY, 1
    round_no = 0
    # Up to 4 rounds per wanted kill: on a loaded machine some scans finish
    # before their kill lands (they still count as checked rounds).
    while stats["kills"] < kills and round_no < kills * 4:
        round_no += 1
        if rng.random() < 0.15:
            remove_index(db)  # kill during index creation and migration too
            state = EMPTY
            stats["fresh_db"] += 1
        variant = 1 - variant
        write_variant(root, n_files, variant)
        delay = rng.uniform(0.05, full * 0.9)
        code = kill_after(scan_cmd(root, db), delay, env)
        stats["kills"] += code is None
        got = check_index(db)
        if got == state:
            stats["before_commit"] += 1
        else:
            assert got == refs[variant], f"round {round_no}: neither old nor new state"
            stats["after_commit"] += 1
        state = got
        if round_no % complete_every == 0 or stats["kills"] == kills:
            subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=120)
            state = check_index(db)
            assert state == refs[variant], f"round {round_no}: rescan != fresh scan"
            stats["completed"] += 1
    stats["seconds"] = round(time.perf_counter() - started)
    return stats


# -- crash safety ---------------------------------------------------------------


def test_killed_scans_leave_a_whole_index(tmp_path: Path) -> None:
    """Fast version: three kills of a ~0.5 s scan (32 in the slow test)."""
    stats = crash_loop(tmp_path, kills=3, n_files=12, complete_every=3, seed=3)
    assert stats["kills"] == 3 and stats["completed"] >= 1, stats


@pytest.mark.slow
def test_thirty_killed_scans_leave_a_whole_index(tmp_path: Path) -> None:
    """Issue #8: 32 SIGKILLs at random points of a real ~1 s scan (about 35 s)."""
    stats = crash_loop(tmp_path, kills=32, n_files=28, complete_every=8, seed=8)
    assert stats["kills"] == 32, stats
    assert stats["before_commit"] >= 10, stats


@pytest.mark.parametrize(
    "kills", [2, pytest.param(12, marks=pytest.mark.slow)], ids=["fast", "many"]
)
def test_killed_full_rebuild_keeps_a_whole_index(tmp_path: Path, kills: int) -> None:
    """SIGKILL ``reindex --full`` at random moments: old or rebuilt index, never half."""
    root, db = tmp_path / "docs", tmp_path / "idx" / "index.db"
    env = child_env()
    write_variant(root, 8, 0)
    subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=120)
    before = check_index(db)
    write_variant(root, 8, 1)  # the rebuild has different content to write
    after = fresh_snapshot(root, tmp_path / "ref" / "r.db", env)
    cmd = [sys.executable, "-m", "docindex", "reindex", "--full", "--db", str(db), "-q"]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, timeout=120)
    full = time.perf_counter() - t0
    assert check_index(db) == after
    rng = random.Random(4)
    for _ in range(kills):
        write_variant(root, 8, 0)
        subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=120)
        write_variant(root, 8, 1)
        kill_after(cmd, rng.uniform(0.05, full), env)
        assert check_index(db) in (before, after)
    subprocess.run(cmd, env=env, check=True, timeout=120)  # leftovers are no bother
    assert check_index(db) == after


# -- disk full and read-only -------------------------------------------------------


def test_disk_full_is_a_clear_error_and_the_index_is_unchanged(tmp_path: Path) -> None:
    """SQLITE_FULL mid-scan (PRAGMA max_page_count): rolled back, clear message."""
    from docindex.config import Config
    from docindex.errors import DocindexError
    from docindex.ingest.indexer import scan
    from docindex.store import Store

    root = tmp_path / "docs"
    write_variant(root, 6, 0)
    db = tmp_path / "full.db"
    cfg = Config(roots=(str(root.resolve()),), workers=1)
    with Store.open(db, create=True) as store:
        scan(store, cfg)
    before = check_index(db)
    write_variant(root, 40, 1)
    with Store.open(db) as store:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 5}")
        with pytest.raises(DocindexError, match="disk full") as info:
            scan(store, cfg)
        assert not store.conn.in_transaction
    assert "no transaction" not in str(info.value)
    assert check_index(db) == before


def _can_mount() -> bool:
    return (
        hasattr(os, "geteuid")
        and os.geteuid() == 0
        and shutil.which("mount") is not None
    )


@pytest.mark.skipif(
    not _can_mount(), reason="a real full disk needs root to mount a tmpfs"
)
def test_full_tmpfs_scan_fails_cleanly(tmp_path: Path) -> None:
    """A real full filesystem under the CLI: exit 1, one line, index unchanged."""
    root, mnt = tmp_path / "docs", tmp_path / "small"
    write_variant(root, 4, 0)
    db = mnt / "index.db"
    env = child_env()
    with mounted(mnt, "-t", "tmpfs", "-o", "size=1m", "tmpfs"):
        subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=60)
        before = check_index(db)
        for i in range(30):  # ~2.5 MB of new text: its index cannot fit in 1 MB
            (root / "big" / f"b{i}.md").parent.mkdir(exist_ok=True)
            words = " ".join(random.Random(i).choice(WORDS) for _ in range(12_000))
            (root / "big" / f"b{i}.md").write_text(f"# big {i}\n\n{words}\n")
        proc = subprocess.run(scan_cmd(root, db), env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        assert "disk full" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert check_index(db) == before
        shutil.rmtree(root / "big")
        subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=60)
        assert check_index(db) == before


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX only")
def test_read_only_index_folder(tmp_path: Path) -> None:
    """A read-only index folder: reading commands answer, writing ones refuse in
    one line (issue #38); the file is unchanged."""
    root, folder = tmp_path / "docs", tmp_path / "ro"
    write_variant(root, 3, 0)
    db = folder / "index.db"
    env = child_env()
    subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=60)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    (root / "more.md").write_text("# more\n\nnew text\n")
    if os.geteuid() == 0:
        ctx: Any = mounted(folder, "--bind", "-o", "ro", str(folder))
        if not _can_mount():
            pytest.skip("root ignores permission bits and cannot bind-mount read-only")
    else:
        ctx = contextlib.nullcontext()
        folder.chmod(0o555)
    try:
        with ctx:
            if os.geteuid() == 0:  # older mount(8) ignores ro on a first bind
                subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)],
                               check=True)  # fmt: skip
            for args in (["query", "text"], ["stats"]):
                proc = subprocess.run(
                    [sys.executable, "-m", "docindex", *args, "--db", str(db)],
                    env=env, capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
            for args in (["scan", str(root)], ["vacuum"]):
                proc = subprocess.run(
                    [sys.executable, "-m", "docindex", *args, "--db", str(db)],
                    env=env, capture_output=True, text=True, timeout=60,
                )  # fmt: skip
                assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
                assert "Traceback" not in proc.stderr
                assert proc.stderr.startswith("Error: ")
                assert len(proc.stderr.strip().splitlines()) == 1
                assert "writable" in proc.stderr or "read-only" in proc.stderr
    finally:
        folder.chmod(0o755)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


# -- damaged, foreign and newer indexes ---------------------------------------------


@pytest.fixture(scope="module")
def good_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A healthy index (built once per module) to damage copies of."""
    base = tmp_path_factory.mktemp("good")
    root = base / "docs"
    write_variant(root, 3, 0)
    db = base / "good" / "index.db"
    run("scan", str(root), "--db", str(db), "-q")
    return root, db


def _damage(kind: str, good: Path, target: Path) -> None:
    data = good.read_bytes()
    rng = random.Random(kind)
    if kind == "truncated":
        target.write_bytes(data[: len(data) // 3])
    elif kind == "zero-bytes":
        target.write_bytes(b"")
    elif kind == "random-bytes":
        target.write_bytes(rng.randbytes(40_000))
    elif kind == "header-then-garbage":
        target.write_bytes(data[:100] + rng.randbytes(len(data) - 100))
    elif kind == "damaged-pages":
        buf = bytearray(data)
        for off in range(4096, len(buf), 4096):
            buf[off + 8 : off + 400] = rng.randbytes(392)
        target.write_bytes(bytes(buf))
    elif kind in ("foreign", "plain-sqlite"):
        conn = sqlite3.connect(target)
        conn.execute("CREATE TABLE notes (x)")
        if kind == "foreign":
            conn.execute("PRAGMA application_id = 1234")
        conn.commit()
        conn.close()
    elif kind == "newer-schema":
        target.write_bytes(data)
        conn = sqlite3.connect(target)
        conn.execute("PRAGMA user_version = 99")
        conn.commit()
        conn.close()
    else:  # pragma: no cover
        raise AssertionError(kind)


DAMAGE = ["truncated", "zero-bytes", "random-bytes", "header-then-garbage",
          "damaged-pages", "foreign", "plain-sqlite", "newer-schema"]  # fmt: skip
# What each message must tell the user to do.
ADVICE = {
    "truncated": "reindex --full|docindex scan",
    "zero-bytes": "docindex scan",
    "random-bytes": "--db",
    "header-then-garbage": "reindex --full|docindex scan",
    "damaged-pages": "reindex --full",
    "foreign": "--db",
    "plain-sqlite": "--db",
    "newer-schema": "upgrade docindex",
}


@pytest.mark.parametrize("kind", DAMAGE)
def test_bad_index_is_one_clear_line_never_a_traceback(
    tmp_path: Path, kind: str, good_index: tuple[Path, Path]
) -> None:
    import re

    root, good = good_index
    bad = tmp_path / "bad" / "index.db"
    bad.parent.mkdir()
    _damage(kind, good, bad)
    commands = [["query", "alpha"], ["stats"], ["scan", str(root)]]
    says_rebuild = False
    for args in commands:
        shutil.copy(bad, tmp_path / "try.db")
        result = run(*args, "--db", str(tmp_path / "try.db"), ok=False)
        if kind == "zero-bytes" and args[0] == "scan":
            assert result.exit_code == 0  # an empty file is simply a new index
            continue
        assert result.exit_code == 1, (kind, args, result.output)
        message = result.stderr.strip()
        assert message.startswith("Error: ") and len(message.splitlines()) == 1
        assert re.search(ADVICE[kind], message), (kind, args, message)
        says_rebuild |= "`docindex reindex --full`" in message
    # reindex --full either rebuilds or says what to do instead; when the
    # advice was reindex --full, it rebuilds (issue #17).
    shutil.copy(bad, tmp_path / "try.db")
    result = run("reindex", "--full", "--db", str(tmp_path / "try.db"), ok=False)
    assert result.exit_code == 0 or not says_rebuild, (kind, result.stderr)
    if result.exit_code == 0:
        assert check_index(tmp_path / "try.db").documents
    else:
        assert result.exit_code == 1
        assert "Traceback" not in result.output
        assert re.search("docindex scan|--db|upgrade", result.stderr)


def test_db_that_is_not_a_file_is_refused_and_nothing_written(tmp_path: Path) -> None:
    """``--db /dev/null`` as root created /dev/null-journal (issue #17)."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    folder = tmp_path / "folder.db"
    folder.mkdir()
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    had_journal = os.path.lexists("/dev/null-journal")
    for target in (os.devnull, str(folder), str(fifo)):
        for args in (["scan", str(root)], ["query", "alpha"], ["stats"]):
            result = run(*args, "--db", target, ok=False)
            if target == str(folder):  # click's own check (dir_okay=False)
                assert result.exit_code == 2 and "is a directory" in result.stderr
                continue
            assert result.exit_code == 1, (target, args, result.output)
            assert "is not a regular file" in result.stderr, result.stderr
    assert os.path.lexists("/dev/null-journal") == had_journal
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "docs",
        "fifo.db",
        "folder.db",
    ]


@pytest.mark.parametrize(
    "kind", ["truncated", "damaged-pages", "foreign", "newer-schema"]
)
def test_bad_index_from_a_real_process(
    tmp_path: Path, kind: str, good_index: tuple[Path, Path]
) -> None:
    """The installed entry point prints one line on stderr, no traceback."""
    _, good = good_index
    bad = tmp_path / "bad.db"
    _damage(kind, good, bad)
    proc = subprocess.run(
        [sys.executable, "-m", "docindex", "query", "alpha", "--db", str(bad)],
        env=child_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("Error: ")


# -- concurrency ----------------------------------------------------------------------


def _wait_for_writer(db: Path, timeout: float = 20) -> None:
    """Return once another process holds the index's write lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            conn = sqlite3.connect(db, timeout=0, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc) or "busy" in str(exc):
                    return
            finally:
                conn.close()
        time.sleep(0.01)
    raise AssertionError("the scan never took the write lock")


def test_second_writer_waits_or_says_busy(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write_variant(root, 40, 0)
    db = tmp_path / "idx" / "index.db"
    env = child_env()
    first = subprocess.Popen(scan_cmd(root, db, "--force"), env=env,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        _wait_for_writer(db)
        # Impatient second writer: exit 1, one line, "index is busy".
        impatient = subprocess.run(
            scan_cmd(root, db), env=child_env(DOCINDEX_BUSY_TIMEOUT_S="0.2"),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        # Patient second writer: waits for the first, then completes.
        patient = subprocess.run(
            scan_cmd(root, db), env=child_env(DOCINDEX_BUSY_TIMEOUT_S="60"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    if impatient.returncode != 0:  # the first may have finished already
        assert impatient.returncode == 1
        assert "index is busy" in impatient.stderr
    for proc in (impatient, patient):
        assert "Traceback" not in proc.stderr
        assert "database is locked" not in proc.stderr
    assert patient.returncode == 0, patient.stderr
    assert check_index(db).documents


def test_first_scans_racing_on_a_new_index(tmp_path: Path) -> None:
    """Three scans create the same index at once (the migration race)."""
    root = tmp_path / "docs"
    write_variant(root, 6, 0)
    db = tmp_path / "idx" / "index.db"
    env = child_env(DOCINDEX_BUSY_TIMEOUT_S="60")
    procs = [subprocess.Popen(scan_cmd(root, db), env=env, stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]  # fmt: skip
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    ref = fresh_snapshot(root, tmp_path / "ref.db", child_env())
    assert check_index(db) == ref


def test_queries_answer_while_a_scan_writes(tmp_path: Path) -> None:
    """Readers see the last committed state while a real scan process writes (WAL)."""
    import docindex

    root = tmp_path / "docs"
    write_variant(root, 24, 0)
    db = tmp_path / "idx" / "index.db"
    env = child_env()
    subprocess.run(scan_cmd(root, db), env=env, check=True, timeout=120)
    before = docindex.open(str(db)).query("alpha gamma", top=5)
    assert before.hits
    writer = subprocess.Popen(scan_cmd(root, db, "--force"), env=env,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    answered = 0
    try:
        _wait_for_writer(db)
        while writer.poll() is None:  # up to and across the writer's commit
            result = docindex.open(str(db)).query("alpha gamma", top=5)
            assert [h.rel_path for h in result.hits] == [
                h.rel_path for h in before.hits
            ]
            answered += 1
        proc = subprocess.run(
            [sys.executable, "-m", "docindex", "query", "alpha", "--db", str(db),
             "--json"], env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["hits"]
    finally:
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert answered >= 1
    check_index(db)


# -- scope ----------------------------------------------------------------------------


@pytest.fixture
def scoped(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An index over ``docs`` with a sibling ``outside`` folder and a link out."""
    root, outside = tmp_path / "docs", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "in.md").write_text("# In\n\ninside text\n")
    (outside / "secret.md").write_text("# Secret\n\nsecret text\n")
    os.symlink(outside, root / "link-dir")
    os.symlink(outside / "secret.md", root / "link.md")
    db = tmp_path / "db" / "index.db"
    run("scan", str(root), "--db", str(db))
    return root, outside, db


def test_scan_path_outside_the_roots_is_refused(
    scoped: tuple[Path, Path, Path],
) -> None:
    root, outside, db = scoped
    for path in (outside, root / ".." / "outside", root / "link-dir",
                 root / "link.md", Path("/etc"), root / "sub" / ".." / ".."):  # fmt: skip
        result = run("scan", str(path), "--db", str(db), ok=False)
        assert result.exit_code == 2, (path, result.output)
        assert "outside" in result.stderr
    docs = {d[0] for d in snapshot(db).documents}
    assert docs == {"in.md"}


@pytest.mark.parametrize("command", ["show", "outline", "section"])
def test_file_arguments_outside_the_roots_are_refused(
    scoped: tuple[Path, Path, Path], command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docindex.cli.main import cli

    if command not in cli.commands:
        pytest.skip(f"`docindex {command}` does not exist yet")
    root, outside, db = scoped
    monkeypatch.chdir(root)
    extra = ["Secret"] if command == "section" else []
    for arg in ("../outside/secret.md", str(outside / "secret.md"), "link.md",
                "link-dir/secret.md", "sub/../../outside/secret.md"):  # fmt: skip
        result = run(command, arg, *extra, "--db", str(db), ok=False)
        assert result.exit_code == 2, (command, arg, result.output)
        assert "outside" in result.stderr, (command, arg, result.stderr)
        assert "secret text" not in result.output


MCP_CALLS = [
    ("doc_scan", {"path": "{outside}"}),
    ("doc_scan", {"path": "../outside"}),
    ("get_outline", {"path": "../outside/secret.md"}),
    ("get_outline", {"path": "link.md"}),
    ("get_section", {"path": "{outside}/secret.md", "section": "Secret"}),
    ("get_doc", {"chunk_id": "../outside/secret.md"}),
    ("find_related", {"path": "link-dir/secret.md"}),
]


@pytest.mark.parametrize(("tool", "args"), MCP_CALLS)
def test_mcp_tool_arguments_outside_the_roots_are_refused(
    scoped: tuple[Path, Path, Path], tool: str, args: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from docindex.errors import DocindexError

    mcp_server = pytest.importorskip("docindex.serve.mcp")
    root, outside, db = scoped
    monkeypatch.chdir(root)
    tools = mcp_server.Tools(str(db), [str(root)])
    filled = {k: v.replace("{outside}", str(outside)) for k, v in args.items()}
    with pytest.raises(DocindexError, match="outside"):
        tools.call(tool, filled)
    assert {d[0] for d in snapshot(db).documents} == {"in.md"}


def test_a_hot_journal_left_by_a_killed_writer_is_rolled_back(tmp_path: Path) -> None:
    """A writer killed mid-transaction in rollback-journal mode (a first scan
    uses one) leaves a hot journal; the next command's read-only look at the
    index must not fail with "attempt to write a readonly database" (#17)."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(5):
        (root / f"f{i}.md").write_text(f"# File {i}\n\nkestrel note {i}\n")
    db = tmp_path / "index.db"
    run("scan", str(root), "--db", str(db))
    writer = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode=DELETE')\n"
        "c.execute('PRAGMA cache_size=1')\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "c.execute('DELETE FROM documents')\n"
        "c.execute('CREATE TABLE junk(x)')\n"
        "c.executemany('INSERT INTO junk VALUES (?)', [(b'x' * 4000,)] * 500)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(db)], check=True)
    journal = Path(f"{db}-journal")
    assert journal.is_file() and journal.stat().st_size > 0
    hits = run("query", "kestrel", "--db", str(db), "--json")
    assert hits.exit_code == 0, hits.output
    assert len(json.loads(hits.stdout)["hits"]) == 5
    rescan = run("scan", str(root), "--db", str(db), "--json")
    assert rescan.exit_code == 0, rescan.output
    assert json.loads(rescan.stdout)["unchanged"] == 5
