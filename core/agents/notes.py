"""A-MEM notes: keywords, tags and a one-line context on each memory, links between related
memories, evolution of neighbours' notes (the write side; link-following retrieval is in
`links.py`).

Runs after a reflection commit (config `notes.enabled=True`). Attributes come from an LLM when one
is configured, else from TF-IDF keyphrases over the user's memories; links from the LLM's
judgement or a cosine rule. Everything lives in `Memory.attrs`: `keywords`, `tags`,
`context`, `links` (memory ids, kept on both ends) and `note_history` (earlier notes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import MissingDependencyError
from ..models import prompts
from ..models.cosines import cosine_scale
from ..models.embed import Embedder
from ..models.llm import metered
from ..models.parse import ParseError, as_index, ask, load_json, with_fallback
from ..storage.base import AttrsUpdate
from ..storage.protocols import MemoryBank
from ..text import clip
from ..types import Memory, utcnow

BACKFILL = 32
"""Memories of a user still without a note that one reflection also describes."""


@dataclass(slots=True)
class Note:
    """The A-MEM attributes of one memory."""

    keywords: list[str]
    tags: list[str]
    context: str

    def line(self) -> str:
        """The note as one line of text (added to a retrieval key, shown in prompts)."""
        return f"{self.context} | keywords: {', '.join(self.keywords)} | tags: " \
               f"{', '.join(self.tags)}"


def note_of(memory: Memory) -> Note | None:
    attrs = memory.attrs
    if "context" not in attrs:
        return None
    return Note(list(attrs.get("keywords", [])), list(attrs.get("tags", [])),
                str(attrs.get("context", "")))


# attributes ----------------------------------------------------------------------------------
@runtime_checkable
class NoteWriter(Protocol):
    """Writes a note for each memory; `corpus` is every memory text of the user."""

    def describe(self, memories: Sequence[Memory], corpus: Sequence[str]) -> list[Note]: ...


class TfidfNoteWriter:
    """LLM-free notes: keyphrases ranked by TF-IDF against the user's other memories.

    Keywords are the note's top uni/bigrams; tags its top words that recur in other
    memories (shared themes; its top words when none recur); the context line names the
    speakers and the top phrases.
    """

    def __init__(self, keywords: int = 5, tags: int = 3) -> None:
        self.n_keywords, self.n_tags = keywords, tags

    def describe(self, memories: Sequence[Memory], corpus: Sequence[str]) -> list[Note]:
        if not memories:
            return []
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError as exc:
            raise MissingDependencyError("scikit-learn", "notes") from exc
        docs = [_plain(m.text) for m in memories]
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), stop_words="english", sublinear_tf=True,
                                     token_pattern=r"(?u)\b[A-Za-z][A-Za-z'-]+\b")
        try:
            vectorizer.fit([_plain(t) for t in corpus] + docs)
        except ValueError:  # nothing but stop words anywhere
            return [Note([], [], _context(m, [])) for m in memories]
        terms = vectorizer.get_feature_names_out()
        # a term's document frequency follows from its idf: idf = ln((1+n)/(1+df)) + 1
        n_docs = len(corpus) + len(docs)
        df = (1 + n_docs) / np.exp(vectorizer.idf_ - 1) - 1
        weights = vectorizer.transform(docs).toarray()
        notes = []
        for memory, row in zip(memories, weights):
            order = [int(i) for i in np.argsort(-row) if row[i] > 0]
            keywords = _distinct([terms[i] for i in order], self.n_keywords)
            words = [terms[i] for i in order if " " not in terms[i]]
            tags = [terms[i] for i in order if " " not in terms[i] and df[i] >= 1.5] or words
            notes.append(Note(keywords, tags[: self.n_tags], _context(memory, keywords)))
        return notes


def _plain(text: str) -> str:
    """Drop `Speaker:` prefixes so names do not dominate every note."""
    return re.sub(r"(?m)^[^:\n]{1,40}:\s", "", text)


def _distinct(terms: list[str], limit: int) -> list[str]:
    """Top terms, skipping a word already inside a chosen phrase (and the reverse)."""
    chosen: list[str] = []
    for term in terms:
        if any(term in c.split() or c in term.split() for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == limit:
            break
    return chosen


def _context(memory: Memory, keywords: list[str]) -> str:
    who = " and ".join(memory.speakers) or "note"
    return f"{who} on {', '.join(keywords[:3])}" if keywords else who




class LLMNoteWriter:
    """A-MEM's note construction: one LLM call per batch of memories, JSON out."""

    def __init__(self, llm: Any, fallback: NoteWriter | None = None, batch: int = 8) -> None:
        self.llm, self.batch = metered(llm), batch
        self.fallback = fallback or TfidfNoteWriter()

    def describe(self, memories: Sequence[Memory], corpus: Sequence[str]) -> list[Note]:
        out: list[Note] = []
        for start in range(0, len(memories), self.batch):
            part = list(memories[start:start + self.batch])
            out += with_fallback("notes", lambda p=part: self._ask(p),
                                 lambda p=part: self.fallback.describe(p, corpus))
        return out

    def _ask(self, memories: list[Memory]) -> list[Note]:
        listing = "\n".join(f"[{i}] {clip(m.text, 700)}" for i, m in enumerate(memories))
        return ask(self.llm, prompts.NOTES.format(notes=listing),
                   lambda answer: parse_notes(answer, len(memories)))


