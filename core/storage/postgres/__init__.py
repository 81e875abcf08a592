"""The server store: PostgreSQL with pgvector (`store`), its versioned schema (`schema`),
in-database search (`search`, `build`, `pair`) and psycopg plumbing (`tx`)."""

from __future__ import annotations

from .store import PostgresStore

__all__ = ["PostgresStore"]
