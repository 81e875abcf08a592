"""Every backend's store is each narrow view the stages ask for (`storage.protocols`), on a
real SQLite file and a real PostgreSQL."""

import pytest

from rmm_core.storage import open_store
from rmm_core.storage.protocols import (
    MemoryBank,
    NamedState,
    ReflectionLog,
    TurnLog,
    UsageLog,
    UserState,
)

pytestmark = pytest.mark.backends

VIEWS = (TurnLog, ReflectionLog, MemoryBank, NamedState, UserState, UsageLog)


def test_a_store_is_every_view(store_target):
    store = open_store(store_target)
    try:
        assert [view.__name__ for view in VIEWS if not isinstance(store, view)] == []
    finally:
        store.close()