def parse_notes(answer: str, n: int) -> list[Note]:
    """`n` notes from the LLM's JSON list; `ParseError` names what is wrong."""
    data, _ = load_json(answer)
    if isinstance(data, dict):
        data = data.get("notes", [data])
    if not isinstance(data, list):
        raise ParseError("the answer must be a JSON list of note objects")
    notes: dict[int, Note] = {}
    for pos, item in enumerate(data):
        if not isinstance(item, dict):
            raise ParseError(f"item {pos} is not a JSON object")
        index = as_index(item.get("note", pos))
        context = item.get("context")
        if index is None or not 0 <= index < n:
            raise ParseError(f"item {pos} names note {item.get('note')!r}; use 0 to {n - 1}")
        if not isinstance(context, str) or not context.strip():
            raise ParseError(f"note {index} has no one-sentence \"context\" string")
        notes[index] = Note(_strings(item.get("keywords")), _strings(item.get("tags")),
                            " ".join(context.split()))
    missing = [i for i in range(n) if i not in notes]
    if missing:
        raise ParseError(f"notes {missing} are missing; give one object per note")
    return [notes[i] for i in range(n)]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return list(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))[:8]



# links and evolution ----------------------------------------------------------------------------
@dataclass(slots=True)
class LinkDecision:
    """Which neighbours a new memory links to, and neighbours' evolved notes (by id)."""

    links: list[str] = field(default_factory=list)
    evolved: dict[str, Note] = field(default_factory=dict)


@runtime_checkable
class Linker(Protocol):
    """Judges a new memory against its nearest neighbours (memory, key cosine), best first."""

    def link(self, memory: Memory, neighbours: Sequence[tuple[Memory, float]]
             ) -> LinkDecision: ...


class SimilarityLinker:
    """LLM-free links: every neighbour whose key cosine reaches `threshold`; no evolution."""

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def link(self, memory: Memory, neighbours: Sequence[tuple[Memory, float]]) -> LinkDecision:
        return LinkDecision([m.id for m, score in neighbours if score >= self.threshold])




class LLMLinker:
    """A-MEM's link generation and memory evolution in one LLM call per new memory."""

    def __init__(self, llm: Any, fallback: Linker | None = None) -> None:
        self.llm = metered(llm)
        self.fallback = fallback or SimilarityLinker()

    def link(self, memory: Memory, neighbours: Sequence[tuple[Memory, float]]) -> LinkDecision:
        if not neighbours:
            return LinkDecision()
        stored = [m for m, _ in neighbours]
        prompt = prompts.LINKS.format(
            new=_note_block(memory),
            stored="\n".join(f"[{i}] {_note_block(m)}" for i, m in enumerate(stored)))
        return with_fallback("linking",
                             lambda: ask(self.llm, prompt, lambda a: parse_links(a, stored)),
                             lambda: self.fallback.link(memory, neighbours))


def _note_block(memory: Memory) -> str:
    note = note_of(memory)
    return clip(memory.text, 700) + (f"\n    ({note.line()})" if note else "")


def parse_links(answer: str, stored: Sequence[Memory]) -> LinkDecision:
    """The LLM's `{"links": [...], "updates": [...]}` as a `LinkDecision`."""
    data, _ = load_json(answer)
    if not isinstance(data, dict):
        raise ParseError('the answer must be one JSON object with "links" and "updates"')
    n = len(stored)
    links = []
    for value in data.get("links") or []:
        index = as_index(value)
        if index is None or not 0 <= index < n:
            raise ParseError(f"link {value!r} is not a stored note number (0 to {n - 1})")
        links.append(stored[index].id)
    evolved: dict[str, Note] = {}
    for item in data.get("updates") or []:
        index = as_index(item.get("note")) if isinstance(item, dict) else None
        if index is None or not 0 <= index < n:
            raise ParseError(f"update {item!r} does not name a stored note (0 to {n - 1})")
        context = item.get("context")
        old = note_of(stored[index]) or Note([], [], "")
        evolved[stored[index].id] = Note(
            old.keywords, _strings(item.get("tags")) or old.tags,
            " ".join(context.split()) if isinstance(context, str) and context.strip()
            else old.context)
    return LinkDecision(list(dict.fromkeys(links)), evolved)


