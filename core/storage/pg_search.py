"""In-database search on PostgreSQL (`rmm_core.read.dbsearch` fuses what it gives): pgvector
HNSW over the memories' own vectors and BM25 over their keys' lexemes, as a store mixin."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from .base import SignalRow
from .pg_build import LEXEMES, TEXT_SEARCH, Builder, build, search_ready
from .pg_tx import PgTx

_NEAR = ("SELECT v.memory_id, m.speakers, -({order}) FROM memory_vectors v "
         "JOIN memories m ON m.id = v.memory_id WHERE v.user_id = ? AND v.idx = 0 {where} "
         "ORDER BY {order} LIMIT ?")
_NEAR_ORDER = "v.vec::vector({dim}) <#> ?::vector({dim})"
"""The HNSW index's own expression: the planner uses the index for exactly this order."""
_LEXICAL = ("SELECT m.id, m.speakers, {score} FROM (SELECT m.id, m.speakers, m.lexemes FROM "
            f"memories m WHERE m.user_id = ? AND {LEXEMES} @@ CAST(? AS tsquery) {{where}} "
            "ORDER BY {rough} DESC LIMIT ?) m")
"""The best matches of a shortlist query by the rough score, with their exact one."""
_MISSING = ("SELECT m.id, {score}, NULL FROM memories m WHERE m.user_id = ? AND m.id = ANY(?) "
            "UNION ALL SELECT v.memory_id, NULL, -(v.vec <#> ?) FROM memory_vectors v "
            "WHERE v.memory_id = ANY(?) AND v.idx = 0")
"""The lexical score of the dense shortlist's memories and the own-vector cosine of the
lexical one's (each list computes its own signal)."""
_EVENLY = ("(SELECT COALESCE(MAX(seq), 0) AS top FROM memories WHERE user_id = ?) t CROSS JOIN "
           "generate_series(1, t.top, GREATEST(1, CEIL(t.top / ?::float))::int) g(seq) "
           "JOIN memories m ON m.user_id = ? AND m.seq = g.seq")
"""Up to a number of the user's memories spread evenly over the bank (parameters: user,
number, user)."""
_LENGTH = f"SELECT COUNT(*), AVG(length({LEXEMES})) FROM {_EVENLY}"
_FREQS = ("SELECT e.lexeme, s.f FROM unnest(tsvector_to_array(to_tsvector("
          f"'{TEXT_SEARCH}', ?))) e(lexeme) LEFT JOIN (SELECT unnest(most_common_elems::text::"
          "text[]) AS lexeme, unnest(most_common_elem_freqs) AS f FROM pg_stats WHERE "
          "schemaname = ? AND tablename = 'memories' AND attname = 'lexemes') s USING (lexeme)")
"""The query's lexemes with their share of the memories holding them (ANALYZE's estimate
for the lexemes' column; None: rarer than any it lists)."""
_COUNT = (f"SELECT {{counts}} FROM memories m WHERE m.user_id = ? AND {LEXEMES} @@ "
          "CAST(? AS tsquery)")
"""How many of the user's memories hold each of some lexemes (`{counts}`: one COUNT each)."""
LENGTH_SAMPLE = 500
"""Memories spread over a user's bank whose mean length stands for the bank's."""
K1, B = 1.5, 0.75
"""BM25's parameters, as the in-process index's (`rmm_core.read.bm25`)."""
RARE = 0.01
"""Lexemes in fewer memories than this share match the lexical shortlist on their own."""
MAX_COMMON = 8
"""Most common lexemes of a query combined in the lexical shortlist's narrower queries."""
_VECTORS = ("LEFT JOIN LATERAL (SELECT MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx = 0) AS unit, "
            "MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx > 0) AS turn FROM memory_vectors v "
            "WHERE v.memory_id = m.id) vs ON true")
_NEIGHBOUR = ("LEFT JOIN LATERAL (SELECT o.id, o.session_ids FROM memories o WHERE "
              "o.user_id = m.user_id AND o.seq {op} m.seq ORDER BY o.seq {order} LIMIT 1) {name} "
              "ON true")
_ADJACENT = " ".join(_NEIGHBOUR.format(op=op, order=order, name=name)
                     for op, order, name in (("<", "DESC", "pv"), (">", "ASC", "nx")))
_SAME_SESSION = ("CASE WHEN ({name}.session_ids::jsonb ->> 0) = (m.session_ids::jsonb ->> 0) "
                 "THEN {name}.id END")
