"""The rule that closes the whole class: for generated programs and test files, the sandbox's
verdict is what plain CPython says when it runs the program and the test file together (exit
status 0 = correct). The programs here do not tamper (no exit, no patching): where they do, the
sandbox is stricter on purpose (tests in test_sandbox_issue24.py)."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests

# What the function returns, given x, and how the test looks at it ({v} is the call).
FORMS = [
    ("x + {c}", "{v}"),
    ("[x, {c}, str(x)]", "{v}"),
    ("{{x: [{c}] * x}}", "{v}"),
    ("(x, float({c}))", "{v}"),
    ("{{x, {c}}}", "{v}"),
    ("(i * {c} for i in range(x))", "list({v})"),
    ("map(str, range(x + {c}))", "list({v})"),
    ("__import__('collections').Counter(str(x * {c}))", "{v}"),
    ("__import__('collections').deque(range({c}))", "list({v})"),
    ("b'ab' * ({c} % 3)", "{v}"),
    ("x / ({c} - 2)", "{v}"),  # ZeroDivisionError when c == 2
    ("'abc'[x % 4 + {c} - 1]", "{v}"),  # IndexError for some x
]
# Test file shapes around one value ({v}: how the test looks at the call; {e}: expected).
SHAPES = [
    "assert {v} == {e}\n",
    "assert not ({v} != {e})\n",
    "r = {v}\nassert r == {e} and True\n",
    "out = []\nout.append({v})\nassert out == [{e}]\n",
    "try:\n    r = {v}\nexcept (ValueError, ZeroDivisionError, IndexError) as exc:\n    r = type(exc).__name__\n"
    "assert r == {e}\n",
    "for _ in range(2):\n    assert {v} == {e}\n",
    "a, b = {v}, 0\nassert (a, b) == ({e}, 0)\n",
    "assert [{v}][0] == {e} or False\n",
    "assert {e} == {v}\n",
]


def expected(form: str, view: str, c: int, x: int) -> str:
    """The reference's value (computed with its own constant), as the test writes it."""
    ns: dict = {}
    exec(f"def f(x):\n    return {form.format(c=c)}\n", ns)  # noqa: S102 - our own generated code
    try:
        return repr(eval(view.format(v=f"f({x})"), ns))  # noqa: S307
    except (ValueError, ZeroDivisionError, IndexError) as exc:
        return repr(type(exc).__name__)


def plain_cpython(program: str, tests: str) -> bool:
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", program + "\n" + tests], capture_output=True, timeout=20)
    return proc.returncode == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    form=st.integers(0, len(FORMS) - 1),
    shapes=st.lists(st.tuples(st.integers(0, len(SHAPES) - 1), st.integers(0, 5)), min_size=1, max_size=4),
    c_ref=st.integers(0, 4),
    c_prog=st.integers(0, 4),
)
def test_the_verdict_is_what_plain_cpython_says(pool, form, shapes, c_ref, c_prog):
    body, view = FORMS[form]
    program = f"def f(x):\n    return {body.format(c=c_prog)}\n"
    tests = "".join(SHAPES[s].format(v=view.format(v=f"f({x})"), e=expected(body, view, c_ref, x)) for s, x in shapes)
    v = UnitTests(timeout=5.0, pool=pool).verify(Sample(f"```python\n{program}```", row={"tests": tests}))
    want = Outcome.CORRECT if plain_cpython(program, tests) else Outcome.WRONG
    assert v.outcome is want, (program, tests, v.detail)
