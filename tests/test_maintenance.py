"""The index stays small (issue #22): rewrites, repeated edits, stats and vacuum.

Everything runs on real SQLite files built by real scans; the FTS index is
compared through its ``fts_vocab`` table (every term with its row and
occurrence counts), which differs if a single row was lost or left behind.
"""

from __future__ import annotations

import random
import sqlite3
import threading
from pathlib import Path

import pytest

from docindex.config import Config
from docindex.ingest.indexer import scan
from docindex.store import Store
from tests.conftest import run, run_json

WORDS = (
    "index query segment token stem vector rank merge page file folder root "
    "search result heading section table figure note draft review release "
    "config option value default path cache memory thread worker batch "
    "路由 插件 配置 计算 属性 动态 规划 索引 检索 文档"
).split()


def _text(rng: random.Random, n: int) -> str:
    paras = []
    for p in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(60))
        paras.append(f"## Part {p} {rng.choice(WORDS)}\n\n{words}\n")
    return "\n".join(paras)


def _corpus(root: Path, files: int = 40, seed: int = 7) -> Path:
    rng = random.Random(seed)
    for i in range(files):
        path = root / f"d{i % 4}" / f"doc{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Doc {i}\n\n{_text(rng, 12)}", encoding="utf-8")
    return root


def _size(db: Path) -> int:
    return sum(
        Path(f"{db}{s}").stat().st_size
        for s in ("", "-wal")
        if Path(f"{db}{s}").exists()
    )


def _vocab(db: Path) -> list[tuple[str, int, int]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT term, doc, cnt FROM fts_vocab ORDER BY term"
        ).fetchall()
    finally:
        conn.close()


def _fresh(tmp_path: Path) -> tuple[Path, Path]:
    root = _corpus(tmp_path / "docs")
    db = tmp_path / "i.db"
    run("scan", str(root), "--db", str(db), "-q")
    return root, db


def test_force_rescans_without_changes_keep_the_size(tmp_path: Path) -> None:
    root, db = _fresh(tmp_path)
    fresh, vocab = _size(db), _vocab(db)
    # A first scan writes each FTS table's rows in one go; a rewrite lays its
    # segments out a little differently (412 -> 424 KiB here), then stays put.
    run_json("scan", str(root), "--db", str(db), "--force")
    before = _size(db)
    assert before <= fresh * 1.05
    for _ in range(2):
        out = run_json("scan", str(root), "--db", str(db), "--force")
        assert out["updated"] == 40
    assert _size(db) <= before * 1.01
    assert _vocab(db) == vocab
    out = run_json("reindex", "--db", str(db))
    assert out["updated"] == 40 and _size(db) <= before * 1.01
    assert _vocab(db) == vocab
    hits = run_json("query", "计算属性", "--db", str(db))["hits"]
    assert hits


def test_interrupted_rewrite_defers_the_restore_and_the_next_scan_finishes_it(
    tmp_path: Path,
) -> None:
    """Ctrl-C of `scan --force` took 8-10 s restoring rows (issue #38): now the
    files not reached keep their text and vectors, get their FTS rows back from
    the next scan, and nothing is lost meanwhile."""
    root, db = _fresh(tmp_path)
    vocab = _vocab(db)
    seen = []

    def stop() -> bool:
        return len(seen) >= 10

    cfg = Config(roots=(str(root),), workers=1)
    with Store.open(db) as store:
        result = scan(store, cfg, force=True, stop=stop,
                      on_progress=lambda p: seen.append(p))  # fmt: skip
    assert result.interrupted and 0 < result.pending < 40
    assert not [p for p in seen if p.phase == "restore"]  # no restore on the way out
    with Store.open(db) as store:
        assert store.counts().documents == 40
        assert len(store.get_meta("fts_pending")) == 40 - result.updated
    assert run_json("query", "anything", "--db", str(db))["degraded"]
    run("scan", str(root), "--db", str(db), "-q")  # the remedy the line printed
    assert _vocab(db) == vocab  # every file has its rows back
    with Store.open(db) as store:
        assert not store.get_meta("fts_pending")
    assert not run_json("query", "anything", "--db", str(db))["degraded"]


