"""Trusted-side plans and comparisons: no sandbox needed, pure functions."""

from __future__ import annotations

import pytest

from rlvr.sandbox.checks import (
    BadTestsError,
    Opaque,
    Pair,
    decode,
    judge,
    normalize_output,
    plan_asserts,
    plan_stdio,
    same,
)


def test_equality_assert_becomes_a_pair_with_the_expected_value_kept_outside():
    plan = plan_asserts("assert add(2, 3) == 5\n")
    assert plan.pairs == (Pair("add(2, 3)", 5, "eq"),)
    assert "5" not in plan.setup and not plan.residual


def test_expected_value_on_the_left_is_recognised():
    assert plan_asserts("assert [1, 2] == f(x=1)").pairs[0] == Pair("f(x=1)", [1, 2], "eq")


def test_abs_difference_assert_becomes_a_tolerance_pair():
    plan = plan_asserts("def check(candidate):\n    assert abs(candidate([1.0]) - 2.0/3.0) < 1e-6\n", "mad")
    pair = plan.pairs[0]
    assert (pair.call, pair.op, pair.tol) == ("candidate([1.0])", "lt", 1e-6)
    assert pair.expected == pytest.approx(2.0 / 3.0)


def test_check_function_binds_candidate_to_the_entry_point_in_setup():
    plan = plan_asserts("def check(candidate):\n    assert candidate(1) is True\n", "is_odd")
    assert "candidate = is_odd" in plan.setup
    assert plan.pairs == (Pair("candidate(1)", True, "eq"),)


def test_loop_asserts_stay_in_the_child_and_flag_the_plan_weaker():
    plan = plan_asserts("def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i + 1\n", "inc")
    assert not plan.pairs and plan.weaker and plan.n_tests == 1


def test_assert_on_a_local_variable_is_not_converted():
    plan = plan_asserts("def check(candidate):\n    x = [3, 1]\n    assert candidate(x) == 2\n", "f")
    assert not plan.pairs and plan.weaker


def test_assert_true_is_not_counted_as_a_test():
    plan = plan_asserts("def check(candidate):\n    assert True\n    assert candidate(1) == 1\n", "f")
    assert plan.n_tests == 1


def test_tests_that_do_not_parse_are_a_format_error():
    with pytest.raises(BadTestsError, match="do not parse"):
        plan_asserts("assert f(1) ==")


def test_check_without_an_entry_point_is_a_format_error():
    with pytest.raises(BadTestsError, match="entry point"):
        plan_asserts("def check(candidate):\n    assert candidate(1) == 1\n", None)


def test_stdio_cases_accept_apps_style_inputs_and_outputs():
    plan = plan_stdio({"inputs": ["1\n"], "outputs": ["2\n"]})
    assert plan.inputs == ("1\n",) and plan.outputs == ("2\n",)


def test_stdio_cases_with_a_missing_output_are_a_format_error():
    with pytest.raises(BadTestsError, match="case 0"):
        plan_stdio([{"input": "1"}])


def test_bool_never_equals_int():
    assert not same(True, 1) and not same(1, True)


def test_int_and_float_that_are_equal_compare_equal():
    assert same(3, 3.0) and not same(3, 3.5)


def test_list_never_equals_tuple():
    assert not same([1, 2], (1, 2))


def test_float_tolerance_applies_only_when_asked():
    assert not same(0.1 + 0.2, 0.3) and same(0.1 + 0.2, 0.3, tol=1e-9)


def test_opaque_values_equal_nothing_not_even_themselves():
    o = Opaque("AlwaysEqual")
    assert o != o and not same(o, o)


def test_decode_rejects_malformed_tags():
    with pytest.raises(ValueError):
        decode(["zz", 1])


def test_decode_turns_tagged_json_into_plain_builtins():
    assert decode(["t", [["i", 1], ["s", "a"], ["S", [["b", True]]]]]) == (1, "a", {True})


def test_whole_output_is_compared_not_a_prefix():
    assert normalize_output("1\n2\n") != normalize_output("1\n")
    assert normalize_output("1  \n2\n\n") == normalize_output("1\n2")


def test_a_missing_child_result_fails_every_test():
    plan = plan_asserts("assert f(1) == 1\nassert f(2) == 2\n")
    j = judge(plan, {"calls": [["ok", ["i", 1]]]})
    assert (j.status, j.passed) == ("failed", 0)


def test_a_forged_status_field_grants_nothing():
    plan = plan_asserts("assert f(1) == 1\n")
    assert judge(plan, {"status": "passed", "passed": 1, "calls": []}).status == "failed"


def test_an_exception_in_a_call_fails_only_that_test():
    plan = plan_asserts("assert f(1) == 1\nassert f(2) == 2\n")
    j = judge(plan, {"calls": [["exc", "ZeroDivisionError"], ["ok", ["i", 2]]]})
    assert (j.status, j.passed, j.total) == ("failed", 1, 2)
