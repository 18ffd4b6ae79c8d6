"""serve: TODO."""
