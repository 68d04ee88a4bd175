"""Math answer equivalence: text clean-up, structure, parsing and comparison.

This module is what the worker processes of ``rlvr.rewards.math`` run; the parent process only
uses the cheap part (``clean`` and ``fast_compare``, pure string and ``Fraction`` work with
linear-time regexes), so sympy is imported lazily, inside the functions that need it.

Pipeline for one (gold, prediction) pair:

1. ``clean``: strip ``$``/``\\(\\)``, ``\\left``/``\\right``, spacing commands, a wrapping
   ``\\boxed{}``, trailing periods, ``\\$``; note and strip degree marks (``^\\circ``, ``°``) and
   percent signs; drop text units (``5 \\text{ cm}``, ``12 dollars``); remove thousands
   separators from plain numbers; flag hedges (``3 \\text{ or } 5``, ``3 or 5``).
2. ``structure``: split at the top level into a matrix, a set ``\\{…\\}``, a union of intervals,
   a bracketed sequence (tuple or interval: the brackets are kept and must match), a bare comma
   list, or a scalar. Structures of different kinds are never equal.
3. Scalars: plain rationals (``-12``, ``3.25``, ``1e-3``, ``7/8``, ``\\frac{7}{8}``) become
   ``Fraction`` and compare exactly; the common LaTeX subset goes through ``mathfast`` (a strict
   recursive-descent parser, 50x faster); everything else is parsed by ``latex2sympy2_extended``
   (its ANTLR grammar; nothing is ever ``eval``-ed) after a few plain-text rewrites (``sqrt(2)``,
   ``pi``, ``**``, ``3e5``).
4. Comparison of two sympy values: rational values (after sympy's own evaluation, so
   ``2^{10}`` is 1024) compare exactly; other numbers are evaluated to 30 significant digits and compared
   *relatively* (``|a-b| <= max(abs_tol, rel_tol*max(|a|,|b|))``, default ``rel_tol=1e-9``),
   so 1/2^99 and 1/2^98 differ however small both are. Expressions with symbols are evaluated
   at five fixed sample points at 30 digits: any difference rejects; ``expand(a - b) == 0``
   accepts; otherwise agreement at every point to 1e-12 accepts (a numerical identity test:
   the one approximate step, chosen over ``simplify`` because simplify costs 100 ms and more
   per call); ``simplify`` decides only when no sample point is defined. Equations are equal
   when ``(lhs1 - rhs1) / (lhs2 - rhs2)`` is the same nonzero constant at every sample point --
   not because both end in ``= 0``.

Policies (``MathPolicy``): ordered vs unordered bare lists, tolerance, structural form
(``x^2-1`` is not ``(x-1)(x+1)`` for a "factor" task), degrees (45° equals π/4 only when
``angles="degrees"``), percent handling, and whether ``x = 3`` counts as ``3``.

Hedges: ``3 or 5`` against a scalar ground truth is ``unequal``; against a list or set, ``or``
separates solutions (``x = -2 or x = 3`` answers ``-2, 3``). A bare list answers a set in any
order. ``x \\in S`` is ``S``.

Known limits: text units are dropped, not converted (``1 km`` equals ``1`` and ``1 m``);
chained inequalities (``2 \\le x \\le 5``) are not intervals; ``i`` is a symbol, not the
imaginary unit, unless the grammar says otherwise; repeating decimals (``\\overline``) do not
parse;
``lowercase_symbols`` is on in the LaTeX parser, so ``X`` and ``x`` are the same symbol;
intervals written with parentheses and 2-tuples are the same structure; no chemistry, no
multiple-choice letters beyond exact text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Literal

from .mathtext import (  # noqa: F401 - re-exported: callers import the whole pipeline from here
    _TIME,
    MAX_ANSWER_CHARS,
    OR_WORD,
    Cleaned,
    Node,
    ParseFailure,
    clean,
    fast_rational,
    split_top,
    structure,
    to_latex,
    unsimplified,
)


@dataclass(frozen=True)
class MathPolicy:
    """How two answers are compared. Every field is a task-file option of the ``math`` term.

    ordered_lists: a bare list ``1, 2, 3`` must match in order (hendrycks MATH's convention);
        False compares bare lists as multisets. Sets ``\\{…\\}`` are always unordered, tuples and
        intervals always ordered.
    rel_tol / abs_tol: numeric tolerance; the default is exact up to 30-digit evaluation noise.
        Raise ``rel_tol`` (e.g. 1e-4) only when the task accepts rounded decimals.
    form: ``equivalent`` (any equal value counts) or ``structural`` (the parsed expressions must
        be identical after sympy's automatic canonicalisation: ``x^2-1`` does not match
        ``(x-1)(x+1)``; ``2x+1`` matches ``1+2x``; an unsimplified answer -- ``2/4``, ``3/1``,
        ``\\sqrt{8}`` -- does not match a simplified ground truth).
    angles: ``plain`` (a degree sign is dropped: 45° equals 45) or ``degrees`` (a degree sign
        means ×π/180: 45° equals π/4).
    percent: ``strip`` (50% equals 50), ``fraction`` (50% equals 0.5) or ``either``.
    assignment: ``x = 3`` counts as ``3`` (a single symbol on the left).
    """

    ordered_lists: bool = True
    rel_tol: float = 1e-9
    abs_tol: float = 0.0
    form: Literal["equivalent", "structural"] = "equivalent"
    angles: Literal["plain", "degrees"] = "plain"
    percent: Literal["strip", "fraction", "either"] = "strip"
    assignment: bool = True


@lru_cache(maxsize=8192)
def parse_scalar(s: str) -> Any:
    """A scalar's value: a ``Fraction`` or a sympy object. Cached: ground truths repeat."""
    q = fast_rational(s)
    if q is not None:
        return q
    from . import mathfast

    latex = to_latex(s)
    value = mathfast.parse(latex)  # the common subset, 50x faster than the grammar
    if value is not None:
        return value
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.math_normalization import NormalizationConfig

    config = NormalizationConfig(basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none", equations=False)
    try:
        value = latex2sympy(latex, normalization_config=config)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - the grammar raises plain Exception
        raise ParseFailure(f"cannot parse {s[:80]!r}: {str(exc).splitlines()[0][:120]}") from None
    if value is None:
        raise ParseFailure(f"cannot parse {s[:80]!r}")
    return value


# -- 4. comparison -----------------------------------------------------------------------------
_POINTS = (Fraction(37, 100), Fraction(171, 100), Fraction(-53, 100), Fraction(29, 10), Fraction(-13, 7))


def _sym(v: Any) -> Any:
    import sympy

    return sympy.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v


def _num_close(a: Any, b: Any, policy: MathPolicy) -> bool | None:
    """Numeric closeness of two sympy numbers; None when they do not evaluate to numbers."""
    import sympy

    try:
        x, y = sympy.N(a, 30), sympy.N(b, 30)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001
        return None
    if not (x.is_number and y.is_number):
        return None
    xr, xi = x.as_real_imag()
    yr, yi = y.as_real_imag()
    vals = [xr, xi, yr, yi]
    if not all(v.is_finite and v.is_Number for v in vals):
        if all(v.is_Number or v.is_infinite for v in vals):
            return bool(xr == yr and xi == yi)
        return None
    diff = abs(sympy.Float(xr - yr, 30)) + abs(sympy.Float(xi - yi, 30))
    scale = max(abs(xr) + abs(xi), abs(yr) + abs(yi))
    return bool(diff <= max(policy.abs_tol, policy.rel_tol * scale))


def _points_agree(d: Any, symbols: list[Any]) -> bool | None:
    """Whether expression ``d`` is (numerically) zero at every sample point; None if undefined."""
    import sympy

    seen = False
    for k in range(len(_POINTS)):
        subs = {s: sympy.Rational(_POINTS[(k + j) % len(_POINTS)].numerator, _POINTS[(k + j) % len(_POINTS)].denominator) for j, s in enumerate(symbols)}
        try:
            val = sympy.N(d.subs(subs), 30)
        except (MemoryError, RecursionError):
            raise
        except Exception:  # noqa: BLE001
            continue
        if not val.is_number or val.has(sympy.zoo, sympy.nan):
            continue
        seen = True
        if abs(val) > sympy.Float("1e-12"):
            return False
    return True if seen else None


def _canonical(e: Any) -> Any:
    """Rebuild with sympy's evaluation on (the parser builds unevaluated trees): orders sums
    and products canonically without expanding or factoring anything."""
    if not getattr(e, "args", None) or not hasattr(e, "func"):
        return e
    try:
        return e.func(*[_canonical(x) for x in e.args])
    except Exception:  # noqa: BLE001
        return e


def _too_big(expr: Any) -> bool:
    """Whether a power in ``expr`` has a numeric exponent over 10^5 in size (its value would
    have more digits than we can evaluate within a timeout)."""
    import sympy

    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.exp.is_number and node.base not in (0, 1, -1):
            if node.exp.has(sympy.Pow) and _too_big(node.exp):
                return True
            try:
                if abs(float(node.exp)) > 1e5:
                    return True
            except (TypeError, ValueError, OverflowError):
                return True
        if isinstance(node, sympy.factorial) and node.args[0].is_number:
            try:
                if abs(float(node.args[0])) > 1e5:
                    return True
            except (TypeError, ValueError, OverflowError):
                return True
    return False


def _expr_equal(a: Any, b: Any, policy: MathPolicy) -> bool:
    import sympy

    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    a, b = _sym(a), _sym(b)
    if isinstance(a, sympy.Basic) and isinstance(b, sympy.Basic) and (a.is_Relational or b.is_Relational):
        return _relation_equal(a, b, policy)
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)) or a.shape != b.shape:
            return False
        return all(_expr_equal(x, y, policy) for x, y in zip(a, b, strict=True))
    if isinstance(a, sympy.Set) or isinstance(b, sympy.Set):
        return bool(a == b)
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return bool(a == b)
    if a.has(sympy.zoo, sympy.nan) or b.has(sympy.zoo, sympy.nan):
        return False  # undefined (a division by zero) equals nothing, not even another one
    if policy.form == "structural":
        a, b = _canonical(a), _canonical(b)
        if a == b:
            return True
        if a.is_number and b.is_number and not a.free_symbols and a.is_Rational and b.is_Rational:
            return bool(a == b)
        return False
    if a == b:
        return True
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    if _too_big(a) or _too_big(b):
        # 10^{10^{10}} and friends: evaluating them would not finish; only identical
        # expressions are equal.
        return False
    if not symbols:
        ca, cb = _canonical(a), _canonical(b)
        if getattr(ca, "is_Rational", False) and getattr(cb, "is_Rational", False) and policy.rel_tol <= 1e-9 and policy.abs_tol == 0:
            return bool(ca == cb)  # exact: 8^{11} is not 8589934600, however close
        close = _num_close(a, b, policy)
        if close is not None:
            return close
        return bool(sympy.simplify(a - b) == 0)
    d = a - b
    agree = _points_agree(d, symbols)
    if agree is False:
        return False
    if sympy.expand(d) == 0:
        return True
    if agree:
        return True  # zero at every sample point: the numerical identity test
    return bool(sympy.simplify(d) == 0)  # no sample point was defined: try to prove it


