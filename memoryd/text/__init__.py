"""memoryd.text."""
