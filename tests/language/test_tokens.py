"""The tokeniser's ASCII and Latin paths give the terms its any-script path gives, and
texts read together the tokens they have alone."""

import re
import string
import unicodedata

import regex
from hypothesis import given
from hypothesis import strategies as st

from rmm_core.language.tokens import (
    _LATIN,
    _UNSPACED,
    _any_script_terms,
    _script_terms,
    english_stemmer,
    terms,
    tokenize,
    tokenize_together,
)

_RANGES = [(ord(span[0]), ord(span[2])) for span in re.findall(r".-.", _LATIN, re.S)]
LATIN = st.one_of(*(st.characters(min_codepoint=a, max_codepoint=b) for a, b in _RANGES))


def by_script(text: str) -> list[str]:
    return _script_terms(unicodedata.normalize("NFKC", text).lower())


@given(st.text(alphabet=string.printable))
def test_ascii_text_has_the_terms_of_any_script(text):
    assert terms(text) == by_script(text)


def test_latin_characters_are_letters_alike_in_both_paths():
    letter = regex.compile(rf"(?V1)[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]")
    unspaced = regex.compile(rf"(?V1)[[\p{{L}}\p{{M}}\p{{N}}]&&[{_UNSPACED}]]")
    differ = [hex(cp) for a, b in _RANGES for cp in range(a, b + 1)
              if bool(letter.match(chr(cp))) != bool(re.match(r"[^\W_]", chr(cp)))
              or unspaced.match(chr(cp))]
    assert len(_RANGES) == 7
    assert differ == []


@given(st.text(alphabet=st.one_of(LATIN, st.sampled_from(" ,.'’-"))))
def test_latin_text_has_the_terms_of_any_script(text):
    assert _any_script_terms(text) == by_script(text)


def test_text_beyond_ascii_takes_the_any_script_path():
    assert terms("Ich wohne in Köln, 東京 too") == ["ich", "wohne", "in", "köln", "東", "京",
                                                   "東京", "too"]
    assert terms("ﬁle Ⅻ") == _any_script_terms("ﬁle Ⅻ") == ["file", "xii"]
    assert terms("Schlüssel für Gohlis 🙂 — naïve café") == [
        "schlüssel", "für", "gohlis", "naïve", "café"]


@given(st.lists(st.text(alphabet=st.one_of(LATIN, st.sampled_from(" the and ing")))))
def test_texts_read_together_have_the_tokens_of_each_alone(texts):
    for stemmer in (None, english_stemmer()):
        assert tokenize_together(texts, stemmer, {"and"}) == tokenize(texts, stemmer, {"and"})
