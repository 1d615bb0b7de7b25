"""Whole notes: the one door for writing a note in the workspace (write, append, move, delete,
trash; safe paths, atomic writes, sha-checked conflicts), note listings, and a note's links and
backlinks resolved as Obsidian resolves them.

May import: memoryd.core, memoryd.text, memoryd.store, memoryd.memory, memoryd.index.
"""
