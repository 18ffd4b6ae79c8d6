"""A digest of an index's logical content, to show a change to the scan left it alone.

Two indexes of the same files built by two versions of the scan print the same
lines when they hold the same documents, segments, FTS rows and vectors,
however SQLite laid out their pages or FTS5 its segments. One line per part,
so a difference says where it is:

- ``documents``: every column but ``indexed_at``, the body decompressed and
  the section list decoded (compression settings may differ, text may not);
- ``facets``, ``skipped`` (without ``skipped_at``), ``roots``, ``meta`` (without
  ``location``);
- ``segments``: each segment as the store reads it back (``Store.segments_of``:
  chunk id, lines, offsets, heading path, page/slide/sheet/cells), its text
  (the body between its offsets) and its vector blob;
- ``fts`` and ``doc_terms``: every (term, row, column, position) in the FTS5
  index, read through an ``fts5vocab`` *instance* table, and the segments'
  per-row column sizes: what a query can find, position by position;
  ``doc_lengths`` and ``doc_term_counts``: the documents' lengths and the
  counts stored whole (issue #46).

Usage: python bench/index_digest.py INDEX.db [INDEX2.db ...]
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import zlib
from pathlib import Path

from docindex.store import Store


def _h() -> hashlib._Hash:
    return hashlib.blake2b(digest_size=12)


def _feed(h: hashlib._Hash, row: object) -> None:
    h.update(repr(row).encode("utf-8", "surrogatepass"))
    h.update(b"\n")


def digest(path: Path) -> dict[str, str]:
    """Part name -> ``count:hash`` of the index at ``path``."""
    out: dict[str, str] = {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    store = Store.open(path, readonly=True)
    try:
        h, n = _h(), 0
        for row in conn.execute("SELECT key, value FROM meta ORDER BY key"):
            if row[0] != "location":
                _feed(h, row)
                n += 1
        out["meta"] = f"{n}:{h.hexdigest()}"
        h, n = _h(), 0
        for row in conn.execute("SELECT id, path FROM roots ORDER BY id"):
            _feed(h, row)
            n += 1
        out["roots"] = f"{n}:{h.hexdigest()}"
        h, n = _h(), 0
        docs = conn.execute(
            "SELECT id, root_id, rel_path, kind, title, size, mtime_ns, hash, meta, "
            "n_segments, sections, first_segment, terms FROM documents ORDER BY id"
        ).fetchall()
        for row in docs:
            sections = row[10]
            listed = json.loads(zlib.decompress(sections)) if sections else None
            _feed(h, (*row[:10], listed, *row[11:], store.body(row[0])))
            n += 1
        out["documents"] = f"{n}:{h.hexdigest()}"
        h, n = _h(), 0
        for row in conn.execute(
            "SELECT doc_id, key, value FROM facets ORDER BY doc_id, key, value"
        ):
            _feed(h, row)
            n += 1
        out["facets"] = f"{n}:{h.hexdigest()}"
        h, n = _h(), 0
        for row in conn.execute(
            "SELECT root_id, rel_path, reason, message, size, mtime_ns, hash "
            "FROM skipped ORDER BY root_id, rel_path"
        ):
            _feed(h, row)
            n += 1
        out["skipped"] = f"{n}:{h.hexdigest()}"
        h, hv, n = _h(), _h(), 0
        vec = dict(conn.execute("SELECT id, vec FROM segments"))
        for row in docs:
            body = store.body(row[0])
            for seg in store.segments_of(row[0]):
                text = body[seg.char_start : seg.char_end]
                _feed(h, (seg.id, seg.doc_id, seg.ordinal, seg.chunk_id,
                          seg.start_line, seg.end_line, seg.char_start,
                          seg.char_end, seg.heading, seg.page, seg.slide,
                          seg.sheet, seg.cells, text))  # fmt: skip
                _feed(hv, (seg.id, vec.pop(seg.id)))
                n += 1
        out["segments"] = f"{n}:{h.hexdigest()}"
        out["vectors"] = f"{n}:{hv.hexdigest()}"
        out["orphan segments"] = str(len(vec))
        for name in ("doc_lengths", "doc_term_counts"):
            h, n = _h(), 0
            for row in conn.execute(f"SELECT * FROM {name} ORDER BY 1, 2"):
                _feed(h, row)
                n += 1
            out[name] = f"{n}:{h.hexdigest()}"
        for table in ("fts", "doc_terms"):
            conn.execute(
                f"CREATE VIRTUAL TABLE temp.{table}_inst "
                f"USING fts5vocab(main, {table}, instance)"
            )
            h, n = _h(), 0
            cur = conn.execute(
                # fts5vocab walks the index in (term, row, column, offset) order
                f"SELECT term, doc, col, offset FROM temp.{table}_inst"
            )
            while rows := cur.fetchmany(100_000):
                for row in rows:
                    _feed(h, row)
                n += len(rows)
            out[f"{table} postings"] = f"{n}:{h.hexdigest()}"
            if table == "doc_terms":  # columnsize=0: no per-row sizes
                continue
            h, n = _h(), 0
            for row in conn.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id"):
                _feed(h, row)
                n += 1
            out[f"{table} rows"] = f"{n}:{h.hexdigest()}"
    finally:
        store.close()
        conn.close()
    return out


def main(paths: list[str]) -> int:
    """Print each index's digest; with several, say whether they are the same."""
    results = [digest(Path(p)) for p in paths]
    for p, r in zip(paths, results, strict=True):
        print(f"## {p}")
        for k, v in r.items():
            print(f"{k:16} {v}")
    if len(results) > 1:
        same = all(r == results[0] for r in results[1:])
        print("IDENTICAL" if same else "DIFFERENT")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