def _constant_ratio(d1: Any, d2: Any) -> Any:
    """``d1/d2`` when it is the same number at every sample point, False when it varies, None
    when no sample point is defined (then simplify decides)."""
    import sympy

    symbols = sorted(d1.free_symbols | d2.free_symbols, key=str)
    ratios = []
    for k in range(len(_POINTS)):
        subs = {s: sympy.Rational(_POINTS[(k + j) % len(_POINTS)].numerator, _POINTS[(k + j) % len(_POINTS)].denominator) for j, s in enumerate(symbols)}
        try:
            x, y = sympy.N(d1.subs(subs), 30), sympy.N(d2.subs(subs), 30)
        except (MemoryError, RecursionError):
            raise
        except Exception:  # noqa: BLE001
            continue
        if not (x.is_number and y.is_number) or y == 0 or x.has(sympy.zoo, sympy.nan) or y.has(sympy.zoo, sympy.nan):
            continue
        ratios.append(x / y)
    if not ratios:
        return None
    first = ratios[0]
    if any(abs(r - first) > sympy.Float("1e-12") * max(abs(first), 1) for r in ratios[1:]):
        return False
    return sympy.nsimplify(first, rational=True) if abs(first) > sympy.Float("1e-12") else sympy.Integer(0)


def _relation_equal(a: Any, b: Any, policy: MathPolicy) -> bool:
    import sympy

    if not (a.is_Relational and b.is_Relational):
        return False  # assignments were unwrapped in text already; an equation is not a value
    if type(a) is not type(b):
        if isinstance(a, sympy.Equality) or isinstance(b, sympy.Equality):
            return False
        b = b.reversed  # x < 3 is 3 > x
        if type(a) is not type(b):
            return False
    d1, d2 = a.lhs - a.rhs, b.lhs - b.rhs
    if d1 == 0 or d2 == 0:
        return bool(d1 == d2 and a == b)
    if policy.form == "structural":
        return bool(a == b)
    # Equal as equations/inequalities when one difference is a constant multiple of the other
    # (positive for inequalities). Two equations that both end in "= 0" are therefore compared
    # by their left sides, never by the zero they share.
    ratio = _constant_ratio(d1, d2)
    if ratio is None:
        ratio = sympy.simplify(d1 / d2)
    if ratio is False or ratio.free_symbols or not ratio.is_number or ratio == 0 or not ratio.is_finite:
        return False
    if not isinstance(a, sympy.Equality) and not (ratio.is_positive):
        return False
    return True


