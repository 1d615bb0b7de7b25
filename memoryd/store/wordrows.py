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
the candidates' bits (~0.02 ms). The number of rows read is kept beside it: the word's
document frequency, which the evidence asks first (`searchsql.match_count`), is then counted
from it instead of by another read.

Kept per connection under its data version (store/connmemo.py: another connection's commit or
this one's own change forgets every bitmap), at most `MAX_BYTES` a connection (2 MB: 160 words
at 100K entries), the least recently asked dropped first.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memoryd.store.connmemo import Version, data_version
from memoryd.store.ftsprune import generation
from memoryd.store.protocol import Connection

MAX_BYTES = 2 << 20  # remembered per connection: 160 words' bitmaps at 100K entries
MAX_ROWID = (1 << 24) - 1  # bitmaps up to 2 MB (16 MB of bools while one is built)

# per connection: (data version, {expression: (bitmap, how many rows match)}, [bytes kept])
_Kept = OrderedDict[str, tuple[np.ndarray, int]]
_memo: weakref.WeakKeyDictionary[Any, tuple[Version, _Kept, list[int]]] = (
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


def _kept(con: Connection) -> _Kept | None:
    """This connection's remembered bitmaps under its current data version (None: nothing is
    kept, PostgreSQL)."""
    version = data_version(con)
    if version is None:
        return None
    known = _memo.get(con)
    if known is None or known[0] != version:
        known = _memo[con] = (version, OrderedDict(), [0])
    return known[1]


def count(con: Connection, match: str) -> int | None:
    """How many rows match the expression, when its bitmap is remembered (no read otherwise)."""
    kept = _kept(con)
    found = kept.get(match) if kept is not None else None
    return found[1] if found is not None else None


def bitmap(con: Connection, match: str) -> np.ndarray:
    """Bit i (little-endian within each byte, uint8) is set when rowid i matches the expression.
    Rowids out of a bitmap's reach (negative, or past `MAX_ROWID`: a store of over 16M entries)
    give their sorted ids instead (int64), not remembered."""
    kept = _kept(con)
    found = kept.get(match) if kept is not None else None
    if kept is not None and found is not None:
        kept.move_to_end(match)
        return found[0]
    return _keep(con, kept, match, _read(con, match))


def _keep(con: Connection, kept: _Kept | None, match: str, ids: np.ndarray) -> np.ndarray:
    """The bitmap of the matching rowids `ids` (ascending), remembered when it can be."""
    if len(ids) and (ids[0] < 0 or ids[-1] > MAX_ROWID):
        return ids
    held = np.zeros(int(ids[-1]) + 1 if len(ids) else 0, dtype=bool)
    held[ids] = True
    bits = np.packbits(held, bitorder="little")
    if kept is not None and bits.nbytes <= MAX_BYTES:
        total = _memo[con][2]
        while kept and total[0] + bits.nbytes > MAX_BYTES:
            total[0] -= kept.popitem(last=False)[1][0].nbytes
        kept[match] = (bits, len(ids))
        total[0] += bits.nbytes
    return bits


@dataclass(frozen=True)
class Ahead:
    """Expressions' matching rowids read on another connection (`read_ahead`), and the keyword
    index's generation there (ftsprune.generation: every change to the index rewrites it)."""

    key: bytes | None
    ids: dict[str, np.ndarray]


def unknown(con: Connection, matches: Sequence[str]) -> list[str]:
    """Those of the expressions whose matches this connection does not keep."""
    kept = _kept(con)
    return [m for m in matches if kept is not None and m not in kept]


def read_ahead(con: Connection, matches: Sequence[str]) -> Ahead:
    """The expressions' matches, read on this connection for another one (`adopt`): the vector
    pool's thread reads a query's new words after its k-NN, while the search ranks its keyword
    pool (issue 23.3)."""
    return Ahead(generation(con), {m: _read(con, m) for m in matches})


def adopt(con: Connection, ahead: Ahead) -> int:
    """Keep on `con` the matches read ahead on another connection, when its keyword index is
    the one they were read from (the same generation: the same rows match); how many kept."""
    kept = _kept(con)
    if kept is None or ahead.key is None or not ahead.ids or generation(con) != ahead.key:
        return 0
    for match, ids in ahead.ids.items():
        if match not in kept:
            _keep(con, kept, match, ids)
    return len(ahead.ids)


def holding(con: Connection, match: str, ids: Sequence[int]) -> set[int]:
    """Those of `ids` that match the expression (`bitmap`, then each id's bit)."""
    if not ids:
        return set()
    bits = bitmap(con, match)
    want = np.fromiter(ids, dtype=np.int64, count=len(ids))
    if bits.dtype != np.uint8:  # rowids out of a bitmap's reach: the ids themselves
        return set(want[np.isin(want, bits)].tolist())
    inside = want[(want >= 0) & (want < 8 * len(bits))]
    on = (bits[inside >> 3] >> (inside & 7).astype(np.uint8)) & 1
    return set(inside[on.astype(bool)].tolist())
