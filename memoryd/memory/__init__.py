"""memoryd.memory."""
