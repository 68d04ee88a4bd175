"""The one parser of math answers on the scoring path: strict, hand-written, straight to sympy.

It reads numbers, ``+ - * / ^``, ``:`` (a ratio, ``12:1`` is 12), ``\\frac``, ``\\sqrt`` and
``\\sqrt[n]``, ``\\pi``, ``e``, letters (a letter's case is ignored, ``N`` is ``n`` as the ANTLR
grammar ``latex2sympy2_extended`` names it, unless one answer writes the same letter in both cases:
then ``r`` and ``R`` are two symbols; ``E`` is a symbol named e, ``I`` is refused), Greek letters
(capitals too; ``\\Gamma(x)`` is the gamma function, ``\\Pi`` is refused), ``\\hbar``, ``\\prime``,
subscripts (``v_0``, ``x_{12}``, ``F_{n-k-1}``, ``v^2_0``), implicit products (``x2`` too, unless
one letter carries two numbers: ``z1 + z2`` are indices), parentheses and brackets, ``|x|``, the
functions ``\\sin`` ... ``\\arctan``, ``\\ln``, ``\\log_b``, ``\\exp``, ``n!``, ``n!!`` (the double
factorial), ``\\binom``, mixed numbers (``3\\frac{1}{2}``), ``\\sum_{k=a}^{b}``, matrices
(``\\begin{pmatrix}``, ``bmatrix``, ``matrix``; scalar and matrix products evaluated), the empty
set, ``\\angle ABC`` as one name, a numeral's base subscript (``100100_b``), and one relation or a
chain of them (``=``, ``<``, ``\\le``, ``>=``...; ``\\approx`` keeps the exact statement before it,
or the value after a name: ``x \\approx 11`` is 11). It follows the grammar's conventions where they
matter (``e`` is Euler's number, ``2x`` is a product, ``\\sin 2x`` is sin(2x));
``tests/rewards/math/test_math_fast.py`` and ``test_math_handparser.py`` check its readings against
the grammar's on generated forms.

Anything else is ``None`` (another command, ``\\gcd``, ``\\Phi(x, y)``, ``\\sin x / 2``,
``\\sin^{-1}``, a plain ``\\log``, a word, decimals with more than 200 digits...): the caller
(``math.scalar.parse_scalar``) raises ``ParseFailure``; there is no second, looser reading.

Bounded in time and memory in any thread: one pass over at most ``MAX_CHARS`` characters, recursion
depth capped, and nothing large is ever computed while parsing. A power with a numeric base is
evaluated only for small exponents (|n| <= 1000, or a rational power estimated under ``MAX_DIGITS``
digits), ``n!`` and ``\\binom`` only up to ``MAX_FACTORIAL`` and ``MAX_BINOM``; a larger one
(``2013^{2013}``, ``2016!``, ``10^{10^{10}}``, ``\\binom{10^6}{5 \\cdot 10^5}``) makes the whole
answer be read again with sympy's evaluation off, as the unevaluated tree the grammar built, which
``math.sym.too_big`` sizes before anything is evaluated."""

from __future__ import annotations

import math
from typing import Any

from ..rules import untrusted
from .fastforms import Structures
from .fastlex import (  # noqa: F401 - the names tests and callers read here
    BINOMS,
    FUNCTIONS,
    GREEK,
    MAX_BINOM,
    MAX_CHARS,
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_FACTORIAL,
    NAMES,
    RELATIONS,
    UPPER_GREEK,
    TooBig,
    Undefined,
    Unsupported,
    is_name,
    keep_case,
    lex,
)


