"""How the index was chunked: the indexer settings that decide a note's chunks, kept in the store
beside the chunks they made, so a restart with other values reads every note again.

A note's chunks are made when its content changes (its SHA-256); a note that did not change is
not read again. Without this record, a restart with another `indexer.chunk_max_tokens` left every
unchanged note in the old chunks and chunked only the notes edited afterwards, with nothing in
the log: two chunk sizes in one index, for good. Now the daemon compares, says which settings
changed, and has the first reconcile read and chunk every note again, in place and in the
background (search answers meanwhile; a chunk whose text is unchanged keeps its vector, since
vectors are keyed by the text's hash), as a change of model re-embeds by itself.

The record also holds READER, how notes' markdown is read: a release that reads it otherwise
raises it, and the first start after the upgrade reads every note again the same way (an info
line, not a warning: nothing was misconfigured).

The record lives in the store's `meta` table: one key for the SQLite file, one per workspace id
in a shared PostgreSQL database (each machine chunks its own notes). A store without a record (a
new one, or one made before this) takes the current settings as its record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memoryd.core.logsetup import get_logger
from memoryd.store import Store, entries

log = get_logger("memoryd.index.chunking")

# the indexer settings a note's chunks depend on (docs/configuration.md, "Changing the chunking")
CHUNKING = ("chunk_max_tokens", "chunk_overlap_tokens", "max_chunks_per_file")
META_KEY = "indexer.chunking"
# How memoryd reads a note's markdown (its headings, tags, links and entities), raised when a
# release reads it otherwise, so an upgraded index holds what a new one would: 2 (walkr14) reads
# no heading, tag, link or name in %%comments%%, <!-- comments -->, $$math$$, indented code or
# a list's fences, and setext headings for every reader (text/mdblocks.py).
READER = 2


def record(settings: Any) -> dict[str, Any]:
    return {**{name: getattr(settings, name) for name in CHUNKING}, "reader": READER}


def meta_key(store: Store) -> str:
    workspace = store.info().get("workspace_id")
    return f"{META_KEY}:{workspace}" if workspace else META_KEY


def check(store: Store, settings: Any, forget_hashes: Callable[[], None]) -> list[str]:
    """Compare the settings with the ones the index was chunked with; when they differ, have
    every note read again (`forget_hashes`) and log which changed. Returns the changed names."""
    key = meta_key(store)
    now = record(settings)
    raw = store.read(lambda con: entries.get_meta(con, key))
    try:
        before = json.loads(raw) if raw is not None else None
    except ValueError:
        before = None
    if before == now:
        return []
    prev: dict[str, Any] = before if isinstance(before, dict) else {}
    changed = [name for name in CHUNKING if prev and prev.get(name) != now[name]]
    if changed:
        forget_hashes()
        log.warning(
            "the chunking settings changed since the notes were indexed: every note is read "
            "and chunked again in the background (text that is unchanged keeps its vector)",
            changed={name: [prev.get(name), now[name]] for name in changed},
        )
    elif prev and prev.get("reader", 1) != READER:  # an upgrade, not a setting: info
        forget_hashes()
        log.info(
            "this release reads notes' markdown otherwise: every note is read again in the "
            "background (nothing is embedded again)",
            reader=[prev.get("reader", 1), READER],
        )
    store.run_write(lambda con: entries.set_meta(con, key, json.dumps(now, sort_keys=True)))
    return changed
