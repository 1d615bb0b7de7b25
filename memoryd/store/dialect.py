"""Which engine a connection talks to: the few statements SQLite and PostgreSQL cannot share
branch on `is_postgres(con)` (store/pg/conn.py: PgConnection). Imports nothing from psycopg, so
the default SQLite install never loads it."""

from __future__ import annotations

from typing import Any

POSTGRES = "postgres"


def is_postgres(con: Any) -> bool:
    return getattr(con, "dialect", None) == POSTGRES
