"""Issue 44, item 3: subclasses of builtin types that natural programs return. One that adds
nothing (``class Score(int): pass``) crosses as a value of a same-named plain subclass rebuilt in
the test child (``wire.plain_subclass``); any other stays the program's object (only its truth
is asked, ``unsupported`` beyond that). ``-m slow`` counts the *type-swap mutants* of every
HumanEval and MBPP reference (the entry point's result wrapped in a plain subclass of its own
type) by verdict, and prints which types are still refused."""

from __future__ import annotations

import collections
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests
from support.cpython import agrees, plain_cpython, sandbox, unsupported


@pytest.mark.parametrize(
    ("base", "value", "check"),
    [
        ("int", "5", "r == 5 and r + 1 == 6 and repr(r) == '5' and isinstance(r, int) and type(r) is not int"),
        ("float", "2.5", "r == 2.5 and str(r) == '2.5' and type(r).__name__ == 'Sub'"),
        ("str", "'ab'", "r == 'ab' and r.upper() == 'AB' and type(r.upper()) is str"),
        ("tuple", "(1, [2])", "r == (1, [2]) and r[1] == [2]"),
        ("frozenset", "{1, 2}", "r == {1, 2}"),
        ("bytes", "b'x'", "r == b'x' and len(r) == 1"),
        ("list", "[1, [2]]", "r == [1, [2]] and isinstance(r, list) and type(r) is not list and repr(r) == '[1, [2]]'"),
        ("dict", "{1: 2}", "r == {1: 2} and r[1] == 2 and type(r).__name__ == 'Sub' and str(r) == '{1: 2}'"),
        ("set", "{1, 2}", "r == {1, 2} and repr(r) == 'Sub({1, 2})' and type(r | {3}) is set"),
        ("bytearray", "b'x'", "r == b'x' and repr(r) == \"Sub(b'x')\""),
    ],
)
def test_a_subclass_that_adds_nothing_crosses_as_its_value(pool, base, value, check):
    program = f"class Sub({base}):\n    pass\ndef f():\n    return Sub({value})\n"
    tests = f"r = f()\nassert {check}\n"
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


@pytest.mark.parametrize(
    "body",
    [
        "    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n",
        "    tag = 1\n",
        "    def __repr__(self):\n        return 'S'\n",
    ],
)
def test_a_subclass_with_anything_of_its_own_stays_the_programs_object(pool, body):
    program = f"class Sub(int):\n{body}def f():\n    return Sub(5)\n"
    v = sandbox(pool, program, "assert f() == 5\n")
    assert unsupported(v), v.detail


# A mutable plain subclass shares like a list: the program's object by identity while it is the
# same, a refusal once either side changes it and the other would read it.
@pytest.mark.parametrize(
    ("program", "tests", "exact"),
    [
        # the same object answered twice is one object in the test
        ("class Rows(list):\n    pass\nR = Rows([1])\ndef f():\n    return R\n", "assert f() is f()\n", True),
        # yielded twice, one working object (the backtracking bug) shows the final value twice
        (
            "class Rows(list):\n    pass\ndef g():\n    r = Rows()\n    for i in range(3):\n"
            "        r.append(i)\n        yield r\n",
            "assert list(g()) == [[0, 1, 2]] * 3\n",
            False,
        ),
        # the program changes what it shared: refused, never a stale pass
        (
            "class Rows(dict):\n    pass\nR = Rows()\ndef f():\n    return R\ndef add(k):\n    R[k] = 1\n",
            "r = f()\nadd(1)\nassert r == {1: 1}\n",
            False,
        ),
        # the test changes what the program holds: refused, never a stale pass
        (
            "class Rows(set):\n    pass\nR = Rows()\ndef f():\n    return R\ndef n():\n    return len(R)\n",
            "f().add(1)\nassert n() == 1\n",
            False,
        ),
        (
            "class Rows(list):\n    pass\nR = Rows([[1]])\ndef f():\n    return R\ndef n():\n    return R[0]\n",
            "f()[0].append(2)\nassert n() == [1, 2]\n",
            False,
        ),
    ],
)
def test_a_mutable_plain_subclass_is_shared_like_a_list(pool, program, tests, exact):
    plain = plain_cpython(program, tests)
    v = sandbox(pool, program, tests)
    assert agrees(v, plain), (v.detail, plain.why)
    if exact:
        assert v.outcome is Outcome.CORRECT, v.detail
    else:
        assert plain.passed and unsupported(v), v.detail