"""A memory's previous and next memory in the user's order (`pv`, `nx`); each counts as its
neighbour when of the same session (`_SAME_SESSION`)."""


@dataclass(frozen=True)
class LexicalQuery:
    """A query's lexemes weighted as BM25 weighs them, scored in SQL: Lucene's idf over the
    user's bank, a lexeme's count in a memory from the tsvector's positions, a memory's
    distinct lexemes as its length."""

    shares: dict[str, float | None]
    """Each lexeme's share of the table's memories (PostgreSQL's statistics; None: rarer than
    any they list)."""
    idf: dict[str, float]
    avg_length: float

    def score(self) -> tuple[str, list[Any]]:
        """The BM25 score of memory `m` as an SQL expression, and its parameters."""
        if not self.idf:
            return "0.0", []
        return ("(SELECT COALESCE(SUM(w.idf * cardinality(u.positions) / (cardinality("
                f"u.positions) + {K1} * ({1 - B} + {B} * length({LEXEMES}) / ?::float8))), 0) "
                f"FROM unnest({LEXEMES}) u JOIN unnest("
                "CAST(? AS text[]), CAST(? AS float8[])) w(lexeme, idf) USING (lexeme))",
                [self.avg_length, list(self.idf), list(self.idf.values())])

    def rough(self) -> tuple[str, list[Any]]:
        """`score` counting each lexeme once: no per-row unnesting, so cheap enough to order
        every memory that matches a shortlist query."""
        if not self.idf:
            return "0.0", []
        held = " + ".join([f"CASE WHEN {LEXEMES} @@ CAST(? AS tsquery) THEN ?::float8 ELSE 0 END"]
                          * len(self.idf))
        params = [p for t, w in self.idf.items() for p in (_tsquery([t]), w)]
        return (f"(({held}) / ({K1} * ({1 - B} + {B} * length({LEXEMES}) / ?::float8) + 1))",
                [*params, self.avg_length])


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


