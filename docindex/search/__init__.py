"""search: TODO."""