def test_a_scoped_force_scan_deletes_row_by_row(tmp_path: Path) -> None:
    """A file is re-indexed with delete markers: reclaimable until a merge."""
    root, db = _fresh(tmp_path)
    vocab = _vocab(db)
    out = run_json("scan", str(root / "d1" / "doc1.md"), "--db", str(db), "--force")
    assert out["updated"] == 1
    assert _vocab(db) == vocab
    stats = run_json("stats", "--db", str(db))
    assert stats["reclaimable_bytes"] > 0  # the replaced rows' old postings


def test_repeated_edits_reach_a_steady_state(tmp_path: Path) -> None:
    root, db = _fresh(tmp_path)
    first = _size(db)
    rng = random.Random(3)
    sizes = []
    for round_ in range(12):
        for i in rng.sample(range(40), 8):  # a fifth of the files each round
            path = root / f"d{i % 4}" / f"doc{i}.md"
            path.write_text(f"# Doc {i} r{round_}\n\n{_text(rng, 12)}", "utf-8")
        run("scan", str(root), "--db", str(db), "-q")
        sizes.append(_size(db))
    assert max(sizes) <= first * 1.5, (first, sizes)
    # The size swings by ~15% as merges come and go (452-540 KiB here); no
    # trend upward: the last rounds' mean stays at the middle rounds'.
    middle, last = sizes[4:8], sizes[8:]
    assert sum(last) / len(last) <= sum(middle) / len(middle) * 1.05, sizes


def test_vacuum_reclaims_what_stats_reports(tmp_path: Path) -> None:
    root, db = _fresh(tmp_path)
    vocab = _vocab(db)
    run("scan", str(root / "d2" / "doc2.md"), "--db", str(db), "--force", "-q")
    reclaimable = run_json("stats", "--db", str(db))["reclaimable_bytes"]
    assert reclaimable > 0
    text = run("stats", "--db", str(db)).stdout
    assert "reclaimable" in text and "docindex vacuum" in text
    out = run_json("vacuum", "--db", str(db))
    assert out["before_bytes"] == _size(db) + out["reclaimed_bytes"]
    assert out["reclaimed_bytes"] > 0 and out["reclaimable_bytes"] == 0
    assert run_json("stats", "--db", str(db))["reclaimable_bytes"] == 0
    assert _vocab(db) == vocab
    line = run("vacuum", "--db", str(db)).stdout
    assert line.startswith(f"{db}: ") and "reclaimed" in line


def test_vacuum_converts_an_index_without_auto_vacuum(tmp_path: Path) -> None:
    """Indexes from before schema 2 had no incremental auto-vacuum."""
    _, db = _fresh(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    vocab = _vocab(db)
    run("vacuum", "--db", str(db))
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
    conn.close()
    assert _vocab(db) == vocab


def test_vacuum_while_a_scan_writes_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, db = _fresh(tmp_path)
    vocab, size = _vocab(db), _size(db)
    monkeypatch.setenv("DOCINDEX_BUSY_TIMEOUT_S", "0.2")
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:  # a scan holds one write transaction throughout
        with Store.open(db) as store, store.atomic():
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(10)
        result = run("vacuum", "--db", str(db), ok=False)
    finally:
        release.set()
        thread.join()
    assert result.exit_code == 1
    assert "busy" in result.stderr and "Traceback" not in result.output
    assert _vocab(db) == vocab and _size(db) == size
    assert run_json("vacuum", "--db", str(db))["after_bytes"] <= size


def test_a_wal_a_reader_kept_large_counts_as_reclaimable(tmp_path: Path) -> None:
    """A watcher (here: a plain reader) holds the index open while a scan rewrites it."""
    root, db = _fresh(tmp_path)
    reader = sqlite3.connect(db)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM documents").fetchone()  # a snapshot
        run("scan", str(root), "--db", str(db), "--force", "-q")
        reader.execute("COMMIT")  # no snapshot now, but the file stays open
        wal = Path(f"{db}-wal").stat().st_size
        assert wal > 0
        stats = run_json("stats", "--db", str(db))
        assert stats["reclaimable_bytes"] >= wal // 2
        out = run_json("vacuum", "--db", str(db))
        assert out["reclaimed_bytes"] >= stats["reclaimable_bytes"] * 0.8
        assert out["reclaimable_bytes"] == 0
        assert Path(f"{db}-wal").stat().st_size == 0  # folded back and truncated
    finally:
        reader.close()
