"""memoryd.serve."""
