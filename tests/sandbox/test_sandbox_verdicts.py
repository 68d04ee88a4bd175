"""Verdicts are decided on the trusted side, for every test form, and a sample cannot choose its
own outcome class. Each wrong program below tries to collect reward (issue classes 1-4, 6, 8);
each correct one must still pass."""

from __future__ import annotations

import textwrap

import pytest

from rlvr.errors import VerifierError
from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests


def run(pool, code: str, tests: str, **opts):
    row = {"tests": tests, **opts.pop("row", {})}
    v = UnitTests(timeout=opts.pop("timeout", 2.0), memory_mb=opts.pop("memory_mb", 512), pool=pool, **opts)
    return v.verify(Sample(f"```python\n{code}```", row=row))


def outcome(pool, code: str, tests: str, **opts) -> str:
    v = run(pool, code, tests, **opts)
    return v.outcome.value + (f"/{v.error_kind}" if v.error_kind else "")


# -- class 1: comparisons, boolean forms and builtins are evaluated here, not in the child ------
PATCH_ISCLOSE = "import math\nmath.isclose = lambda *a, **k: True\ndef f(a, b):\n    return 0.0\n"
ALWAYS_EQUAL = (
    "class A:\n    def __eq__(self, o):\n        return True\n    __hash__ = object.__hash__\ndef c(x):\n"
    "    return A()\n"
)
CONTAINS = (
    "class A:\n    def __contains__(self, x):\n        return True\n    def __iter__(self):\n"
    "        return iter([])\ndef f(x):\n    return A()\n"
)
SHADOW = (
    "import builtins\nbuiltins.isinstance = lambda *a: True\nisinstance = lambda *a: True\ndef f(x):\n"
    "    return 'not a list'\n"
)


@pytest.mark.parametrize(
    ("name", "code", "tests"),
    [
        ("math.isclose patched by the solution", PATCH_ISCLOSE, "import math\nassert math.isclose(f(3, 4), 5.0)\n"),
        ("always-equal object inside all([...])", ALWAYS_EQUAL, "assert all([c(2) == 4, c(3) == 9])\n"),
        ("always-equal object inside any(generator)", ALWAYS_EQUAL, "assert any(c(x) == -1 for x in range(3))\n"),
        ("__contains__ for `in`", CONTAINS, "assert 7 in f(12)\n"),
        ("isinstance shadowed in the solution", SHADOW, "assert isinstance(f(1), list)\n"),
        (
            "comparison of a comparison",
            ALWAYS_EQUAL.replace("def c(x)", "def c(x, y)"),
            "assert (c(1, 2) == 3) == True\n",
        ),
        ("always-equal against an abs tolerance", ALWAYS_EQUAL, "assert abs(c(1) - 2.5) < 1e-6\n"),
        ("always-equal in and/or", ALWAYS_EQUAL, "assert c(1) == 1 and c(2) == 4 or c(3) == 9\n"),
        ("always-equal in a not-equal", ALWAYS_EQUAL, "assert not (c(1) != 1)\n"),
    ],
)
def test_a_forged_comparison_is_wrong(pool, name, code, tests):
    assert outcome(pool, code, tests) == "wrong", name


