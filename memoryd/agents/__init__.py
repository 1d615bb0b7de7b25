"""memoryd.agents."""
