"""`rmm bench speed --postgres`'s server: pgserver started with a sized buffer cache (a real
server), and a bank too small for the `auto` switch refused before any work."""

from __future__ import annotations

import pytest

from rmm_core import InvalidInputError
from rmm_core.bench.speed_pg import _shared_buffers, local_postgres, run_speed_postgres


def test_the_bench_server_starts_with_the_shared_buffers_asked_for():
    pytest.importorskip("pgserver")
    url, server = local_postgres("64MB")
    try:
        assert _shared_buffers(url) == "64MB"
    finally:
        server.cleanup()
    with pytest.raises(InvalidInputError, match="shared_buffers"):
        local_postgres("1GB; DROP TABLE x")


def test_a_bank_below_the_auto_threshold_is_refused_instead_of_waiting_forever():
    with pytest.raises(InvalidInputError, match="at least 20000"):
        run_speed_postgres(memories=500, queries=5)
