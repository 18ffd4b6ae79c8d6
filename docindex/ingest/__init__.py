"""Ingest: walk the roots (ignore rules, skip reasons), extract text per format (extract/),
segment it into chunks, analyse them into FTS rows and vectors, and write them (indexer,
worker pool); watch keeps an index current.
May import: docindex.embed, docindex.store, docindex.text and below; never docindex.search.
"""
