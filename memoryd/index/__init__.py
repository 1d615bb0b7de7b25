"""memoryd.index."""
