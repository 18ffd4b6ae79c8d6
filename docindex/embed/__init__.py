"""embed: TODO."""
