"""memoryd.core."""
