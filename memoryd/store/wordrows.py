"""Which entries match a one-term FTS5 expression, remembered per connection while its data
version holds (issue 23.3; SQLite only).

The search's keyword evidence (search/evidence.py) asks, for each of a query's words, which of
its ~400 candidates hold it (`searchsql.matching`). FTS5 answers that with a read of the word's
whole doclist (~30,000 rows for a common word at 100K chunks: 1-2.5 ms a word), since a lookup
per candidate parses the expression again through the Python tokenizer (20-28 ms for 400). The
same words come back in the next searches (a person refines a query, an agent asks around one
subject, the keyword and hybrid searches of one query ask the same words), so the doclist is
read once into a bitmap over the rowids (12.5 KB at 100K entries, whatever the word), in about
the time of one such read (`group_concat`, parsed by numpy), and each later ask is a look at
the candidates' bits (~0.02 ms).

Kept per connection under its data version (store/connmemo.py: another connection's commit or
this one's own change forgets every bitmap), at most `MAX_BYTES` a connection (2 MB: 160 words
at 100K entries), the least recently asked dropped first.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.store.connmemo import Version, data_version
from memoryd.store.protocol import Connection

MAX_BYTES = 2 << 20  # remembered per connection: 160 words' bitmaps at 100K entries
MAX_ROWID = (1 << 24) - 1  # bitmaps up to 2 MB (16 MB of bools while one is built)

_memo: weakref.WeakKeyDictionary[Any, tuple[Version, OrderedDict[str, np.ndarray], list[int]]] = (
    weakref.WeakKeyDictionary()
)


def _read(con: Connection, match: str) -> np.ndarray:
    """The rowids of `entries_fts` that match the expression, ascending (int64)."""
    row = con.execute(
        "SELECT group_concat(rowid) FROM"
        " (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rowid)",
        [match],
    ).fetchone()
    text = row[0] if row else None
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)


def bitmap(con: Connection, match: str) -> np.ndarray:
    """Bit i (little-endian within each byte, uint8) is set when rowid i matches the expression.
    Rowids out of a bitmap's reach (negative, or past `MAX_ROWID`: a store of over 16M entries)
    give their sorted ids instead (int64), not remembered."""
    version = data_version(con)
    known = _memo.get(con) if version is not None else None
    if version is not None and (known is None or known[0] != version):
        known = _memo[con] = (version, OrderedDict(), [0])
    if known is not None:
        found = known[1].get(match)
        if found is not None:
            known[1].move_to_end(match)
            return found
    ids = _read(con, match)
    if len(ids) and (ids[0] < 0 or ids[-1] > MAX_ROWID):
        return ids
    held = np.zeros(int(ids[-1]) + 1 if len(ids) else 0, dtype=bool)
    held[ids] = True
    bits = np.packbits(held, bitorder="little")
    if known is not None and bits.nbytes <= MAX_BYTES:
        arrays, total = known[1], known[2]
        while arrays and total[0] + bits.nbytes > MAX_BYTES:
            total[0] -= arrays.popitem(last=False)[1].nbytes
        arrays[match] = bits
        total[0] += bits.nbytes
    return bits


def holding(con: Connection, match: str, ids: Sequence[int]) -> set[int]:
    """Those of `ids` that match the expression (`bitmap`, then each id's bit)."""
    if not ids:
        return set()
    bits = bitmap(con, match)
    want = np.fromiter(ids, dtype=np.int64, count=len(ids))
    if bits.dtype != np.uint8:  # rowids out of a bitmap's reach: the ids themselves
        return {int(i) for i in want[np.isin(want, bits)]}
    inside = want[(want >= 0) & (want < 8 * len(bits))]
    on = (bits[inside >> 3] >> (inside & 7).astype(np.uint8)) & 1
    return {int(i) for i in inside[on.astype(bool)]}
