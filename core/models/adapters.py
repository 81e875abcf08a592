"""Wrappers of other frameworks' objects, found by entry point: the core names no framework.

Each adapter package declares, in an entry-point group, one `wrap(obj)` per framework, named
by the framework's top-level package (`langchain_core`, `llama_index`, ...). An object is
handed to the wrapper of the first class in its MRO whose package has one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class AdapterRegistry(Generic[T]):
    """The wrappers of one entry-point `group`, loaded on first use, plus those registered in
    code (for wrappers that are not installed as entry points)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._loaded: dict[str, Callable[[Any], T]] = {}

    def register(self, package: str, wrap: Callable[[Any], T]) -> None:
        """Hand objects whose class comes from top-level `package` to `wrap`."""
        self._loaded[package] = wrap

    def find(self, obj: Any) -> Callable[[Any], T] | None:
        """The wrapper for `obj`'s framework, or None when no framework of its MRO has one."""
        for cls in type(obj).__mro__:
            wrap = self._wrapper(cls.__module__.split(".")[0])
            if wrap is not None:
                return wrap
        return None

    def _wrapper(self, package: str) -> Callable[[Any], T] | None:
        if package not in self._loaded and package in _declared(self.group):
            self._loaded[package] = _declared(self.group)[package].load()
        return self._loaded.get(package)


@functools.cache
def _declared(group: str) -> dict[str, EntryPoint]:
    """The installed entry points of `group` by name, read once per process."""
    return {ep.name: ep for ep in entry_points(group=group)}
