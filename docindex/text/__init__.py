"""text: TODO."""
