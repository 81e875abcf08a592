"""psycopg plumbing shared by the PostgreSQL store's modules: the `Tx` over a cursor and
stable advisory-lock keys."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a name."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big",
                          signed=True)


SCHEMA_LOCK = lock_key("rmm-schema")
"""Held (per transaction) while the schema or its search indexes change."""


class PgTx:
    """`Tx` over a psycopg cursor: `?` placeholders become `%s`."""

    def __init__(self, cursor: Any) -> None:
        self.cur = cursor

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.cur.execute(self._sql(sql), params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.cur.execute(self._sql(sql), params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.cur.execute(self._sql(sql), params).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.cur.executemany(self._sql(sql), rows)

    def lock(self, key: str) -> None:
        self.cur.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(key),))