class PostgresSearch:
    """The `DatabaseSearch` methods of `PostgresStore` (its connection, lock and reads)."""

    schema: str
    _builder: Builder

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
    def prepare_search(self, dim: int, *, wait: bool = True) -> bool:
        """Whether the search indexes (GIN over each key's lexemes, HNSW over the memories'
        own vectors of dimension `dim`) are valid; if not, build them: now (`wait`), else in
        the background while searches go on in process (`pg_build`). Writers are not blocked
        either way; one process builds at a time."""
        if not wait and self._builder.busy:
            return False
        with self._lock, self._errors():
            conn = self._live()
            if search_ready(conn, self.schema, dim):
                return True
            if wait:
                return build(conn, self.schema, dim)
        self._builder.start(dim)
        return False

    def search_size(self, user_id: str) -> int:
        """How many memories the user has."""
        return int(self._read("SELECT COUNT(*) FROM memories WHERE user_id = ?",
                              (user_id,))[0][0])

    def search_terms(self, user_id: str, terms: Sequence[str], size: int) -> LexicalQuery:
        """The query's words as the lexical signal scores them for a user of `size` memories:
        stemmed as the full-text column is, each lexeme weighted by its idf over the user's
        bank (a common one's share from PostgreSQL's statistics, a rare one's counted)."""
        with self._snapshot() as tx:
            shares = dict(tx.all(_FREQS, (" ".join(terms), self.schema)))
            rare = [t for t, f in shares.items() if not f or f < RARE]
            held = dict(shares)
            if rare:
                counts = ", ".join([f"COUNT(*) FILTER (WHERE {LEXEMES} @@ CAST(? AS tsquery))"]
                                   * len(rare))
                row = tx.one(_COUNT.format(counts=counts),
                             ([_tsquery([t]) for t in rare] + [user_id, _tsquery(rare)]))
                held.update((t, n / max(size, 1)) for t, n in zip(rare, row))
            sampled, avg = tx.one(_LENGTH, (user_id, LENGTH_SAMPLE, user_id))
        df = {t: float(f or 0.0) * size for t, f in held.items()}
        idf = {t: math.log(1 + (size - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        return LexicalQuery(shares, idf, float(avg) if sampled and avg else 1.0)

    def search_shortlist(self, user_id: str, words: LexicalQuery, query: np.ndarray,
                         filters: Mapping[str, Sequence[Any]], *, dense: int, lexical: int,
                         expected: int) -> list[SignalRow]:
        """The user's `dense` memories nearest the query by their own vector (HNSW) and
        `lexical` best by `words`, matching `filters`, each with those two signals.
        `expected` is how many memories the user has (the dense list's length, if fewer)."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        order = _NEAR_ORDER.format(dim=q.shape[0])
        score, weights = words.score()
        rough, rough_weights = words.rough()
        with self._search_tx(dense) as tx:
            near = tx.all(_NEAR.format(where=where, order=order),
                          (q, user_id, *params, q, dense))
            if len(near) < min(dense, expected) // 2:
                # the approximate index, filtered after its scan, finds too few of a user who
                # holds a small share of the table: the exact order (an expression the index
                # does not serve) finds them all, up to `dense`
                near = tx.all(_NEAR.format(where=where, order=f"({order}) + 0"),
                              (q, user_id, *params, q, dense))
            found: list[tuple] = []
            for match in lexical_tiers(words.shares, expected, lexical):
                found = tx.all(_LEXICAL.format(score=score, where=where, rough=rough),
                               (*weights, user_id, match, *params, *rough_weights, lexical))
                if len(found) >= lexical // 2:  # enough: a broader query's additions hold
                    # fewer of the query's common words than all of these
                    break
            who = {i: speakers for i, speakers, _ in [*near, *found]}
            unit = {i: float(u or 0.0) for i, _, u in near}
            rank = {i: float(r) for i, _, r in found}
            dense_only = [i for i in unit if i not in rank]
            words_only = [i for i in rank if i not in unit]
            for i, r, u in tx.all(_MISSING.format(score=score),
                                  (*weights, user_id, dense_only, q, words_only)):
                if r is not None:
                    rank[i] = float(r)
                else:
                    unit[i] = float(u or 0.0)
        return [SignalRow(i, speakers, rank.get(i, 0.0), unit.get(i, 0.0))
                for i, speakers in who.items()]

    def search_sample(self, user_id: str, words: LexicalQuery, query: np.ndarray,
                      size: int) -> np.ndarray:
        """Lexical, own-vector and best-turn signals (columns) of up to `size` of the user's
        memories spread evenly over the bank: what the signals are z-scored with."""
        q = np.asarray(query, dtype=np.float32)
        score, weights = words.score()
        rows = self._read(f"SELECT {score}, vs.unit, vs.turn FROM {_EVENLY} {_VECTORS}",
                          (*weights, user_id, size, user_id, q, q))
        return np.asarray([_signals(r[0], r[1], r[2]) for r in rows],
                          dtype=np.float32).reshape(-1, 3)

    def search_pool(self, user_id: str, ids: Sequence[str], words: LexicalQuery,
                    query: np.ndarray, filters: Mapping[str, Sequence[Any]]) -> list[SignalRow]:
        """Every signal of the memories `ids` and of their same-session neighbours that match
        `filters`; the rows of `ids` come with their neighbours' ids (None: none, or of
        another session), the neighbours' rows without."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        score, weights = words.score()
        rows = self._read(
            f"WITH p AS (SELECT m.id, {_SAME_SESSION.format(name='pv')} AS prev, "
            f"{_SAME_SESSION.format(name='nx')} AS next FROM memories m {_ADJACENT} "
            "WHERE m.user_id = ? "
            "AND m.id = ANY(?)), "
            "extra AS (SELECT DISTINCT m.id FROM p JOIN memories m ON m.id IN (p.prev, p.next) "
            f"WHERE m.id <> ALL(?) {where}), "
            "ids AS (SELECT id, prev, next FROM p UNION ALL SELECT id, NULL, NULL FROM extra) "
            f"SELECT m.id, m.speakers, {score}, vs.unit, vs.turn, ids.prev, "
            f"ids.next FROM ids JOIN memories m ON m.id = ids.id {_VECTORS}",
            (user_id, list(ids), list(ids), *params, *weights, q, q))
        return [SignalRow(r[0], r[1], *_signals(r[2], r[3], r[4]), r[5], r[6]) for r in rows]

    @contextmanager
    def _search_tx(self, depth: int) -> Iterator[PgTx]:
        """A read transaction whose HNSW scans look at `depth` rows (pgvector's `ef_search`,
        at most 1000)."""
        with self._lock, self._errors():
            conn = self._live()
            with conn.transaction(), conn.cursor(binary=True) as cur:
                cur.execute(f"SET LOCAL hnsw.ef_search = {min(max(int(depth), 40), 1000)}")
                # the lexical shortlist's narrow queries are what the GIN index is for; the
                # planner's estimates for them often choose a slower scan of every row
                cur.execute("SET LOCAL enable_seqscan = off")
                yield PgTx(cur)