def test_two_classes_with_one_name_stay_two_classes(pool):
    program = (
        "def make():\n    return type('Rows', (list,), {})\nA, B = make(), make()\n"
        "def f(i):\n    return (A if i else B)([i])\n"
    )
    tests = "assert type(f(0)) is not type(f(1)) and type(f(1)) is type(f(1)) and type(f(0)).__name__ == 'Rows'\n"
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_type_of_a_program_object_is_the_programs_type_or_refused(pool):
    # type() of a handle was the proxy's class ('Handle'): a correct program scored wrong.
    program = "class Sub(list):\n    def __repr__(self):\n        return 'R'\ndef f():\n    return Sub()\n"
    tests = "assert type(f()).__name__ == 'Sub'\n"
    assert plain_cpython(program, tests).passed
    assert unsupported(sandbox(pool, program, tests))
    tests = "r = f()\nassert type(r).__name__ == 'Sub' and type(r) is type(f()) and type(r) is not list\n"
    v = sandbox(pool, program, tests, program_objects=True)
    assert v.outcome is Outcome.CORRECT, v.detail
    program = "class A:\n    @property\n    def __class__(self):\n        return int\ndef f():\n    return A()\n"
    tests = "assert type(f()).__name__ == 'A' and isinstance(f(), int)\n"
    assert plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests, program_objects=True)
    assert v.outcome is Outcome.CORRECT, v.detail


def test_isinstance_of_a_program_object_against_a_builtin_is_the_programs_answer_or_refused(pool):
    # It was the proxy's answer (False): ``assert not isinstance(f(), list)`` was a forged pass.
    program = "class Sub(list):\n    def __repr__(self):\n        return 'R'\ndef f():\n    return Sub()\n"
    tests = "assert not isinstance(f(), list)\n"
    assert not plain_cpython(program, tests).passed
    v = sandbox(pool, program, tests)
    assert v.outcome is not Outcome.CORRECT, v.detail
    v = sandbox(pool, program, tests, program_objects=True)
    assert v.outcome is Outcome.WRONG and not unsupported(v), v.detail
    tests = "assert isinstance(f(), (int, list)) and not isinstance(f(), dict)\n"
    assert unsupported(sandbox(pool, program, tests))
    assert sandbox(pool, program, tests, program_objects=True).outcome is Outcome.CORRECT
    tests = "import collections.abc\nassert isinstance(f(), collections.abc.Sequence)\n"
    assert plain_cpython(program, tests).passed
    assert unsupported(sandbox(pool, program, tests, program_objects=True))


CLASS_PROPERTY = "class A:\n    @property\n    def __class__(self):\n        return int\ndef f():\n    return A()\n"


@pytest.mark.parametrize("read", ["f().__class__", "getattr(f(), '__class__')"])
def test_class_of_a_program_object_is_the_programs_answer_or_refused(pool, read):
    # It was the proxy's class (Handle), found before any request: ``assert ... is not int``
    # passed where CPython fails.
    tests = f"assert {read} is not int\n"
    assert not plain_cpython(CLASS_PROPERTY, tests).passed
    assert unsupported(sandbox(pool, CLASS_PROPERTY, tests))
    v = sandbox(pool, CLASS_PROPERTY, tests, program_objects=True)
    assert v.outcome is Outcome.WRONG and not unsupported(v), v.detail
    tests = f"assert {read} is int and type(f()).__name__ == 'A'\n"
    assert plain_cpython(CLASS_PROPERTY, tests).passed
    assert sandbox(pool, CLASS_PROPERTY, tests, program_objects=True).outcome is Outcome.CORRECT