@pytest.mark.parametrize(
    ("code", "tests"),
    [
        (
            "import math\ndef f(a, b):\n    return math.hypot(a, b)\n",
            "import math\nassert math.isclose(f(3, 4), 5.0)\n",
        ),
        (
            "def c(x):\n    return x * x\n",
            "assert all([c(2) == 4, c(3) == 9])\nassert any(c(x) == 4 for x in range(3))\n",
        ),
        ("def f(x):\n    return [x, x + 1]\n", "assert 13 in f(12)\nassert isinstance(f(1), list)\n"),
        ("def c(a, b):\n    return a + b\n", "assert (c(1, 2) == 3) == True\nassert not (c(1, 1) != 2)\n"),
    ],
)
def test_the_same_forms_pass_a_correct_solution(pool, code, tests):
    v = run(pool, code, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


# -- class 2: loops, helpers and check(candidate) are test code, run here ------------------------
LOOP = "for i in range(5):\n    assert sq(i) == i * i\n"
HELPER = "def test():\n    for i in range(3):\n        assert sq(i) == i * i\ntest()\n"
CHECK = "def check(candidate):\n    data = [(2, 4), (3, 9)]\n    for x, y in data:\n        assert candidate(x) == y\n"


@pytest.mark.parametrize("tests", [LOOP, HELPER, CHECK], ids=["loop", "helper", "check"])
def test_loops_helpers_and_check_decide_on_the_trusted_side(pool, tests):
    row = {"entry_point": "sq"}
    good = run(pool, "def sq(x):\n    return x * x\n", tests, row=row)
    forged = run(pool, ALWAYS_EQUAL.replace("def c(x)", "def sq(x)"), tests, row=row)
    patched = run(pool, "import builtins\nbuiltins.AssertionError = None\ndef sq(x):\n    return -1\n", tests, row=row)
    assert good.outcome is Outcome.CORRECT, good.detail
    assert (forged.outcome, patched.outcome) == (Outcome.WRONG, Outcome.WRONG)
    assert "weaker" not in good.detail


LOOP_CONTROL = textwrap.dedent(
    """
    hits = []
    for i in range(5):
        if i == 1:
            continue
        if i == 3:
            break
        hits.append(sq(i))
    else:
        hits.append(-1)
    assert hits == [0, 4]
    n = 0
    while n < 3:
        n += 1
    else:
        hits.append(sq(n))
    assert hits == [0, 4, 9]
    while True:
        n += 1
        if n > 5:
            break
    else:
        hits.append(-2)
    assert hits == [0, 4, 9] and n == 6
    """
)


def test_break_continue_and_loop_else_in_the_test_file_follow_python(pool):
    v = run(pool, "def sq(x):\n    return x * x\n", LOOP_CONTROL)
    assert v.outcome is Outcome.CORRECT and "3/3 checks passed" in v.detail, v.detail


def test_expected_values_computed_by_the_test_never_reach_the_child(pool):
    # The program hunts the caller's frames and its own globals for the expected value.
    code = (
        "import sys, gc\n"
        "def f():\n"
        "    fr = sys._getframe(1)\n"
        "    while fr:\n"
        "        for v in list(fr.f_locals.values()) + list(fr.f_globals.values()):\n"
        "            if isinstance(v, int) and v > 10**6:\n"
        "                return v\n"
        "        fr = fr.f_back\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, dict) and o.get('expected', 0) > 10**6:\n"
        "            return o['expected']\n"
        "    return 0\n"
    )
    tests = "expected = 7 * 10**6 + 123\nassert f() == expected\n"
    assert outcome(pool, code, tests) == "wrong"


def test_the_prompts_own_helper_cannot_be_redefined_by_the_program(pool):
    # HumanEval/32 shape: the test relies on `poly` from the prompt; a program that redefines it
    # (to return 0 everywhere) must not pass.
    prompt = "def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\ndef find_zero(xs):\n    pass\n"
    tests = (
        "def check(candidate):\n    for xs in ([1, 2], [-6, 11, -6, 1]):\n"
        "        assert abs(poly(xs, candidate(xs))) < 1e-6\n"
    )
    v = UnitTests(timeout=2.0, pool=pool, prefix_column="prompt", extract="whole")
    row = {"tests": tests, "entry_point": "find_zero", "prompt": prompt}
    cheat = v.verify(Sample("    return 0.0\n\ndef poly(xs, x):\n    return 0\n", row=row))
    good = v.verify(
        Sample(
            "    lo, hi = -10.0, 10.0\n    for _ in range(200):\n        mid = (lo + hi) / 2\n"
            "        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n"
            "            lo = mid\n    return lo\n",
            row=row,
        )
    )
    assert (cheat.outcome, good.outcome) == (Outcome.WRONG, Outcome.CORRECT), (cheat.detail, good.detail)


# -- class 3: module-level statements run in order, with state ---------------------------------
STATEFUL = "s = Stack()\ns.push(1)\nassert s.size() == 1\ns.push(2)\nassert s.pop() == 2\nassert s.size() == 1\n"
STACK = (
    "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
    "        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n    def size(self):\n"
    "        return len(self.items)\n"
)


def test_a_correct_stateful_solution_passes_when_the_task_declares_program_objects(pool):
    v = run(pool, STACK, STATEFUL, program_objects=True)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_a_class_design_test_without_program_objects_is_unsupported_not_approximated(pool):
    v = run(pool, STACK, STATEFUL)
    assert v.outcome is Outcome.WRONG and v.score == 0.0 and v.detail.startswith("unsupported: "), v.detail
    assert "Stack" in v.detail


def test_a_solution_that_fails_in_plain_python_fails_in_order(pool):
    # size() is right only at the end of the test: judged at the final state it would pass.
    wrong = STACK.replace("return len(self.items)", "return 1")
    assert (
        outcome(
            pool,
            wrong.replace("self.items.append(x)", "self.items.append(x)"),
            STATEFUL.replace(
                "assert s.size() == 1\ns.push(2)", "assert s.size() == 1\ns.push(2)\nassert s.size() == 2"
            ),
        )
        == "wrong"
    )


def test_a_list_changed_in_place_by_the_program_is_seen_by_the_test(pool):
    tests = "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]\n"
    good = run(pool, "def sort_in_place(a):\n    a.sort()\n", tests)
    lazy = run(pool, "def sort_in_place(a):\n    return sorted(a)\n", tests)
    assert (good.outcome, lazy.outcome) == (Outcome.CORRECT, Outcome.WRONG), good.detail


def test_a_try_block_sees_the_programs_exception(pool):
    tests = "try:\n    f(-1)\n    assert False\nexcept ValueError:\n    pass\nassert f(2) == 2\n"
    good = run(pool, "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n", tests)
    bad = run(pool, "def f(x):\n    return x\n", tests)
    assert (good.outcome, bad.outcome) == (Outcome.CORRECT, Outcome.WRONG), good.detail


# -- class 4: Python's own comparison rules -------------------------------------------------------
def test_not_equal_follows_python_for_bool_and_int(pool):
    # Python: False != 0 is False, so the assert fails.
    assert outcome(pool, "def c(x):\n    return False\n", "assert c(7) != 0\n") == "wrong"
    assert outcome(pool, "def c(x):\n    return 3\n", "assert c(7) != 0\n") == "correct"


# -- class 6: no self-masking -----------------------------------------------------------------------
ADD = "assert add(2, 3) == 5\nassert add(1, 1) == 2\n"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("raise MemoryError", "def add(a, b):\n    raise MemoryError\n"),
        ("MemoryError at load", "raise MemoryError\n"),
        ("os._exit(71)", "import os\ndef add(a, b):\n    os._exit(71)\n"),
        ("SIGKILL to itself", "import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n"),
        (
            "SIGXCPU to itself",
            "import os, signal\ndef add(a, b):\n    signal.signal(signal.SIGXCPU, signal.SIG_DFL)\n"
            "    os.kill(os.getpid(), signal.SIGXCPU)\n",
        ),
        (
            "close every pipe and sleep",
            "import os, time\ndef add(a, b):\n    os.closerange(3, 256)\n    time.sleep(30)\n",
        ),
        (
            "fail first, then hang",
            "import time\ndef add(a, b):\n    if a == 2:\n        return 0\n    time.sleep(30)\n",
        ),
    ],
)
@pytest.mark.parametrize("limits", ["mask", "wrong"])
def test_a_wrong_program_cannot_pick_its_own_outcome_class(pool, name, code, limits):
    assert outcome(pool, code, ADD, limits_exceeded=limits) == "wrong", name


