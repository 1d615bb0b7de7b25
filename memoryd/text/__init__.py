"""Pure text: markdown decoding, front matter and heading-aware chunks, Obsidian syntax
(wikilinks, tags, link resolution), which workspace paths are notes, and the credential
patterns of the secret guard. No I/O, no store: functions of strings.

May import: memoryd.core.
"""
