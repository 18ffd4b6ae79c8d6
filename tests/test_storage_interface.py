"""The storage interface alone (#18): records in, records out, no SQL in the caller.

Each scan stage is usable without the others: a document is segmented
(``segment``), analysed (``analyze``), encoded (``store.encode_segments``) and
stored (``Index.add_document``), then read back through the interface.
"""

from __future__ import annotations

from pathlib import Path

from docindex.config import Config
from docindex.ingest.analyze import (
    analyze_segments,
    document_fields,
    fts_row,
)
from docindex.ingest.segment import segment_document
from docindex.models import Extracted, Unit
from docindex.search.candidates import quote_fts
from docindex.store import (
    DocFilter,
    Index,
    NewDocument,
    Store,
    compress_body,
    encode_segments,
)
from docindex.text.fields import title_text
from docindex.text.tokenize import query_terms

CFG = Config(roots=("/r",))


def _add(store: Index, root_id: int, rel_path: str, text: str, kind: str) -> int:
    extracted = Extracted(units=(Unit(text=text, markdown=kind == "md"),), kind=kind)
    body, segments = segment_document(extracted, rel_path, 200)
    doc_title = title_text(None, rel_path)
    fts, vectors = analyze_segments(CFG, None, doc_title, segments)
    return store.add_document(
        NewDocument(
            root_id=root_id, rel_path=rel_path, kind=kind, title=None,
            size=len(text), mtime_ns=1, hash=rel_path, body=compress_body(body),
            segments=encode_segments(segments, rel_path, body), fts=fts,
            vectors=vectors or (), meta={"team": "docs"} if kind == "md" else {},
            fields=document_fields(CFG, doc_title, (s.heading_path for s in segments)),
        )
    )  # fmt: skip


def test_a_document_goes_in_and_comes_back_as_records(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.db", create=True) as store:
        index: Index = store
        with index.atomic():
            rid = index.root_id("/r")
            md = _add(
                index, rid, "guide/a.md", "# Install\npip install docindex\n", "md"
            )
            txt = _add(index, rid, "notes.txt", "install notes in plain text\n", "txt")
        doc = index.document(md)
        assert doc is not None
        assert (doc.root, doc.rel_path, doc.kind, doc.meta) == (
            "/r",
            "guide/a.md",
            "md",
            {"team": "docs"},
        )
        segs = index.segments_of(md)
        assert [s.chunk_id for s in segs] == ["guide/a.md#install"]
        assert segs[0].heading == ("Install",)
        assert index.body(md)[segs[0].char_start : segs[0].char_end].endswith(
            "docindex"
        )
        counts = index.counts()
        assert (counts.documents, counts.segments, counts.embedded) == (2, 2, 2)

        (term,) = query_terms("install", cjk_ngram=CFG.cjk_ngram, use_stem=CFG.stem)
        match = quote_fts(term)
        assert {sid for sid, _ in index.lexical(match, 10, 1.0)} == {
            s.id for d in (md, txt) for s in index.segments_of(d)
        }
        only_md = DocFilter(kinds=(".MD",))
        assert [sid for sid, _ in index.lexical(match, 10, 1.0, only_md)] == [
            segs[0].id
        ]
        assert index.all_vectors(DocFilter(facets=(("team", "docs"),)))[0] == [
            segs[0].id
        ]
        listed, total = index.documents(DocFilter(path_glob="guide/*"))
        assert total == 1 and [d.rel_path for d in listed] == ["guide/a.md"]

        # Deleting replays the FTS rows the document was indexed with.
        replay = [
            (s.id, *fts_row(CFG, title_text(None, "guide/a.md"), s.heading,
                            index.body(md)[s.char_start : s.char_end]))
            for s in segs
        ]  # fmt: skip
        assert [d.id for d in index.document_lexical(match, 10, (1, 1, 1))] == [md, txt]
        fields = document_fields(
            CFG, title_text(None, "guide/a.md"), (s.heading for s in segs)
        )
        with index.atomic():
            index.delete_document(md, replay, fields)
        assert index.document(md) is None and index.segment_count(md) == 0
        # ... and its document-level row (issue #21)
        assert [d.id for d in index.document_lexical(match, 10, (1, 1, 1))] == [txt]
        assert index.document_freqs([term]) == {term: 1}
        assert [sid for sid, _ in index.lexical(match, 10, 1.0)] == [
            s.id for s in index.segments_of(txt)
        ]
        assert index.doc_freqs(["pip", term]) == {term: 1}  # no posting left behind
