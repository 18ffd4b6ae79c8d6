"""Rankings split in two rowid halves on two connections (issue #24).

On a big index a reading command ranks a query's segments as two halves at
once (``store/halves.py``). The answer must be the single statement's, also
when a scan commits between the two halves' snapshots. The threshold is
lowered here so that a small real index splits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import docindex
from docindex.store import Store
from docindex.store import halves as store_halves

EXAMPLE = Path(__file__).resolve().parents[1] / "example"
QUERIES = [
    "configure the index",
    "hybrid ranking fusion weights",
    "install docindex with pip",
    "搜索 引擎 排序",
    "検索 エンジン",
    "release checklist tests",
]


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "docs"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".docindex"))
    for n in range(30):  # more segments, spread over the rowids
        (root / f"extra-{n:02d}.md").write_text(
            f"# Page {n}\n\nConfigure the index and the ranking weights, "
            f"then install it again ({n}).\n\n## More\n\nTests of the release {n}.\n"
        )
    db = tmp_path / "i.db"
    docindex.open(str(db), roots=[str(root)]).scan()
    return root, db


def _answers(db: Path) -> list[str]:
    out = []
    for q in QUERIES:
        for mode in ("auto", "lexical"):
            for files in (False, True):
                hits = docindex.open(str(db)).query(q, mode=mode, files=files).hits
                out.append(repr([(h.path, h.line, h.score) for h in hits]))
    return out


def test_split_rankings_answer_as_one_statement(
    index: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, db = index
    serial = _answers(db)
    with Store.open(db, mapped=True) as store:
        assert store.halves is None  # a small index: one statement
    monkeypatch.setattr(store_halves, "SPLIT_MIN_DOCS", 0)
    assert _answers(db) == serial
    # The segment ranking itself, cut short at every length: the merged
    # halves keep the statement's order (score, then id) and its limit.
    match = '"configur" OR "index" OR "rank" OR "test"'
    with Store.open(db, mapped=True) as store, store.atomic(immediate=False):
        halves = store.halves
        assert halves is not None  # the split really runs
        hits = store.document_lexical(match, 100, (1.0, 1.0, 1.0))
        within = [
            sid
            for d in hits
            for sid in range(d.first_segment, d.first_segment + d.n_segments)
        ]
        whole = []
        for limit in (1, 2, 3, 5, 8, 13, 1000):
            store.halves = None
            whole = store.lexical(match, limit, 1.0, within=within)
            store.halves = halves
            assert store.lexical(match, limit, 1.0, within=within) == whole
        assert len(whole) > 20 and len({s for _, s in whole}) < len(whole)  # ties too


def test_a_commit_between_the_halves_changes_nothing(
    index: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader keeps its snapshot: segments a scan deletes meanwhile, in
    the upper half, are still ranked (the helper's newer snapshot is not used)."""
    root, db = index
    monkeypatch.setattr(store_halves, "SPLIT_MIN_DOCS", 0)
    match = '"configur" OR "index" OR "rank"'
    with Store.open(db, mapped=True) as store, store.atomic(immediate=False):
        hits = store.document_lexical(match, 100, (1.0, 1.0, 1.0))
        within = [
            sid
            for d in hits
            for sid in range(d.first_segment, d.first_segment + d.n_segments)
        ]
        before = store.lexical(match, 1000, 1.0, within=within)
        top_doc = max(hits, key=lambda d: d.id)  # its segments are in the upper half
        gone = set(
            range(top_doc.first_segment, top_doc.first_segment + top_doc.n_segments)
        )
        assert gone & {sid for sid, _ in before}
        # A scan commits: the newest matching file is deleted.
        newest = store.document(top_doc.id)
        assert newest is not None
        (root / newest.rel_path).unlink()
        assert docindex.open(str(db)).scan().removed == 1
        assert store.lexical(match, 1000, 1.0, within=within) == before
    with Store.open(db, mapped=True) as store, store.atomic(immediate=False):
        after = store.lexical(match, 1000, 1.0, within=within)
    assert not gone & {sid for sid, _ in after}  # a new read sees the scan
