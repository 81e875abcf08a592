"""The server store: PostgreSQL with pgvector, shared by many application processes.

Tables live in their own schema (`rmm` unless the URL says `?rmm_schema=name`), created and
migrated by the library under an advisory lock. Writes of one user are serialised by an
advisory transaction lock, so several servers can append, reflect and forget at once.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import combinations
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from ..errors import InvalidInputError, MissingDependencyError, StorageError
from .base import SCHEMA_VERSION, SignalRow
from .redact import redact
from .sql import APP_ID, SQLStore, read_schema_version, rename_legacy_user_state

MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY,
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT, last_activity DOUBLE PRECISION NOT NULL, n_turns INTEGER NOT NULL,
    reflected INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (user_id, session_id));
CREATE INDEX sessions_pending ON sessions (rowid) WHERE reflected < n_turns;
CREATE TABLE turns (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL, speaker TEXT NOT NULL, text TEXT NOT NULL, ts TEXT,
    PRIMARY KEY (user_id, turn_id));
CREATE INDEX turns_by_session ON turns (user_id, session_id, seq);
CREATE TABLE memories (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, text TEXT NOT NULL, key TEXT NOT NULL,
    refs TEXT NOT NULL, speakers TEXT NOT NULL, session_ids TEXT NOT NULL,
    occurred_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    attrs TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX memories_by_user ON memories (user_id, seq);
CREATE TABLE memory_vectors (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, idx INTEGER NOT NULL, vec vector NOT NULL,
    PRIMARY KEY (memory_id, idx));
CREATE INDEX vectors_by_user ON memory_vectors (user_id);
CREATE TABLE memory_versions (
    memory_id TEXT NOT NULL, user_id TEXT NOT NULL, version INTEGER NOT NULL,
    text TEXT NOT NULL, refs TEXT NOT NULL, reason TEXT NOT NULL, at TEXT NOT NULL,
    source TEXT, PRIMARY KEY (memory_id, version));
CREATE INDEX versions_by_user ON memory_versions (user_id);
CREATE TABLE user_state (user_id TEXT PRIMARY KEY, generation BIGINT NOT NULL);
CREATE TABLE named_state (name TEXT PRIMARY KEY, version INTEGER NOT NULL, blob BYTEA NOT NULL);
CREATE TABLE feedback_log (
    result_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX feedback_by_user ON feedback_log (user_id);
CREATE TABLE llm_usage (
    user_id TEXT NOT NULL, session_id TEXT NOT NULL, calls BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL,
    failures BIGINT NOT NULL, PRIMARY KEY (user_id, session_id));
""",
    2: """
CREATE TABLE state_deltas (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL,
    blob BYTEA NOT NULL);
CREATE INDEX state_deltas_by_name ON state_deltas (name, seq);
""",
    3: "",  # data only: per-user state renamed (`rename_legacy_user_state`)
    4: """
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS reflect_failures INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS reflect_error TEXT,
    ADD COLUMN IF NOT EXISTS reflect_retry_at DOUBLE PRECISION;
""",
    5: """
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
""",
    6: """
CREATE TABLE IF NOT EXISTS memory_changes (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, user_id TEXT NOT NULL,
    generation BIGINT NOT NULL, memory_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memory_changes_by_user ON memory_changes (user_id, seq);
CREATE INDEX IF NOT EXISTS memory_changes_by_generation ON memory_changes (user_id, generation);
""",
}
"""Schema version → DDL that brings the previous version to it; applied in order on open."""

assert max(MIGRATIONS) == SCHEMA_VERSION

# PostgreSQL text cannot hold NUL: NUL and the escape character itself are escaped
_ESC = "\ue000"
_ESCAPES = {_ESC: _ESC + "1", "\x00": _ESC + "0"}
_UNESCAPE = re.compile(_ESC + "(.)", re.S)
_UNESCAPES = {"1": _ESC, "0": "\x00"}


TEXT_SEARCH = "english"
"""PostgreSQL text search configuration of the keys' full-text column (stems English)."""

_TSQUERY = f"to_tsquery('{TEXT_SEARCH}', ?)"
_UNIT = ("(SELECT -(v.vec <#> ?) FROM memory_vectors v WHERE v.memory_id = m.id "
         "AND v.idx = 0)")
_NEAR = ("SELECT v.memory_id FROM memory_vectors v "
         "JOIN memories m ON m.id = v.memory_id WHERE v.user_id = ? AND v.idx = 0 {where} "
         "ORDER BY {order} LIMIT ?")
