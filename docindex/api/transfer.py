"""Move an index between engines: ``docindex export`` / ``docindex import`` (#34).

NDJSON, one record a line: a header, the settings (``meta``), the roots,
then one ``document`` per file with its stored text, front matter, salient
terms and its chunks (chunk id, heading path, lines, offsets, locators and
vector, base64). Import rebuilds each document's rows from these without
reading or extracting a file, so chunk ids stay the same; the full-text rows
are re-tokenised from the stored text with the exported tokenizer settings.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from docindex.api.import_check import FORMAT, META_KEYS, VERSION
from docindex.config import from_mapping
from docindex.errors import BadInputError, MisuseError

if TYPE_CHECKING:
    from docindex.api.import_check import Chunk
    from docindex.config import Config
    from docindex.models import ProgressFn
    from docindex.store import Index


def export_records(
    store: Index, on_progress: ProgressFn | None = None
) -> Iterator[dict[str, Any]]:
    """Every record of the index, in order (one read transaction).

    The header counts the documents (``documents``), so an import can show
    how far it is (#45); ``on_progress`` hears of each document written.
    """
    from docindex.models import Progress

    docs, _ = store.documents()
    yield {"type": FORMAT, "version": VERSION, "documents": len(docs)}
    for key in META_KEYS:
        yield {"type": "meta", "key": key, "value": store.get_meta(key)}
    for path in store.roots().values():
        yield {"type": "root", "path": path}
    for done, doc in enumerate(docs, start=1):
        if on_progress:
            on_progress(Progress("export", done, len(docs), doc.rel_path))
        segments = store.segments_of(doc.id)
        ids, blobs = store.vectors([s.id for s in segments])
        vec = dict(zip(ids, blobs, strict=True))
        yield {
            "type": "document", "root": doc.root, "rel_path": doc.rel_path,
            "kind": doc.kind, "title": doc.title, "size": doc.size,
            "mtime_ns": doc.mtime_ns, "hash": doc.hash, "meta": doc.meta,
            "terms": store.document_terms([doc.id]).get(doc.id, ""),
            "text": store.body(doc.id),
            "chunks": [
                {
                    "chunk_id": s.chunk_id, "heading": list(s.heading),
                    "start_line": s.start_line, "end_line": s.end_line,
                    "char_start": s.char_start, "char_end": s.char_end,
                    "page": s.page, "slide": s.slide, "sheet": s.sheet,
                    "cells": list(s.cells) if s.cells is not None else None,
                    "vector": base64.b64encode(vec[s.id]).decode("ascii")
                    if s.id in vec else None,
                }
                for s in segments
            ],
        }  # fmt: skip


def import_records(
    store: Index, cfg: Config, lines: Iterable[str],
    on_progress: ProgressFn | None = None,
) -> dict[str, int]:  # fmt: skip
    """Load exported records into an empty index, in one transaction.

    Every record is checked before it is written (``import_check``, issue
    #44); the first bad one rolls the whole import back. ``on_progress``
    hears of each document loaded (of the header's count).

    Returns:
        What was added: documents, chunks, vectors, roots.

    Raises:
        BadInputError: a record that is not what an export writes (its line
            and the problem), or more documents or chunks than the index's
            ``max_docs`` / ``max_segments``.
        MisuseError: the index holds documents already.
    """
    from docindex.api import import_check as check
    from docindex.models import Progress

    records = check.numbered_records(lines)
    _, head = next(records, (0, None))
    total = check.check_header(head)
    if store.fill_counts()[0]:
        raise MisuseError("import needs an empty index; pass a new --db")
    counts = {"documents": 0, "chunks": 0, "vectors": 0, "roots": 0}
    root_ids: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    widths: frozenset[int] | None = None  # from the embedder record, then the first
    with store.atomic():
        for number, rec in records:
            try:
                kind = rec.get("type")
                if kind == "meta":
                    key, value = check.check_meta(rec)
                    if value is not None:
                        store.set_meta(key, value)
                    if key == "settings" and value is not None:
                        got = from_mapping(value)
                        cfg = cfg.replace(cjk_ngram=got.cjk_ngram, stem=got.stem)
                    if key == "embedder" and isinstance(value, dict):
                        dim = value.get("dim")
                        if isinstance(dim, int) and 0 < dim <= 8192:
                            widths = check.vector_widths(dim)
                elif kind == "root":
                    path = check.check_root(rec)
                    if path not in root_ids:
                        root_ids[path] = store.root_id(path)
                elif kind == "document":
                    root, rel, chunks = check.check_document(rec, root_ids, widths)
                    # every vector one width: a mixed matrix fails every query
                    found = {len(c.vector) for c in chunks if c.vector is not None}
                    if found:
                        widths = frozenset(found) if len(found) == 1 else widths
                        if len(found) > 1:
                            raise check.RecordError("vectors of different widths")
                    if (root, rel) in seen:
                        raise check.RecordError(f"{rel} is in the file twice")
                    seen.add((root, rel))
                    _limits(cfg, counts, len(chunks))
                    _import_document(store, cfg, rec, chunks, root_ids, counts)
                    if on_progress:
                        on_progress(Progress("import", counts["documents"], total,
                                             rel))  # fmt: skip
                else:
                    raise check.RecordError(f"unknown record type {kind!r}")
            except check.RecordError as exc:
                raise BadInputError(f"line {number}: {exc}") from None
    counts["roots"] = len(root_ids)
    return counts


def _limits(cfg: Config, counts: dict[str, int], chunks: int) -> None:
    """An import holds no more than the index may (``max_docs``, ``max_segments``)."""
    from docindex.api.import_check import RecordError

    if counts["documents"] + 1 > cfg.max_docs:
        raise RecordError(f"more documents than max_docs ({cfg.max_docs:,})")
    if counts["chunks"] + chunks > cfg.max_segments:
        raise RecordError(f"more chunks than max_segments ({cfg.max_segments:,})")


def _import_document(
    store: Index, cfg: Config, rec: dict[str, Any], chunks: list[Chunk],
    root_ids: dict[str, int], counts: dict[str, int],
) -> None:  # fmt: skip
    """Add one checked document: its rows rebuilt from the record alone."""
    from docindex.ingest.analyze import document_fields, fts_row
    from docindex.models import Segment
    from docindex.store import compress_body
    from docindex.store.encoding import NewDocument, encode_segments
    from docindex.text.fields import title_text

    rel = rec["rel_path"]
    rid = root_ids[rec["root"]]
    text = rec["text"]
    segs = []
    for i, c in enumerate(chunks):
        cid = c.chunk_id
        # encode_segments keeps any chunk id whole (its ``frag``): ids unchanged
        anchor = cid[len(rel) + 1 :].split("~")[0] if cid.startswith(rel + "#") else ""
        segs.append(Segment(
            i, "", c.start_line, c.end_line, c.heading, cid, c.page, c.slide,
            c.sheet, c.cells, c.char_start, c.char_end, anchor, 1,
        ))  # fmt: skip
    vectors: list[bytes] = []
    for c in chunks:
        if c.vector is None:
            break  # the rest are embedded later (embed_pending)
        vectors.append(c.vector)
    doc_title = title_text(rec["title"], rel)
    fts = tuple(
        fts_row(cfg, doc_title, s.heading_path, text[s.char_start : s.char_end])
        for s in segs
    )
    store.add_document(NewDocument(
        root_id=rid, rel_path=rel, kind=rec["kind"], title=rec["title"],
        size=rec["size"], mtime_ns=rec["mtime_ns"], hash=rec["hash"],
        body=compress_body(text), segments=encode_segments(segs, rel, text), fts=fts,
        vectors=tuple(vectors), meta=rec["meta"] or {}, indexed_at=time.time(),
        fields=document_fields(cfg, doc_title, (s.heading_path for s in segs)),
        terms=rec["terms"] or "",
    ))  # fmt: skip
    counts["documents"] += 1
    counts["chunks"] += len(segs)
    counts["vectors"] += len(vectors)
