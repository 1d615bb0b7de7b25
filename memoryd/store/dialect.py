"""Where SQLite and PostgreSQL differ, answered inside memoryd/store/: the few statements the two
engines cannot share branch on `is_postgres(con)` (store/pg/conn.py: PgConnection), and
`query_tokenizers` gives the stemmer of either engine's keyword index. Imports nothing from
psycopg, so the default SQLite install never loads it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import apsw

from memoryd.store import tokenizer
from memoryd.store.protocol import Connection

POSTGRES = "postgres"
# the tokenizer of entries_fts's English words (store/tokenizer.py wraps it for CJK)
FTS5_TOKENIZER = (tokenizer.BASE[0], list(tokenizer.BASE[1:]))


def is_postgres(con: Any) -> bool:
    return getattr(con, "dialect", None) == POSTGRES


class Tokenize(Protocol):
    """An FTS5 tokenizer as apsw calls it: utf-8 bytes in; stems out, with byte offsets
    ((start, end, stem, ...)) when include_offsets."""

    def __call__(
        self,
        utf8: bytes,
        flags: int,
        locale: str | None,
        /,
        *,
        include_offsets: bool = True,
        include_colocated: bool = True,
    ) -> Iterable[Any]: ...


def query_tokenizers(con: Connection, *, cjk: bool) -> tuple[Tokenize, Tokenize | None]:
    """The tokenizer the keyword index stems words with, to stem a query's words the same
    way, and with cjk=True also the one that splits CJK runs into bigrams as the index does."""
    if isinstance(con, apsw.Connection):
        tok = con.fts5_tokenizer(*FTS5_TOKENIZER)
        bigrams = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.ARGS)) if cjk else None
        return tok, bigrams
    from memoryd.store.pg.fts import Stemmer  # the server's stemmer, the one its index uses

    return Stemmer(con), Stemmer(con, cjk=True)
