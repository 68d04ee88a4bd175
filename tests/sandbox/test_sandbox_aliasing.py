"""Issue 44, item 3: identity and aliasing across the boundary are exact or refused. A mutable
object the program still holds crosses under an identity number (one copy per object in the
test, passed back as itself); a change to either side of it afterwards ends the sample
``unsupported``. NaN crosses by identity, a ``defaultdict`` keeps its factory, ``isinstance``
against a class of the program asks the program. Examples from the issue, then generated
programs against plain CPython (``support.cpython``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards.base import Outcome
from support.cpython import agrees, plain_cpython, sandbox, unsupported

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
BACKTRACK = "def gen(n):\n    path = []\n    for i in range(1, n + 1):\n        path.append(i)\n        yield {}\n"


def test_a_generator_yielding_its_one_working_list_is_never_correct(pool):
    # CPython gives three times the final list: [[1, 2, 3]] * 3.
    for tests in ("assert list(gen(3)) == [[1], [1, 2], [1, 2, 3]]\n", "assert list(gen(3)) == [[1, 2, 3]] * 3\n"):
        v = sandbox(pool, BACKTRACK.format("path"), tests)
        assert unsupported(v), v.detail


def test_a_generator_yielding_copies_is_correct(pool):
    v = sandbox(pool, BACKTRACK.format("path[:]"), "assert list(gen(3)) == [[1], [1, 2], [1, 2, 3]]\n")
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    ("program", "tests"),
    [
        ("def f(lst):\n    return lambda: sum(lst)\n", "a = [1, 2]\ng = f(a)\na.append(3)\nassert g() == 6\n"),
        ("S = [1, 2]\ndef f():\n    return S\n", "a = f()\na.append(3)\nassert f() == [1, 2, 3]\n"),
        ("def f(d):\n    return d.setdefault('k', [])\n", "d = {}\nf(d).append(1)\nassert d == {'k': [1]}\n"),
    ],
)
def test_a_change_to_an_object_both_sides_hold_is_refused(pool, program, tests):
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert unsupported(v), v.detail


def test_an_object_twice_in_one_answer_is_one_object_in_the_test(pool):
    program = "def f():\n    x = [1]\n    return [x, x]\n"
    tests = "r = f()\nr[0].append(2)\nassert r[1] == [1, 2] and r[0] is r[1]\n"
    assert plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is Outcome.CORRECT


def test_a_forged_pass_through_a_stale_copy_is_not_correct(pool):
    program = "def f():\n    x = [1]\n    return [x, x]\n"
    tests = "r = f()\nr[0].append(2)\nassert r[1] == [1]\n"
    assert not plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is not Outcome.CORRECT


def test_one_object_of_the_program_is_one_object_in_the_test(pool):
    program = "S = [1, 2]\ndef f():\n    x = [0]\n    return [x, x]\ndef g():\n    return S\n"
    v = sandbox(pool, program, "r = f()\nassert r[0] is r[1]\nassert g() is g() and g() == [1, 2]\n")
    assert v.outcome is Outcome.CORRECT, v.detail


STACK = (
    "class Stack:\n    def __init__(self, items):\n        self.items = items\n"
    "    def push(self, x):\n        self.items.append(x)\n"
    "    @property\n    def top(self):\n        return self.items\n"
    "    def __getitem__(self, i):\n        return self.items\n"
)


@pytest.mark.parametrize(
    "tests",
    [
        "a = [1]\ns = Stack(a)\ns.push(2)\nassert a == [1, 2]\n",
        "a = [1]\ns = Stack(a)\na.append(2)\nassert s.top == [1, 2]\n",
        "s = Stack([1])\nt = s.top\ns.push(2)\nassert t == [1, 2]\n",
        "s = Stack([1])\nt = s[0]\nt.append(5)\nassert s.top == [1, 5]\n",
    ],
)
def test_with_program_objects_internal_lists_are_shared_or_refused(pool, tests):
    assert plain_cpython(STACK, tests).passed
    v = sandbox(pool, STACK, tests, program_objects=True)
    assert unsupported(v), v.detail


def test_with_program_objects_an_unchanged_internal_list_reads_exactly(pool):
    v = sandbox(
        pool, STACK, "s = Stack([1])\nassert s.top == [1] and s[0] == [1] and s.top is s[0]\n", program_objects=True
    )
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    ("program", "check"),
    [
        (
            "class A:\n    pass\nclass B:\n    @property\n    def __class__(self):\n        return A\n",
            "isinstance(B(), A)",
        ),
        (
            "class A:\n    pass\nclass B(A):\n    @property\n    def __class__(self):\n        return int\n",
            "isinstance(B(), A)",
        ),
        ("class A:\n    pass\nclass B(A):\n    pass\n", "issubclass(B, A) and not isinstance(A(), B)"),
    ],
)
def test_isinstance_against_a_class_of_the_program_is_what_cpython_says(pool, program, check):
    tests = f"assert {check}\n"
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests, program_objects=True)
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    ("program", "tests"),
    [
        ("import math\ndef f():\n    return [math.nan]\n", "import math\nassert f() == [math.nan]\n"),
        ("def f(x):\n    return [x]\n", "n = float('nan')\nassert f(n) == [n] and f(n)[0] is n\n"),
        ("def f():\n    x = float('nan')\n    return [x, x]\n", "r = f()\nassert [r[0]] == [r[1]]\n"),
        ("def f():\n    return -float('nan')\n", "import math\nassert math.copysign(1, f()) == -1\n"),
    ],
)
def test_nan_crosses_by_identity(pool, program, tests):
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_a_fresh_nan_is_not_math_nan(pool):
    program, tests = "def f():\n    return [float('nan')]\n", "import math\nassert f() == [math.nan]\n"
    assert not plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is Outcome.WRONG


@pytest.mark.parametrize(
    "value", ["complex(float('nan'), 0)", "__import__('decimal').Decimal('NaN')", "complex(0, float('nan'))"]
)
def test_a_nan_complex_or_decimal_is_not_plain_data(pool, value):
    program = f"def f():\n    x = {value}\n    return [x, x]\n"
    tests = "r = f()\nassert [r[0]] != [r[1]]\n"  # False in CPython: the same object twice
    assert not plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is not Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    "factory", ["lambda: 0", "lambda: []", "Counter", "lambda: defaultdict(int)", "frozenset", "None"]
)
def test_a_defaultdict_keeps_its_factory(pool, factory):
    program = f"from collections import Counter, defaultdict\ndef f():\n    return defaultdict({factory})\n"
    tests = "d = f()\ntry:\n    v = d['x']\nexcept KeyError:\n    v = 'missing'\nassert repr(v) == R\n"
    ns: dict = {}
    exec(program, ns)  # noqa: S102 - our own program
    try:
        want = repr(ns["f"]()["x"])
    except KeyError:
        want = repr("missing")
    tests = tests.replace("R", repr(want))
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


# -- generated programs against plain CPython -----------------------------------------------------
PROGRAM = (
    "G = [1, 2]\n"
    "def f(x):\n    a = [x, 0]\n    c = {{'k': a}}\n    return {ret}\n"
    "def g(x):\n    a = [x]\n    for i in range(3):\n        a.append(i)\n        yield {item}\n"
)
RETS = [
    "a",
    "[a, a]",
    "(a, [a])",
    "c",
    "[c, a]",
    "{'p': a, 'q': a}",
    "G",
    "[G, G]",
    "x",
    "[x, x]",
    "(x, a)",
    "{1: x}",
    "[a[:], a[:]]",
    "[G[:]]",
]
ITEMS = ["a", "a[:]", "(a,)", "len(a)", "[a]", "G"]
ARGS = ["5", "[1]", "[[1], 2]", "{'z': [3]}"]
MUTATIONS = ["pass", "r[0].append(9)", "r.append(8)", "arg.append(7)", "r['k'].append(6)", "arg[0].append(4)", "f(arg)"]
VIEWS = [
    "r",
    "arg",
    "r == f(arg)",
    "r is f(arg)",
    "list(g(1))",
    "[list(p) if isinstance(p, list) else p for p in g(2)]",
]
VIEWS += ["r[0] is r[1]", "f(arg)", "(lambda it: (next(it), next(it)))(g(0))"]


def truth(program: str, prelude: str, view: str) -> str:
    """What plain CPython makes of ``view`` after ``prelude`` (our own generated code)."""
    ns: dict = {}
    exec(program + prelude, ns)  # noqa: S102
    try:
        return repr(eval(view, ns))  # noqa: S307
    except Exception as exc:  # noqa: BLE001
        return repr(type(exc).__name__)


@FAST
@given(
    ret=st.sampled_from(RETS),
    item=st.sampled_from(ITEMS),
    arg=st.sampled_from(ARGS),
    mutations=st.lists(st.sampled_from(MUTATIONS), max_size=2),
    view=st.sampled_from(VIEWS),
    honest=st.integers(0, 3),
)
def test_identity_and_aliasing_get_plain_cpythons_verdict_or_are_refused(pool, ret, item, arg, mutations, view, honest):
    program = PROGRAM.format(ret=ret, item=item)
    prelude = f"\narg = {arg}\nr = f(arg)\n" + "".join(
        f"try:\n    {m}\nexcept Exception:\n    pass\n" for m in mutations
    )
    want = truth(program, prelude, view) if honest else "'no such value'"
    tests = (
        prelude
        + f"try:\n    v = {view}\nexcept Exception as exc:\n    v = type(exc).__name__\nassert repr(v) == {want!r}\n"
    )
    v = sandbox(pool, program, tests)
    plain = plain_cpython(program, tests)
    assert agrees(v, plain), (program, tests, v.detail, plain.why)


# -- identity of values that cross as copies (``claims.exact_is``) --------------------------------
@pytest.mark.parametrize(
    ("program", "tests"),
    [
        # One object in the program, two copies here: `is` answered False where CPython says True.
        ("class Sub(int):\n    pass\nR = Sub(5)\ndef f():\n    return R\n", "assert f() is f()\n"),
        ("R = 10 ** 20\ndef f():\n    return R\n", "r = f()\nassert r is f()\n"),
        ("def f(t):\n    return t\n", "t = ('a', 1000)\nassert f(t) is t\n"),
    ],
)
def test_identity_of_equal_values_that_crossed_as_copies_is_refused(pool, program, tests):
    assert plain_cpython(program, tests).passed
    assert unsupported(sandbox(pool, program, tests))


@pytest.mark.parametrize(
    "tests",
    [
        "assert f(1) is not f(2)\n",  # unequal values are distinct objects in CPython too
        "assert f(1) is not 'a'\n",  # and values of different types
        "assert f(None) is None and f(True) is True\n",  # singletons, as written
        "assert type(f(1)) is int\n",  # classes cross by identity
        "x = [1]\nassert f(x) is x\n",  # a list argument comes back as the test's own object
    ],
)
def test_identity_that_crossing_keeps_is_cpythons(pool, tests):
    program = "def f(v):\n    return v\n"
    assert plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is Outcome.CORRECT


IDENTITY_VALUES = st.sampled_from(["5", "10 ** 20", "'ab'", "'a' * 30", "(1, 'x')", "2.5", "frozenset({1})", "None"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(IDENTITY_VALUES, IDENTITY_VALUES, st.booleans(), st.sampled_from(["is", "is not"]), st.booleans())
def test_generated_identity_compares_agree_with_cpython(pool, a, b, held, op, honest):
    program = (
        f"A = {a}\nB = {b}\ndef f():\n    return A\ndef g():\n    return B\n"
        if held
        else f"def f():\n    return {a}\ndef g():\n    return {b}\n"
    )
    tests = f"x, y = f(), g()\nassert x {op} y\n" if honest else f"x, y = f(), g()\nassert not (x {op} y)\n"
    v = sandbox(pool, program, tests)
    assert agrees(v, plain_cpython(program, tests)), (program, tests, v.detail)
