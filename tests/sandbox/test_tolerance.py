"""The one tolerance function (``rlvr.sandbox.inside.tolerance``), shared by the test child's
``float_tolerance`` and the stdin/stdout ``float`` checker."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from rlvr.sandbox.checkers import CheckerSpec, check_output
from rlvr.sandbox.inside.tolerance import numbers_close

ANY = st.floats(width=64)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
TOL = st.floats(min_value=0, max_value=1e300, allow_nan=False)


@given(ANY, ANY, TOL, TOL)
def test_tolerance_is_symmetric(a: float, b: float, rel: float, abs_: float) -> None:
    assert numbers_close(a, b, rel, abs_) == numbers_close(b, a, rel, abs_)


@given(FINITE, TOL, TOL)
def test_no_tolerance_makes_an_infinity_close_to_a_finite_number(x: float, rel: float, abs_: float) -> None:
    for inf in (math.inf, -math.inf):
        assert not numbers_close(inf, x, rel, abs_)


@given(ANY, TOL, TOL)
def test_nan_is_close_to_nothing_not_even_nan(x: float, rel: float, abs_: float) -> None:
    assert not numbers_close(math.nan, x, rel, abs_)


@given(TOL, TOL)
def test_an_infinity_is_close_only_to_the_same_infinity(rel: float, abs_: float) -> None:
    assert numbers_close(math.inf, math.inf, rel, abs_) and numbers_close(-math.inf, -math.inf, rel, abs_)
    assert not numbers_close(math.inf, -math.inf, rel, abs_)


@given(FINITE, FINITE, st.floats(0, 1), st.floats(0, 1))
def test_finite_numbers_follow_the_formula(a: float, b: float, rel: float, abs_: float) -> None:
    formula = a == b or abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)
    assert numbers_close(a, b, rel, abs_) == formula


@given(ANY, ANY, st.floats(0, 1))
def test_the_float_checker_uses_the_same_function(a: float, b: float, tol: float) -> None:
    spec = CheckerSpec("float", abs_tol=tol, rel_tol=tol)
    if repr(a) != repr(b):  # equal text is accepted as text, before any number is read
        assert check_output(spec, "", repr(b), repr(a)) == numbers_close(a, b, tol, tol)
