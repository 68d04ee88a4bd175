"""Trusted-side plans and comparisons: no sandbox needed, pure functions."""

from __future__ import annotations

import pytest

from rlvr.sandbox.decoding import MAX_SAME_HASH, JudgeLimit, Opaque, decode
from rlvr.sandbox.plans import BadTestsError, normalize_output, plan_stdio, plan_tests


def test_check_function_plan_calls_check_with_the_entry_point():
    plan = plan_tests("def check(candidate):\n    assert candidate(1) is True\n", "is_odd")
    assert plan.auto_check and plan.entry == "is_odd" and not plan.weaker


def test_a_test_file_that_calls_check_itself_is_not_called_twice():
    plan = plan_tests("def check(c):\n    assert c(1) == 1\ncheck(f)\n")
    assert not plan.auto_check


def test_loops_helpers_and_imports_of_trusted_modules_are_not_weaker():
    src = (
        "import math\nfrom collections import Counter\ndef helper(x):\n    return x + 1\nfor i in range(3):\n"
        "    assert f(i) == helper(i)\n"
    )
    assert plan_tests(src).weaker == ()


@pytest.mark.parametrize(
    ("src", "why"),
    [
        ("class T:\n    pass\nassert f(1) == 1\n", "ClassDef"),
        ("import os\nassert f(1) == 1\n", "imports os"),
        ("import re\nassert re.match('a', f(1))\n", "imports re"),
        ("assert f(1).__class__ == int\n", "__class__"),
        ("assert eval('f(1)') == 1\n", "eval"),
        ("with open('x') as fh:\n    assert f(fh) == 1\n", "With"),
    ],
)
def test_what_the_trusted_side_cannot_run_makes_the_plan_weaker_with_the_reason(src, why):
    assert any(why in r for r in plan_tests(src).weaker)


def test_the_prompts_complete_helpers_are_kept_for_the_trusted_side_but_not_the_entry_stub():
    prompt = 'import math\ndef poly(xs, x):\n    return sum(xs)\ndef find_zero(xs):\n    """doc"""\n'
    plan = plan_tests("def check(c):\n    assert c([1]) == 0\n", "find_zero", prompt)
    assert [getattr(n, "name", "import") for n in plan.prefix_nodes] == ["import", "poly"]


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


def test_opaque_values_equal_nothing_not_even_themselves():
    o = Opaque("AlwaysEqual")
    assert o != o and not (o == o)


def test_decode_rejects_malformed_tags():
    with pytest.raises(ValueError):
        decode(["zz", 1])


def test_decode_turns_tagged_json_into_plain_builtins():
    assert decode(["t", [["i", 1], ["s", "a"], ["S", [["b", True]]], ["I", "ff"]]]) == (1, "a", {True}, 255)


def test_decode_refuses_integers_built_to_share_one_hash():
    m = (1 << 61) - 1
    tagged = ["l", [["I", format(1 + k * m, "x")] for k in range(MAX_SAME_HASH + 1)]]
    with pytest.raises(JudgeLimit, match="share one hash"):
        decode(tagged)


def test_decode_accepts_many_equal_values():
    assert decode(["l", [["i", 0]] * 10_000]) == [0] * 10_000


def test_decode_refuses_answers_nested_too_deep_or_too_large():
    deep: list = ["n"]
    for _ in range(200):
        deep = ["l", [deep]]
    with pytest.raises(JudgeLimit, match="nested"):
        decode(deep)
    with pytest.raises(JudgeLimit, match="more than"):
        decode(["l", [["n"]] * 300_000])


def test_whole_output_is_compared_not_a_prefix():
    assert normalize_output("1\n2\n") != normalize_output("1\n")
    assert normalize_output("1  \n2\n\n") == normalize_output("1\n2")
