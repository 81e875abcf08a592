"""Relative times in the languages dateparser reads, from dateparser's own tables, for
`timeref` beyond its six hand-made ones: "вчера", "昨天", "上周", "geçen ay", "3 дня назад".

Each of dateparser's locales lists its phrases of a relative day, week, month or year
("1 day ago": ["вчера"], "in 1 week": ["下周"]) and patterns of counts ("(\\d+) дня назад").
Kept: the phrases of every locale written in a letter beyond Latin, and those of the
Latin-script `LATIN` locales that no language `timeref` reads itself uses (Dutch "morgen" is
German "morgen", which `timeref` reads with its guards; a Latin word of another locale can
be a common word here: Estonian "homme" is French "man"). A phrase read two ways (Hindi "कल"
is yesterday and tomorrow) is left out, and so are shortenings ("wcz", "на пр нед"). Scripts
written without spaces match inside a run of letters, the others as whole words.

The phrases are read from dateparser once, by `python -m rmm_core.language.timephrases`,
into `rmm_core/data/relative_times.json` (with dateparser's version): a search or a write
loads that file, never dateparser's 200 locales (a second and more), and a text that says no
relative time never imports dateparser.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import regex

LATIN = ("nl", "sv", "da", "nb", "pl", "tr", "cs", "ro", "id")
"""Latin-script locales read besides `timeref`'s own."""
OWN = ("en", "de", "fr", "es", "it", "pt")
"""Languages `timeref` reads with its own rules."""
TABLE = files("rmm_core") / "data" / "relative_times.json"
"""The phrases as read from dateparser (`build`)."""
_KEY = regex.compile(r"^(in )?(\d+) (day|week|month|year) ?(ago)?$")
_COUNT_KEY = regex.compile(r"^(in )?\\1 (day|week|month|year) ?(ago)?$")
_DATEPARSER_NUMBER = r"(\d++[.,]?\d*+)"
_NUMBER = r"(?<![\d.,])(?P<n{i}>\d{{1,2}})(?![\d.,]?\d)"
_UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\p{Lao}"
                          r"\p{Khmer}\p{Myanmar}]")
_BEYOND_LATIN = regex.compile(r"[^\P{L}\p{Latin}]")
_WORD = regex.compile(r"[\p{L}\p{M}]+")
_SHORTENED = frozenset({"пр", "след", "сл", "эт", "нед", "мес", "г", "мин", "ч", "сек"})
"""Russian shortenings dateparser lists as words."""
_VOWEL = regex.compile(r"[aeiouyåäöøæıüéěáíóúůąę]")


@dataclass(frozen=True, slots=True)
class Meaning:
    """What a phrase says: `step` units from the day it was said (a count: `step` times the
    number said); `period` True for "last week" (the week before this one), False for "a
    week ago" (seven days before)."""

    unit: str
    step: int
    period: bool


class Phrases:
    """Some phrases by the word each match says (`spaced`: its longest word; else the first
    letter of the phrase), each word's phrases one pattern compiled when a text first holds
    that word: a text is tried only against the phrases it may say."""

    def __init__(self, bodies: dict[str, list[tuple[str, str]]], meanings: dict[str, Meaning],
                 *, spaced: bool) -> None:
        self.bodies, self.meanings, self.spaced = bodies, meanings, spaced
        self._patterns: dict[str, regex.Pattern] = {}

    def find(self, text: str, words: frozenset[str]) -> list[regex.Match]:
        """The phrases `text` says (`words`: its lower-cased words)."""
        keys = words if self.spaced else set(text)
        return [found for key in sorted(self.bodies.keys() & keys)
                for found in self._pattern(key).finditer(text)]

    def meaning(self, found: regex.Match) -> tuple[Meaning, int]:
        """What a match means, and the number it says (1 for a fixed phrase)."""
        name = next(g for g, v in found.groupdict().items() if v is not None and g[0] != "n")
        return self.meanings[name], int(found[f"n{name[1:]}"]) if name[0] == "c" else 1

    def _pattern(self, key: str) -> regex.Pattern:
        pattern = self._patterns.get(key)
        if pattern is None:
            wrap = (r"(?P<{}>(?<!\w){}(?!\w))" if self.spaced else r"(?P<{}>{})").format
            pattern = self._patterns[key] = regex.compile(
                "(?:" + "|".join(wrap(name, body) for name, body in self.bodies[key])
                + r")(?! *\()", regex.IGNORECASE)
        return pattern


def find(text: str) -> list[tuple[regex.Match, Phrases]]:
    """Each relative time `text` says in a language of dateparser's that `timeref` does not
    read itself, not followed by a parenthesis, with the phrases that found it, in order
    (where two overlap, the first and longest)."""
    words = frozenset(w.lower() for w in _WORD.findall(text))
    groups = [latin()] + (list(scripts()) if _BEYOND_LATIN.search(text) else [])
    found = sorted(((m, p) for p in groups for m in p.find(text, words)),
                   key=lambda mp: (mp[0].start(), -mp[0].end()))
    out, end = [], 0
    for match, phrases in found:
        if match.start() >= end:
            out.append((match, phrases))
            end = match.end()
    return out


def latin() -> Phrases:
    """The phrases of the `LATIN` locales."""
    return _groups()[0]


def scripts() -> tuple[Phrases, Phrases]:
    """The phrases written in letters beyond Latin of every other locale: those of scripts
    written with spaces, and those without."""
    return _groups()[1], _groups()[2]


