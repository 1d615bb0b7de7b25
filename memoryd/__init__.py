"""memoryd: a local memory daemon for markdown notes and agent memories."""

__version__ = "0.1.0"
