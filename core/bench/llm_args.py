"""The LLM options of the benches that call one (`rmm bench extract`, `rmm bench answer`): an
OpenAI-compatible endpoint, a LangChain chat model by import path, or the packaged local
model, each turned into the one metered `LLM` the core calls."""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

from ..errors import InvalidInputError

KEY_ENV = "OPENAI_API_KEY"
"""The environment variable an endpoint's API key is read from (unless `--api-key-env`)."""


def add_llm_arguments(parser: argparse.ArgumentParser, *, role: str = "",
                      max_tokens: int = 512) -> None:
    """`--ROLE-llm-url`, `--ROLE-llm-model`, `--ROLE-langchain`, `--ROLE-local-llm` (no
    prefix for the main LLM); the main one also gets `--max-tokens` and `--api-key-env`."""
    dash = f"{role}-" if role else ""
    who = f"the {role}" if role else "the LLM"
    parser.add_argument(f"--{dash}llm-url", f"--{dash}llm", dest=f"{_dest(role)}llm_url",
                        default=None, metavar="URL",
                        help=f"OpenAI-compatible API root for {who}, e.g. "
                             f"http://127.0.0.1:8080/v1 (key from ${KEY_ENV})")
    parser.add_argument(f"--{dash}llm-model", f"--{dash}model", dest=f"{_dest(role)}llm_model",
                        default=None, metavar="NAME",
                        help=f"model name for {who}: sent to the URL, or given to the "
                             f"LangChain class as model=NAME")
    parser.add_argument(f"--{dash}langchain", dest=f"{_dest(role)}langchain", default=None,
                        metavar="MODULE:NAME",
                        help=f"a LangChain chat model for {who} by import path, e.g. "
                             f"langchain_openai:ChatOpenAI (a class is built with "
                             f"model=NAME)")
    parser.add_argument(f"--{dash}local-llm", dest=f"{_dest(role)}local_llm",
                        action="store_true",
                        help=f"the packaged Qwen2.5-Coder-1.5B in-process for {who} "
                             f"(local-llm extra)")
    if not role:
        parser.add_argument("--max-tokens", type=int, default=max_tokens,
                            help=f"completion cap per call (default {max_tokens})")
        parser.add_argument("--api-key-env", default=KEY_ENV, metavar="VAR",
                            help=f"environment variable holding the API key (default "
                                 f"{KEY_ENV})")


def llm_from_args(args: argparse.Namespace, *, role: str = "", n_ctx: int = 4096,
                  shared: Any = None) -> Any:
    """The LLM the options of `role` name (None when they name none); `shared`, the main
    LLM, is reused when `role` asks for the local model too (one model in memory)."""
    prefix = _dest(role)
    url, model = getattr(args, f"{prefix}llm_url"), getattr(args, f"{prefix}llm_model")
    path, local = getattr(args, f"{prefix}langchain"), getattr(args, f"{prefix}local_llm")
    chosen = [name for name, on in (("--llm-url", url), ("--langchain", path),
                                    ("--local-llm", local)) if on]
    if len(chosen) > 1:
        raise InvalidInputError(f"choose one LLM{f' for the {role}' if role else ''}: "
                                f"{' and '.join(chosen)} were both given")
    if url:
        from ..models.llm import OpenAICompatibleLLM

        return OpenAICompatibleLLM(url, model or "default", max_tokens=args.max_tokens,
                                   api_key=os.environ.get(getattr(args, "api_key_env", KEY_ENV)))
    if path:
        return langchain_model(path, model)
    if local:
        from ..models.local_llm import LocalLLM

        if shared is not None and isinstance(shared, LocalLLM):
            return shared
        return LocalLLM(max_tokens=args.max_tokens, n_ctx=n_ctx)
    return None


def langchain_model(path: str, model: str | None = None) -> Any:
    """The object at `module:name` (or `module.name`); a class is built with `model=model`
    when a model is named. `as_llm` turns it into an `LLM` through the LangChain adapter."""
    module_name, sep, name = path.partition(":")
    if not sep:
        module_name, _, name = path.rpartition(".")
    if not module_name or not name:
        raise InvalidInputError(f"--langchain needs MODULE:NAME, got {path!r}")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except ImportError as exc:
        raise InvalidInputError(f"cannot import {module_name!r} for --langchain: {exc}") from exc
    except AttributeError as exc:
        raise InvalidInputError(f"{module_name!r} has no {name!r}") from exc
    if isinstance(found, type):
        return found(model=model) if model else found()
    return found


def _dest(role: str) -> str:
    return f"{role.replace('-', '_')}_" if role else ""