def test_closing_the_pipes_does_not_outlast_the_deadline(pool):
    import time

    t0 = time.monotonic()
    run(pool, "import os, time\nos.closerange(3, 256)\ntime.sleep(60)\n", ADD, timeout=1.0)
    assert time.monotonic() - t0 < 10


def test_memory_hit_for_real_is_a_memory_error_measured_by_the_worker(full_pool):
    grow = "def add(a, b):\n    x = []\n    while True:\n        x.append(bytearray(1 << 20))\n"
    v = run(full_pool, grow, ADD, timeout=5.0, memory_mb=256)
    assert (v.outcome, v.error_kind) == (Outcome.ERROR, "memory"), v.detail
    assert "measured" in v.detail


def test_an_infinite_loop_is_still_a_timeout(pool):
    assert outcome(pool, "def add(a, b):\n    while True:\n        pass\n", ADD, timeout=1.0) == "error/timeout"


# -- class 8: the trusted side is bounded -----------------------------------------------------------
COLLIDE = "M = (1 << 61) - 1\ndef f():\n    return {1 + k * M for k in range(20000)}\n"


@pytest.mark.parametrize(
    ("name", "code", "tests"),
    [
        (
            "an answer nested 5000 deep",
            "def f():\n    x = []\n    for _ in range(5000):\n        x = [x]\n    return x\n",
            "assert f() == []\n",
        ),
        ("5 MiB of text", "def f():\n    return 'x' * (5 << 20)\n", "assert f() == 'x'\n"),
        ("a sequence blown up by the test", "def f():\n    return 10**9\n", "assert 'ab' * f() == ''\n"),
    ],
)
def test_an_answer_over_a_limit_is_wrong(pool, name, code, tests):
    v = run(pool, code, tests)
    assert v.outcome is Outcome.WRONG, (name, v.detail)