def _apply_flags(value: Any, c: Cleaned, policy: MathPolicy, percent_mode: str) -> Any:
    if c.degrees and policy.angles == "degrees":
        import sympy

        value = _sym(value) * sympy.pi / 180
    if c.percent and percent_mode == "fraction":
        value = value / 100 if isinstance(value, Fraction) else _sym(value) / 100
    return value


_ASSIGN = re.compile(r"^\s*([a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?|\\[a-zA-Z]+)\s*=\s*([^=<>]+)$")


def _scalar_text(s: str, policy: MathPolicy) -> str:
    if policy.assignment:
        m = _ASSIGN.match(s)
        if m:
            return m.group(2).strip()
    return s


def _scalar_equal(g: str, p: str, policy: MathPolicy) -> bool:
    cg, cp = clean(g), clean(p)
    if cp.hedged:
        return False
    tg, tp = _TIME.match(cg.text), _TIME.match(cp.text)
    if tg or tp:  # 12:00 is a time, not 12/0
        return bool(tg and tp and [int(x or 0) for x in tg.groups()] == [int(x or 0) for x in tp.groups()])
    if policy.form == "structural" and unsimplified(cp.text) and not unsimplified(cg.text):
        return False
    gv = parse_scalar(_scalar_text(cg.text, policy))
    pv = parse_scalar(_scalar_text(cp.text, policy))
    modes = ("strip", "fraction") if policy.percent == "either" else (policy.percent,)
    for mode in modes:
        if _expr_equal(_apply_flags(gv, cg, policy, mode), _apply_flags(pv, cp, policy, mode), policy):
            return True
    if "=" in cg.text and "=" in cp.text and (gv is not parse_scalar(cg.text) or pv is not parse_scalar(cp.text)):
        # "y = 3x - 2" against "3x - y = 2": the same line, written as two equations.
        return _expr_equal(parse_scalar(cg.text), parse_scalar(cp.text), policy)
    return False


