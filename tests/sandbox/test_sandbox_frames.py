"""The frames between the sandbox's processes (``sandbox/inside/frames.py``) and the test child's
binding of the program's names (``testchild.bind``): what the cost work of issue 44 changed in
them, held to what it replaced.

- ``frames.dumps`` is ``json.dumps(msg, separators=(",", ":"))`` with one C encoder made once,
  ``frames.loads`` is ``json.loads`` without white space around the value (no sender writes any),
  and every text either refuses is ``WireError``.
- ``bind`` parses the program's text only when an answer needs it; when it does, the program's
  standard imports are the test child's own and a rebound global is refused, as before.
"""

from __future__ import annotations

import builtins
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.sandbox.inside import frames, proxy, testchild, wire

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too: json.dumps writes NaN, Infinity, -Infinity
    | st.text(max_size=12),  # surrogates and every other code point: escaped as json.dumps escapes them
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=16,
)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_dumps_writes_what_json_dumps_writes_and_loads_reads_it_back(value):
    text = frames.dumps(value)
    assert text == json.dumps(value, separators=(",", ":"))
    assert same(frames.loads(text), value)


def _json_loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet='[]{}",:0123456789.eE+-truefalsnNaIiy \t\n\\u', max_size=24),
        JSON.map(lambda v: json.dumps(v, separators=(",", ":"))).flatmap(
            lambda t: st.sampled_from([t, " " + t, t + "\n", t + "x", t[:-1] or "[", t + t])
        ),
    )
)
def test_loads_reads_exactly_what_json_loads_reads_with_no_white_space_around(text):
    ok, value = _json_loads(text)
    padded = text != text.strip(" \t\n\r")
    if ok and not padded:
        assert same(frames.loads(text), value)
    else:
        with pytest.raises(wire.WireError):
            frames.loads(text)


def test_a_value_json_cannot_write_raises_type_error_and_a_cycle_recursion_error():
    with pytest.raises(TypeError):
        frames.dumps([object()])
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(RecursionError):
        frames.dumps(cycle)


def test_deep_nesting_is_a_wire_error_not_a_crash():
    with pytest.raises(wire.WireError):
        frames.loads("[" * 100_000 + "]" * 100_000)


# -- bind: the program's text is parsed only when an answer needs it ----------------------------


class Ended(Exception):
    pass


class ScriptedLink(proxy.Link):
    """A Link whose candidate answers ``load`` from a script: no pipes, no process."""

    def __init__(self, answers: dict[str, Any]) -> None:
        super().__init__(-1, -1, self._end)
        self.answers = answers
        self.asked: list[Any] = []

    @staticmethod
    def _end(rec: dict[str, Any]) -> Any:
        raise Ended(rec)

    def ask(self, msg: list[Any]) -> list[Any]:
        self.asked.append(msg)
        return ["ok", [[n, self.answers[n]] for n in msg[2] if n in self.answers]]


def bind(
    code: str, answers: dict[str, Any], entry: str | None = None, ended: bool = False
) -> tuple[dict[str, Any], int]:
    """(the test's namespace, how many times the program's text was parsed). ``ended``: a refusal
    while binding (``Ended``) is expected, and the count is still returned. The link stays the
    test child's (``proxy.LINK``) for the caller's handles until the next call."""
    parsed = []
    real = testchild.program_facts

    def counting(text: str) -> Any:
        parsed.append(text)
        return real(text)

    testchild.program_facts = counting
    proxy.LINK = link = ScriptedLink(answers)
    ns: dict[str, Any] = {}
    try:
        testchild.bind(link, code, set(answers), ns, entry)
    except Ended:
        if not ended:
            raise
    finally:
        testchild.program_facts = real
    return ns, len(parsed)


def fn(n: int, kind: str = "f") -> list[Any]:
    return ["h", n, kind, "function"]


NAMES = st.sampled_from(["f", "g", "solve", "helper", "sum", "len", "max", "isinstance", "math", "N"])
ANSWER = st.sampled_from(["f", "o", "c", "i", "int", "str", "tuple"])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(NAMES, ANSWER, min_size=1, max_size=5))
def test_the_text_is_parsed_exactly_when_an_answer_is_not_a_function_or_shadows_a_builtin(kinds):
    answers = {}
    for i, (name, kind) in enumerate(sorted(kinds.items())):
        answers[name] = fn(i, kind) if len(kind) == 1 else {"int": 7, "str": "s", "tuple": ["t", 1, 2]}[kind]
    needs = any(k != "f" or hasattr(builtins, n) for n, k in kinds.items())
    _, parsed = bind("import math\nN = 7\n", answers, ended=True)
    assert parsed == (1 if needs else 0)


def test_a_rows_entry_point_alone_is_bound_without_parsing():
    ns, parsed = bind("from typing import List\ndef f(xs: List[int]) -> int:\n    return 1\n", {"f": fn(0)}, "f")
    assert parsed == 0 and type(ns["f"]) is proxy.Handle


def test_when_parsed_a_standard_import_is_the_test_childs_own_and_is_not_taken_from_the_answer():
    ns, parsed = bind("import math\nfrom math import gcd\nK = 3\n", {"math": fn(0, "o"), "gcd": fn(1), "K": 3})
    assert parsed == 1 and ns["math"] is math and ns["gcd"] is math.gcd and ns["K"] == 3


def test_when_parsed_a_rebound_global_is_refused():
    code = "N = 0\ndef bump():\n    global N\n    N += 1\n"
    with pytest.raises(Ended) as e:
        bind(code, {"N": 0, "bump": fn(0)})
    assert "a value a call can change" in str(e.value)


def test_a_handle_that_claims_to_be_a_function_can_only_be_called():
    # A program that calls its module a function skips the parse, and gets a handle on which the
    # test can do nothing but call: its attributes are refused (no forged pass through them).
    ns, parsed = bind("import math\n", {"math": fn(0)})
    assert parsed == 0 and type(ns["math"]) is proxy.Handle
    with pytest.raises(Ended) as e:
        ns["math"].isclose  # noqa: B018 - the attribute read is the check
    assert "unsupported" in str(e.value)
