"""Test stores per backend: a SQLite file, or a fresh schema on a PostgreSQL with pgvector.

PostgreSQL comes from `RMM_TEST_POSTGRES_URL` when set, else from `pgserver` (a PyPI
package bundling PostgreSQL 16 + pgvector), started once per test session. As root,
pgserver runs the server as a system user `pgserver` that it creates itself.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

BACKENDS = ("sqlite", "postgres")
_server = None  # the pgserver handle: it stops and deletes the server when Python exits


def postgres_url() -> str:
    """The base URL of a reachable test server, or a pytest skip saying why there is none."""
    global _server
    url = os.environ.get("RMM_TEST_POSTGRES_URL")
    if url:
        return url
    try:
        import pgserver
    except ImportError:
        pytest.skip("PostgreSQL tests need RMM_TEST_POSTGRES_URL or the `pgserver` package "
                    "(pip install -e '.[test]')")
    if _server is None:
        _server = pgserver.get_server(Path(tempfile.mkdtemp(prefix="rmm-pg-")),
                                      cleanup_mode="delete")
    return _server.get_uri()


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}rmm_schema={schema}"


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def fresh_target(backend: str, tmp_path: Path) -> Iterator[str]:
    """Yield a store target nobody else uses; remove it afterwards."""
    if backend == "sqlite":
        yield str(tmp_path / "memory.sqlite")
        return
    base = postgres_url()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield with_schema(base, schema)
    drop_schema(base, schema)


def parametrize_backends(metafunc: pytest.Metafunc) -> None:
    """Run a test on every backend when it uses `store_target` and is marked `backends`."""
    own = any("store_target" in m.args[0] for m in metafunc.definition.iter_markers(
        "parametrize"))
    if ("store_target" in metafunc.fixturenames and not own
            and metafunc.definition.get_closest_marker("backends")):
        metafunc.parametrize("store_target", BACKENDS, indirect=True)


def split_target(target: str) -> tuple[str, str]:
    """A PostgreSQL test target → (server URL, schema) for reading the database directly."""
    base, schema = target.rsplit("rmm_schema=", 1)
    return base.rstrip("?&"), schema


def run_sql(target: str, statements: list[str]) -> None:
    """Run raw SQL on a store target (a SQLite path or a PostgreSQL URL with its schema):
    tests use it to put a store back into an older schema."""
    if target.startswith("postgresql://"):
        import psycopg

        base, schema = split_target(target)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {schema}")
            for statement in statements:
                conn.execute(statement)
    else:
        import sqlite3

        with sqlite3.connect(target) as db:
            for statement in statements:
                db.execute(statement)