@pytest.mark.parametrize(
    ("name", "code", "tests"),
    [
        ("a set of integers built to share one hash", COLLIDE.replace("20000", "2000"), "assert f() == {1}\n"),
        (
            "a list of integers built to share one hash",
            COLLIDE.replace("{1 + k * M for k in range(20000)}", "[1 + k * M for k in range(60000)]"),
            "assert set(f()) == {1}\n",
        ),
        ("a huge power", "def f():\n    return 10**5\n", "assert 7 ** f() ** 3 == 0\n"),
        ("a three-argument pow", "def f():\n    return 1 << 200000\n", "assert pow(3, f(), f() + 1) == 0\n"),
        (
            "a product of huge numbers",
            "def f():\n    return [(1 << 4000) + k for k in range(4000)]\n",
            "import math\nassert math.prod(f()) == 0\n",
        ),
        (
            "a quadratic sum of lists",
            "def f():\n    return [[0] * 10 for _ in range(50000)]\n",
            "assert sum(f(), []) == []\n",
        ),
    ],
)
def test_costly_work_on_the_programs_values_runs_in_the_test_child_never_the_trainer(pool, name, code, tests):
    # Trainer DoS (issue 24: a 3-argument pow ran for minutes in the trainer). Now every
    # operation of the test runs in the sandboxed test child, under the sample's deadline: the
    # verdict comes back, never correct, whatever the cost.
    v = run(pool, code, tests, timeout=1.0)
    assert v.outcome is not Outcome.CORRECT, (name, v.detail)
    assert v.outcome is Outcome.WRONG or v.error_kind == "timeout", (name, v.detail)


def test_a_correct_solution_still_passes_after_every_attack(pool):
    v = run(pool, "def add(a, b):\n    return a + b\n", ADD)
    assert v.outcome is Outcome.CORRECT


# -- what cannot run in the sandbox is never a silent reward ---------------------------------------
FOREIGN_TESTS = "import numpy\nassert add(1, 2) == 3\n"


def test_a_test_that_imports_outside_the_standard_library_is_a_weaker_error(pool):
    v = UnitTests(timeout=2.0, pool=pool)
    verdict = v.verify(Sample("```python\ndef add(a, b):\n    return a + b\n```", row={"tests": FOREIGN_TESTS}))
    assert (verdict.outcome, verdict.error_kind) == (Outcome.ERROR, "weaker") and verdict.score is None
    assert "numpy" in verdict.detail and v.counts["weaker"] == 1
    assert v.weaker_reasons({"tests": FOREIGN_TESTS}) and not v.weaker_reasons({"tests": ADD})


def test_weaker_run_is_refused_with_the_reason():
    with pytest.raises(VerifierError, match="weaker.*remove the setting"):
        UnitTests(weaker="run")


CLASS_TESTS = "class T:\n    def run(self):\n        assert add(1, 2) == 3\nT().run()\n"


def test_classes_and_with_in_the_test_file_run_as_in_python(pool):
    assert outcome(pool, "def add(a, b):\n    return a + b\n", CLASS_TESTS) == "correct"
    assert outcome(pool, "def add(a, b):\n    return 0\n", CLASS_TESTS) == "wrong"
    with_tests = "import contextlib\nwith contextlib.suppress(KeyError):\n    assert add(1, 2) == 3\n"
    assert outcome(pool, "def add(a, b):\n    return a + b\n", with_tests) == "correct"
    assert outcome(pool, "def add(a, b):\n    return 0\n", with_tests) == "wrong"


def test_expected_values_never_reach_the_sandbox(pool):
    # The program searches everything in its process for the test's source or the expected
    # integer and returns it if found: it is not there to find.
    code = (
        "import gc\n"
        "def add(a, b):\n"
        "    target, source = int(''.join(['98765', '4321'])), ''.join(['expect', 'ed = '])\n"  # no constants
        "    for o in gc.get_objects():\n"
        "        items = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()\n"
        "        for v in items:\n"
        "            if (isinstance(v, str) and source in v) or (type(v) is int and v == target):\n"
        "                return target\n"
        "    return a + b\n"
    )
    v = run(pool, code, "expected = 987654321\nassert add(2, 3) == expected\n")
    assert v.outcome is Outcome.WRONG and v.details[0]["got"] == "5", v.details


