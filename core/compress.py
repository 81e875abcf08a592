"""Compression: a denoised copy of a memory used as its retrieval key (SeCom)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

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
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*|[^\sA-Za-z0-9]")


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
        kept = [tok for tok in _TOKEN.findall(text) if self._keep(tok)]
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
