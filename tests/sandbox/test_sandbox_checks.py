"""Plans (in the trainer) and the wire format between the children: pure functions, no sandbox."""

from __future__ import annotations

import collections
import decimal
import fractions
import json

import pytest

from rlvr.sandbox.inside import wire
from rlvr.sandbox.plans import BadTestsError, plan_stdio, plan_tests


def test_check_function_plan_calls_check_with_the_entry_point():
    plan = plan_tests("def check(candidate):\n    assert candidate(1) is True\n", "is_odd")
    assert plan.auto_check and plan.entry == "is_odd" and not plan.weaker


def test_a_test_file_that_calls_check_itself_is_not_called_twice():
    plan = plan_tests("def check(c):\n    assert c(1) == 1\ncheck(f)\n")
    assert not plan.auto_check


def test_classes_with_loops_helpers_and_standard_imports_are_not_weaker():
    src = (
        "import math, re, os\nfrom collections import Counter\nclass T:\n    pass\ndef helper(x):\n"
        "    return x + 1\nfor i in range(3):\n    with open('x') if False else T() as t:\n"
        "        assert f(i) == helper(i)\n"
    )
    assert plan_tests(src).weaker == ()


def test_an_import_outside_the_standard_library_makes_the_plan_weaker_with_the_reason():
    assert any("numpy" in r for r in plan_tests("import numpy as np\nassert f(1) == 1\n").weaker)
    assert any("pandas" in r for r in plan_tests("assert f(1) == 1\n", "f", "import pandas\n").weaker)


def test_the_prompts_complete_helpers_are_kept_for_the_test_child_but_not_the_entry_stub():
    prompt = 'import math\ndef poly(xs, x):\n    return sum(xs)\ndef find_zero(xs):\n    """doc"""\n'
    plan = plan_tests("def check(c):\n    assert c([1]) == 0\n", "find_zero", prompt)
    assert plan.helpers == "import math\ndef poly(xs, x):\n    return sum(xs)"


def test_each_asserts_source_is_kept_by_position_for_the_review_page():
    plan = plan_tests("x = 1\nassert f(x) == 2\nfor i in range(2):\n    assert f(i) >= 0, 'msg'\n")
    assert plan.asserts == {(2, 0): "assert f(x) == 2", (4, 4): "assert f(i) >= 0, 'msg'"}


def test_tests_that_do_not_parse_are_a_format_error():
    with pytest.raises(BadTestsError, match="do not parse"):
        plan_tests("assert f(1) ==")


def test_tests_without_an_assert_are_a_format_error():
    with pytest.raises(BadTestsError, match="no assert"):
        plan_tests("f(1)\n")


def test_check_without_an_entry_point_is_a_format_error():
    with pytest.raises(BadTestsError, match="entry point"):
        plan_tests("def check(candidate):\n    assert candidate(1) == 1\n", None)


def test_stdio_cases_accept_apps_style_inputs_and_outputs():
    plan = plan_stdio({"inputs": ["1\n"], "outputs": ["2\n"]})
    assert plan.inputs == ("1\n",) and plan.outputs == ("2\n",)


def test_stdio_cases_with_a_missing_output_are_a_format_error():
    with pytest.raises(BadTestsError, match="case 0"):
        plan_stdio([{"input": "1"}])


def _no_ref(tag, n):
    raise AssertionError("no handles here")


@pytest.mark.parametrize(
    "value",
    [
        [1, (2, 3.5), {"a": {1, 2}}, frozenset({4}), b"x", bytearray(b"y"), 2**70, -(2**64), 1j, None, True],
        collections.Counter("hello"),
        collections.OrderedDict([("b", 1), ("a", 2)]),
        collections.defaultdict(list, {1: [2]}),
        collections.deque([1, 2], maxlen=3),
        collections.namedtuple("P", "x y")(1, 2),
        fractions.Fraction(3, 7),
        decimal.Decimal("1.10"),
        range(1, 10, 3),
    ],
)
def test_values_survive_the_wire_as_what_they_are(value):
    back = wire.decode(json.loads(json.dumps(wire.encode(value, lambda o: ["h", 0]))), _no_ref)
    assert back == value and type(back).__name__ == type(value).__name__


def test_a_subclass_of_a_builtin_is_not_plain_data():
    class Sneaky(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    seen = []
    wire.encode([Sneaky(0), 1], lambda o: seen.append(o) or ["h", 0, "o", "Sneaky"])
    assert len(seen) == 1 and type(seen[0]) is Sneaky


def test_a_named_tuple_with_a_method_of_its_own_is_not_plain_data():
    class P(collections.namedtuple("P", "x y")):
        def __eq__(self, other):
            return True

        __hash__ = tuple.__hash__

    Q = collections.namedtuple("Q", "x y")
    Q.__repr__ = lambda self: "forged"
    R = collections.namedtuple("R", "x y")
    seen = []
    for value in (P(1, 2), Q(1, 2)):
        wire.encode(value, lambda o: seen.append(o) or ["h", 0, "o", "P"])
    assert [type(v) for v in seen] == [P, Q]
    assert wire.encode(R(1, 2), _no_ref) == ["n", "R", ["x", "y"], 1, 2]


@pytest.mark.parametrize("cls", [int, str, list, dict, ValueError, type, object])
def test_a_builtin_class_travels_as_itself(cls):
    assert wire.decode(json.loads(json.dumps(wire.encode(cls, _no_ref))), _no_ref) is cls


@pytest.mark.parametrize(
    "bad",
    [
        ["zz", 1],
        ["l", ["x"]],
        ["i", "g" * 10],
        ["d", 1],
        ["n", "P", ["x"], 1, 2],
        ["F", 1, 0],
        {"a": 1},
        [],
        ["h", "1"],
    ],
)
def test_decode_rejects_malformed_values(bad):
    with pytest.raises(ValueError):
        wire.decode(bad, lambda tag, n: None)


def test_decode_refuses_answers_nested_too_deep_or_too_large():
    deep: list = ["l"]
    for _ in range(wire.MAX_DEPTH + 5):
        deep = ["l", deep]
    with pytest.raises(wire.WireError, match="nested"):
        wire.decode(deep, _no_ref)
    with pytest.raises(wire.WireError, match="more than"):
        wire.decode(["l", *[1] * 10], _no_ref, budget=[5])
    with pytest.raises(ValueError):
        wire.decode(["i", "f" * (wire.MAX_INT_HEX + 1)], _no_ref)
