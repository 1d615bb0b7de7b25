"""The vector cache's packed content hashes (memoryd/search/hashrows.py)."""

from __future__ import annotations

import hashlib

from memoryd.search import hashrows
from memoryd.search.hashrows import HashRows


def _h(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def test_rows_found_before_and_after_a_sort_and_views_stay_valid() -> None:
    rows = HashRows()
    rows.append([_h(i) for i in range(100)], headroom=10)
    view = rows.view(100)
    rows.append([_h(i) for i in range(100, 100 + hashrows.RESORT + 5)])  # grows, then sorts
    assert len(rows) == 100 + hashrows.RESORT + 5
    assert [h.decode() for h in view[:3]] == [_h(0), _h(1), _h(2)]  # the old buffer
    wanted = {_h(i) for i in (0, 57, 99, 100, 2000, 100 + hashrows.RESORT + 4)} | {"absent"}
    got = rows.rows(wanted)
    assert sorted(got) == [0, 57, 99, 100, 2000, 100 + hashrows.RESORT + 4]
    assert all(rows.view(len(rows))[r].decode() in wanted for r in got)
    rows.append([_h(-1)])  # after the sort: looked up through the dict
    assert rows.rows([_h(-1), _h(5)]) == [len(rows) - 1, 5]


def test_hashes_longer_than_the_width_and_shared_keys() -> None:
    rows = HashRows()
    short = ["a" * 8, "b" * 8]
    rows.append(short)
    long = "x" * 100  # widens the buffer; every key is taken again
    rows.append([long])
    assert rows.view(3)[2].decode() == long and rows.view(3)[0].decode() == "a" * 8
    assert sorted(rows.rows(["a" * 8, long, "y" * 200])) == [0, 2]
    # two hashes whose 8-byte words XOR to the same key: both found by comparing the bytes
    twins = HashRows()
    twins.append(["AAAAAAAABBBBBBBB", "BBBBBBBBAAAAAAAA"])
    twins._sort()
    assert twins.rows(["BBBBBBBBAAAAAAAA"]) == [1] and twins.rows(["AAAAAAAABBBBBBBB"]) == [0]
