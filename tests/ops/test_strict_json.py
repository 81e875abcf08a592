"""`ops.strict_json`: JSON from outside read strictly, every refusal an `InvalidInputError`
naming what was read."""

from __future__ import annotations

import pytest

from rmm_core.errors import InvalidInputError
from rmm_core.ops.strict_json import MAX_DEPTH, loads


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_nan_and_infinity_literals_are_refused(text):
    with pytest.raises(InvalidInputError, match=r"^the file is not JSON: -?\w+ is not a JSON"):
        loads(text, "the file")


@pytest.mark.parametrize("number", ["1e999", "-1E400", "2.5e308", "1" + "0" * 400,
                                    "-" + "9" * 5000, "1797693134862315708" + "0" * 291])
def test_a_number_no_float_holds_is_refused_however_spelt(number):
    """`1e999` is valid JSON that Python's json reads as infinity; an integer past a float's
    range becomes infinity wherever it is used as one (and past 4,300 digits Python's json
    raises a plain ValueError)."""
    with pytest.raises(InvalidInputError, match=r"^the file holds the number .*beyond a "
                                                r"64-bit float's range \(read as infinity\)"):
        loads(f'{{"k": [{number}]}}', "the file")


def test_numbers_a_float_holds_are_read_as_they_are():
    top = int(1.7976931348623157e308)
    assert loads(f'[1.7976931348623157e308, -{top}, 1e-99999, 3, 0.5, -0.0]') == \
        [1.7976931348623157e308, -top, 0.0, 3, 0.5, -0.0]


def test_a_long_number_is_shown_shortened():
    with pytest.raises(InvalidInputError, match=r"the number 100000000000\.\.\.00000000 "
                                                r"\(401 characters\)"):
        loads("1" + "0" * 400)


def test_nesting_is_bounded():
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with pytest.raises(InvalidInputError, match=f"nests deeper than {MAX_DEPTH} levels"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
