"""In-database search on PostgreSQL (`rmm_core.read.dbsearch` fuses what it gives): pgvector
HNSW over the memories' own vectors and BM25 over their keys' lexemes, as a store mixin."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from ..base import SignalRow
from .build import LEXEMES, TEXT_SEARCH, Builder, build, search_ready
from .pair import SearchPair
from .tx import PgTx

_NEAR = ("SELECT m.id, m.speakers, {score}, m.unit, t.turn FROM (SELECT v.memory_id AS id, "
         "m.speakers, m.lexemes, -({order}) AS unit FROM memory_vectors v JOIN memories m ON "
         "m.id = v.memory_id WHERE v.user_id = ? AND v.idx = 0 {where} ORDER BY {order} LIMIT ?) "
         "m LEFT JOIN LATERAL (SELECT MAX(-(t.vec <#> ?)) AS turn FROM memory_vectors t WHERE "
         "t.memory_id = m.id AND t.idx > 0) t ON true")
"""The nearest memories by their own vector, with their lexical score and best turn's cosine
(the turn rows sit on the heap pages the own vector's does)."""
_NEAR_ORDER = "v.vec::vector({dim}) <#> ?::vector({dim})"
"""The HNSW index's own expression: the planner uses the index for exactly this order."""
_VECTORS = ("LEFT JOIN LATERAL (SELECT MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx = 0) AS unit, "
            "MAX(-(v.vec <#> ?)) FILTER (WHERE v.idx > 0) AS turn FROM memory_vectors v "
            "WHERE v.memory_id = m.id) vs ON true")
"""A memory's own-vector and best-turn cosines (parameters: the query twice)."""
_LEXICAL = ("SELECT m.id, m.speakers, {score}, vs.unit, vs.turn FROM (SELECT m.id, m.speakers, "
            f"m.lexemes FROM memories m WHERE m.user_id = ? AND {LEXEMES} @@ CAST(? AS tsquery) "
            f"{{where}} ORDER BY {{rough}} DESC LIMIT ?) m {_VECTORS}")
"""The best matches of a shortlist query by the rough score, with their exact one and their
own-vector and best-turn cosines."""
_EVENLY = ("(SELECT COALESCE(MAX(seq), 0) AS top FROM memories WHERE user_id = ?) t CROSS JOIN "
           "generate_series(1, t.top, GREATEST(1, CEIL(t.top / ?::float))::int) g(seq) "
           "JOIN memories m ON m.user_id = ? AND m.seq = g.seq")
"""Up to a number of the user's memories spread evenly over the bank (parameters: user,
number, user)."""
_SAMPLE = ("SELECT s.seq, s.length, s.tf, v.idx, v.vec FROM (SELECT m.id, m.seq, "
           f"length({LEXEMES}) AS length, (SELECT json_object_agg(u.lexeme, cardinality("
           f"u.positions)) FROM unnest({LEXEMES}) u) AS tf FROM {_EVENLY}) s LEFT JOIN "
           "memory_vectors v ON v.memory_id = s.id ORDER BY s.seq, v.idx")
"""Each sampled memory's distinct lexemes, each lexeme's count and every vector, one row a
vector."""
_TERMS = ("SELECT e.lexeme, s.f, CASE WHEN s.f IS NULL OR s.f < {rare} THEN (SELECT COUNT(*) "
          f"FROM memories m WHERE m.user_id = ? AND {LEXEMES} @@ CAST(chr(39) || replace("
          "e.lexeme, chr(39), chr(39) || chr(39)) || chr(39) AS tsquery)) END FROM unnest("
          f"tsvector_to_array(to_tsvector('{TEXT_SEARCH}', ?))) e(lexeme) LEFT JOIN (SELECT "
          "unnest(most_common_elems::text::text[]) AS lexeme, unnest(most_common_elem_freqs) AS f "
          "FROM pg_stats WHERE schemaname = ? AND tablename = 'memories' AND attname = "
          "'lexemes') s USING (lexeme)")
"""The query's lexemes with their share of the memories holding them (ANALYZE's estimate
for the lexemes' column; None: rarer than any it lists) and, for a rare one (`{rare}`), how
many of the user's memories hold it."""
K1, B = 1.5, 0.75
"""BM25's parameters, as the in-process index's (`rmm_core.read.bm25`)."""
RARE = 0.01
"""Lexemes in fewer memories than this share match the lexical shortlist on their own."""
MAX_COMMON = 8
"""Most common lexemes of a query combined in the lexical shortlist's narrower queries."""
_SESSION = "({alias}.session_ids::jsonb ->> 0)"
"""A memory's (first) session."""
_FALLBACK = ("LEFT JOIN LATERAL (SELECT o.id, {session} AS session FROM memories o WHERE "
             "{exact}.id IS NULL AND o.user_id = ? AND o.seq {op} p.seq ORDER BY o.seq {order} "
             "LIMIT 1) {name} ON true")
_LINKS = ("p AS (SELECT m.id, m.seq, {own} AS session FROM memories m WHERE m.user_id = ? "
          "AND m.id = ANY(?)), "
          "adjacent AS (SELECT o.id, o.seq, {session} AS session FROM memories o WHERE "
          "o.user_id = ? AND o.seq = ANY(ARRAY(SELECT seq - 1 FROM p UNION SELECT seq + 1 FROM "
          "p))), "
          "links AS (SELECT p.id, CASE WHEN COALESCE(pe.session, pf.session) = p.session THEN "
          "COALESCE(pe.id, pf.id) END AS prev, CASE WHEN COALESCE(ne.session, nf.session) = "
          "p.session THEN COALESCE(ne.id, nf.id) END AS next FROM p "
          "LEFT JOIN adjacent pe ON pe.seq = p.seq - 1 {before} "
          "LEFT JOIN adjacent ne ON ne.seq = p.seq + 1 {after})").format(
    own=_SESSION.format(alias="m"), session=_SESSION.format(alias="o"), **{
        name: _FALLBACK.format(session=_SESSION.format(alias="o"), exact=exact, op=op,
                               order=order, name=alias)
        for name, exact, op, order, alias in (("before", "pe", "<", "DESC", "pf"),
                                              ("after", "ne", ">", "ASC", "nf"))})
"""Each of some memories (parameters: user, ids, user, user, user) with its previous and next
memory in the user's order (`seq`) when of the same session (else None): looked up in one
index scan where its neighbours' `seq` is its own ± 1, one by one where a deleted memory
left a gap."""


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


@dataclass(frozen=True)
class Sample:
    """Memories spread evenly over a user's bank, as much of them as their signals need:
    what a search z-scores its signals with, computed here instead of in SQL, so that a
    process keeps it per bank generation (`rmm_core.read.dbsearch`) and a search costs the
    server nothing for it (2.3 MB for 500 memories of three 384-d vectors; kept in float32:
    converting float16 ones cost each search a millisecond)."""

    units: np.ndarray
    """(n, dim) each memory's own vector (zeros: none)."""
    turns: np.ndarray
    """(t, dim) their turn vectors."""
    owner: np.ndarray
    """(t,) the memory of each turn vector."""
    counts: list[dict[str, int]]
    """Each memory's lexemes with their counts."""
    lengths: np.ndarray
    """(n,) each memory's distinct lexemes."""

    @property
    def nbytes(self) -> int:
        """Roughly what the sample holds in memory (its arrays and lexeme counts)."""
        return (self.units.nbytes + self.turns.nbytes + self.owner.nbytes + self.lengths.nbytes
                + sum(100 * len(c) for c in self.counts))

    @property
    def avg_length(self) -> float:
        """The bank's mean length as this sample estimates it (1: nothing sampled)."""
        return float(self.lengths.mean()) if len(self.lengths) and self.lengths.any() else 1.0

    def signals(self, words: LexicalQuery, query: np.ndarray) -> np.ndarray:
        """Lexical, own-vector and best-turn signals (columns) of the sampled memories, as
        the SQL of a search computes them for its candidates."""
        q = np.asarray(query, dtype=np.float32)
        if self.units.shape[1] != len(q):  # no vectors sampled: the signals of none, 0
            return np.stack([self._lexical(words), *np.zeros((2, len(self.lengths)))], axis=1)
        unit = self.units @ q
        turn = np.full(len(unit), -np.inf, dtype=np.float32)
        np.maximum.at(turn, self.owner, self.turns @ q)
        turn = np.where(np.isfinite(turn), turn, unit)
        return np.stack([self._lexical(words), unit, turn], axis=1).astype(np.float32)

    def _lexical(self, words: LexicalQuery) -> np.ndarray:
        """BM25 of each sampled memory, as `LexicalQuery.score` computes it in SQL."""
        norm = K1 * (1 - B + B * self.lengths.astype(np.float64) / words.avg_length)
        lexical = np.zeros(len(self.lengths))
        for lexeme, idf in words.idf.items():
            tf = np.asarray([c.get(lexeme, 0) for c in self.counts], dtype=np.float64)
            lexical += idf * tf / (tf + norm)
        return lexical


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
    _searching: SearchPair

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
        the background while searches go on in process (`build`). Writers are not blocked
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

    def search_terms(self, user_id: str, terms: Sequence[str], size: int,
                     avg_length: float) -> LexicalQuery:
        """The query's words as the lexical signal scores them for a user of `size` memories
        whose mean length is `avg_length` (`Sample.avg_length`): stemmed as the full-text
        column is, each lexeme weighted by its idf over the user's bank (a common one's
        share from PostgreSQL's statistics, a rare one's counted)."""
        with self._errors(), self._searching.held() as (tx, _):
            rows = tx.all(_TERMS.format(rare=RARE), (user_id, " ".join(terms), self.schema))
        shares = {t: f for t, f, _ in rows}
        held = {t: f if n is None else n / max(size, 1) for t, f, n in rows}
        df = {t: float(f or 0.0) * size for t, f in held.items()}
        idf = {t: math.log(1 + (size - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        return LexicalQuery(shares, idf, avg_length)

    def search_shortlist(self, user_id: str, words: LexicalQuery, query: np.ndarray,
                         filters: Mapping[str, Sequence[Any]], *, dense: int, lexical: int,
                         expected: int) -> list[SignalRow]:
        """The user's `dense` memories nearest the query by their own vector (HNSW) and
        `lexical` best by `words`, matching `filters`, each with its three signals.
        `expected` is how many memories the user has (the dense list's length, if fewer).

        The two lists are found at once on two connections, each statement in its own
        snapshot: a memory written or deleted between them may be in one list only, with
        the signals of the version that list saw (a deleted one is dropped when the search
        reads the found memories)."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        order = _NEAR_ORDER.format(dim=q.shape[0])
        score, weights = words.score()
        rough, rough_weights = words.rough()

        def nearest(tx: PgTx) -> list[tuple]:
            # pgvector's `ef_search`: how many rows the HNSW scan looks at (at most 1000)
            tx.run(f"SET hnsw.ef_search = {min(max(int(dense), 40), 1000)}")
            near = tx.all(_NEAR.format(score=score, where=where, order=order),
                          (*weights, q, user_id, *params, q, dense, q))
            if len(near) < min(dense, expected) // 2:
                # the approximate index, filtered after its scan, finds too few of a user who
                # holds a small share of the table: the exact order (an expression the index
                # does not serve) finds them all, up to `dense`
                near = tx.all(_NEAR.format(score=score, where=where, order=f"({order}) + 0"),
                              (*weights, q, user_id, *params, q, dense, q))
            return near

        def matching(tx: PgTx) -> list[tuple]:
            found: list[tuple] = []
            for match in lexical_tiers(words.shares, expected, lexical):
                found = tx.all(_LEXICAL.format(score=score, where=where, rough=rough),
                               (*weights, user_id, match, *params, *rough_weights, lexical, q,
                                q))
                if len(found) >= lexical // 2:  # enough: a broader query's additions hold
                    # fewer of the query's common words than all of these
                    break
            return found

        with self._errors(), self._searching.held() as pair:
            found, near = self._searching.at_once(pair, matching, nearest)
        rows: dict[str, SignalRow] = {}
        for i, speakers, lexical_score, unit, turn in [*near, *found]:
            if i not in rows:
                rows[i] = SignalRow(i, speakers, *_signals(lexical_score, unit, turn))
        return list(rows.values())

    def search_sample(self, user_id: str, size: int) -> Sample:
        """Up to `size` of the user's memories spread evenly over the bank, with what their
        signals need (`Sample`)."""
        rows = self._read(_SAMPLE, (user_id, size, user_id))
        seqs = list(dict.fromkeys(r[0] for r in rows))
        at = {seq: i for i, seq in enumerate(seqs)}
        lengths = np.zeros(len(seqs), dtype=np.float32)
        counts: list[dict[str, int]] = [{} for _ in seqs]
        owners: list[int] = []  # each vector's memory; own vectors as -1 - memory
        vectors: list[bytes] = []
        for seq, length, tf, idx, vec in rows:
            i = at[seq]
            lengths[i], counts[i] = length or 0, tf or {}
            if vec is not None:
                owners.append(-1 - i if idx == 0 else i)
                vectors.append(vec)
        stacked = self._vec_stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        owner = np.asarray(owners, dtype=np.int64)
        units = np.zeros((len(seqs), stacked.shape[1]), dtype=np.float32)
        units[-1 - owner[owner < 0]] = stacked[owner < 0]
        return Sample(units, stacked[owner >= 0], owner[owner >= 0], counts, lengths)

    def search_pool(self, user_id: str, ids: Sequence[str], words: LexicalQuery,
                    query: np.ndarray, filters: Mapping[str, Sequence[Any]]
                    ) -> tuple[dict[str, tuple[str | None, str | None]], list[SignalRow]]:
        """The same-session neighbours of the memories `ids` (id → previous and next; None:
        none, or of another session), and every signal of those neighbours not among `ids`
        that match `filters`."""
        q = np.asarray(query, dtype=np.float32)
        where, params = _filter_sql(filters)
        score, weights = words.score()
        sql = (f"WITH {_LINKS}, extra AS (SELECT DISTINCT m.id FROM links JOIN memories m ON "
               f"m.id IN (links.prev, links.next) WHERE m.id <> ALL(?) {where}) "
               "SELECT id, NULL, NULL, NULL, NULL, prev, next FROM links UNION ALL "
               f"SELECT m.id, m.speakers, {score}, vs.unit, vs.turn, NULL, NULL FROM extra "
               f"JOIN memories m ON m.id = extra.id {_VECTORS}")
        ids = list(ids)
        with self._errors(), self._searching.held() as (tx, _):
            rows = tx.all(sql, (user_id, ids, user_id, user_id, user_id, ids, *params,
                                *weights, q, q))
        links = {r[0]: (r[5], r[6]) for r in rows if r[1] is None}
        return links, [SignalRow(r[0], r[1], *_signals(r[2], r[3], r[4]))
                       for r in rows if r[1] is not None]