# orchestration ---------------------------------------------------------------------------------
class NoteKeeper:
    """After a reflection commit: note the new and merged memories, link the new ones to
    their nearest neighbours (both ends), evolve neighbours, persist in one transaction."""

    def __init__(self, store: MemoryBank, embedder: Embedder, writer: NoteWriter, linker: Linker,
                 *, neighbours: int = 3, in_key: bool = False) -> None:
        self.store, self.embedder = store, embedder
        self.writer, self.linker = writer, linker
        self.neighbours, self.in_key = neighbours, in_key

    def __call__(self, user_id: str, memories: list[Memory]) -> list[Memory]:
        if not memories:
            return memories
        bank = {m.id: m for m in self.store.memories(user_id, with_versions=False)}
        todo = list(dict.fromkeys([m.id for m in memories] + [
            mid for mid, m in bank.items() if "links" not in m.attrs][:BACKFILL]))
        todo = [mid for mid in todo if mid in bank]
        notes = self.writer.describe([bank[i] for i in todo],
                                     [m.text for i, m in bank.items() if i not in todo])
        unlinked = [mid for mid in todo if "links" not in bank[mid].attrs]
        attrs = {mid: dict(m.attrs) for mid, m in bank.items()}
        changed: dict[str, AttrsUpdate] = {}
        for mid, note in zip(todo, notes):
            attrs[mid].update(keywords=note.keywords, tags=note.tags, context=note.context)
            attrs[mid].setdefault("links", [])
            bank[mid].attrs = attrs[mid]
            changed[mid] = AttrsUpdate(mid, attrs[mid])
        self._link(user_id, unlinked, bank, attrs, changed)
        if self.in_key:
            self._keys(bank, attrs, list(changed.values()))
        self.store.update_memory_attrs(user_id, list(changed.values()))
        return self.store.memories(user_id, [m.id for m in memories])

    def _link(self, user_id: str, new_ids: list[str], bank: dict[str, Memory],
              attrs: dict[str, dict], changed: dict[str, AttrsUpdate]) -> None:
        if not new_ids or self.neighbours < 1 or len(bank) < 2:
            return
        ids = list(bank)
        stored = self.store.memory_vectors(user_id, ids)
        keys = np.vstack([stored[i][0] if i in stored else np.zeros(self.embedder.dim)
                          for i in ids]).astype(np.float32)
        row = {mid: r for r, mid in enumerate(ids)}
        scale = cosine_scale(self.embedder)  # link_threshold is on the MiniLM's scale
        for mid in new_ids:
            sims = keys @ keys[row[mid]]
            sims[row[mid]] = -np.inf
            top = [int(r) for r in np.argsort(-sims)[: self.neighbours] if np.isfinite(sims[r])]
            decision = self.linker.link(bank[mid], [(bank[ids[r]], float(scale.of_texts(sims[r])))
                                                    for r in top])
            for other in decision.links:
                if other == mid or other not in bank:
                    continue
                for a, b in ((mid, other), (other, mid)):
                    links = attrs[a].setdefault("links", [])
                    if b not in links:
                        links.append(b)
                    changed.setdefault(a, AttrsUpdate(a, attrs[a])).attrs = attrs[a]
            for other, note in decision.evolved.items():
                if other == mid or other not in bank:
                    continue
                old = attrs[other]
                history = old.setdefault("note_history", [])
                history.append({"context": old.get("context", ""), "tags": old.get("tags", []),
                                "at": utcnow().isoformat(), "by": mid})
                old.update(context=note.context, tags=note.tags)
                bank[other].attrs = old
                changed[other] = AttrsUpdate(other, old, reason="evolved", source=mid)

    def _keys(self, bank: dict[str, Memory], attrs: dict[str, dict],
              updates: list[AttrsUpdate]) -> None:
        """Retrieval key = the memory's own key plus its note line; key vector re-embedded."""
        todo = [u for u in updates if note_of(bank[u.memory_id]) is not None]
        for up in todo:
            memory = bank[up.memory_id]
            base = attrs[up.memory_id].setdefault("key_base", memory.key)
            up.key = f"{base}\n{note_of(memory).line()}"
        vectors = self.embedder.embed([u.key for u in todo]) if todo else []
        for up, vector in zip(todo, vectors):
            up.key_vector = vector


def keeper_for(store: MemoryBank, embedder: Embedder, config: Any, llm: Any = None) -> NoteKeeper:
    """The keeper a `ReflectiveMemory` runs: LLM notes and links with an LLM, else LLM-free."""
    if llm is not None:
        model = metered(llm, config)
        writer: NoteWriter = LLMNoteWriter(model)
        linker: Linker = LLMLinker(model, SimilarityLinker(config.notes.link_threshold))
    else:
        writer, linker = TfidfNoteWriter(), SimilarityLinker(config.notes.link_threshold)
    return NoteKeeper(store, embedder, writer, linker, neighbours=config.notes.links,
                      in_key=config.notes.in_key)
