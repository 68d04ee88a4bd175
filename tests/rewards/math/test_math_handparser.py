"""Issue 45, item 2: the hand-written parser (``math.fast``) reads what the ANTLR grammar read on
the scoring path, and the grammar is no longer on it.

Each form the parser gained is generated (hypothesis) and read by both: where the grammar reads
a value, the two agree at sample points; a perturbed form (one number changed) is unequal. The
grammar stays a test oracle here only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.rewards.math import fast as mathfast
from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare

ROOT = Path(__file__).resolve().parents[3]


def grammar(s: str):
    from latex2sympy2_extended import latex2sympy

    return latex2sympy(s)


def _value(v, names):
    values = [sympy.Rational(37, 100), sympy.Rational(-53, 100), sympy.Rational(171, 100), sympy.Rational(29, 10)]
    return sympy.N(v.subs({s: values[names.index(str(s)) % 4] for s in v.free_symbols}).doit(), 30)


def same_reading(a, b) -> bool:
    """Whether two readings are the same: equal matrices, relations side by side, or equal values
    at a sample point (names matched by spelling)."""
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        b = b.doit() if hasattr(b, "doit") else b
        return (
            isinstance(a, sympy.MatrixBase)
            and isinstance(b, sympy.MatrixBase)
            and a.shape == b.shape
            and all(same_reading(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, sympy.And) or isinstance(b, sympy.And):
        # the grammar's And is a subclass; x < x < 2x has one distinct relation twice
        xs, ys = (v.args if isinstance(v, sympy.And) else (v,) for v in (a, b))
        return all(any(same_reading(x, y) for y in ys) for x in xs) and all(
            any(same_reading(x, y) for x in xs) for y in ys
        )
    if getattr(a, "is_Relational", False) or getattr(b, "is_Relational", False):
        return type(a) is type(b) and same_reading(a.lhs, b.lhs) and same_reading(a.rhs, b.rhs)
    names = sorted({str(s) for s in a.free_symbols} | {str(s) for s in b.free_symbols})
    x, y = _value(a, names), _value(b, names)
    return bool(abs(x - y) <= 1e-20 * max(1, abs(x)))


n = st.integers(1, 60).map(str)
letter = st.sampled_from(["x", "y", "A", "N", "R", r"\Delta", r"\Omega", r"\hbar", "P_{n}", "k_B", "v^2_0"])
atom = st.one_of(n, letter, st.tuples(n, letter).map(lambda t: f"{t[0]}{t[1]}"))
expr = st.one_of(
    atom,
    st.tuples(atom, st.sampled_from(["+", "-", r"\cdot "]), atom).map("".join),
    st.tuples(atom, atom).map(lambda t: rf"\frac{{{t[0]}}}{{{t[1]}}}"),
)
FORMS = st.one_of(
    st.tuples(expr, expr).map(lambda t: f"|{t[0]}| + |{t[1]}|"),
    st.tuples(n, expr, expr).map(lambda t: f"{t[0]}|{t[1]}||{t[2]}|"),
    st.tuples(expr, st.sampled_from(["<", ">", r"\le ", r"\leq ", r"\ge ", r"\geq ", "<=", ">="]), expr).map("".join),
    st.tuples(expr, expr, expr).map(lambda t: f"{t[0]} < {t[1]} < {t[2]}"),
    st.tuples(letter, expr, expr).map(lambda t: f"{t[0]} = {t[1]} = {t[2]}"),
    st.tuples(n, n, st.integers(2, 9).map(str)).map(lambda t: rf"{t[0]}\frac{{{t[1]}}}{{{t[2]}}}"),
    st.tuples(n, n).map(lambda t: f"{t[0]}:{t[1]}"),
    st.tuples(st.sampled_from(["x", "A", r"\Delta p"]), n).map(lambda t: rf"{t[0]} \approx {t[1]}"),
    st.tuples(n, n, n, n).map(lambda t: rf"\begin{{pmatrix}} {t[0]} & {t[1]} \\ {t[2]} & {t[3]} \end{{pmatrix}}"),
    st.tuples(n, n, n).map(lambda t: rf"{t[0]}\begin{{bmatrix}} {t[1]} \\ {t[2]} \end{{bmatrix}}"),
    st.tuples(n, expr).map(lambda t: rf"\sum_{{k=1}}^{{{t[0]}}} \frac{{{t[1]}}}{{k}}"),
    st.tuples(st.sampled_from(["a", "F", "x"]), n).map(lambda t: f"{t[0]}_{{n-{t[1]}}} + {t[0]}_{{n+1}}"),
    st.tuples(n, st.sampled_from(["2013", "4000", "12345"])).map(lambda t: f"{t[0]}^{{{t[1]}}} - 1"),
    st.sampled_from(["1001!", "2016! + 1", r"\binom{6000}{3}", "x2 + 1"]),
)


@settings(max_examples=80, deadline=None)
@given(FORMS)
def test_each_new_form_reads_as_the_grammar_reads_it(text):
    fast = mathfast.parse(text)
    assert fast is not None, text  # every generated form is one the parser reads
    if mathfast.keep_case(mathfast.lex(text)):
        return  # N and n in one answer: two symbols here, one to the grammar (by design, tested below)
    try:
        slow = grammar(text)
    except Exception:  # noqa: BLE001 - a form the grammar rejects: nothing to compare
        return
    assert same_reading(fast, slow), (text, fast, slow)


def _perturbed(text: str) -> str:
    """``text`` with its first number one larger."""
    import re

    return re.sub(r"\d+", lambda m: str(int(m.group(0)) + 1), text, count=1)


@settings(max_examples=60, deadline=None)
@given(FORMS)
def test_a_perturbed_form_is_not_equal(text):
    policy = MathPolicy(rename=False)  # a_{n-1} for a_{n-2} is a renamed variable under the default
    other = _perturbed(text)
    if other == text:
        return
    if same_reading(mathfast.parse(text), mathfast.parse(other)):
        return  # \frac{1-1}{k}: the changed number changed nothing
    fast = fast_compare(text, other, policy)
    verdict = ("equal" if fast else "unequal") if fast is not None else compare_texts(text, other, policy)[0]
    assert compare_texts(text, text, policy)[0] == "equal", text
    if text.startswith("|") or "k_B" in text:  # |-x| = |x|: changing one number may keep the value
        return
    if any(c in text for c in "<>") or "\\le" in text or "\\ge" in text:  # 1 < 3 and 2 < 3 are both true
        return
    assert verdict != "equal", (text, other)


@pytest.mark.parametrize(
    "text",
    [
        "r + R",  # a letter in both cases is two symbols, never the grammar's one
        r"\sqrt{1 - \frac{2r}{R}}",
    ],
)
def test_a_letter_in_both_cases_is_two_symbols(text):
    v = mathfast.parse(text)
    assert v is not None and {str(s) for s in v.free_symbols} == {"r", "R"}
    assert compare_texts(text, "2r" if "+" in text else "i", MathPolicy())[0] == "unequal"


@pytest.mark.parametrize(
    ("gold", "pred", "status"),
    [
        (r"\frac {a + b}{\gcd(a,b)}", r"\dfrac{a+b}{\gcd(a,b)}", "equal"),  # written alike, spaces aside
        (r"\frac{a+b}{\gcd(a,b)}", r"\frac{a+b}{\gcd(a,c)}", "gold_unparseable"),
        (r"\frac{a+b}{\gcd(a,b)}", "a+b", "gold_unparseable"),  # the grammar read \gcd(a,b) as 1
        ("7", r"\cos^3 \beta / \cos \alpha", "pred_unparseable"),
        ("2", "z1 + z2", "pred_unparseable"),  # indices, not z*1 + z*2
        # the two verdicts on external_math3.jsonl that changed when the grammar left, reviewed by hand:
        # omniB-21, right now (was gold_unparseable): the same expression, written alike
        (
            "\\[\n\\frac{\\cos 1^\\circ}{\\sin^2 1^\\circ}\n\\]",
            "\\dfrac{ \\cos 1^\\circ }{ \\sin^2 1^\\circ }",
            "equal",
        ),
        # olympiadbench-3-0, a miss now, masked (was equal through the grammar's reading of \Phi(x,y) as a
        # function): the answer is right, and a two-argument function is not read here
        ("\\Phi (x,y)=\\frac{x+1}{2y}", "\\Phi (x,    y)=\\frac{x}{2y} + \\frac{1}{2y}", "gold_unparseable"),
    ],
)
def test_what_the_parser_does_not_read_is_decided_without_a_second_reading(gold, pred, status):
    assert compare_texts(gold, pred, MathPolicy())[0] == status


def _corpus() -> list[tuple[str, str]]:
    rows = []
    for line in (ROOT / "tests" / "data" / "math" / "corpus.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith(("#", "form\t")):
            _, _, gold, pred, _, _ = line.split("\t")
            rows.append((gold, pred))
    return rows


def _decide(gold: str, pred: str) -> str:
    f = fast_compare(gold, pred, MathPolicy())
    return ("equal" if f else "unequal") if f is not None else compare_texts(gold, pred, MathPolicy())[0]


def test_the_scoring_path_never_imports_the_grammar():
    """The corpus, scored in a process where ``latex2sympy2_extended`` cannot be imported, gives the
    verdicts it gives here, and the module was never asked for."""
    script = textwrap.dedent(
        """
        import json, sys
        asked = []
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "latex2sympy2_extended":
                    asked.append(name)
                    raise ImportError("blocked by the test")
                return None
        sys.meta_path.insert(0, Block())
        from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare, warm
        from rlvr.rewards.math.verifier import PRELOAD
        for m in PRELOAD:
            __import__(m)
        warm()
        out = []
        for g, p in json.load(sys.stdin):
            f = fast_compare(g, p, MathPolicy())
            out.append(("equal" if f else "unequal") if f is not None else compare_texts(g, p, MathPolicy())[0])
        print(json.dumps({"asked": asked, "loaded": "latex2sympy2_extended" in sys.modules, "out": out}))
        """
    )
    cases = _corpus()
    assert len(cases) > 600
    run = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["asked"] == [] and got["loaded"] is False
    assert got["out"] == [_decide(g, p) for g, p in cases]