_NEAR_ORDER = "v.vec::vector({dim}) <#> ?::vector({dim})"
"""The HNSW index's own expression: the planner uses the index for exactly this order."""
_LEXICAL = ("SELECT m.id FROM memories m WHERE m.user_id = ? AND m.tsv @@ CAST(? AS tsquery) "
            "{where} ORDER BY ts_rank(m.tsv, " + _TSQUERY + ") DESC LIMIT ?")
_FREQS = ("SELECT e.lexeme, s.f FROM unnest(tsvector_to_array(to_tsvector("
          f"'{TEXT_SEARCH}', ?))) e(lexeme) LEFT JOIN (SELECT unnest(most_common_elems::text::"
          "text[]) AS lexeme, unnest(most_common_elem_freqs) AS f FROM pg_stats WHERE "
          "schemaname = ? AND tablename = 'memories' AND attname = 'tsv') s USING (lexeme)")
"""The query's lexemes with their share of the memories holding them (ANALYZE's estimate)."""
RARE = 0.01
"""Lexemes in fewer memories than this share match the lexical shortlist on their own."""
MAX_COMMON = 8
"""Most common lexemes of a query combined in the lexical shortlist's narrower queries."""
_VECTORS = ("LEFT JOIN LATERAL (SELECT MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx = 0) AS unit, "
            "MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx > 0) AS turn FROM memory_vectors v "
            "WHERE v.memory_id = m.id) vs ON true")
_NEIGHBOUR = (
    "(SELECT n.id FROM memories n WHERE n.user_id = m.user_id AND "
    "(n.session_ids::jsonb ->> 0) = (m.session_ids::jsonb ->> 0) AND n.seq = "
    "(SELECT {pick}(o.seq) FROM memories o WHERE o.user_id = m.user_id AND o.seq {op} m.seq))")
_ADJACENT = (f"{_NEIGHBOUR.format(pick='MAX', op='<')} AS prev, "
             f"{_NEIGHBOUR.format(pick='MIN', op='>')} AS next")
"""A memory's previous and next memory (in the user's order) when of the same session."""


def _tsquery(terms: Sequence[str], op: str = " | ") -> str:
    """Words as one tsquery, OR (or `op`) between them, each quoted."""
    return op.join("'" + t.replace("'", "''") + "'" for t in terms)


def lexical_tiers(freqs: Mapping[str, float | None], bank: int, want: int) -> list[str]:
    """Full-text queries (over stemmed lexemes) the lexical shortlist tries in turn, narrowest
    first: any rare lexeme, or `k` of the common ones together, from the largest `k` expected
    to match `want` of a `bank` down to 1. `freqs` is each lexeme's share of the table's
    rows (PostgreSQL's statistics; None: rarer than any it lists). Ranking every memory that
    holds one common word would cost more than the rest of the search."""
    rare = [t for t, f in freqs.items() if not f or f < RARE]
    common = sorted((t for t, f in freqs.items() if f and f >= RARE), key=freqs.get)
    if not common:
        return [_tsquery(rare)] if rare else []
    kept = common[:MAX_COMMON]
    exactly = np.zeros(len(kept) + 1)  # P(a row holds exactly i of them), independently
    exactly[0] = 1.0
    for f in (freqs[t] for t in kept):
        exactly[1:] = exactly[1:] * (1 - f) + exactly[:-1] * f
        exactly[0] *= 1 - f
    at_least = np.cumsum(exactly[::-1])[::-1]
    start = max([k for k in range(1, len(kept) + 1) if bank * at_least[k] >= want] or [1])
    out = []
    for k in range(start, 1, -1):
        out.append(" | ".join([*([_tsquery(rare)] if rare else []),
                               *(f"({_tsquery(c, ' & ')})" for c in combinations(kept, k))]))
    return [*out, _tsquery([*rare, *common])]


def _signals(lexical: float, unit: float | None, turn: float | None
             ) -> tuple[float, float, float]:
    """A memory's three signals; one without vectors scores 0, one without turn vectors
    takes its own vector's cosine as its best turn (as the in-process index does)."""
    unit = float(unit or 0.0)
    return float(lexical), unit, unit if turn is None else float(turn)


