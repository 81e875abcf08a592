"""The tokeniser's ASCII path gives the terms its any-script path gives."""

import string

from hypothesis import given
from hypothesis import strategies as st

from rmm_core.language.tokens import _any_script_terms, terms


@given(st.text(alphabet=string.printable))
def test_ascii_text_has_the_terms_of_any_script(text):
    assert terms(text) == _any_script_terms(text)


def test_text_beyond_ascii_takes_the_any_script_path():
    assert terms("Ich wohne in Köln, 東京 too") == ["ich", "wohne", "in", "köln", "東", "京",
                                                   "東京", "too"]
    assert terms("ﬁle Ⅻ") == _any_script_terms("ﬁle Ⅻ") == ["file", "xii"]
