"""ingest: TODO."""
