"""The shared text helpers and the one yes/no reader every LLM yes/no question uses."""

import pytest

from rmm_core.errors import InvalidInputError
from rmm_core.models.parse import ParseError, parse_yes_no, yes_no
from rmm_core.text import as_counter, clip, content_words, count_tokens, count_words


@pytest.mark.parametrize("answer, verdict", [
    ("Yes.", True), ("no", False), ("**YES**", True), ("Answer: no", False),
    ("  yes, the summary holds the dog's name", True), ("The answer is yes", True),
    ("Nope", None), ("yes-ish", True), ("", None), ("maybe", None),
    # a long explanation that only mentions the words later is not a verdict
    ("It is hard to tell whether the answer is yes or no", None),
])
def test_yes_no_reads_the_first_verdict_among_the_first_words(answer, verdict):
    assert yes_no(answer) is verdict
    if verdict is None:
        with pytest.raises(ParseError, match="yes or no"):
            parse_yes_no(answer)
    else:
        assert parse_yes_no(answer) is verdict


def test_content_words_drop_function_words_and_keep_any_script():
    assert content_words("What did you tell me about Lisbon in 2023?") == {"lisbon", "2023"}
    assert content_words("Мария переехала в Лиссабон") >= {"мария", "лиссабон"}
    assert content_words("a I the") == set()
    assert content_words("painting paints", lambda ws: [w[:5] for w in ws]) == {"paint"}


def test_counters_and_clip():
    assert count_tokens("abcd" * 5) == 5
    assert count_words(" two  words ") == 2
    assert as_counter("words") is count_words
    assert as_counter(len) is len
    with pytest.raises(InvalidInputError, match="tokens"):
        as_counter("bytes")
    assert clip("short  text", 20) == "short text"
    long = clip("word " * 100, 30)
    assert len(long) == 30
    assert long.endswith(" …")
    assert clip("a\nb", 10, flatten=False) == "a\nb"
