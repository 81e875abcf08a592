"""`RMMStore`: reflective memory as a LangGraph `BaseStore` (`create_agent(store=...)`,
`runtime.store`), so an agent's long-term store is searched the way the memory searches."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from rmm_core import Memory, ReflectiveMemory
from rmm_core.errors import InvalidInputError
from rmm_core.metadata import check_filters, matches
from rmm_core.types import check_id

KEY = "store_key"
"""Metadata field holding an item's key (memories reflected from conversations have none:
their key is their memory id)."""

_SLOT = re.compile(r"^\{(user_id|agent_id|run_id)\}$")


class Namespaces:
    """Namespace tuples <-> scopes, by a template such as `("memories", "{user_id}")`:
    literal labels must match, `{user_id}` (required), `{agent_id}` and `{run_id}` are ids."""

    def __init__(self, template: Sequence[str]) -> None:
        self.template = tuple(template)
        self.slots = {i: m.group(1) for i, part in enumerate(self.template)
                      if isinstance(part, str) and (m := _SLOT.match(part))}
        if "user_id" not in self.slots.values() or len(set(self.slots.values())) != \
                len(self.slots) or not all(isinstance(p, str) and p for p in self.template):
            raise InvalidInputError(f"namespace must be labels with one '{{user_id}}' and at "
                                    f"most one '{{agent_id}}'/'{{run_id}}', got {template!r}")
        self.user_depth = next(i for i, s in self.slots.items() if s == "user_id") + 1

    def scope(self, namespace: tuple[str, ...], *, prefix: bool = False
              ) -> tuple[str, dict[str, str]]:
        """The user id and the agent/run filters a namespace (or a search prefix) names."""
        fits = len(namespace) == len(self.template) or (
            prefix and self.user_depth <= len(namespace) <= len(self.template))
        if not fits or any(part != want for part, want, i in
                           zip(namespace, self.template, range(len(namespace)))
                           if i not in self.slots):
            what = "begin with (down to the user)" if prefix else "match"
            raise InvalidInputError(f"namespace {namespace!r} does not {what} {self.template!r}")
        ids = {self.slots[i]: check_id(part, self.slots[i])
               for i, part in enumerate(namespace) if i in self.slots}
        return ids.pop("user_id"), ids

    def namespace_of(self, memory: Memory) -> tuple[str, ...] | None:
        """The namespace a memory lives in; None when its metadata lacks a scope id."""
        values = {"user_id": memory.user_id, **memory.metadata}
        parts = [values.get(self.slots[i]) if i in self.slots else part
                 for i, part in enumerate(self.template)]
        return tuple(parts) if all(isinstance(p, str) for p in parts) else None


class RMMStore(BaseStore):
    """A LangGraph store over a `ReflectiveMemory`; each item is one memory.

    The namespace names the scope (default `("memories", "{user_id}")`, LangMem's layout;
    add `"{agent_id}"`/`"{run_id}"` for those scopes). `put` adds a memory (or updates the
    one with that key, keeping its version history); the item's value is the memory's
    metadata and its text is `value["content"]` when that is a string (else the `index`
    fields, else the value as JSON). `search(prefix, query=...)` is the memory's own search
    (dense + BM25, reranked) with `filter` as metadata equality filters; without a query it
    lists items, newest first. Memories reflected from conversations are items too (key =
    memory id, value `{"content": text}`), so an agent's store sees what its middleware
    learned. Every call names its user; no TTL.
    """

    def __init__(self, memory: ReflectiveMemory, *,
                 namespace: Sequence[str] = ("memories", "{user_id}")) -> None:
        if not isinstance(memory, ReflectiveMemory):
            raise InvalidInputError(
                f"memory must be a ReflectiveMemory, not {type(memory).__name__}")
        self.memory, self.namespaces = memory, Namespaces(namespace)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        handlers = {GetOp: self._get, SearchOp: self._search, PutOp: self._put,
                    ListNamespacesOp: self._list_namespaces}
        return [handlers[type(op)](op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # operations ---------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        user_id, scope = self.namespaces.scope(op.namespace)
        found = self._with_key(user_id, scope, op.key)
        return self._item(found[0], op.namespace) if found else None

    def _put(self, op: PutOp) -> None:
        user_id, scope = self.namespaces.scope(op.namespace)
        check_id(op.key, "key")
        found = self._with_key(user_id, scope, op.key)
        if op.value is None:
            for memory in found:
                self.memory.delete(memory.id, user_id=user_id)
            return
        value = dict(op.value)
        taken = sorted({KEY, *self.namespaces.slots.values()} & set(value))
        if taken:
            raise InvalidInputError(f"value field(s) {taken} are the store's own")
        metadata = {**value, **scope, KEY: op.key}
        text = _text(value, op.index)
        if len(found) == 1 and set(found[0].metadata) <= set(metadata):
            self.memory.update(found[0].id, text, user_id=user_id, metadata=metadata)
            return
        for memory in found:  # a value that drops fields replaces its memories
            self.memory.delete(memory.id, user_id=user_id)
        self.memory.add(text, user_id=user_id, metadata=metadata)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        user_id, scope = self.namespaces.scope(op.namespace_prefix, prefix=True)
        filters = {**_equality(op.filter or {}), **scope}
        if op.query:
            result = self.memory.search(op.query, user_id=user_id, k=op.offset + op.limit,
                                        filters=filters)
            # turns still waiting for reflection are hits but not items (no key to get)
            scored = [(hit.memory, hit.score) for hit in result
                      if not hit.memory.attrs.get("provisional")][op.offset:]
        else:
            wanted = check_filters(filters)
            listed = [m for m in self.memory.memories(user_id=user_id)
                      if matches(m.metadata, wanted)]
            listed.sort(key=lambda m: m.updated_at, reverse=True)
            scored = [(m, None) for m in listed[op.offset:op.offset + op.limit]]
        items = [(self.namespaces.namespace_of(m), m, score) for m, score in scored]
        return [SearchItem(namespace=ns, key=_key(m), value=_value(m, self.namespaces),
                           created_at=m.created_at, updated_at=m.updated_at, score=score)
                for ns, m, score in items if ns is not None]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {ns for user in self.memory.store.users()
                 for ns in map(self.namespaces.namespace_of,
                               self.memory.memories(user_id=user)) if ns}
        found = {ns[:op.max_depth] if op.max_depth else ns for ns in found
                 if all(_matches_condition(ns, c.match_type, c.path)
                        for c in op.match_conditions or ())}
        return sorted(found)[op.offset:op.offset + op.limit]

    # helpers ------------------------------------------------------------------------------
    def _with_key(self, user_id: str, scope: Mapping[str, str], key: str) -> list[Memory]:
        """The memories stored under `key` in the scope (a memory id names its memory)."""
        check_id(key, "key")
        wanted = check_filters(dict(scope))
        mine = [m for m in self.memory.memories(user_id=user_id) if matches(m.metadata, wanted)]
        return [m for m in mine if m.metadata.get(KEY) == key] or \
            [m for m in mine if m.id == key and KEY not in m.metadata]

    def _item(self, memory: Memory, namespace: tuple[str, ...]) -> Item:
        return Item(value=_value(memory, self.namespaces), key=_key(memory),
                    namespace=namespace, created_at=memory.created_at,
                    updated_at=memory.updated_at)


def _key(memory: Memory) -> str:
    return memory.metadata.get(KEY, memory.id)


def _value(memory: Memory, namespaces: Namespaces) -> dict[str, Any]:
    """The item value of a memory: what was put, or its text for a reflected memory."""
    own = {k: v for k, v in memory.metadata.items()
           if k != KEY and k not in namespaces.slots.values()}
    return own if KEY in memory.metadata else {"content": memory.text, **own}


def _text(value: Mapping[str, Any], index: Any) -> str:
    """What a value says, to embed and search: `content`, else the `index` fields, else
    the whole value as JSON."""
    if isinstance(value.get("content"), str):
        return value["content"]
    if isinstance(index, list) and any(field in value for field in index):
        return "\n".join(str(value[f]) for f in index if f in value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _equality(filter: Mapping[str, Any]) -> dict[str, Any]:
    """LangGraph filters as metadata equality filters (`{"f": v}` and `{"f": {"$eq": v}}`)."""
    out = {}
    for field, wanted in filter.items():
        if isinstance(wanted, Mapping):
            if set(wanted) != {"$eq"}:
                raise InvalidInputError(f"filter {field!r}: only equality is supported "
                                        f"(a value or {{'$eq': value}}), got {wanted!r:.60}")
            wanted = wanted["$eq"]
        out[field] = wanted
    return out


def _matches_condition(namespace: tuple[str, ...], match_type: str,
                       path: tuple[str, ...]) -> bool:
    part = namespace[:len(path)] if match_type == "prefix" else namespace[-len(path):]
    return len(namespace) >= len(path) and all(p in ("*", n) for p, n in zip(path, part))

