"""Whether two sympy values are equal: exact for rationals, relative for other numbers, sample
points for expressions, a constant ratio for equations and inequalities.

The rules are described in ``rlvr.rewards.math.core`` (step 4). Runs only in the worker processes
of ``rlvr.rewards.math``; sympy is imported inside the functions.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policy import MathPolicy

EXACT_DIGITS = 3000  # working precision that tells two exact numbers apart (2^{1/2^{1000}} - 1 is 1e-301)
_POINTS = (Fraction(37, 100), Fraction(171, 100), Fraction(-53, 100), Fraction(29, 10), Fraction(-13, 7))


def sym(v: Any) -> Any:
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


def _exactly_equal(a: Any, b: Any) -> bool:
    """Whether two exact numbers that agree to 30 digits are equal: their difference evaluated
    with up to ``EXACT_DIGITS`` digits of working precision is zero, or, where that cannot tell
    (an identity such as sin(1)^2 + cos(1)^2 - 1), simplify proves it zero."""
    import sympy
    from sympy.core.evalf import PrecisionExhausted

    if sympy.expand(sympy.radsimp(a - b)) == 0:
        # exact rewrites, cheaper than telling a zero apart numerically: (1+2i)^2 and -3+4i,
        # \sqrt{3}-1 and 2/(\sqrt{3}+1), 2\sqrt[3]{2} and \sqrt[3]{16}
        return True
    try:
        d = sympy.N(a - b, 15, maxn=EXACT_DIGITS, strict=True)
    except PrecisionExhausted:
        return bool(sympy.simplify(a - b) == 0)
    return bool(d == 0)


def _points_agree(d: Any, symbols: list[Any]) -> bool | None:
    """Whether expression ``d`` is (numerically) zero at every sample point; None if undefined."""
    import sympy

    seen = False
    for k in range(len(_POINTS)):
        subs = {
            s: sympy.Rational(_POINTS[(k + j) % len(_POINTS)].numerator, _POINTS[(k + j) % len(_POINTS)].denominator)
            for j, s in enumerate(symbols)
        }
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


# Functions whose numeric value costs little however large the argument (mpmath evaluates them at
# 30 digits); every other function applied to a number over MAX_ARGUMENT is too costly to evaluate
# (a factorial, binomial, Gamma, Fibonacci or prime-counting of 10^7 builds or searches huge numbers).
_CHEAP_FUNCTIONS = (
    "sin cos tan cot sec csc asin acos atan acot asec acsc sinh cosh tanh coth sech csch asinh acosh atanh "
    "exp log Abs sign re im arg conjugate floor ceiling"
).split()
MAX_ARGUMENT = 1e5


def too_big(expr: Any) -> bool:
    """Whether evaluating ``expr`` could build a number too large to finish within a timeout: a
    power with a numeric exponent over ``MAX_ARGUMENT`` in size, or a function other than the
    elementary ones applied to such a number. A size estimate, made before anything is evaluated:
    the candidate that writes ``\\binom{10^6}{5\\cdot 10^5}`` is then decided (only identical
    expressions are equal) instead of timing out."""
    import sympy

    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.exp.is_number and node.base not in (0, 1, -1):
            if node.exp.has(sympy.Pow, sympy.Function) and too_big(node.exp):
                return True
            if _over(node.exp):
                return True
        elif isinstance(node, sympy.Function) and type(node).__name__ not in _CHEAP_FUNCTIONS:
            if any(a.is_number and (too_big(a) or _over(a)) for a in node.args):
                return True
    return False


def _over(value: Any) -> bool:
    try:
        return abs(complex(value)) > MAX_ARGUMENT
    except (TypeError, ValueError, OverflowError):
        return True


def expr_equal(a: Any, b: Any, policy: MathPolicy) -> bool:
    import sympy

    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    a, b = sym(a), sym(b)
    if isinstance(a, sympy.Basic) and isinstance(b, sympy.Basic) and (a.is_Relational or b.is_Relational):
        return _relation_equal(a, b, policy)
    if isinstance(a, sympy.MatrixBase) or isinstance(b, sympy.MatrixBase):
        if not (isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase)) or a.shape != b.shape:
            return False
        return all(expr_equal(x, y, policy) for x, y in zip(a, b, strict=True))
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
    if too_big(a) or too_big(b):
        # 10^{10^{10}} and friends: evaluating them would not finish; only identical
        # expressions are equal.
        return False
    if not symbols:
        ca, cb = _canonical(a), _canonical(b)
        if (
            getattr(ca, "is_Rational", False)
            and getattr(cb, "is_Rational", False)
            and policy.rel_tol <= 1e-9
            and policy.abs_tol == 0
        ):
            return bool(ca == cb)  # exact: 8^{11} is not 8589934600, however close
        close = _num_close(a, b, policy)
        if close and policy.rel_tol <= 1e-9 and policy.abs_tol == 0 and not (a.has(sympy.Float) or b.has(sympy.Float)):
            # an exact question (nothing was written as an approximation): agreement to 30 digits
            # only says "look closer"; 2^{1/2^{1000}} is not 1
            return _exactly_equal(a, b)
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
        subs = {
            s: sympy.Rational(_POINTS[(k + j) % len(_POINTS)].numerator, _POINTS[(k + j) % len(_POINTS)].denominator)
            for j, s in enumerate(symbols)
        }
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


MAX_RENAMED = 3  # at most 3! = 6 renamings are tried


def renamed_equal(a: Any, b: Any, policy: MathPolicy) -> bool:
    """Whether some renaming of ``b``'s free variables that ``a`` lacks onto ``a``'s that ``b``
    lacks (one to one, at most ``MAX_RENAMED``) makes ``b`` equal to ``a``: alpha-equivalence.
    Shared names are never renamed; a differing count of names is never equal. A subscripted
    name (``a_1``, ``a_{n-1}``, ``v_0``) names one member of an indexed family, not a variable
    the answer is free to call otherwise, so an answer whose subscripted names differ is never
    renamed equal (``a_{n-1}+a_{n+1}`` is not ``a_{n-2}+a_{n+1}``)."""
    import itertools

    import sympy

    if not (isinstance(a, sympy.Basic) and isinstance(b, sympy.Basic)) or a.is_Symbol or b.is_Symbol:
        return False  # a bare name is a name (\text{A} is not \text{B}), not a function of one
    fa, fb = a.free_symbols, b.free_symbols
    only_a, only_b = sorted(fa - fb, key=str), sorted(fb - fa, key=str)
    if not only_b or len(only_a) != len(only_b) or len(only_b) > MAX_RENAMED:
        return False
    if any("_" in str(name) for name in (*only_a, *only_b)):
        return False
    for target in itertools.permutations(only_a):
        if expr_equal(a, b.xreplace(dict(zip(only_b, target, strict=True))), policy):
            return True
    return False
