"""memoryd.notes.notes."""