def _match_unordered(gs: tuple[Node, ...], ps: tuple[Node, ...], policy: MathPolicy) -> bool:
    if len(gs) != len(ps):
        return False
    used = [False] * len(ps)
    for g in gs:
        for j, p in enumerate(ps):
            if not used[j] and _node_equal(g, p, policy):
                used[j] = True
                break
        else:
            return False
    return True


def _node_equal(g: Node, p: Node, policy: MathPolicy) -> bool:
    if g.kind == "set" and p.kind == "list":
        return _match_unordered(g.items, p.items, policy)  # "3, -2" answers {-2, 3}
    if g.kind != p.kind:
        return False
    if g.kind == "scalar":
        return _scalar_equal(g.value, p.value, policy)
    if len(g.items) != len(p.items):
        return False
    if g.kind in ("set", "union") or (g.kind == "list" and not policy.ordered_lists):
        return _match_unordered(g.items, p.items, policy)
    if g.kind == "seq" and g.brackets != p.brackets:
        return False
    return all(_node_equal(x, y, policy) for x, y in zip(g.items, p.items, strict=True))


@lru_cache(maxsize=8192)
def parse_answer(text: str, assignment: bool = True) -> Node:
    """Clean and structure an answer, parsing every scalar (so a bad ground truth fails here,
    once, and is cached). With ``assignment``, ``n = 1, 2, 3`` and ``D = (0, 1)`` are their
    right-hand sides."""
    c = clean(text)
    if c.degrees or c.percent:
        node = Node("scalar", value=text.strip())
    else:
        body = c.text
        m = _ASSIGN.match(body) if assignment else None
        node = structure(m.group(2).strip() if m else body)
    _parse_leaves(node)
    return node


