"""Issue 33: ``unit_tests`` fails closed. A ``correct`` verdict implies plain CPython passes; what
the boundary cannot keep exact is ``unsupported`` (wrong, scored 0, counted). One test per
property, by class; the programs are adversarial on purpose."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards.base import Outcome, Sample, Verdict
from rlvr.rewards.code import UnitTests
from rlvr.sandbox.inside.tolerance import numbers_close

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(pool, code: str, tests: str, **opts) -> Verdict:
    v = UnitTests(timeout=opts.pop("timeout", 3.0), memory_mb=opts.pop("memory_mb", 512), pool=pool, **opts)
    return v.verify(Sample(f"```python\n{code}```", row={"tests": tests, **opts.pop("row", {})}))


def unsupported(v: Verdict) -> bool:
    return v.outcome is Outcome.WRONG and v.score == 0.0 and v.detail.startswith("unsupported: ")


# -- 1: tolerance ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["float('inf')", "float('-inf')", "float('nan')"])
def test_with_a_tolerance_a_non_finite_result_never_equals_a_finite_expected_value(pool, value):
    tests = "assert f() == 2.5\nassert [f()] == [2.5]\nassert not (f() != 2.5)\n"
    v = run(pool, f"def f():\n    return {value}\n", tests, float_tolerance=1e-6)
    assert v.outcome is Outcome.WRONG, v.detail


def test_with_a_tolerance_an_infinity_equals_the_same_infinity(pool):
    v = run(pool, "def f():\n    return float('inf')\n", "assert f() == float('inf')\n", float_tolerance=0.5)
    assert v.outcome is Outcome.CORRECT, v.detail


PAIRS = st.lists(
    st.tuples(st.floats(width=64), st.floats(width=64) | st.integers(-(10**6), 10**6)), min_size=1, max_size=8
)


@FAST
@given(pairs=PAIRS, tol=st.sampled_from([1e-9, 1e-6, 0.5, 1e300]))
def test_the_test_childs_tolerance_is_the_one_function(pool, pairs, tol):
    values = ", ".join(f"float({str(a)!r})" for a, _ in pairs)
    code = f"VALUES = [{values}]\ndef f(i):\n    return VALUES[i]\n"
    tests = "".join(
        f"try:\n    assert f({i}) == {f'float({str(b)!r})' if isinstance(b, float) else b}\n"
        "except AssertionError:\n    pass\n"
        for i, (_, b) in enumerate(pairs)
    )
    v = run(pool, code, tests, float_tolerance=tol)
    got = [d["status"] == "passed" for d in v.details]
    assert got == [numbers_close(a, float(b), tol, tol) for a, b in pairs], v.details


# -- 2: the program's end is final ----------------------------------------------------------------
@pytest.mark.parametrize(
    "ending", ["import os; os._exit(0)", "import os; os.close(3); os.close(4); import time; time.sleep(9)"]
)
@pytest.mark.parametrize("catch", ["except:", "except BaseException:", "except Exception:"])
def test_no_except_clause_of_the_test_turns_the_programs_end_into_a_pass(pool, ending, catch):
    tests = f"try:\n    f(1)\n{catch}\n    pass\nassert True\n"
    v = run(pool, f"def f(x):\n    {ending}\n", tests)
    assert v.outcome is not Outcome.CORRECT, v.detail


def test_the_programs_end_inside_a_call_back_of_the_test_is_final(pool):
    tests = "try:\n    f(lambda: 1)\nexcept BaseException:\n    pass\nassert True\n"
    v = run(pool, "import os\ndef f(g):\n    g()\n    os._exit(0)\n", tests)
    assert v.outcome is Outcome.WRONG, v.detail


# -- 3: the test child acts on nothing the program says -------------------------------------------
def test_a_name_the_test_did_not_ask_for_ends_the_sample(pool):
    forge = (
        "import sys\nS = sys.modules['inside.child'].Server\n_g = S.globals\n"
        "S.globals = lambda self, wanted: _g(self, wanted) + [['isinstance', ['T', 'object']]]\n"
    )
    v = run(pool, forge + "def f():\n    return 1\n", "assert f() == 1\n")
    assert v.outcome is Outcome.WRONG, v.detail


def test_a_standard_module_the_program_rebinds_is_the_test_childs_own_import(pool):
    code = (
        "import math\nclass Yes:\n    def __getattr__(self, n):\n        return lambda *a, **k: True\n"
        "math = Yes()\ndef f():\n    return 0.0\n"
    )
    v = run(pool, code, "assert math.isclose(f(), 2.0)\n")
    assert v.outcome is Outcome.WRONG, v.detail


def test_a_forged_load_answer_binds_no_standard_object(pool):
    forge = (
        "import sys\nS = sys.modules['inside.child'].Server\n"
        "S.globals = lambda self, wanted: [[n, ['T', 'object']] for n in wanted]\n"
    )
    v = run(pool, forge + "def f():\n    return 0\n", "assert f() == 1\n")
    assert v.outcome is Outcome.WRONG, v.detail


# -- 4 and 6: the proxy picks no semantics; expected values stay in the test ----------------------
LIAR = (
    "class Liar:\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n        return True\n"
    "    def __contains__(self, x):\n        return False\n    def __iter__(self):\n        return iter([1, 2, 3])\n"
    "    def __sub__(self, o):\n        return 0\n    def __rsub__(self, o):\n        return 0\n"
    "    __hash__ = object.__hash__\ndef f():\n    return Liar()\n"
)


@pytest.mark.parametrize(
    "tests",
    [
        "assert f() == 4\n",
        "assert 4 == f()\n",
        "assert 1 in f()\n",
        "assert abs(f() - 2.5) < 1e-9\n",
        "assert f() != 4\n",
    ],
)
def test_without_program_objects_a_program_object_decides_nothing(pool, tests):
    assert unsupported(run(pool, LIAR, tests))


@pytest.mark.parametrize(
    ("tests", "cpython"),
    [
        ("assert 2 not in f()\n", "correct"),  # __contains__, not iteration
        ("assert f() != 4\n", "correct"),  # __ne__, not identity
        ("assert 4 == f()\n", "correct"),  # reflected __eq__
        ("assert 2.5 - f() == 0\n", "correct"),  # __rsub__
        ("assert 2 in list(f())\n", "correct"),
        ("assert 5 in list(f())\n", "wrong"),
    ],
)
def test_with_program_objects_every_operation_dispatches_as_in_cpython(pool, tests, cpython):
    assert run(pool, LIAR, tests, program_objects=True).outcome.value == cpython


# -- 7: partial credit per assert statement -------------------------------------------------------
def test_a_loop_over_the_programs_output_is_one_statement(pool):
    tests = "for x in f():\n    assert x == 1\nassert g() == 2\nassert h() == 3\n"
    code = "def f():\n    return [1] * 5000\ndef g():\n    return 0\ndef h():\n    return 3\n"
    v = run(pool, code, tests, partial_credit=True)
    assert v.outcome is Outcome.WRONG and v.score == pytest.approx(1 / 3), v.detail


@FAST
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 30)), min_size=1, max_size=6))
def test_partial_credit_is_passed_statements_over_statements(pool, plan):
    tests = "".join(
        f"for _ in range({reps}):\n    try:\n        assert f({i}) == {i if ok else -1}\n"
        "    except AssertionError:\n        pass\n"
        for i, (ok, reps) in enumerate(plan)
    )
    v = run(pool, "def f(i):\n    return i\n", tests, partial_credit=True)
    want = sum(ok for ok, _ in plan) / len(plan)
    assert v.score == pytest.approx(want if want < 1 else 1.0), (v.detail, tests)


# -- 8: a failure report never asks the program ---------------------------------------------------
HANGING_REPR = (
    "class H:\n    def __repr__(self):\n        while True:\n            pass\n    __str__ = __repr__\n"
    "    def __eq__(self, o):\n        return False\n    __hash__ = object.__hash__\ndef f():\n    return H()\n"
)


@pytest.mark.parametrize(
    "tests",
    ["assert [f()] == [1]\n", "assert {'k': f()} == {'k': 1}\n", "raise ValueError(f())\n", "assert f() == 1, [f()]\n"],
)
def test_a_failure_report_never_asks_the_program_for_a_repr(pool, tests):
    v = run(pool, HANGING_REPR, tests, program_objects=True, timeout=2.0)
    assert v.outcome is Outcome.WRONG and v.error_kind is None, v.detail


# -- 9: outcome classes come from measurements ----------------------------------------------------
def test_a_claimed_memory_error_is_wrong(pool):
    v = run(pool, "def f():\n    raise MemoryError\n", "assert f() == 1\n")
    assert v.outcome is Outcome.WRONG, v.detail


def test_memory_below_the_budget_then_a_memory_error_is_wrong(pool):
    code = "def f():\n    x = bytearray(200 << 20)\n    raise MemoryError\n"
    v = run(pool, code, "assert f() == 1\n", memory_mb=512)
    assert v.outcome is Outcome.WRONG, v.detail


def test_a_stdio_program_printing_memory_error_is_wrong(pool):
    code = "import sys\nsys.stderr.write('MemoryError\\n')\nsys.exit(1)\n"
    v = run(pool, code, '[{"input": "", "output": "1\\n"}]')
    assert v.outcome is Outcome.WRONG, v.detail


def test_a_custom_checker_that_raises_only_on_the_programs_output_scores_it_wrong(pool, tmp_path, monkeypatch):
    (tmp_path / "strict_checker.py").write_text(
        "def check(inp, expected, output):\n    return int(output) == int(expected)\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    checker = {"function": "strict_checker.check"}
    v = run(pool, "print('not a number')\n", '[{"input": "", "output": "1\\n"}]', checker=checker)
    assert v.outcome is Outcome.WRONG, v.detail
    ok = run(pool, "print(1)\n", '[{"input": "", "output": "1\\n"}]', checker=checker)
    assert ok.outcome is Outcome.CORRECT, ok.detail


# -- unsupported: scored 0, counted ---------------------------------------------------------------
def test_unsupported_is_counted_by_name_and_scored_zero_even_with_partial_credit(pool):
    verifier = UnitTests(timeout=3.0, pool=pool, partial_credit=True)
    row = {"tests": "assert g() == 1\nassert f() == 4\n"}
    [v] = verifier.verify_batch([Sample("```python\n" + LIAR + "def g():\n    return 1\n```", row=row)])
    assert unsupported(v) and verifier.counts["unsupported"] == 1 and verifier.counts["failed"] == 0


@pytest.mark.parametrize(
    ("tests", "code"),
    [
        ("assert f(int) is int\n", "def f(t):\n    return t\n"),
        ("try:\n    f()\nexcept KeyError as e:\n    assert e.args[0] == 'a'\n", "def f():\n    raise KeyError('a')\n"),
        ("assert list(f()) == [0, 1]\nassert next(iter(f())) == 0\n", "def f():\n    return (i for i in range(2))\n"),
        ("import re\nassert f('ab')\nassert f('x') is None\n", "import re\ndef f(s):\n    return re.match('a', s)\n"),
        ("assert isclose(f(), 0.5)\n", "from math import isclose\ndef f():\n    return 0.5\n"),
    ],
)
def test_a_correct_program_of_these_forms_is_correct(pool, tests, code):
    v = run(pool, code, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    ("tests", "code"),
    [
        ("class Node:\n    v = 3\nassert f(Node()) == 3\n", "def f(n):\n    return n.v\n"),
        ("assert f({1: 2}.keys()) == [1]\n", "def f(k):\n    return sorted(k)\n"),
        ("assert f() == 1\n", "class Err(ValueError):\n    pass\ndef f():\n    return Err\n"),
    ],
)
def test_a_form_the_boundary_cannot_copy_exactly_is_unsupported_by_name(pool, tests, code):
    v = run(pool, code, tests)
    assert unsupported(v), v.detail


# -- 10: per-sample isolation without the uid layer -----------------------------------------------
@pytest.fixture(scope="module")
def no_uid_pool():
    from rlvr.sandbox.pool import LAYERS, Limits, SandboxPool

    p = SandboxPool(1, Limits(timeout=3.0, memory_mb=256), enable=tuple(n for n in LAYERS if n != "uid"))
    p.start()
    if not p.layers.active("landlock"):
        p.close()
        pytest.skip("needs Landlock (the per-sample write layer)")
    yield p
    p.close()


PLANTER = (
    "import os\ndef f():\n    made = 0\n"
    "    for path in ['../plant.txt', '../s1', '../s2', '../s3', '/tmp/plant.txt']:\n"
    "        try:\n            if path.endswith('.txt'):\n                open(path, 'w').write('x')\n"
    "            else:\n                os.mkdir(path)\n            made += 1\n"
    "        except OSError:\n            pass\n    for n in range(1, 40):\n        try:\n"
    "            os.mkdir(f'../s{n}-' + '0' * 16)\n            made += 1\n        except OSError:\n            pass\n"
    "    return made\n"
)


def test_without_the_uid_layer_a_sample_writes_nowhere_but_its_own_workdir(no_uid_pool):
    v = run(no_uid_pool, PLANTER, "assert f() == 0\n")
    assert v.outcome is Outcome.CORRECT, v.detail


def test_without_the_uid_layer_later_samples_run_and_find_nothing_planted(no_uid_pool):
    run(no_uid_pool, PLANTER, "assert f() >= 0\n")
    reader = "import os\ndef f():\n    return sorted(os.listdir('..'))\n"
    for _ in range(3):
        v = run(no_uid_pool, reader, "assert all(n.startswith('s') for n in f())\n")
        assert v.outcome is Outcome.CORRECT, v.detail


# -- 11: the trainer holds a bounded amount per sample --------------------------------------------
def test_a_stdio_reply_holds_each_inputs_result_not_its_output(pool):
    from rlvr.sandbox.checks import judge_stdio, stdio_job
    from rlvr.sandbox.plans import plan_stdio

    plan = plan_stdio([{"input": str(i), "output": "x"} for i in range(4)])
    code = "import sys\nsys.stdout.write('y' * (1 << 20 - 1))\n"
    (reply,) = pool.run([stdio_job(code, plan.inputs, 5.0, plan=plan)])
    kept = sum(len(body) for _, body in reply.frames)
    assert kept < 8 * 1024 and len(reply.frames) == 4, kept
    j = judge_stdio(plan, reply)
    assert j.status == "failed" and j.details[0]["got"] == "y" * 300


# -- 5: copies are exact or refused ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "tests", "cpython"),
    [
        # a result that is the argument itself is the test's own object
        ("def f(l):\n    l.sort()\n    return l\n", "x = [2, 1]\nr = f(x)\nr.append(9)\nassert x != r\n", "wrong"),
        ("def f(l):\n    return sorted(l)\n", "x = [2, 1]\nr = f(x)\nr.append(9)\nassert x != r\n", "correct"),
        # an argument's inner list, returned, is the test's inner list
        (
            "def f(m):\n    return max(m, key=len)\n",
            "m = [[1], [1, 2]]\nr = f(m)\nr.append(3)\nassert m[1] == [1, 2, 3]\n",
            "correct",
        ),
        (
            "def f(t, d):\n    return t + (d,)\n",
            "d = {}\nr = f((1,), d)\nr[1]['k'] = 1\nassert d == {'k': 1}\n",
            "correct",
        ),
        # keyword arguments and calls that raised are written back
        ("def f(*, out):\n    out.append(1)\n", "o = []\nf(out=o)\nassert o == [1]\n", "correct"),
        (
            "def f(l):\n    l.append(1)\n    raise ValueError\n",
            "x = []\ntry:\n    f(x)\nexcept ValueError:\n    pass\nassert x == [1]\n",
            "correct",
        ),
    ],
)
def test_a_call_shows_the_test_what_cpython_shows(pool, code, tests, cpython):
    v = run(pool, code, tests)
    assert v.outcome.value == cpython, v.detail


@pytest.mark.parametrize(
    ("code", "tests"),
    [
        ("CACHE = []\ndef f():\n    return CACHE\n", "r = f()\nr.append(1)\nassert f() == []\n"),
        ("def f(m):\n    m[0].append(1)\n", "row = [0]\nf([row])\nassert row == [0]\n"),
        ("def f(t):\n    t[0].append(1)\n", "t = ([1],)\nf(t)\nassert t == ([1],)\n"),
        ("def f(a, b):\n    a.append(1)\n", "x = []\nf(x, x)\nassert x == [1]\n"),
        ("X = []\ndef add(v):\n    X.append(v)\n", "add(1)\nassert X == []\n"),
        ("N = 0\ndef bump():\n    global N\n    N += 1\n", "bump()\nassert N == 0\n"),
    ],
)
def test_a_copy_that_would_hide_aliasing_or_a_change_is_unsupported(pool, code, tests):
    assert unsupported(run(pool, code, tests))


def test_each_stdio_input_has_its_own_timeout(pool):
    # Four inputs of 1 s each under a 3 s timeout: one shared timeout would end the row at the third.
    cases = [{"input": str(i), "output": str(i) + "\n"} for i in range(4)]
    v = run(pool, "import time\ntime.sleep(1.0)\nprint(input())\n", cases, timeout=3.0)
    assert v.outcome is Outcome.CORRECT, v.detail


# -- copy limits: a correct answer the wire cannot carry is unsupported, never wrong --------------
def test_an_answer_nested_past_the_wires_depth_is_unsupported_by_name(pool):
    code = "def f():\n    x = []\n    for _ in range(300):\n        x = [x]\n    return x\n"
    v = run(pool, code, "r = f()\nfor _ in range(300):\n    r = r[0]\nassert r == []\n")
    assert unsupported(v) and "limits" in v.detail, v.detail


def test_an_integer_of_a_million_bits_crosses_exactly(pool):
    v = run(pool, "def f():\n    return 3 ** 700000\n", "assert f() % 1000 == 3 ** 700000 % 1000\n", timeout=10.0)
    assert v.outcome is Outcome.CORRECT, v.detail
