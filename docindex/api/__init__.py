"""api: TODO."""
