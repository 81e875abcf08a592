"""LLMs handed to one call (`respond(llm=...)`), each metered once and then reused."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..config import MemoryConfig
from .llm import MeteredLLM, metered


class PerCallLLMs:
    """`get(llm)`: the memory's own LLM for None (or itself), else `llm` metered once; the
    last `keep` are kept, so a hung one cannot start threads without bound."""

    def __init__(self, own: MeteredLLM | None, config: MemoryConfig, keep: int = 4) -> None:
        self.own, self.config, self.keep = own, config, keep
        self._metered: OrderedDict[int, tuple[Any, MeteredLLM]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, llm: Any) -> MeteredLLM | None:
        if llm is None or llm is self.own:
            return self.own
        with self._lock:
            if id(llm) not in self._metered:
                self._metered[id(llm)] = (llm, metered(llm, self.config))
                while len(self._metered) > self.keep:
                    self._metered.popitem(last=False)
            self._metered.move_to_end(id(llm))
            return self._metered[id(llm)][1]