def test_class_of_plain_data_and_of_the_tests_own_objects_is_unchanged(pool):
    program = "class Sub(list):\n    pass\ndef f():\n    return [1]\ndef g():\n    return Sub([1])\n"
    tests = (
        "class T:\n    @property\n    def __class__(self):\n        return str\n"
        "getattr = lambda x, n: 7\n"  # the test's own getattr stays its own
        "assert f().__class__ is list and g().__class__.__name__ == 'Sub' and T().__class__ is str\n"
        "assert getattr(f(), '__class__') == 7\n"
    )
    assert plain_cpython(program, tests).passed
    assert sandbox(pool, program, tests).outcome is Outcome.CORRECT


CLASS_OF = st.sampled_from(["int", "str", "list", "A", "None"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    CLASS_OF, st.sampled_from(["int", "list", "A", "object"]), st.sampled_from(["is", "is not", "=="]), st.booleans()
)
def test_generated_class_reads_agree_with_cpython(pool, claimed, against, op, objects):
    returns = "type(self)" if claimed == "A" else claimed
    program = (
        f"class A:\n    @property\n    def __class__(self):\n        return {returns}\n"
        "def f():\n    return A()\n"
        "def k():\n    return A\n"
    )
    rhs = "k()" if against == "A" else against
    tests = f"assert (f().__class__ {op} {rhs})\n"
    v = sandbox(pool, program, tests, program_objects=objects)
    assert agrees(v, plain_cpython(program, tests)), (program, tests, v.detail)


def test_a_class_renamed_after_it_crossed_is_refused(pool):
    program = "class Rows(list):\n    pass\ndef f():\n    return Rows()\ndef rename():\n    Rows.__name__ = 'X'\n"
    tests = "a = f()\nrename()\nassert type(f()).__name__ == 'X' and type(a) is type(f())\n"
    assert plain_cpython(program, tests).passed
    assert unsupported(sandbox(pool, program, tests))


def test_an_instance_with_attributes_of_its_own_stays_the_programs_object(pool):
    program = "class Sub(int):\n    pass\ndef f():\n    x = Sub(5)\n    x.tag = 1\n    return x\n"
    v = sandbox(pool, program, "assert f() == 5 and f().tag == 1\n")
    assert unsupported(v), v.detail


def test_a_class_of_the_program_named_by_the_test_is_still_refused(pool):
    program = "class Sub(int):\n    pass\ndef f():\n    return Sub(5)\n"
    v = sandbox(pool, program, "assert isinstance(f(), Sub)\n")
    assert unsupported(v), v.detail


# -- type-swap mutants of the real references (slow) ----------------------------------------------
SWAP = """
def _rlvr_swap(v):
    t = type(v)
    if t in (int, float, complex, str, bytes, tuple, frozenset, list, dict, set):
        return type('Swapped' + t.__name__.title(), (t,), {{}})(v)
    return v
_rlvr_orig = {entry}
def {entry}(*a, **k):
    return _rlvr_swap(_rlvr_orig(*a, **k))
"""


@pytest.mark.slow
def test_type_swap_mutants_of_the_references_are_correct_or_refused_never_wrong(pool) -> None:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    import test_real_data as real

    rows = [("humaneval", r) for r in real.humaneval(None)] + [("mbpp", r) for r in real.mbpp(None)]
    he = UnitTests(column="test", prefix_column="prompt", extract="whole", timeout=10.0, pool=pool)
    mb = UnitTests(column="tests", extract="whole", timeout=10.0, pool=pool)
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    refused: collections.Counter[str] = collections.Counter()
    disagree = []
    for kind, r in rows:
        if kind == "humaneval":
            entry, code = r["entry_point"], r["canonical_solution"] + SWAP.format(entry=r["entry_point"])
            v = he.verify(Sample(code, row=r))
            plain = plain_cpython(r["prompt"] + code, r["test"] + f"\ncheck({entry})\n")
        else:
            entry = real.called_function(r["code"], r["tests"])
            if entry is None:
                continue
            code = r["code"] + SWAP.format(entry=entry)
            v = mb.verify(Sample(code, row=r))
            plain = plain_cpython(code, r["tests"])
        if v.outcome is Outcome.ERROR and v.error_kind == "timeout":
            continue
        counts[
            (f"cpython {'pass' if plain.passed else 'fail'}", "unsupported" if unsupported(v) else v.outcome.value)
        ] += 1
        if unsupported(v):
            refused[v.detail.split("program's ")[-1].split(",")[0][:40]] += 1
        if not agrees(v, plain):
            disagree.append((r.get("task_id"), v.detail[:160], plain.why))
    print("type-swap mutants:", dict(counts), "refused by type:", dict(refused))
    assert disagree == []


# -- generated programs against plain CPython -------------------------------------------------------
VALUES = {"list": "[1, [2]]", "dict": "{1: 2}", "set": "{1, 2}", "bytearray": "b'ab'", "int": "5", "str": "'ab'"}
CHANGES = {"list": "{}.append(3)", "dict": "{}[3] = 4", "set": "{}.add(3)", "bytearray": "{}.append(99)"}
BODIES = [
    "    pass\n",
    "    def __repr__(self):\n        return 'R'\n",
    "    def __eq__(self, o):\n        return True\n    __hash__ = None\n",
    "    tag = 1\n",
    "    def __len__(self):\n        return 99\n",
]
VIEWS = [
    "r == {value}",
    "repr(r)",
    "str(r)",
    "type(r).__name__",
    "isinstance(r, {base})",
    "type(r) is {base}",
    "len(r)",
    "r is f()",
    "type(r) is type(f())",
    "sorted(r) if not isinstance(r, int) else r",
]


def _truth(program: str, prefix: str, view: str) -> str:
    """What plain CPython says ``view`` is after ``prefix`` (our own generated code, run here)."""
    ns: dict = {}
    try:
        exec(program + prefix, ns)  # noqa: S102 - generated here
        return repr(eval(view, ns))  # noqa: S307
    except Exception:  # noqa: BLE001
        return "None"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.sampled_from(sorted(VALUES)),
    body=st.sampled_from(BODIES),
    held=st.booleans(),
    change=st.sampled_from(["none", "program", "test"]),
    view=st.sampled_from(VIEWS),
    honest=st.booleans(),
)
def test_a_subclass_of_a_builtin_gets_plain_cpythons_verdict_or_is_refused(
    pool, base, body, held, change, view, honest
):
    value = VALUES[base]
    op = CHANGES.get(base)
    program = f"class Sub({base}):\n{body}"
    program += f"R = Sub({value})\ndef f():\n    return R\n" if held else f"def f():\n    return Sub({value})\n"
    program += "def change():\n    " + (op.format("R") if op and held else "pass") + "\n"
    prefix = "r = f()\n" + {"none": "", "program": "change()\n", "test": (op.format("r") + "\n") if op else ""}[change]
    view = view.format(value=value, base=base)
    want = _truth(program, prefix, view) if honest else "'no such value'"
    tests = prefix + f"assert ({view}) == {want}\n"
    v = sandbox(pool, program, tests)
    plain = plain_cpython(program, tests)
    assert agrees(v, plain), (program, tests, v.detail, plain.why)
    # A subclass that adds nothing, unchanged, crosses exactly: whatever the test reads is CPython's
    # (a read CPython itself fails, len() of an int, fails here too; identity is below).
    if body == "    pass\n" and (change == "none" or not held) and honest and plain.passed and " is " not in view:
        assert v.outcome is Outcome.CORRECT, (program, tests, v.detail)
