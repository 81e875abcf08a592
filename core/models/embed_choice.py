"""Which packaged model embeds a store whose settings name none (`embedding.model=None`):
the one its vectors were made with; for a new store, the one its first texts call for.

The packaged MiniLM is English; multilingual-e5-small (the `multilingual` extra) finds
memories in other languages far better (docs/benchmarks.md) but embeds at about a third
of its speed, and loses a little in English. So a new store takes the multilingual model
when the first texts it embeds are not English and the extra is installed; when it is not
installed, the MiniLM, and a warning (once per process) names the extra. `rmm stats` says
the same of a store whose texts are not English and whose model is the MiniLM.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import MissingDependencyError
from ..language.languages import MIN_WORDS, language
from ..storage.base import Store
from .cosines import CosineScale, cosine_scale
from .embed import Embedder, default_embedder, query_vectors

log = logging.getLogger(__name__)

ENGLISH, MULTILINGUAL = "minilm-int8", "multilingual"
"""The models chosen between, by `embedding.model` name."""
BY_RECORD = {"all-MiniLM-L6-v2-int8": ENGLISH, "multilingual-e5-small-q4": MULTILINGUAL}
"""The model of each name a store records (`EmbedderRecord.name`)."""
INSTALL = ('pip install "reflective-memory[multilingual]" (Linux x86_64; elsewhere '
           "docs/configuration.md says how to run the model through sentence-transformers)")
_WARNED = threading.Event()


def hint(name: str | None, texts: Sequence[str]) -> str | None:
    """What to install, when a store whose model is `name` (None: none recorded yet) holds
    `texts` that are not English and embeds them with the English MiniLM; else None."""
    if BY_RECORD.get(name or "all-MiniLM-L6-v2-int8") != ENGLISH:
        return None
    said = _said(texts)
    if said in (None, IN_ENGLISH):
        return None
    return (f"texts not in English ({said}), embedded by the English model "
            f"{name or 'MiniLM'}: for memories in other languages, {INSTALL} and start a "
            f"new store")


class ChosenEmbedder:
    """The packaged model of a store opened without one named, chosen at most once:
    `choose` at the first texts written, or the first `embed` when nothing chose before (a
    crash left turns to reflect). `on_choice` gets the model (to record it in the store)."""

    dim = 384  # both models'

    def __init__(self, recorded: str | None, on_choice: Callable[[Embedder], None]) -> None:
        self._on_choice = on_choice
        self._lock = threading.Lock()
        self._chosen: Embedder | None = None
        if recorded is not None:
            self._pick(BY_RECORD.get(recorded, ENGLISH))

    @property
    def chosen(self) -> Embedder | None:
        return self._chosen

    @property
    def name(self) -> str:
        return getattr(self._chosen, "name", "all-MiniLM-L6-v2-int8")

    @property
    def cosine_scale(self) -> CosineScale:
        return cosine_scale(self._chosen)

    @property
    def languages(self) -> frozenset[str] | None:
        """What the chosen model's cosines mean something in (the MiniLM until chosen)."""
        if self._chosen is None:
            return frozenset({"en"})
        return getattr(self._chosen, "languages", None)

    def choose(self, texts: Sequence[str], *, wait: bool = False) -> Embedder | None:
        """The model, chosen by `texts` if none is yet (`wait`: not when they say too little
        to tell their language, None then)."""
        chosen = self._chosen
        if chosen is not None:
            return chosen
        said = _said(texts)
        if wait and said is None:
            return None
        with self._lock:
            if self._chosen is None:
                self._pick(self._for(said))
            return self._chosen

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.choose(texts).embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return query_vectors(self.choose(texts), texts)

    def _pick(self, model: str) -> None:
        chosen = default_embedder(model)
        self._on_choice(chosen)
        self._chosen = chosen

    @staticmethod
    def _for(said: str | None) -> str:
        if said in (None, IN_ENGLISH):
            return ENGLISH
        try:
            default_embedder(MULTILINGUAL)
        except MissingDependencyError as exc:
            if not _WARNED.is_set():
                _WARNED.set()
                log.warning("this store's first texts read as %s; the packaged English "
                            "model embeds them poorly: %s (%s)", said, INSTALL, exc)
            return ENGLISH
        log.info("this store's first texts read as %s: it embeds with %s", said,
                 MULTILINGUAL)
        return MULTILINGUAL


IN_ENGLISH = "en"


def _said(texts: Sequence[str]) -> str | None:
    """The language `texts` read as together ("xx": another script or letters), None when
    they say too little to tell a choice that lasts (`languages.MIN_WORDS`)."""
    return language(" ".join(texts), least=MIN_WORDS)


def chosen_for(store: Store) -> ChosenEmbedder:
    """The chosen model of `store` (its recorded one; a store with vectors but no record,
    made before records were kept, was embedded by the MiniLM), checked against the store
    when chosen (`check_embedder`)."""
    from .embed_identity import check_embedder

    record = store.embedder()
    recorded = record.name if record is not None else \
        "all-MiniLM-L6-v2-int8" if store.vector_dim() is not None else None
    return ChosenEmbedder(recorded, lambda model: check_embedder(store, model))