def _filter_sql(filters: Mapping[str, Sequence[Any]]) -> tuple[str, list[Any]]:
    """Metadata filters as SQL over `m.metadata` (each key: any of its values; jsonb equality
    tells `true` from `1` as `rmm_core.metadata.matches` does) and their parameters."""
    sql, params = "", []
    for key, values in filters.items():
        sql += " AND (m.metadata::jsonb -> ?) = ANY(CAST(? AS jsonb[]))"
        params += [key, [json.dumps(v) for v in values]]
    return sql, params


def _lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for a name."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big",
                          signed=True)


def _split_url(url: str) -> tuple[str, str]:
    """Strip our own `rmm_schema` parameter (libpq would reject it); normalise the scheme."""
    try:
        parts = urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket: postgresql://[::1
        raise InvalidInputError(f"bad PostgreSQL URL {redact(url, url)}: {exc}") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "rmm_schema"), "rmm")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise StorageError(f"rmm_schema must be a lower-case SQL identifier, got {schema!r}")
    kept = urlencode([(k, v) for k, v in query if k != "rmm_schema"])
    return urlunsplit(parts._replace(query=kept)), schema


class _Tx:
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
        self.cur.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(key),))


class PostgresStore(SQLStore):
    """One psycopg connection per store, guarded by a lock; reconnects after a broken link."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        try:
            import pgvector.psycopg  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError(exc.name or "psycopg", "postgres") from exc
        self.url = url
        self._dsn, self.schema = _split_url(url)
        self._timeout = connect_timeout
        self._lock = threading.RLock()
        self._conn: Any = None
        self._vector_oid = 0
        with self._lock, self._errors():
            self._connect(create=True)

    # connection ---------------------------------------------------------------------------
    def _connect(self, *, create: bool = False) -> None:
        import psycopg

        try:
            conn = psycopg.connect(self._dsn, autocommit=True,
                                   connect_timeout=max(1, int(self._timeout)))
        except psycopg.Error as exc:
            raise self._failure("cannot reach PostgreSQL at", exc)  # noqa: B904 - it sets the cause
        self._conn = conn
        if create:
            self._migrate()
        conn.execute(f"SET search_path TO {self.schema}, public")
        self._register_vector()

    def _register_vector(self) -> None:
        from pgvector.psycopg import register_vector
        from psycopg.adapt import Loader
        from psycopg.pq import Format

        register_vector(self._conn)
        oid = self._conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]

        class RawVector(Loader):  # the wire format as is; `_vec_stack` decodes it in bulk
            format = Format.BINARY

            def load(self, data: Any) -> bytes:
                return bytes(data)

        self._conn.adapters.register_loader(oid, RawVector)
        self._vector_oid = oid

    def _migrate(self) -> None:
        """Create or upgrade the schema, one process at a time (advisory lock)."""
        conn = self._conn
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("rmm-schema"),))
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except Exception as exc:
                raise StorageError(redact(
                    "the pgvector extension is not available on this PostgreSQL server "
                    f"(CREATE EXTENSION vector failed: {str(exc).strip()})", self.url)) from exc
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            conn.execute(f"SET LOCAL search_path TO {self.schema}, public")
            tables = {r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (self.schema,))}
            if tables and "meta" not in tables:
                raise StorageError(f"schema {self.schema!r} holds another application's tables; "
                                   "choose another with ?rmm_schema=name")
            version = 0
            if "meta" in tables:
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                if meta.get("app") != APP_ID:
                    raise StorageError(f"schema {self.schema!r} belongs to another application "
                                       f"({meta.get('app')})")
                version = read_schema_version(meta.get("schema_version"),
                                              f"schema {self.schema!r}")
            if version > SCHEMA_VERSION:
                raise StorageError(f"schema {self.schema!r} has version {version}; this "
                                   f"rmm_core knows up to {SCHEMA_VERSION}: upgrade the package")
            for step in range(version + 1, SCHEMA_VERSION + 1):
                if MIGRATIONS[step]:
                    conn.execute(MIGRATIONS[step])
            if 0 < version < 3:
                rename_legacy_user_state(_Tx(conn))
            if version == 0:
                conn.execute("INSERT INTO meta VALUES ('app', %s)", (APP_ID,))
            conn.execute("INSERT INTO meta VALUES ('schema_version', %s) ON CONFLICT (key) "
                         "DO UPDATE SET value = excluded.value", (str(SCHEMA_VERSION),))

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Driver failures surface as `StorageError`; a broken link is reopened next time."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise self._failure("PostgreSQL at", exc)  # noqa: B904 - it sets the cause

    def _failure(self, prefix: str, exc: Exception) -> StorageError:
        """A driver failure as `StorageError`, passwords redacted (libpq echoes a malformed
        conninfo token); the driver's exception is its cause only when its text holds none."""
        text = str(exc).strip()
        clean = redact(text, self.url)
        error = StorageError(f"{prefix} {redact(self.url, self.url)}: {clean}")
        error.__cause__ = exc if clean == text else None
        error.__suppress_context__ = True
        return error

    def _live(self) -> Any:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._connect()
        return self._conn

    # backend interface ----------------------------------------------------------------------
    @contextmanager
    def _tx(self, lock: str) -> Iterator[_Tx]:
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                tx = _Tx(cur)
                tx.lock(lock)
                yield tx

    @contextmanager
    def _snapshot(self) -> Iterator[_Tx]:
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield _Tx(cur)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, self._errors():
            with self._live().cursor(binary=True) as cur:
                return _Tx(cur).all(sql, params)

    _VECTOR_DIM_SQL = "vector_dims(vec)"

    def _vec_param(self, vector: np.ndarray) -> np.ndarray:
        return vector

    def _vec_stack(self, values: list[bytes]) -> np.ndarray:
        # binary vector: uint16 dim, uint16 unused, then big-endian float32s
        dim = int.from_bytes(values[0][:2], "big")
        raw = b"".join(v[4:] for v in values)
        return np.frombuffer(raw, dtype=">f4").astype(np.float32).reshape(len(values), dim)

    def _enc(self, text: str) -> str:
        if "\x00" in text or _ESC in text:
            return text.replace(_ESC, _ESCAPES[_ESC]).replace("\x00", _ESCAPES["\x00"])
        return text

    def _dec(self, text: str) -> str:
        if _ESC in text:
            return _UNESCAPE.sub(lambda m: _UNESCAPES[m.group(1)], text)
        return text

    # in-database vector search ----------------------------------------------------------------
    def vector_search(self, user_id: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top-`k` memories by cosine of their best vector, computed by pgvector in SQL.

        An exact scan of the user's vectors (the user filter makes an approximate index
        unreliable); searches use `rmm_core.read.dbsearch` or the in-process index instead.
        """
        q = np.asarray(query, dtype=np.float32)
        return [(mid, float(sim)) for mid, sim in self._read(
            "SELECT memory_id, MAX(-(vec <#> ?)) AS sim FROM memory_vectors WHERE user_id = ? "
            "GROUP BY memory_id ORDER BY sim DESC LIMIT ?", (q, user_id, int(k)))]

    # in-database search (`rmm_core.read.dbsearch`) ------------------------------------------------
    def prepare_search(self, dim: int) -> None:
        """Create what in-database search reads, if missing: a full-text column over each key
        (generated, so every write keeps it) with a GIN index, and an HNSW index over the
        memories' own vectors (row 0) of dimension `dim`. Idempotent; one process at a time."""
        index = f"memory_vectors_hnsw_{int(dim)}"
        with self._lock, self._errors():
            conn = self._live()
            present = conn.execute("SELECT to_regclass(%s), to_regclass(%s)",
                                   (f"{self.schema}.{index}", f"{self.schema}.memories_tsv")
                                   ).fetchone()
            if all(present):
                return
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("rmm-schema"),))
                conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
                conn.execute(
                    "ALTER TABLE memories ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED "
                    f"ALWAYS AS (to_tsvector('{TEXT_SEARCH}', key)) STORED")
                conn.execute("CREATE INDEX IF NOT EXISTS memories_tsv ON memories "
                             "USING gin (tsv)")
                conn.execute(f"CREATE INDEX IF NOT EXISTS {index} ON memory_vectors USING hnsw "
                             f"((vec::vector({int(dim)})) vector_ip_ops) WHERE idx = 0")

    def search_size(self, user_id: str) -> int:
        """How many memories the user has."""
        return int(self._read("SELECT COUNT(*) FROM memories WHERE user_id = ?",
                              (user_id,))[0][0])

    def search_shortlist(self, user_id: str, terms: Sequence[str], query: np.ndarray,
                         filters: Mapping[str, Sequence[Any]], *, dense: int, lexical: int,
                         expected: int) -> list[SignalRow]:
        """The user's `dense` memories nearest the query by their own vector (HNSW) and
        `lexical` best by full-text rank, matching `filters`, each with those two signals.
        `expected` is how many memories the user has (the dense list's length, if fewer)."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        order = _NEAR_ORDER.format(dim=q.shape[0])
        with self._search_tx(dense) as tx:
            near = tx.all(_NEAR.format(where=where, order=order), (user_id, *params, q, dense))
            if len(near) < min(dense, expected) // 2:
                # the approximate index, filtered after its scan, finds too few of a user who
                # holds a small share of the table: the exact order (an expression the index
                # does not serve) finds them all, up to `dense`
                near = tx.all(_NEAR.format(where=where, order=f"({order}) + 0"),
                              (user_id, *params, q, dense))
            freqs = dict(tx.all(_FREQS, (" ".join(terms), self.schema)))
            words: list[tuple] = []
            for match in lexical_tiers(freqs, expected, lexical):
                words = tx.all(_LEXICAL.format(where=where),
                               (user_id, match, *params, _tsquery(terms), lexical))
                if len(words) >= lexical:
                    break
            ids = list(dict.fromkeys(r[0] for r in [*near, *words]))
            rows = tx.all(f"SELECT m.id, m.speakers, ts_rank(m.tsv, {_TSQUERY}), {_UNIT} "
                          "FROM memories m WHERE m.user_id = ? AND m.id = ANY(?)",
                          (_tsquery(terms), q, user_id, ids))
        return [SignalRow(r[0], r[1], float(r[2]), float(r[3] or 0.0)) for r in rows]

    def search_sample(self, user_id: str, terms: Sequence[str], query: np.ndarray,
                      size: int) -> np.ndarray:
        """Lexical, own-vector and best-turn signals (columns) of up to `size` of the user's
        memories spread evenly over the bank: what the signals are z-scored with."""
        q = np.asarray(query, dtype=np.float32)
        rows = self._read(
            f"WITH q AS (SELECT {_TSQUERY} AS q), t AS (SELECT COALESCE(MAX(seq), 0) AS top "
            "FROM memories WHERE user_id = ?) SELECT ts_rank(m.tsv, q.q), vs.unit, vs.turn "
            "FROM t CROSS JOIN generate_series(1, t.top, GREATEST(1, CEIL(t.top / ?::float)) "
            f"::int) g(seq) JOIN memories m ON m.user_id = ? AND m.seq = g.seq CROSS JOIN q "
            f"{_VECTORS}", (_tsquery(terms), user_id, size, user_id, q, q))
        return np.asarray([_signals(r[0], r[1], r[2]) for r in rows],
                          dtype=np.float32).reshape(-1, 3)

    def search_pool(self, user_id: str, ids: Sequence[str], terms: Sequence[str],
                    query: np.ndarray, filters: Mapping[str, Sequence[Any]]) -> list[SignalRow]:
        """Every signal of the memories `ids` and of their same-session neighbours that match
        `filters`; the rows of `ids` come with their neighbours' ids (None: none, or of
        another session), the neighbours' rows without."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        rows = self._read(
            f"WITH q AS (SELECT {_TSQUERY} AS q), "
            f"p AS (SELECT m.id, {_ADJACENT} FROM memories m WHERE m.user_id = ? "
            "AND m.id = ANY(?)), "
            "extra AS (SELECT DISTINCT m.id FROM p JOIN memories m ON m.id IN (p.prev, p.next) "
            f"WHERE m.id <> ALL(?) {where}), "
            "ids AS (SELECT id, prev, next FROM p UNION ALL SELECT id, NULL, NULL FROM extra) "
            "SELECT m.id, m.speakers, ts_rank(m.tsv, q.q), vs.unit, vs.turn, ids.prev, "
            f"ids.next FROM ids JOIN memories m ON m.id = ids.id CROSS JOIN q {_VECTORS}",
            (_tsquery(terms), user_id, list(ids), list(ids), *params, q, q))
        return [SignalRow(r[0], r[1], *_signals(r[2], r[3], r[4]), r[5], r[6]) for r in rows]

    @contextmanager
    def _search_tx(self, depth: int) -> Iterator[_Tx]:
        """A read transaction whose HNSW scans look at `depth` rows (pgvector's `ef_search`,
        at most 1000)."""
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute(f"SET LOCAL hnsw.ef_search = {min(max(int(depth), 40), 1000)}")
                # the lexical shortlist's narrow queries are what the GIN index is for; the
                # planner's estimates for them often choose a slower scan of every row
                cur.execute("SET LOCAL enable_seqscan = off")
                yield _Tx(cur)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

