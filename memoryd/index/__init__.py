"""Keeping the index current: the embedding model (resolution, loading, the query cache) and
the background embedding worker, the indexer that reconciles the workspace with the store and
indexes one file (hash, chunk, store), and the watchdog watcher with its per-file debounce.

May import: memoryd.core, memoryd.text, memoryd.store, memoryd.memory.
"""