def _undefined(node: Node, policy: MathPolicy) -> bool:
    if node.kind != "scalar":
        return any(_undefined(c, policy) for c in node.items)
    text = _scalar_text(clean(node.value).text, policy)
    if _TIME.match(text):
        return False
    value = parse_scalar(text)
    return bool(getattr(value, "has", None) and value.has(_sympy().zoo, _sympy().nan))


def _sympy() -> Any:
    import sympy

    return sympy


def _parse_leaves(node: Node) -> None:
    if node.kind == "scalar":
        c = clean(node.value)
        parse_scalar(_scalar_text(c.text, MathPolicy()))
        parse_scalar(c.text)
        return
    for child in node.items:
        _parse_leaves(child)


def compare_texts(gold: str, pred: str, policy: MathPolicy) -> tuple[str, str]:
    """``(status, detail)`` with status ``equal``, ``unequal``, ``gold_unparseable`` or
    ``pred_unparseable``. Runs in a worker process (see ``rlvr.rewards.math``)."""
    try:
        g = parse_answer(gold, policy.assignment)
    except ParseFailure as exc:
        return "gold_unparseable", str(exc)
    if _undefined(g, policy):
        return "gold_unparseable", "the ground truth is undefined (a division by zero)"
    try:
        cp = clean(pred)
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    if cp.hedged:
        if g.kind not in ("list", "set"):
            return "unequal", "hedged answer (several alternatives)"
        # "x = -2 or x = 3" answers "find all solutions" as a list, not as a hedge.
        pred = OR_WORD.sub(", ", pred)
    try:
        p = parse_answer(pred, policy.assignment)
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    try:
        equal = _node_equal(g, p, policy)
        if not equal and policy.assignment and "=" in gold and "=" in pred:
            # "y = 3x - 2" against "3x - y = 2": the same line, written as two equations.
            equal = _node_equal(parse_answer(gold, False), parse_answer(pred, False), policy)
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001
        # sympy refusing an operation (a set minus a symbol...). The prediction's form caused
        # it, so it is unequal, not an error: masking it would let a policy escape the
        # correctness term by writing unreadable math. Timeouts stay errors (the pool).
        return "unequal", f"could not compare: {type(exc).__name__}: {str(exc)[:120]}"
    if equal:
        return "equal", ""
    if g.kind != p.kind:
        return "unequal", f"expected a {g.kind}, got a {p.kind}"
    return "unequal", ""


def fast_compare(gold: str, pred: str, policy: MathPolicy) -> bool | None:
    """Decide cheaply in the calling process when both sides are plain rationals (integers,
    decimals, ``a/b``, ``\\frac{a}{b}``); None means "ask a worker". Bounded: linear regexes on
    at most ``MAX_ANSWER_CHARS`` characters and ``Fraction`` arithmetic on at most 200 digits."""
    try:
        cg, cp = clean(gold), clean(pred)
    except ParseFailure:
        return None
    if cg.degrees or cp.degrees or cg.percent or cp.percent or cp.hedged or policy.form == "structural":
        return None
    g, p = fast_rational(_scalar_text(cg.text, policy)), fast_rational(_scalar_text(cp.text, policy))
    if g is None or p is None:
        return None
    if policy.rel_tol > 1e-9 or policy.abs_tol > 0:
        return abs(g - p) <= max(Fraction(policy.abs_tol), Fraction(policy.rel_tol) * max(abs(g), abs(p)))
    return g == p


def warm() -> None:
    """Import sympy and the LaTeX grammar and parse once, so the first real call is fast."""
    compare_texts("\\frac{1}{2}", "0.5", MathPolicy())
    compare_texts("x^2", "x \\cdot x", MathPolicy())
