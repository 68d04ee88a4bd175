"""Issue 44, item 2: an exception is a claim the candidate makes. It reaches the test as the real
builtin class only when that is exact (``sandbox/inside/claims.py``); anything else is a stand-in
whose builtin bases, message and repr are exact and whose other parts are refused. Examples from
the issue, then generated programs checked against plain CPython (``support.cpython``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards.base import Outcome
from support.cpython import agrees, plain_cpython, sandbox, unsupported

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def caught(body: str, handler: str = "ValueError as e", check: str = "pass") -> str:
    return f"try:\n    f()\nexcept {handler}:\n    {check}\n    ok = True\nelse:\n    ok = False\nassert ok\n"


def test_a_class_named_like_a_builtin_is_not_caught_as_that_builtin(pool):
    program = (
        "class Fake(Exception):\n    __module__ = 'builtins'\nFake.__name__ = Fake.__qualname__ = 'ValueError'\n"
        "def f():\n    raise Fake('x')\n"
    )
    tests = "try:\n    f()\nexcept ValueError:\n    pass\nexcept Exception:\n    assert False\n"
    v = sandbox(pool, program, tests)
    assert v.outcome is not Outcome.CORRECT and not plain_cpython(program, tests).passed, v.detail


W = "[[None, None, False]]"  # a claim's chain wiring: no cause, no context


@pytest.mark.parametrize(
    "forge",
    [
        f"lambda e: ['exc', ['ValueError', 'object'], 'x', ['x'], ['ValueError'] * 2 + ['builtins'], 'x', [], False,"
        f" [], {W}]",
        f"lambda e: ['exc', ['int', 'object'], 'x', ['x'], ['int', 'int', 'builtins'], 'x', [], False, [], {W}]",
        f"lambda e: ['exc', ['AssertionError', 'Exception'], 'x', None, ['A', 'A', 'm'], 'x', [], False, [], {W}]",
        "lambda e: ['exc', 'ValueError']",
    ],
)
def test_a_forged_claim_outside_what_a_builtin_exception_is_ends_the_sample(pool, forge):
    program = (
        f"import sys\nfor m in ('inside.child', 'inside.claims'):\n    sys.modules[m].describe = {forge}\n"
        f"    sys.modules[m].claim = lambda e, p: ({forge})(e)\n"
        "class Fake(Exception):\n    pass\ndef f():\n    raise Fake('x')\n"
    )
    tests = caught("f()", "ValueError") + caught("f()", "AssertionError")
    v = sandbox(pool, program, tests)
    assert v.outcome is not Outcome.CORRECT, v.detail


def test_a_patched_claim_gains_no_more_than_raising_the_builtin_would(pool):
    # The most a lying candidate can make the test see: a builtin exception with plain
    # arguments, exactly what ``raise ValueError('x')`` gives an honest program.
    forge = (
        "lambda e, p: ['exc', ['ValueError', 'Exception', 'BaseException', 'object'], 'x', ['x'], "
        "['ValueError', 'ValueError', 'builtins'], \"ValueError('x')\", [], False, [], [[None, None, False]]]"
    )
    program = (
        f"import sys\nsys.modules['inside.claims'].claim = {forge}\n"
        "class Fake(Exception):\n    pass\ndef f():\n    raise Fake('y')\n"
    )
    honest = "def f():\n    raise ValueError('x')\n"
    tests = caught("f()", check="assert type(e) is ValueError and str(e) == 'x'")
    assert sandbox(pool, honest, tests).outcome is Outcome.CORRECT
    assert sandbox(pool, program, tests).outcome is Outcome.CORRECT  # the patch is live, and bounded


def test_an_exception_with_two_builtin_bases_is_caught_by_either(pool):
    program = "class E(KeyError, ValueError):\n    pass\ndef f():\n    raise E('k')\n"
    for handler in ("ValueError", "KeyError", "LookupError", "(TypeError, ValueError)"):
        v = sandbox(pool, program, caught("f()", handler))
        assert v.outcome is Outcome.CORRECT, (handler, v.detail)


def test_a_message_only_in_str_reaches_the_test(pool):
    program = "class E(ValueError):\n    def __str__(self):\n        return 'bad input'\ndef f():\n    raise E()\n"
    v = sandbox(pool, program, caught("f()", check="assert str(e) == 'bad input' and e.args == ()"))
    assert v.outcome is Outcome.CORRECT, v.detail


def test_a_subclass_is_not_its_builtin_base_by_type(pool):
    program = "class E(ValueError):\n    pass\ndef f():\n    raise E('a')\n"
    tests = caught("f()", check="assert type(e) is ValueError")
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.WRONG and not plain_cpython(program, tests).passed, v.detail


def test_a_builtin_exception_with_plain_arguments_is_exact(pool):
    program = "def f():\n    raise KeyError('k', 2)\n"
    check = (
        "assert type(e) is KeyError and e.args == ('k', 2)\n"
        "    assert str(e) == \"('k', 2)\" and repr(e) == \"KeyError('k', 2)\""
    )
    v = sandbox(pool, program, caught("f()", "LookupError as e", check))
    assert v.outcome is Outcome.CORRECT, v.detail


def test_the_name_of_a_missing_module_crosses_with_import_error(pool):
    program = "def f():\n    import no_such_module_here\n"
    check = "assert type(e) is ModuleNotFoundError and e.name == 'no_such_module_here'"
    v = sandbox(pool, program, caught("f()", "ImportError as e", check))
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    ("program", "check"),
    [
        ("class E(ValueError):\n    code = 3\ndef f():\n    raise E('a')\n", "assert e.code == 3"),
        ("def f():\n    e = ValueError('a')\n    e.code = 3\n    raise e\n", "assert e.code == 3"),
        ("def f():\n    e = ValueError('a')\n    e.code = 3\n    raise e\n", "assert type(e) is ValueError"),
        (
            "class E(KeyError):\n    code = 1\n"
            "def f():\n    try:\n        {}[1]\n    except KeyError as k:\n        raise ValueError('b') from E(2)\n",
            "assert type(e.__cause__) is E",
        ),
        (
            "def f():\n    e = ValueError('a')\n    for i in range(40):\n        e = ValueError(i)\n"
            "        e.__cause__ = ValueError(i)\n        e.__context__ = p if i else None\n"
            "        p = e\n    raise e\n",
            "assert e.__context__ is not None",
        ),
        (
            "class E(ValueError):\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
            "def f():\n    raise E()\n",
            "assert e == 1",
        ),
        (
            "class E(ValueError):\n    def __str__(self):\n        raise TypeError\ndef f():\n    raise E()\n",
            "assert repr(e) == 'E()'; str(e)",
        ),
    ],
)
def test_what_does_not_cross_exactly_is_refused_where_the_test_reads_it(pool, program, check):
    tests = caught("f()", check=check)
    assert plain_cpython(program, tests).passed or "str(e)" in check
    v = sandbox(pool, program, tests)
    assert unsupported(v), v.detail


# -- chains: __cause__ and __context__ (each link a claim of its own) ---------------------------------
@pytest.mark.parametrize(
    ("program", "check"),
    [
        (
            "def f():\n    try:\n        {}[1]\n    except KeyError as k:\n        raise ValueError('b') from k\n",
            "assert type(e.__cause__) is KeyError and e.__cause__ is e.__context__ and e.__suppress_context__",
        ),
        (
            "def f():\n    try:\n        1 / 0\n    except ZeroDivisionError:\n        raise ValueError('b')\n",
            "assert type(e.__context__) is ZeroDivisionError and e.__cause__ is None and not e.__suppress_context__"
            " and str(e.__context__) == 'division by zero' and e.__context__.__context__ is None",
        ),
        (
            "def f():\n    try:\n        [][1]\n    except IndexError:\n        raise ValueError('b') from None\n",
            "assert e.__cause__ is None and type(e.__context__) is IndexError and e.__suppress_context__",
        ),
        (
            "class E(KeyError):\n    pass\n"
            "def f():\n    try:\n        raise E('k')\n    except E as k:\n        raise ValueError('b') from k\n",
            "assert isinstance(e.__cause__, KeyError) and type(e.__cause__).__name__ == 'E'"
            " and repr(e.__cause__) == \"E('k')\"",
        ),
        ("def f():\n    e = ValueError('a')\n    e.__cause__ = e\n    raise e\n", "assert e.__cause__ is e"),
    ],
)
def test_a_chained_exception_reaches_the_test_with_cpythons_chain(pool, program, check):
    tests = caught("f()", check=check) + (
        "import unittest\nclass T(unittest.TestCase):\n    def test(self):\n"
        "        with self.assertRaises(ValueError) as cm:\n            f()\n"
        f"        e = cm.exception\n        {check}\n"
        "r = unittest.main(exit=False, argv=['t']).result\nassert r.wasSuccessful(), r.failures\n"
    )
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_a_chained_exception_raised_while_the_test_handles_one_is_refused(pool):
    # CPython would chain the test's own KeyError into the program's ZeroDivisionError.
    program = "def f():\n    try:\n        1 / 0\n    except ZeroDivisionError:\n        raise ValueError('b')\n"
    tests = (
        "try:\n    {}[0]\nexcept KeyError:\n    try:\n        f()\n    except ValueError as e:\n"
        "        assert type(e.__context__.__context__) is KeyError\n"
    )
    assert plain_cpython(program, tests).passed
    assert unsupported(sandbox(pool, program, tests))
    # unchained, the raise in the test child adds the test's exception as CPython does
    program = "def f():\n    raise ValueError('b')\n"
    tests = (
        "try:\n    {}[0]\nexcept KeyError:\n    try:\n        f()\n    except ValueError as e:\n"
        "        assert type(e.__context__) is KeyError\n"
    )
    assert plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is Outcome.CORRECT


def test_a_broad_except_of_an_opaque_exception_is_exact(pool):
    program = "class E(ValueError):\n    code = 3\ndef f():\n    raise E('a')\n"
    tests = caught("f()", "Exception") + caught("f()", "BaseException as e", "assert isinstance(e, ValueError)")
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_unittests_assert_raises_sees_the_programs_exception(pool):
    program = "class E(KeyError, ValueError):\n    def __str__(self):\n        return 'bad'\ndef f():\n    raise E()\n"
    tests = (
        "import unittest\nclass T(unittest.TestCase):\n    def test(self):\n"
        "        with self.assertRaisesRegex(ValueError, 'bad'):\n            f()\n"
        "        with self.assertRaises(KeyError):\n            f()\n"
        "r = unittest.main(exit=False, argv=['t']).result\nassert r.wasSuccessful()\n"
    )
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


# -- generated programs against plain CPython -----------------------------------------------------
BASES = ["ValueError", "KeyError", "TypeError", "IndexError", "LookupError", "ZeroDivisionError", "Exception"]
ARGS = ["", "'m'", "'m', 2", "[1, 2]", "0"]
BODIES = [
    "    pass\n",
    "    def __str__(self):\n        return 'from str'\n",
    "    __module__ = 'builtins'\n",
    "    code = 7\n",
    "    def __init__(self, *a):\n        super().__init__('fixed')\n",
]
RAISES = [
    "raise {cls}({args})",
    "try:\n        {{}}[0]\n    except KeyError:\n        raise {cls}({args})",
    "try:\n        {{}}[0]\n    except KeyError as k:\n        raise {cls}({args}) from k",
    "try:\n        1 / 0\n    except ZeroDivisionError:\n        raise {cls}({args}) from None",
    "raise {cls}({args}) from {cls}(1)",
]
HANDLERS = ["Exception", "ValueError", "KeyError", "LookupError", "(TypeError, IndexError)", "ArithmeticError"]
VIEWS = [
    "str(e)",
    "e.args",
    "repr(e)",
    "type(e).__name__",
    "isinstance(e, KeyError)",
    "type(e) is ValueError",
    "e.code",
    "type(e.__cause__).__name__",
    "repr(e.__context__)",
    "e.__suppress_context__",
    "e.__cause__ is e.__context__",
    "str(e.__cause__)",
]


def truth(program: str, handler: str, view: str) -> str:
    """What plain CPython says ``view`` is (computed here, on our own generated code)."""
    ns: dict = {}
    exec(program, ns)  # noqa: S102 - generated here
    try:
        ns["f"]()
    except Exception as exc:  # noqa: BLE001
        try:
            return repr(eval(view, {**ns, "e": exc}))  # noqa: S307
        except Exception:  # noqa: BLE001
            return "None"
    return "None"


@FAST
@given(
    bases=st.lists(st.sampled_from(BASES), min_size=1, max_size=2, unique=True),
    body=st.sampled_from(BODIES),
    own=st.booleans(),
    raise_form=st.sampled_from(RAISES),
    args=st.sampled_from(ARGS),
    handler=st.sampled_from(HANDLERS),
    view=st.sampled_from(VIEWS),
    honest=st.booleans(),
)
def test_an_exception_gets_plain_cpythons_verdict_or_is_refused(
    pool, bases, body, own, raise_form, args, handler, view, honest
):
    cls = "E" if own else bases[0]
    program = f"class E({', '.join(bases)}):\n" + (body or "    pass\n") if own else ""
    program += "def f():\n    " + raise_form.format(cls=cls, args=args) + "\n"
    try:
        compile(program, "<p>", "exec")
        want = truth(program, handler, view) if honest else "'no such value'"
    except Exception:  # noqa: BLE001 - a class CPython refuses to build: both sides fail
        want = "None"
    tests = caught("f()", f"{handler} as e", f"assert {view} == {want}")
    v = sandbox(pool, program, tests)
    plain = plain_cpython(program, tests)
    assert agrees(v, plain), (program, tests, v.detail, plain.why)
