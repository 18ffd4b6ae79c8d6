"""Embedders: the Embedder protocol and the choice of one (choice), feature-hashed n-gram
vectors (ngram), the optional local MiniLM model (minilm).
May import: docindex.text and below.
"""
