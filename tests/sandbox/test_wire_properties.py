"""Hypothesis properties of the plain-data decoder (``sandbox/inside/wire.py``): what the test child
applies to everything the candidate child sends."""

from __future__ import annotations

import collections
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.sandbox.inside import wire

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.complex_numbers(allow_nan=False)
)
HASHABLE = st.recursive(SCALARS, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=8)
PLAIN = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(HASHABLE, inner, max_size=4)
        | st.sets(HASHABLE, max_size=4)
        | st.builds(collections.deque, st.lists(inner, max_size=3))
        | st.builds(bytearray, st.binary(max_size=8))
    ),
    max_leaves=12,
)
BUILTIN = (
    type(None),
    bool,
    int,
    float,
    str,
    bytes,
    complex,
    list,
    tuple,
    dict,
    set,
    frozenset,
    collections.deque,
    bytearray,
)


def _no_ref(*_):
    raise AssertionError("no references in plain data")


def _names(x):
    return sorted(t.__qualname__ for t in _types(x))  # a set's order is its own


def _types(x):
    yield type(x)
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _types(k)
            yield from _types(v)
    elif isinstance(x, (list, tuple, set, frozenset, collections.deque)):
        for v in x:
            yield from _types(v)


@settings(max_examples=150, deadline=None)
@given(PLAIN)
def test_plain_data_comes_back_equal_and_of_the_same_exact_types(value):
    back = wire.decode(json.loads(json.dumps(wire.encode(value, _no_ref))), _no_ref)
    assert back == value and _names(back) == _names(value)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=5) | st.lists(st.sampled_from(list("ltsfdbBcCODqnFMriT")) | inner, max_size=5)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_any_answer_decodes_to_builtins_only_or_is_refused(answer):
    try:
        back = wire.decode(answer, _no_ref)
    except (wire.WireError, ValueError, TypeError, OverflowError, ArithmeticError):
        return  # refused: the test child ends the sample
    assert all(
        t in BUILTIN or t.__module__ in ("collections", "fractions", "decimal", "builtins") for t in _types(back)
    )