def test_junk_written_on_the_answer_channel_is_never_a_pass(pool):
    # The program writes frames of its own (junk, and answers it could have returned anyway) to
    # every fd before the real answers: they can only stand for values it could return.
    code = (
        "import os, json, struct\n"
        "def add(a, b):\n"
        "    for fd in range(3, 64):\n"
        "        for obj in (['ok', ['i', 5]], 7, ['exc', 'x'], {'ok': 1}):\n"
        "            data = json.dumps(obj).encode()\n"
        "            try:\n"
        "                os.write(fd, struct.pack('>I', len(data)) + data)\n"
        "            except OSError:\n"
        "                pass\n"
        "    return 0\n"
    )
    assert outcome(pool, code, ADD) == "wrong"


def test_float_tolerance_applies_to_equality_only_when_asked(pool):
    code = "def f():\n    return 0.1 + 0.2\n"
    assert outcome(pool, code, "assert f() == 0.3\n") == "wrong"
    assert (
        outcome(pool, code, "assert f() == 0.3\nassert [f()] == [0.3]\nassert not (f() != 0.3)\n", float_tolerance=1e-9)
        == "correct"
    )


def test_failing_a_test_then_hitting_the_memory_limit_for_real_is_still_wrong(full_pool):
    grow = (
        "def add(a, b):\n    if a == 2:\n        return 0\n    x = []\n    while True:\n"
        "        x.append(bytearray(1 << 20))\n"
    )
    v = run(full_pool, grow, ADD, timeout=5.0, memory_mb=256)
    assert v.outcome is Outcome.WRONG, v.detail


def test_the_programs_own_objects_answer_len_iteration_and_methods(pool):
    code = (
        "class Bag:\n    def __init__(self):\n        self.items = [3, 1]\n    def __len__(self):\n"
        "        return len(self.items)\n    def __iter__(self):\n        return iter(self.items)\n"
        "    def add(self, x):\n        self.items.append(x)\n        return self\n"
        "def f():\n    return Bag()\ndef g():\n    return 1\n"
    )
    tests = "b = f()\nassert len(b) == 2\nb.add(5)\nassert sorted(b) == [1, 3, 5]\nassert 5 in b\nassert g() == 1\n"
    assert outcome(pool, code, tests, program_objects=True) == "correct"
    assert outcome(pool, code.replace("return len(self.items)", "return 3"), tests, program_objects=True) == "wrong"


def test_a_function_of_the_test_passed_to_the_program_is_called_back(pool):
    tests = "assert apply(lambda x: x + 1, 2) == 3\nassert apply(str.upper, 'a') == 'A'\n"
    assert outcome(pool, "def apply(fn, x):\n    return fn(x)\n", tests) == "correct"
    assert outcome(pool, "def apply(fn, x):\n    return fn(x) + 1\n", tests) == "wrong"


def test_results_kept_in_variables_compare_by_value_inside_containers_and_sorted(pool):
    tests = "r = f(2)\nq = [f(3)]\nassert r == 4\nassert q == [9]\nassert sorted([f(1), r]) == [1, 4]\n"
    assert outcome(pool, "def f(x):\n    return x * x\n", tests) == "correct"
    assert outcome(pool, "def f(x):\n    return x * x if x != 1 else 5\n", tests) == "wrong"


def test_conversions_and_operators_on_the_programs_objects_follow_python(pool):
    code = (
        "class Money:\n    def __init__(self, c):\n        self.c = c\n    def __int__(self):\n        return self.c\n"
        "    def __float__(self):\n        return self.c / 100\n    def __index__(self):\n        return self.c\n"
        "    def __add__(self, o):\n        return Money(self.c + o)\n    def __len__(self):\n        return 3\n"
        "def f(c):\n    return Money(c)\nDEEP = []\nfor _ in range(300):\n    DEEP = [DEEP]\n"
    )
    tests = (
        "m = f(250)\nassert int(m) == 250 and float(m) == 2.5 and [0] * 3 == [0] * len(m)\n"
        "assert int(m + 5) == 255 and 'abcd'[f(1)] == 'b'\nassert len(DEEP) == 1\n"
    )
    assert outcome(pool, code, tests, program_objects=True) == "correct"
    assert outcome(pool, code.replace("return self.c / 100", "return 0.0"), tests, program_objects=True) == "wrong"
