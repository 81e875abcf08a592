"""Would ordering an excerpt's sentences by the embedder keep more of the answer, and what
would their vectors cost?

`--order embedder` replaces the order in which an excerpt keeps a hit's sentences (shared
question words first, `rmm_core.read.excerpt._ranked`) by each sentence's cosine to the
question under the packaged embedder, then runs `rmm bench excerpts`' measure (answer words
kept against a random cut of the same length); `--order keys` runs it as shipped. `--cost`
times what those vectors would take instead: at search, embedding the sentences of every
hit a budgeted search cuts (those a gathering question cuts to order them included); at
write, every sentence of every turn, against the turns themselves as ingest embeds them.

    python scripts/sentence_order_vs.py --order embedder --dataset jsonl \\
        --data tests/data/excerpts_langs.jsonl
    python scripts/sentence_order_vs.py --cost --dataset beam --data ../shared/data/beam/100K \\
        --convs 0,1
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from rmm_core import ReflectiveMemory
from rmm_core.bench import excerpts as bench
from rmm_core.bench.datasets import load_args
from rmm_core.bench.records import ingest
from rmm_core.bench.retrieval import parse_range
from rmm_core.models.embed import Embedder, default_embedder
from rmm_core.read import excerpt, search


def by_embedder(embedder: Embedder) -> None:
    """Make every excerpt keep its sentences in the order of their cosine to the question
    (an `Embedder`'s vectors are unit length, so a dot product)."""
    question: list[np.ndarray] = []
    cut = search.excerpts

    def excerpts(hits, query, query_vec, rows, stemmer=None, **kw):  # noqa: ANN001, ANN202
        question[:] = [query_vec]
        return cut(hits, query, query_vec, rows, stemmer, **kw)

    vector = cache(lambda sentence: embedder.embed([sentence])[0])

    def ranked(parts, asked):  # noqa: ANN001, ANN202, ARG001
        return closest_first(parts, question[0], vector)

    search.excerpts, excerpt._ranked = excerpts, ranked


def closest_first(parts: list[Any], question: np.ndarray,
                  vector: Callable[[str], np.ndarray]) -> list[tuple[int, int]]:
    """Each (part, sentence) of an excerpt's parts, the closest to the question first (the
    first said first among equals)."""
    places = [(i, j) for i, p in enumerate(parts) for j in range(len(p.turn.sentences))]
    close = np.array([vector(parts[i].turn.sentences[j]) @ question for i, j in places])
    return [places[n] for n in np.argsort(-close, kind="stable")]


def cost(convs: list[Any], embedder: Embedder) -> dict[str, float]:
    """Sentences a budgeted search cuts and the time to embed them, against the search; and
    every turn's sentences embedded against the turns."""
    asked: list[str] = []
    ranked = excerpt._ranked

    def recording(parts, keys):  # noqa: ANN001, ANN202
        asked.extend(s for p in parts for s in p.turn.sentences)
        return ranked(parts, keys)

    excerpt._ranked = recording
    searched, embedded, counts = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        mem = ReflectiveMemory.open(str(Path(tmp) / "m.sqlite"), embedder=embedder,
                                    progress=False)
        for conv in convs:
            ingest(mem, conv)
        mem.search("load the index", user_id=convs[0].sample_id, max_words=bench.MAX_WORDS)
        for conv in convs:
            for q in conv.questions:
                asked.clear()
                searched.append(timed(mem.search, q.question, user_id=conv.sample_id,
                                      max_words=bench.MAX_WORDS))
                counts.append(len(asked))
                embedded.append(timed(embedder.embed, list(asked)) if asked else 0.0)
        mem.close()
    excerpt._ranked = ranked
    turns = [t.text for c in convs for s in c.sessions for t in s.turns]
    sentences = [x for t in turns for x in excerpt._split(t)]
    search_ms, embed_ms = np.median(searched), np.median(embedded)
    return {"questions": len(searched), "search p50 ms": search_ms,
            "cut sentences p50": np.median(counts), "p95": np.percentile(counts, 95),
            "their embedding p50 ms": embed_ms, "ratio to search": embed_ms / search_ms,
            "turns": len(turns), "turn sentences": len(sentences),
            "turns embedded s": timed(embedder.embed, turns) / 1000,
            "sentences embedded s": timed(embedder.embed, sentences) / 1000}


def timed(call: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    """Milliseconds one call takes."""
    start = time.perf_counter()
    call(*args, **kwargs)
    return 1000 * (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--convs", default=None)
    parser.add_argument("--order", choices=["keys", "embedder"], default="keys")
    parser.add_argument("--cost", action="store_true")
    args = parser.parse_args()
    convs = load_args(args.dataset, args.data, parse_range(args.convs) if args.convs else None)
    embedder = default_embedder()
    embedder.embed(["load the model"])
    if args.cost:
        print(json.dumps({k: round(float(v), 3) for k, v in cost(convs, embedder).items()},
                         indent=1))
        return
    if args.order == "embedder":
        by_embedder(embedder)
    figures = bench.evaluate(convs, embedder, {})
    print(f"order: {args.order}")
    print(bench.report({**figures, "dataset": args.dataset}))


if __name__ == "__main__":
    main()
