"""Search: the query parser (query), lexical and semantic ranking (engine, docstage,
semantic), fusion, snippets, hints, cursors, and navigation (outline/show/section/list/related).
May import: docindex.embed, docindex.store, docindex.text and below; never docindex.ingest.
"""