class _Parser(Structures):
    def __init__(self, tokens: list[tuple[str, str]], imaginary: bool = False, big: bool = False) -> None:
        self.keep_case = keep_case(tokens)
        import sympy

        self.sp = sympy
        self.imaginary = imaginary
        self.t = tokens
        self.i = 0
        self.depth = 0
        self.bars = 0  # open |...| around the current position
        self.integrand: list[str] = []  # the variables of the integrals open here
        self.big = big

    def var(self, v: str) -> Any:
        if v == "i" and self.imaginary:
            return self.sp.I
        return self.sp.E if v == "e" else self.sp.Symbol(self.case(v))

    def case(self, name: str) -> str:
        return name if self.keep_case else untrusted.fold_case(name)

    def peek(self) -> tuple[str, str] | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise Unsupported()
        self.i += 1
        return tok

    def relation(self) -> Any:
        """One expression, or one relation between two (``=``, ``<``, ``\\le``...); a chain such as
        ``a = b = c`` or ``1 < x < 2`` is not read here."""
        sides, ops = [self.expr()], []
        while self.peek() is not None and self.peek()[1] in RELATIONS:  # type: ignore[index]
            ops.append(self.take()[1])
            sides.append(self.expr())
        if self.peek() is not None:
            raise Unsupported()
        if "\\approx" in ops:
            # what is stated exactly comes before it (x = 1/3 \approx 0.33 is x = 1/3, 1/3 \approx 0.33
            # is 1/3), unless that is a name (x \approx 11 is 11, \Delta p \approx -\hbar/c is -\hbar/c)
            k = ops.index("\\approx")
            if ops.count("\\approx") > 1 or len(sides) > k + 2 and not k:
                raise Unsupported()
            if k:
                sides, ops = sides[: k + 1], ops[:k]
            elif is_name(sides[0]) and not is_name(sides[1]):
                sides, ops = sides[1:], []
            else:
                sides, ops = sides[:1], []
        if not ops:
            return sides[0]
        rels = [
            getattr(self.sp, RELATIONS[op])(a, b, evaluate=False)
            for op, a, b in zip(ops, sides, sides[1:], strict=False)
        ]
        return rels[0] if len(rels) == 1 else self.sp.And(*rels, evaluate=False)  # x = y = z, 1 < x < 2

    def expr(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported()
        value = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        self.depth -= 1
        return value

    def _starts_primary(self) -> bool:
        tok = self.peek()
        if tok is None:
            return False
        kind, v = tok
        if self.integrand and tok == ("var", "d") and self.t[self.i + 1 : self.i + 2] == [("var", self.integrand[-1])]:
            return False  # the dx that ends an integrand
        return (
            kind in ("num", "var")
            or (kind == "cmd" and (v in ("\\frac", "\\sqrt", "\\pi", *BINOMS) or v in FUNCTIONS or v in NAMES))
            or (
                kind == "cmd"
                and (v.startswith("\\begin") or v in ("\\emptyset", "\\varnothing", "\\sum", "\\Gamma", "\\int"))
            )
            or kind == "angle"
            or (kind == "op" and (v in ("(", "{", "[", "\\{") or (v == "|" and not self.bars)))
        )

    def term(self) -> Any:
        value = self.unary()
        while True:
            tok = self.peek()
            if tok in (("op", "*"), ("cmd", "\\times"), ("cmd", "\\cdot"), ("op", "glued")):
                self.take()
                value = value * self.unary()
            elif tok in (("op", "/"), ("op", ":")):  # 12:1, a ratio, is 12/1 to the grammar
                self.take()
                den = self.unary()
                if den == 0:
                    raise Undefined("division by zero")
                value = value / den
            elif self._starts_primary():
                if tok is not None and tok[0] == "num" and self.t[self.i - 1] != ("op", ")"):
                    raise Unsupported()  # "x 2" or "2 3": not a product anyone writes; (n-2)2^n is
                value = value * self.power()
            else:
                return value

    def unary(self) -> Any:
        tok = self.peek()
        if tok in (("op", "-"), ("op", "+")):
            self.take()
            v = self.unary()
            return -v if tok == ("op", "-") else v
        return self.power()

    def factorial(self, base: Any) -> Any:
        """``n!`` and ``n!!``: an integer 0..MAX_FACTORIAL or an expression in letters, evaluated; a
        larger integer (``2016!``) unevaluated; anything else (``(-1)!``, ``x^2!``) is not read."""
        self.take("!")
        if self.peek() == ("op", "!"):  # 5!!: the double factorial
            self.take()
            if base.free_symbols or (base.is_Integer and 0 <= int(base) <= MAX_FACTORIAL):
                return self.sp.factorial2(base)
            if base.is_integer and not base.is_negative:
                if not self.big:
                    raise TooBig()
                return self.sp.factorial2(base)
            raise Unsupported()
        if base.free_symbols or (base.is_Integer and 0 <= int(base) <= MAX_FACTORIAL):
            return self.sp.factorial(base)  # (n-1)! stays unevaluated
        if base.is_integer and not base.is_negative:
            if not self.big:
                raise TooBig()
            return self.sp.factorial(base)  # 2016!: unevaluated, as the grammar keeps it
        raise Unsupported()

    def _small_power(self, base: Any, exp: Any) -> bool:
        """Whether ``base^exp`` (a numeric base) stays small when sympy evaluates it: a symbolic
        exponent builds nothing (``3^n``); a numeric one is estimated under ``MAX_DIGITS`` digits."""
        if exp.free_symbols:
            return True
        if exp.is_Rational and not exp.is_Integer:
            if exp.q > 1000:
                return False
            exp = self.sp.Integer(abs(exp.p) // exp.q + 1)  # 2^{4/3} is 2 \cdot 2^{1/3}
        if not exp.is_Integer:
            return False
        n = abs(int(exp))
        if n <= 1000:
            return True
        if not base.is_Rational or base == 0:
            return False
        digits = max(len(str(abs(base.p))), len(str(base.q)))
        return digits <= 20 and n * math.log10(max(abs(int(base.p)), int(base.q), 2)) <= MAX_DIGITS

    def power(self) -> Any:
        base = self.primary()
        if self.peek() == ("op", "!"):
            base = self.factorial(base)
        if self.peek() == ("op", "^"):
            self.take()
            if self.peek() == ("op", "{"):
                self.take()
                exp = self.expr()
                self.take("}")
            else:
                kind, v = self.take()
                if kind == "num" and v.isdigit():  # 2^12 is 2^{12} to the grammar (plain-text math)
                    exp = self.sp.Integer(int(v))
                elif kind == "var":
                    exp = self.var(v)
                elif (kind, v) == ("cmd", "\\pi"):
                    exp = self.sp.pi
                else:
                    raise Unsupported()
            if base.is_number and not self._small_power(base, exp) and not self.big:
                raise TooBig()  # 2013^{2013}, a tower: built unevaluated
            if base == 0 and exp.is_number and exp.is_negative:
                raise Unsupported()
            if self.peek() == ("op", "!"):
                raise Unsupported()  # x^2! : not read
            if self.peek() == ("op", "_"):
                if not (base.is_Symbol and "_" not in base.name):
                    raise Unsupported()
                base = self.subscript(base.name)  # v^2_0 is (v_0)^2, as the grammar reads it
            return self.sp.Pow(base, exp)
        return base

    def group(self) -> Any:
        tok = self.peek()
        if tok == ("op", "{"):
            self.take()
            v = self.expr()
            self.take("}")
            return v
        kind, v = self.take()
        if kind == "num" and len(v) == 1:
            return self.sp.Integer(int(v))
        if kind == "var":
            return self.var(v)
        raise Unsupported()

    def subscript(self, name: str) -> Any:
        """``v_0``, ``c_{1}``, ``\\theta_1``, ``x_{12}``: one symbol, named as the grammar names it
        (a one-character subscript without braces, a longer one with them)."""
        self.take("_")
        if self.peek() == ("op", "{"):
            self.take()
            parts: list[str] = []
            while self.peek() is not None and self.peek() != ("op", "}"):
                kind, v = self.take()
                if kind not in ("num", "var") and not (v in "+-" and parts and parts[-1] not in "+-"):
                    raise Unsupported()
                parts.append(v)
            self.take("}")
            sub = "".join(parts)  # F_{n-k-1}: one symbol named by its subscript's text
            if sub[-1:] in ("+", "-"):
                raise Unsupported()
        else:
            kind, sub = self.take()
            if kind not in ("num", "var") or len(sub) != 1:
                raise Unsupported()
        if not sub:
            raise Unsupported()
        if self.peek() == ("op", "_"):
            raise Unsupported()
        name, sub = self.case(name), self.case(sub)  # P_{N} is p_n to the grammar
        return self.sp.Symbol(f"{name}_{sub}" if len(sub) == 1 else f"{name}_{{{sub}}}")

    def function(self, v: str) -> Any:
        """``\\sin x``, ``\\cos^3 x``, ``\\ln(e - 1)``, ``\\log_2 8``. A bare argument is the
        product of the factors after the name (``\\sin 2x`` is sin(2x), as the grammar reads it);
        where the grammar reads more into it (``\\sin x / 2``, ``\\sin x \\cdot y``: sin(x/2) and
        sin(xy) to it), a plain ``\\log`` (base 10 or e?) or ``\\sin^{-1}``, the answer is not read. A
        lone number's function times what follows is a product (``\\log_2 8 \\cdot \\frac{1}{8}``)."""
        sp = self.sp
        base = None
        if v == "\\log":
            if self.peek() != ("op", "_"):
                raise Unsupported()
            self.take()
            base = self.group()
        power = None
        if self.peek() == ("op", "^"):
            self.take()
            power = self.group()
            if not (power.is_Integer and 1 <= int(power) <= 10):
                raise Unsupported()  # \sin^{-1} x is arcsin
        if self.peek() == ("op", "("):
            self.take()
            arg = self.expr()
            self.take(")")
        elif self.peek() == ("op", "{"):
            arg = self.group()
        else:
            lone = self.peek() is not None and self.peek()[0] == "num"  # type: ignore[index]
            arg = self.power()
            while self._starts_primary():
                tok = self.peek()
                if tok is not None and (tok[0] == "num" or tok[1] in FUNCTIONS):
                    raise Unsupported()
                arg = arg * self.power()
                lone = False
            if self.peek() in (("op", "*"), ("op", "/"), ("cmd", "\\cdot"), ("cmd", "\\times"), ("op", "!")):
                if not (lone and self.peek() in (("cmd", "\\cdot"), ("cmd", "\\times"))):
                    raise Unsupported()  # \sin x / 2: sin(x/2) to the grammar, (sin x)/2 to many readers
                # \log_2 8 \cdot \frac{1}{8}: a number's function times what follows
        name = FUNCTIONS[v]
        if name == "log":
            if arg.is_number and arg.is_zero:
                raise Undefined("the logarithm of 0")
            value = sp.log(arg) if base is None else sp.log(arg, base)
        else:
            value = getattr(sp, name)(arg)
        return value**power if power is not None else value

    def primary(self) -> Any:
        kind, v = self.take()
        sp = self.sp
        if kind == "num":
            if v.isdigit() and self.t[self.i : self.i + 7] == [
                ("cmd", "\\frac"),
                ("op", "{"),
                *self.t[self.i + 2 : self.i + 3],
                ("op", "}"),
                ("op", "{"),
                *self.t[self.i + 5 : self.i + 6],
                ("op", "}"),
            ]:
                if self.t[self.i + 2][0] == "num" == self.t[self.i + 5][0]:  # 3\frac{1}{2}: a mixed number
                    self.take()
                    whole = sp.Integer(int(v))
                    frac = self.group() / self.group()
                    return whole + frac if not self.big else sp.Add(whole, frac)
            if v.isdigit() and self.peek() == ("op", "_"):
                after = self.t[self.i + 1 : self.i + 4]
                if after[:1] == [("num", "10")]:  # 123_10, 123_{10}: a numeral in base ten
                    self.i += 2
                elif after == [("op", "{"), ("num", "10"), ("op", "}")]:
                    self.i += 4
                elif after[:1] and after[0][0] == "var":  # 100100_b: in base b, read as its digits (as the grammar)
                    self.i += 2
            return sp.Rational(v)
        if kind == "angle":
            return sp.Symbol(f"angle_{v}")
        if kind == "var":
            if self.peek() == ("op", "_"):
                return self.subscript(v)
            return self.var(v)
        if kind == "cmd":
            if v in NAMES:
                if self.peek() == ("op", "_"):
                    return self.subscript(self.case(v[1:]))
                return sp.Symbol(self.case(v[1:]))
            if v in FUNCTIONS:
                return self.function(v)
            if v == "\\pi":
                return sp.pi
            if v == "\\sum":
                return self.summation()
            if v == "\\int":
                return self.integral()
            if v == "\\Gamma" and self.peek() == ("op", "("):  # \Gamma(x): the gamma function
                self.take()
                arg = self.expr()
                self.take(")")
                if arg.is_number and not (arg.is_Integer and 1 <= int(arg) <= MAX_FACTORIAL + 1):
                    if not (arg.is_integer and arg.is_positive):
                        raise Unsupported()
                    if not self.big:
                        raise TooBig()
                return sp.gamma(arg)
            if v in ("\\emptyset", "\\varnothing"):
                return sp.EmptySet
            if v == "\\prime":  # \omega^{\prime}: a symbol named prime, as the grammar reads it
                return sp.Symbol("prime")
            if v.startswith("\\begin"):
                return self.matrix(v)
            if v == "\\frac":
                num, den = self.group(), self.group()
                if den == 0:
                    raise Undefined("division by zero")
                return num / den
            if v in BINOMS:
                n, k = self.group(), self.group()
                if any(x.is_number and not (x.is_integer and not x.is_negative) for x in (n, k)):
                    raise Unsupported()
                if any(x.is_number and not (x.is_Integer and int(x) <= MAX_BINOM) for x in (n, k)) and not self.big:
                    raise TooBig()
                return sp.binomial(n, k)
            if v == "\\sqrt":
                if self.peek() == ("op", "["):  # \sqrt[3]{4}: an n-th root, n a whole number 2..100
                    self.take()
                    kind, n = self.take()
                    self.take("]")
                    if kind != "num" or not n.isdigit() or not 2 <= int(n) <= 100:
                        raise Unsupported()
                    return sp.Pow(self.group(), sp.Rational(1, int(n)))
                arg = self.group()
                return sp.sqrt(arg)
            raise Unsupported()
        if (kind, v) in (("op", "("), ("op", "[")):  # 1/[(x+1)(x+2)]: square brackets group too
            inner = self.expr()
            self.take(")" if v == "(" else "]")
            return inner
        if (kind, v) == ("op", "{"):
            inner = self.expr()
            self.take("}")
            return inner
        if (kind, v) == ("op", "\\{"):
            self.take("\\}")  # \{\}: the empty set
            return sp.EmptySet
        if (kind, v) == ("op", "|"):  # |x - y|: an absolute value; inside it a bar closes, never opens
            self.bars += 1
            inner = self.expr()
            self.take("|")
            self.bars -= 1
            return sp.Abs(inner)
        raise Unsupported()


def parse(s: str, imaginary: bool = False, undefined: bool = False) -> Any:
    """The sympy value of ``s``, or None when it is outside the forms read here; ``Undefined`` when
    it is read and has no value (``\\frac{1}{0}``) and ``undefined`` is set, else None. With
    ``imaginary``, the letter ``i`` is the imaginary unit (the caller decides:
    ``rlvr.rewards.math.core.imaginary``)."""
    if len(s) > MAX_CHARS or not untrusted.strip(s):
        return None
    try:
        tokens = lex(s, imaginary)
        if not tokens:
            return None
        try:
            return _Parser(tokens, imaginary).relation()
        except TooBig:
            import sympy

            with sympy.evaluate(False):  # nothing is computed: a huge power stays a tree for too_big
                return _Parser(tokens, imaginary, big=True).relation()
    except Undefined:
        if undefined:
            raise
        return None
    except (Unsupported, TooBig, RecursionError, ZeroDivisionError, ValueError, TypeError, AttributeError):
        return None
