"""The foundation every other package stands on: library errors (one place, each with its
JSON-RPC code), the configuration (TOML, env overrides, validation), the rule of a string the
store can carry and of a short name (names.py), time and duration parsing,
atomic file writes (and the guarded swap of a file others write too), the data-dir and
workspace locks, structured logging, and the allocator settings.

May import: nothing of memoryd but `memoryd.core` (and `memoryd.__version__`).
"""
