"""The store logic both SQL backends share, one part per job; each backend supplies
connection, locks and types (`backend.SQLBackend`)."""

from __future__ import annotations

from ..base import Store
from .backend import APP_ID, Tx, read_schema_version, rename_legacy_user_state
from .state import NamedStateSQL
from .turns import TurnLogSQL
from .usage import UsageSQL
from .users import USER_TABLES, UserDataSQL

__all__ = ["APP_ID", "USER_TABLES", "SQLStore", "Tx", "read_schema_version",
           "rename_legacy_user_state"]


class SQLStore(TurnLogSQL, UserDataSQL, NamedStateSQL, UsageSQL, Store):
    """Every `Store` method written once over a small backend interface.

    Writes run in `_tx(lock)`: the backend serialises transactions that share a lock key
    (SQLite: one writer at a time; PostgreSQL: an advisory lock per user or state name),
    which is what makes read-then-write steps such as sequence numbers safe.
    """
