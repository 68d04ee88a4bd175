"""Issue 25, item 5 for math: the candidate cannot buy a masked sample with cost. Values too large
to evaluate are found by a size estimate before anything is evaluated; a timeout whose gold alone
is cheap is wrong, one whose gold is costly stays masked; exact numbers are decided exactly;
nothing raises; invisible characters and spacing never make a wrong answer right."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.math import MathVerifier
from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare
from rlvr.rewards.math.scalar import parse_scalar
from rlvr.rewards.math.sym import MAX_ARGUMENT, too_big
from rlvr.rewards.math.text import MAX_ANSWER_CHARS
from rlvr.rewards.pool import Result
from rlvr.rewards.rules.untrusted import DEFAULT_IGNORABLE

HUGE = [
    "\\binom{10^6}{5\\cdot10^5}",
    "\\Gamma(10^7)",
    "(10^7)!",
    "\\binom{10^{7}}{10^{6}}\\pi",
    "\\sqrt{(10^6)!}",
    "(10^{6})!!",
    "10^{10^{6}}",
    "2^{3^{15}}",
]


def decide(gold: str, pred: str) -> str:
    fast = fast_compare(gold, pred, MathPolicy())
    return ("equal" if fast else "unequal") if fast is not None else compare_texts(gold, pred, MathPolicy())[0]


def test_astronomically_large_answers_are_decided_wrong_not_timed_out():
    for pred in HUGE:
        for gold in ("3", "\\sqrt{2}", "\\pi", "\\frac{1}{3}"):
            assert decide(gold, pred) == "unequal", (gold, pred)


def test_the_size_estimate_flags_them_before_any_evaluation():
    values = [parse_scalar(p) for p in HUGE]
    assert all(too_big(v) for v in values)
    assert all(len(str(v)) < 200 for v in values)  # none was evaluated while parsing
    assert not any(
        too_big(parse_scalar(p)) for p in ("\\binom{10}{5}", "\\Gamma(7)", "10!", "\\sin(10^{9})", "e^{100}")
    )


def test_an_identical_huge_expression_still_equals_itself():
    assert decide("\\binom{10^6}{5\\cdot10^5}", "\\binom{10^{6}}{5 \\cdot 10^{5}}") == "equal"
    assert decide("\\binom{10^6}{5\\cdot10^5}", "\\binom{10^6}{5\\cdot10^5 + 1}") == "unequal"


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["\\binom{N}{K}", "\\Gamma(N)", "(N)!", "\\binom{N}{K}+1", "2\\Gamma(N)"]),
    st.integers(6, 12),
    st.integers(1, 9),
)
def test_no_function_of_a_huge_number_is_ever_built(template, exponent, k):
    text = template.replace("N", f"10^{{{exponent}}}").replace("K", f"{k}\\cdot 10^{{{exponent - 1}}}")
    value = parse_scalar(text)
    assert too_big(value) and len(str(value)) < 200  # size, not seconds: the number stays unbuilt
    assert decide("5", text) == "unequal"


def test_closeness_does_not_decide_an_exact_question():
    assert decide("[1,+\\infty)", "[2^{\\frac{1}{2^{1000}}}, \\infty)") == "unequal"
    assert decide("1", "2^{\\frac{1}{2^{1000}}}") == "unequal"
    assert decide("1", "2^{\\frac{1}{2^{10000}}}") == "unequal"
    assert decide("\\sqrt{2}+\\sqrt{3}", "\\sqrt{5+2\\sqrt{6}}") == "equal"  # an identity evaluation cannot tell
    assert decide("1", "\\sin^2(1)+\\cos^2(1)") == "equal"
    assert decide("\\sqrt{2}", "1.41421356237") == "equal"  # a written decimal: the value rounded
    assert decide("\\sqrt{2}", "1.4142135624") == "equal"  # 11 digits, rounded
    assert decide("\\sqrt{2}", "1.4142135623") == "unequal"  # 11 digits, one off
    assert decide("\\sqrt{2}", "1.41421356") == "unequal"  # 9 digits: an approximation


class _TimeoutPool:
    """A pool whose comparisons time out for the answers listed; gold probes as told."""

    def __init__(self, slow_answers: set[str], slow_golds: set[str]) -> None:
        self.slow_answers, self.slow_golds = slow_answers, slow_golds
        self.calls: list[str] = []

    def map(self, func: str, arglist, timeout: float = 5.0) -> list[Result]:
        self.calls.append(func)
        out = []
        for args in arglist:
            if func.endswith(":compare_texts"):
                slow = args[1] in self.slow_answers or args[0] in self.slow_golds
                out.append(
                    Result(False, error_kind="timeout", detail="timed out") if slow else Result(True, ("equal", ""))
                )
            else:
                slow = args[0] in self.slow_golds
                out.append(Result(False, error_kind="timeout", detail="timed out") if slow else Result(True, True))
        return out


def _sample(gold: str, answer: str) -> Sample:
    return Sample(prompt="p", completion=f"<answer>{answer}</answer>", row={"answer": gold})


def test_a_timeout_the_answer_causes_is_wrong_and_one_the_gold_causes_is_masked():
    pool = _TimeoutPool(slow_answers={"\\mathrm{slow}"}, slow_golds={"\\mathrm{costly}"})
    v = MathVerifier(pool=pool)
    cheap_gold, costly_gold = v.verify_batch(
        [_sample("\\sqrt{7}", "\\mathrm{slow}"), _sample("\\mathrm{costly}", "\\sqrt{7}")]
    )
    assert cheap_gold.outcome is Outcome.WRONG and "takes over" in cheap_gold.detail
    assert costly_gold.outcome is Outcome.ERROR and costly_gold.error_kind == "timeout"
    assert pool.calls == ["rlvr.rewards.math.core:compare_texts", "rlvr.rewards.math.core:probe_gold"]


def test_the_real_pool_decides_a_huge_answer_within_the_timeout():
    v = MathVerifier(timeout=20.0, workers=1)
    verdicts = v.verify_batch([_sample("\\sqrt{7}", h) for h in HUGE[:3]])
    assert [(x.outcome, x.error_kind) for x in verdicts] == [(Outcome.WRONG, None)] * 3


INVISIBLE = [chr(lo) for lo, _ in DEFAULT_IGNORABLE if lo < 0xE0000] + ["\u2800"]
WRONG = [
    ("5", "6"),
    ("\\frac{1}{2}", "\\frac{1}{3}"),
    ("x^2-1", "(x-1)(x-1)"),
    ("(1,2)", "(2,1)"),
    ("\\{1,2\\}", "\\{1,3\\}"),
    ("[2,5]", "(2,5)"),
    ("3", "3 \\text{ or } 5"),
    ("\\sqrt{2}", "1.4142"),
    ("10", "10 \\text{ m}^2 \\text{ or } 12"),
    ("12:30", "12:31"),
]


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(WRONG), st.lists(st.tuples(st.integers(0, 60), st.sampled_from(INVISIBLE)), max_size=4))
def test_a_wrong_answer_stays_wrong_with_invisible_characters_inserted(pair, inserts):
    gold, pred = pair
    for pos, ch in inserts:
        pos = min(pos, len(pred))
        pred = pred[:pos] + ch + pred[pos:]
    assert decide(gold, pred) != "equal"


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(WRONG), st.integers(1, 5), st.integers(0, 5), st.booleans())
def test_a_wrong_answer_stays_wrong_with_its_spacing_changed(pair, extra, at, ends):
    gold, pred = pair
    spaces = [i for i, c in enumerate(pred) if c == " "]
    if spaces:
        i = spaces[at % len(spaces)]
        pred = pred[:i] + " " * extra + pred[i:]
    if ends:
        pred = " " * extra + pred + "\n" * extra
    assert decide(gold, pred) != "equal"


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="0123456789+-*/^_{}()[],.=<>|\\ abcxyzfrac sqrt pi infty", max_size=40))
def test_nothing_raises_out_of_a_comparison(text):
    for gold, pred in (("3", text), (text, "3"), ("x+1", text)):
        fast = fast_compare(gold, pred, MathPolicy())
        status = compare_texts(gold, pred, MathPolicy())[0] if fast is None else ("equal" if fast else "unequal")
        assert status in ("equal", "unequal", "gold_unparseable", "pred_unparseable")
    assert MAX_ARGUMENT >= 1e4


class _InProcessPool:
    """Runs what a worker would run, in this process (no timeout: the texts here are short)."""

    def map(self, func: str, arglist, timeout: float = 5.0) -> list[Result]:
        import importlib

        mod, _, attr = func.partition(":")
        fn = getattr(importlib.import_module(mod), attr)
        return [Result(True, fn(*args)) for args in arglist]


_TEXT = st.text(alphabet="0123456789+-/^_{}()[],.=<>|\\ xyfracsqtpinboxed\u200b\u2800\ufe0f", max_size=50)


@settings(max_examples=120, deadline=None)
@given(_TEXT, _TEXT, st.sampled_from(["<answer>{}</answer>", "\\boxed{{{}}}", "{}", "<answer>{}"]))
def test_nothing_raises_out_of_verify_batch(gold, answer, wrap):
    v = MathVerifier(pool=_InProcessPool())
    verdicts = v.verify_batch([Sample(prompt="What is it?", completion=wrap.format(answer), row={"answer": gold})])
    assert len(verdicts) == 1 and verdicts[0].outcome in set(Outcome)
    if verdicts[0].outcome is Outcome.ERROR:
        assert verdicts[0].error_kind == "ground_truth"  # only the gold can mask a sample here


# -- every backtracking pattern sees a bounded text ----------------------------------------------
_METHODS = {"match": 0, "search": 0, "fullmatch": 0, "findall": 0, "finditer": 0, "split": 0, "sub": 1, "subn": 1}
# linear by construction in Python's engine, and applied to the whole answer and prompt on purpose
_WHOLE_TEXT = {("verifier", "_SPACE"), ("verifier", "_OPERATOR")}


class _CountingPattern:
    def __init__(self, pattern, seen: list[int]) -> None:
        self._pattern, self._seen = pattern, seen

    def __getattr__(self, name: str):
        attr = getattr(self._pattern, name)
        if name not in _METHODS:
            return attr

        def counted(*args, **kwargs):
            self._seen.append(len(args[_METHODS[name]]))
            return attr(*args, **kwargs)

        return counted


class _CountingRe:
    """Stands in for the ``re`` module inside the math modules: inline ``re.sub(...)`` counted too."""

    def __init__(self, seen: list[int]) -> None:
        self._seen = seen

    def __getattr__(self, name: str):
        import re

        attr = getattr(re, name)
        if name not in _METHODS:
            return attr

        def counted(pattern, *args, **kwargs):
            self._seen.append(len(args[_METHODS[name]]))
            return attr(pattern, *args, **kwargs)

        return counted


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["(", "1,", " ", "\\frac{", "x^", "a=", "\\{", "1 ", "\\sqrt", "-", "|", "\u200b"]),
    st.integers(2_000, 60_000),
    st.sampled_from(["3", "x+1", "(1,2)", "\\{1,2\\}", "[0,1)"]),
)
def test_no_backtracking_pattern_reads_more_than_an_answer_is_allowed(monkeypatch_seen, unit, n, gold):
    seen = monkeypatch_seen
    long = (unit * (n // len(unit) + 1))[:n]
    for g, p in ((gold, long), (gold, long + "=" + long), (gold, "\\boxed{" + long + "}")):
        fast = fast_compare(g, p, MathPolicy())
        if fast is None:
            assert compare_texts(g, p, MathPolicy())[0] in ("unequal", "pred_unparseable")
    v = MathVerifier(pool=_InProcessPool())
    v.verify_batch([Sample(prompt=long, completion=f"<answer>{long}</answer>", row={"answer": gold})])
    assert seen and max(seen) <= MAX_ANSWER_CHARS + 16


@pytest.fixture(scope="module")
def monkeypatch_seen():
    import re

    from rlvr.rewards.math import chains, core, fast, forms, prose, readings, scalar, text, verifier

    mp = pytest.MonkeyPatch()
    seen: list[int] = []
    for mod in (chains, core, fast, forms, prose, readings, scalar, text, verifier):
        short = mod.__name__.rsplit(".", 1)[-1]
        if getattr(mod, "re", None) is re:
            mp.setattr(mod, "re", _CountingRe(seen))
        for name, value in list(vars(mod).items()):
            if isinstance(value, re.Pattern) and (short, name) not in _WHOLE_TEXT:
                mp.setattr(mod, name, _CountingPattern(value, seen))
    yield seen
    mp.undo()
