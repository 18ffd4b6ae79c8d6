"""Text shared by ingest and search: normalisation, the tokenizer (CJK n-grams), the stemmer,
Markdown/MDX syntax, headings and anchors, and what an indexed field is made of.
May import: docindex.models, docindex.config, docindex.errors.
"""