@cache
def _groups() -> tuple[Phrases, Phrases, Phrases]:
    groups = json.loads(TABLE.read_text(encoding="utf-8"))["groups"]
    return tuple(_compiled({p: Meaning(*m) for p, m in g["fixed"].items()},
                           {p: Meaning(*m) for p, m in g["counts"].items()},
                           spaced=g["spaced"]) for g in groups)


def build() -> dict:
    """The table of `TABLE`, read from the installed dateparser."""
    import dateparser
    from dateparser.languages.loader import default_loader

    own = {p.lower() for code in OWN
           for ps in default_loader.get_locale(code).info.get("relative-type", {}).values()
           for p in ps}
    fixed, counts = _read(default_loader.get_locale(code).info for code in LATIN)
    latin = ({p: m for p, m in fixed.items() if p not in own}, counts)
    fixed, counts = _read(locale.info for code, locale in
                          default_loader.get_locale_map().items()
                          if code.split("-")[0] not in OWN + LATIN)
    fixed = {p: m for p, m in fixed.items() if _BEYOND_LATIN.search(p)}
    counts = {p: m for p, m in counts.items() if _BEYOND_LATIN.search(p)}

    def group(fixed: dict, counts: dict, spaced: bool) -> dict:
        return {"spaced": spaced,
                "fixed": {p: [m.unit, m.step, m.period] for p, m in sorted(fixed.items())
                          if m is not None},
                "counts": {p: [m.unit, m.step, m.period] for p, m in sorted(counts.items())}}

    def split(table: dict, spaced: bool) -> dict:
        return {p: m for p, m in table.items() if bool(_UNSPACED.search(p)) != spaced}

    return {"dateparser": dateparser.__version__, "groups": [
        group(*latin, True),
        group(split(fixed, True), split(counts, True), True),
        group(split(fixed, False), split(counts, False), False)]}


def dumps(table: dict) -> str:
    """`table` as JSON, one phrase a line (a new dateparser's changes read as a diff)."""
    def entries(items: dict) -> str:
        return ",\n".join(f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v)}"
                           for k, v in items.items())

    groups = ",\n".join(f'{{"spaced": {json.dumps(g["spaced"])},\n"fixed": {{\n'
                        f'{entries(g["fixed"])}\n}},\n"counts": {{\n{entries(g["counts"])}\n}}}}'
                        for g in table["groups"])
    return f'{{"dateparser": {json.dumps(table["dateparser"])},\n"groups": [\n{groups}\n]}}\n'


def _read(infos: Iterable[dict]) -> tuple[dict[str, Meaning | None], dict[str, Meaning]]:
    """The fixed phrases (None: read two ways) and count patterns of some locales."""
    fixed: dict[str, Meaning | None] = {}
    counts: dict[str, Meaning] = {}
    for info in infos:
        for key, said in info.get("relative-type", {}).items():
            found = _KEY.match(key)
            if found is None or int(found[2]) == 0 and found[3] == "day":
                continue  # hours, decades, and "today" (nothing to ground)
            meaning = Meaning(found[3], int(found[2]) * (1 if found[1] else -1), True)
            for phrase in said:
                phrase = phrase.lower()
                if _shortened(phrase):
                    continue
                fixed[phrase] = meaning if fixed.get(phrase, meaning) == meaning else None
        for key, patterns in info.get("relative-type-regex", {}).items():
            found = _COUNT_KEY.match(key)
            for pattern in patterns if found else ():
                if _DATEPARSER_NUMBER in pattern and \
                        not _shortened(pattern.replace(_DATEPARSER_NUMBER, "")):
                    counts[pattern] = Meaning(found[2], 1 if found[1] else -1, False)
    return fixed, counts


def _shortened(phrase: str) -> bool:
    """A shortening dateparser reads in dates ("wcz", "bu hf", "на пр нед"): a Latin word
    of at most three letters without a vowel, or a Russian stem cut before its ending."""
    words = _WORD.findall(phrase.lower())
    return not words or any(w in _SHORTENED for w in words) or any(
        len(w) <= 3 and not _BEYOND_LATIN.search(w) and not _VOWEL.search(w) for w in words)


def _compiled(fixed: dict[str, Meaning | None], counts: dict[str, Meaning], *,
              spaced: bool) -> Phrases:
    """The phrases (those read one way) and count patterns, by the word each match says."""
    bodies: dict[str, list[tuple[str, str]]] = {}
    meanings: dict[str, Meaning] = {}

    def add(name: str, body: str, meaning: Meaning, literal: str) -> None:
        words = _WORD.findall(literal.lower())
        if words:
            key = max(words, key=len) if spaced else words[0][0]
            bodies.setdefault(key, []).append((name, body))
            meanings[name] = meaning

    kept = sorted((p for p, m in fixed.items() if m is not None), key=lambda p: (-len(p), p))
    for i, phrase in enumerate(kept):
        add(f"p{i}", r"\s+".join(map(regex.escape, phrase.split())), fixed[phrase], phrase)
    for i, (pattern, meaning) in enumerate(sorted(counts.items())):
        add(f"c{i}", pattern.replace(_DATEPARSER_NUMBER, _NUMBER.format(i=i)), meaning,
            regex.sub(r"\(.*?\)|\[.*?\]|\\.|[?*+|]", " ", pattern))
    return Phrases(bodies, meanings, spaced=spaced)


if __name__ == "__main__":  # python -m rmm_core.language.timephrases [PATH]
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(str(TABLE))
    out.write_text(dumps(build()), encoding="utf-8")
